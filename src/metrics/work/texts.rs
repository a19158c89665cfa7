//! The statements counted by their text, while a test asks for it: each statement is
//! formatted (diesel renders its SQL), so this is for a test's table, never a server's.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::{StatementsOn, WorkCounters};

/// Statements by connection and normalised text, counted while `on`.
#[derive(Debug, Default)]
pub(super) struct StatementTexts {
    on: AtomicBool,
    counted: Mutex<BTreeMap<(StatementsOn, String), u64>>,
}

impl WorkCounters {
    /// From now on (`true`) or no longer, statements are also counted by their text.
    pub(crate) fn record_statements(&self, on: bool) {
        self.texts.on.store(on, Ordering::Relaxed);
    }

    /// Counts `statement`, sent on `on`, by its text, if texts are being recorded.
    pub(crate) fn statement_text(&self, on: StatementsOn, statement: &dyn Display) {
        if !self.texts.on.load(Ordering::Relaxed) {
            return;
        }
        let text = normalised(&statement.to_string());
        let mut counted = self
            .texts
            .counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *counted.entry((on, text)).or_default() += 1;
    }

    /// Every statement recorded so far, by connection and text.
    pub(crate) fn statement_texts(&self) -> BTreeMap<(StatementsOn, String), u64> {
        self.texts
            .counted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// `sql` without diesel's bind comment, its whitespace collapsed and PostgreSQL's numbered
/// placeholders written `?`, so one statement reads the same on both stores.
fn normalised(sql: &str) -> String {
    let sql = sql.rsplit_once(" -- binds: ").map_or(sql, |(sql, _)| sql);
    let collapsed = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(collapsed.len());
    let mut chars = collapsed.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_counted_only_while_recorded_and_read_alike_on_both_stores() {
        let work = WorkCounters::default();
        work.statement_text(StatementsOn::Writer, &"SELECT 1");
        work.record_statements(true);
        work.statement_text(
            StatementsOn::Writer,
            &"SELECT a\n   FROM t WHERE b = $1 AND c = $12 -- binds: [1, 2]",
        );
        work.statement_text(
            StatementsOn::Writer,
            &"SELECT a FROM t WHERE b = ? AND c = ?",
        );
        work.statement_text(StatementsOn::Reader, &"BEGIN");
        work.record_statements(false);
        work.statement_text(StatementsOn::Reader, &"BEGIN");
        let texts = work.statement_texts();
        assert_eq!(
            texts.into_iter().collect::<Vec<_>>(),
            [
                (
                    (
                        StatementsOn::Writer,
                        "SELECT a FROM t WHERE b = ? AND c = ?".into()
                    ),
                    2
                ),
                ((StatementsOn::Reader, "BEGIN".into()), 1),
            ]
        );
    }
}
