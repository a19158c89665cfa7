//! What one MCP call came to, as the entry the model reads: its status and its text, cut to
//! the server's `max_output_bytes` with a marker saying so.

use std::time::Duration;

use crate::db::enums::EntryStatus;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallOutcome {
    /// The tool's result.
    Done(String),
    /// The tool reported an error (`isError`), or the server refused the call.
    Failed(String),
    /// No answer within the server's timeout.
    TimedOut(Duration),
    /// The server is not connected, or its session ended during the call.
    Gone(String),
    /// The loop was aborted while it waited.
    Cancelled,
    /// Not made: the run may not reach the server (its starter has no credential of their
    /// own for it).
    Refused(String),
}

impl CallOutcome {
    /// The entry's status: 200, 500, 504 or 502 (409 for an aborted wait, 403 for a call
    /// not made).
    pub(crate) fn status(&self) -> EntryStatus {
        match self {
            CallOutcome::Done(_) => EntryStatus::Ok,
            CallOutcome::Failed(_) => EntryStatus::Failed,
            CallOutcome::TimedOut(_) => EntryStatus::GatewayTimeout,
            CallOutcome::Gone(_) => EntryStatus::BadGateway,
            CallOutcome::Cancelled => EntryStatus::Conflict,
            CallOutcome::Refused(_) => EntryStatus::Forbidden,
        }
    }

    /// The entry's body, at most `max_bytes` of the result or message.
    pub(crate) fn body(&self, max_bytes: usize) -> String {
        match self {
            CallOutcome::Done(text) | CallOutcome::Failed(text) => capped(text, max_bytes),
            CallOutcome::TimedOut(timeout) => {
                format!(
                    "no answer within {} s; the call was cancelled",
                    timeout.as_secs()
                )
            }
            CallOutcome::Gone(reason) | CallOutcome::Refused(reason) => capped(reason, max_bytes),
            CallOutcome::Cancelled => "the loop was aborted during the call".to_owned(),
        }
    }
}

/// `text` cut at a character boundary within `max_bytes`, with a marker naming the size.
fn capped(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[output cut: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::CallOutcome;
    use crate::db::enums::EntryStatus;

    #[test]
    fn long_results_are_cut_at_a_character_with_a_marker() {
        let outcome = CallOutcome::Done("aé".repeat(10));
        assert_eq!(outcome.body(30), "aé".repeat(10));
        assert_eq!(outcome.body(5), "aéa\n[output cut: 4 of 30 bytes shown]");
    }

    #[test]
    fn each_ending_has_its_status() {
        let statuses = [
            CallOutcome::Done(String::new()),
            CallOutcome::Failed(String::new()),
            CallOutcome::TimedOut(Duration::from_secs(2)),
            CallOutcome::Gone(String::new()),
            CallOutcome::Cancelled,
        ]
        .map(|outcome| outcome.status());
        assert_eq!(
            statuses,
            [
                EntryStatus::Ok,
                EntryStatus::Failed,
                EntryStatus::GatewayTimeout,
                EntryStatus::BadGateway,
                EntryStatus::Conflict
            ]
        );
        assert!(CallOutcome::TimedOut(Duration::from_secs(2))
            .body(100)
            .contains("2 s"));
    }
}
