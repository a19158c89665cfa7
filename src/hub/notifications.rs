//! Server → client notifications: typed payloads, named once, and their frames.

use serde::Serialize;
use serde_json::Value;

/// A notification about one run, before the hub numbers it.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    /// `run/progress`: a turn is thinking or processing.
    Progress(RunProgress),
    /// `run/state`: a turn finished.
    State(Box<Value>),
    /// `run/proposal`: a new proposal awaits resolution.
    Proposal(RunProposal),
}

impl Notification {
    /// The JSON-RPC notification frame, numbered `seq` within its run (the one piece of
    /// JSON-RPC outside `rpc/` and `ws/`: the hub serializes each notification once for
    /// all its subscribers).
    pub fn frame(&self, seq: u64) -> String {
        let mut params = self.params();
        if let Value::Object(object) = &mut params {
            object.insert("seq".into(), Value::from(seq));
        }
        serde_json::json!({"jsonrpc": "2.0", "method": self.method(), "params": params}).to_string()
    }

    /// The wire method name.
    pub fn method(&self) -> &'static str {
        match self {
            Notification::Progress(_) => "run/progress",
            Notification::State(_) => "run/state",
            Notification::Proposal(_) => "run/proposal",
        }
    }

    /// The alias of the run it is about.
    pub fn run(&self) -> &str {
        match self {
            Notification::Progress(progress) => &progress.run,
            Notification::State(state) => state.get("run").and_then(Value::as_str).unwrap_or(""),
            Notification::Proposal(proposal) => &proposal.run,
        }
    }

    /// The params object, before the hub adds `seq`.
    pub fn params(&self) -> Value {
        match self {
            Notification::Progress(progress) => serde_json::to_value(progress),
            Notification::State(state) => Ok((**state).clone()),
            Notification::Proposal(proposal) => serde_json::to_value(proposal),
        }
        .unwrap_or(Value::Null)
    }
}

/// Where a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProgressStatus {
    /// Context assembled; the LLM is about to be called.
    Thinking,
    /// The reply arrived; its commands are being executed.
    Processing,
}

/// `run/progress` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunProgress {
    /// Run alias.
    pub run: String,
    /// Run-global turn number.
    pub turn: i64,
    /// Where the turn is.
    pub status: ProgressStatus,
}

/// `run/proposal` params.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunProposal {
    /// Run alias.
    pub run: String,
    /// The new proposals.
    pub proposed: Vec<ProposedEntry>,
}

/// One proposal as announced by `run/proposal`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProposedEntry {
    /// The proposal's entry path; echo it back in `run/resolve`.
    pub path: String,
    /// Its scheme: sh, env, set, rm, mv, cp, ask_user.
    #[serde(rename = "type")]
    pub kind: String,
    /// The proposal body (command, question, original content).
    pub body: String,
    /// Its attributes (patch, merge, command, ...).
    pub attributes: Value,
}
