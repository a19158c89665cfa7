//! What a prompt recalls: the project's facts, then the server-wide ones, then the history,
//! each best first by the store's full-text rank, how each reads to the model, and which of
//! them a token budget keeps.

use crate::context::TokenMath;
use crate::db::ids::ProjectId;
use crate::db::models::memory::{MemoryLayer, RecalledItem};
use crate::db::queries::memory;
use crate::db::{Conn, DbError};

/// Most facts a recall considers before the budget cuts them.
pub(super) const FACT_CANDIDATES: i64 = 32;
/// Most replaced facts a recall considers.
pub(super) const HISTORY_CANDIDATES: i64 = 8;

/// What `project` may recall for `text`, in recall order, each text once.
pub(super) fn candidates(
    conn: &mut Conn,
    project: ProjectId,
    text: &str,
) -> Result<Vec<RecalledItem>, DbError> {
    let mut items = memory::recall_facts(conn, project, text, FACT_CANDIDATES)?;
    items.extend(memory::recall_history(
        conn,
        project,
        text,
        HISTORY_CANDIDATES,
    )?);
    Ok(distinct(items))
}

/// `items` without repeats: an item whose topic and text (trimmed, white space runs as
/// one) an earlier one already has is left out, whatever its layer — the same narrative of
/// several runs, a server-wide fact the project repeats, a replaced text the fact says again.
fn distinct(items: Vec<RecalledItem>) -> Vec<RecalledItem> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|item| {
            let body = item.body.split_whitespace().collect::<Vec<_>>().join(" ");
            seen.insert((memory::normalize_topic(&item.topic), body))
        })
        .collect()
}

/// One recalled item as the model reads it.
pub(super) fn line(item: &RecalledItem) -> String {
    let body = item.body.trim();
    match item.layer {
        MemoryLayer::Project => format!("- [project] {}: {body}", item.topic),
        MemoryLayer::Server => format!("- [server] {}: {body}", item.topic),
        MemoryLayer::History => {
            let day = item.dated.get(..10).unwrap_or(&item.dated);
            format!("- [replaced {day}] {}: {body}", item.topic)
        }
        MemoryLayer::Narrative => {
            let day = item.dated.get(..10).unwrap_or(&item.dated);
            format!("- [session {day}] {}: {body}", item.topic)
        }
    }
}

/// Whether each of `items`, in order, is kept within `budget` tokens: each that would carry
/// the total past it is left out, and the next one tried.
pub(super) fn fits(items: &[RecalledItem], budget: i64, tokens: TokenMath) -> Vec<bool> {
    let mut used = 0;
    items
        .iter()
        .map(|item| {
            let cost = tokens.count(&line(item));
            let fits = used + cost <= budget;
            if fits {
                used += cost;
            }
            fits
        })
        .collect()
}

/// The lines of `items` kept within `budget` tokens, in order.
pub(super) fn within_budget(items: &[RecalledItem], budget: i64, tokens: TokenMath) -> Vec<String> {
    items
        .iter()
        .zip(fits(items, budget, tokens))
        .filter(|(_, fits)| *fits)
        .map(|(item, _)| line(item))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(layer: MemoryLayer, topic: &str, body: &str) -> RecalledItem {
        RecalledItem {
            layer,
            topic: topic.into(),
            body: body.into(),
            dated: "2026-11-25 10:00:00".into(),
            score: -1.0,
        }
    }

    #[test]
    fn an_item_repeating_an_earlier_one_s_topic_and_text_is_left_out() {
        let items = vec![
            item(MemoryLayer::Project, "tests", "make check"),
            item(MemoryLayer::Server, "Tests", "make  check\n"),
            item(MemoryLayer::Server, "tests", "make test"),
            item(MemoryLayer::Narrative, "fix login", "Current state: done"),
            item(MemoryLayer::Narrative, "fix login", "Current state: done"),
            item(MemoryLayer::Narrative, "fix login", "Current state: done"),
            item(MemoryLayer::History, "tests", "make check"),
            item(MemoryLayer::Narrative, "fix signup", "Current state: done"),
        ];
        let kept: Vec<String> = distinct(items).iter().map(line).collect();
        assert_eq!(
            kept,
            [
                "- [project] tests: make check",
                "- [server] tests: make test",
                "- [session 2026-11-25] fix login: Current state: done",
                "- [session 2026-11-25] fix signup: Current state: done",
            ]
        );
    }

    #[test]
    fn items_read_with_their_layer_and_the_budget_leaves_out_what_does_not_fit() {
        let items = [
            item(MemoryLayer::Project, "tests", "make check"),
            item(MemoryLayer::Server, "style", &"long ".repeat(40)),
            item(MemoryLayer::Server, "license", "MIT"),
            item(MemoryLayer::History, "tests", "npm test"),
        ];
        let tokens = TokenMath::new(4);
        let lines = within_budget(&items, 24, tokens);
        assert_eq!(
            lines,
            [
                "- [project] tests: make check",
                "- [server] license: MIT",
                "- [replaced 2026-11-25] tests: npm test"
            ]
        );
        let used: i64 = lines.iter().map(|line| tokens.count(line)).sum();
        assert_eq!(used, 24);
        assert_eq!(
            within_budget(&items, 20, tokens),
            ["- [project] tests: make check", "- [server] license: MIT"]
        );
        assert!(within_budget(&items, 0, tokens).is_empty());
    }
}
