//! How a loop ended, and the run-outcome result shapes of PROTOCOL §2.11.

use serde::Serialize;
use serde_json::{json, Value};

use crate::db::enums::RunStatus;
use crate::db::ids::LoopId;
use crate::db::models::entry::UnresolvedRow;

/// A pending proposal as `ask`/`act`/`run/resolve` report it (attributes as a JSON string).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposedRow {
    /// The proposal's entry path.
    pub path: String,
    /// Its body (command, question, original content).
    pub body: String,
    /// Its attributes, JSON-encoded.
    pub attributes: String,
    /// The turn that proposed it.
    pub turn: i32,
}

impl From<UnresolvedRow> for ProposedRow {
    fn from(row: UnresolvedRow) -> Self {
        ProposedRow {
            path: row.path,
            body: row.body,
            attributes: row.attributes,
            turn: row.turn,
        }
    }
}

/// How one loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopOutcome {
    /// Completed (200), aborted (499) or failed (500).
    Ended(RunStatus),
    /// Paused on proposals the client must resolve.
    Proposed {
        /// The turn that proposed them.
        turn: i32,
        /// Every pending proposal of the run.
        proposed: Vec<ProposedRow>,
        /// The model also said `<summarize>` that turn: accepting completes the run.
        summarized: bool,
    },
    /// The context does not fit: 413 with the reason.
    Overflow {
        /// What does not fit, for the client.
        error: String,
    },
    /// The context did not fit: a panic loop frees room, then `retry` runs the prompt again
    /// (whoever waits for this loop waits for the retry).
    Panicked {
        /// The re-enqueued loop.
        retry: LoopId,
    },
    /// A panic loop could not free enough room: it and its pending retry end with 413.
    RecoveryFailed {
        /// What does not fit, for the client.
        error: String,
        /// The retry loop dropped with it.
        retry: Option<LoopId>,
    },
}

impl LoopOutcome {
    /// The status the loop row is finished with.
    pub fn status(&self) -> RunStatus {
        match self {
            LoopOutcome::Ended(status) => *status,
            LoopOutcome::Proposed { .. } => RunStatus::Proposed,
            LoopOutcome::Overflow { .. }
            | LoopOutcome::Panicked { .. }
            | LoopOutcome::RecoveryFailed { .. } => RunStatus::TooLarge,
        }
    }

    /// What `loops.result` keeps of it (read again when the run resumes).
    pub fn to_record(&self) -> Value {
        match self {
            LoopOutcome::Ended(status) => json!({"status": status.code()}),
            LoopOutcome::Proposed {
                turn, summarized, ..
            } => {
                json!({"status": 202, "turn": turn, "summarized": summarized})
            }
            LoopOutcome::Overflow { error } | LoopOutcome::RecoveryFailed { error, .. } => {
                json!({"status": 413, "error": error})
            }
            LoopOutcome::Panicked { retry } => json!({"status": 413, "retry": retry.0}),
        }
    }

    /// The result shape sent to the client for run `alias`.
    pub fn to_result(&self, alias: &str) -> Value {
        match self {
            LoopOutcome::Ended(status) => json!({"run": alias, "status": status.code()}),
            LoopOutcome::Proposed { turn, proposed, .. } => json!({
                "run": alias,
                "status": 202,
                "turn": turn,
                "proposed": proposed,
            }),
            LoopOutcome::Overflow { error } | LoopOutcome::RecoveryFailed { error, .. } => {
                json!({"run": alias, "status": 413, "error": error})
            }
            LoopOutcome::Panicked { .. } => json!({"run": alias, "status": 413}),
        }
    }
}

/// The reply when a run still has unresolved proposals and no loop starts.
pub fn blocked_result(alias: &str, proposed: &[ProposedRow]) -> Value {
    json!({
        "run": alias,
        "status": 202,
        "remainingCount": proposed.len(),
        "proposed": proposed,
    })
}
