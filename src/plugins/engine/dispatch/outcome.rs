//! What one dispatch reports to the turn executor (or the RPC layer).

use serde_json::Value;

use crate::db::enums::EntryStatus;
use crate::db::models::entry::UnresolvedRow;
use crate::parser::Command;

/// The progress flags of a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TurnFlags {
    /// An action that changes something ran (set, rm, sh, mv, cp).
    pub has_act: bool,
    /// Something was read (get, env, search).
    pub has_reads: bool,
    /// A fact or question was written (known, unknown, a plain set).
    pub has_writes: bool,
}

/// One dispatched command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallRecord {
    /// Position of the command in the response.
    pub index: usize,
    /// Tool name as written.
    pub tool: String,
    /// The entry holding its outcome.
    pub path: String,
    pub status: EntryStatus,
    /// An action (sequential, may be cancelled).
    pub is_action: bool,
    /// A write of knowledge (known, unknown, a plain set).
    pub is_write: bool,
    /// `tool:target[k=v,…]`, for cycle detection.
    pub fingerprint: String,
}

/// A command that failed, was refused, or was cancelled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub tool: String,
    /// The entry the model sees the failure in.
    pub path: String,
    /// 4xx/5xx.
    pub status: EntryStatus,
    /// What the model is told.
    pub message: String,
}

/// Everything the turn executor needs from one response's dispatch.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DispatchOutcome {
    /// The final answer, when the model finished (and nothing failed).
    pub summary_text: Option<String>,
    /// The progress note, when the model continues (or its summary was overridden).
    pub update_text: Option<String>,
    /// Neither was given: the executor heals the status from the response text.
    pub needs_healing: bool,
    pub flags: TurnFlags,
    /// One record per command, in response order (204 without a path when it wrote
    /// nothing).
    pub calls: Vec<CallRecord>,
    /// Proposals this dispatch left for the client.
    pub proposals: Vec<UnresolvedRow>,
    /// Failures, refusals and cancellations.
    pub errors: Vec<CallError>,
}

/// `tool:target[k=v,…]`: the target is the path, command, query or question; the extras
/// are the other non-null attributes but the body, sorted by name.
pub(crate) fn fingerprint(command: &Command) -> String {
    let json = command.to_json();
    let Value::Object(fields) = json else {
        return command.name().to_owned();
    };
    let target = ["path", "command", "query", "question"]
        .iter()
        .find_map(|key| fields.get(*key).and_then(Value::as_str))
        .unwrap_or_default();
    let mut extras: Vec<String> = fields
        .iter()
        .filter(|(key, value)| {
            !matches!(
                key.as_str(),
                "name" | "body" | "path" | "command" | "question"
            ) && !value.is_null()
        })
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}={text}"),
            other => format!("{key}={other}"),
        })
        .collect();
    extras.sort();
    format!("{}:{target}[{}]", command.name(), extras.join(","))
}
