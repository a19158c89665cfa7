//! Server → client notifications: typed payloads, named once, and their frames.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::BucketShare;
use crate::db::enums::CallPurpose;
use crate::db::enums::{EntryStatus, RunStatus};
use crate::db::events::Unnumbered;
use crate::db::models::run::PurposeUsage;
use crate::usage::{Micros, StandingView, Tokens};

/// A notification about one run, before the event log numbers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Notification {
    /// `run/progress`: a turn is thinking or processing.
    Progress(RunProgress),
    /// `run/state`: a turn finished.
    State(Box<RunState>),
    /// `run/proposal`: a new proposal awaits resolution.
    Proposal(RunProposal),
    /// `run/action`: a person resolved a proposal, aborted the run, injected a message or
    /// prompted it again.
    Action(RunActed),
    /// `run/outcome`: one of the run's loops ended.
    Outcome(LoopEnded),
}

impl Notification {
    /// The frame with a hole for its `seq`, the last of its params, which the event log fills
    /// in as it numbers it (the one piece of JSON-RPC outside `rpc/` and `ws/`: each
    /// notification is serialized once, for the log and every subscriber).
    pub(crate) fn unnumbered(&self) -> Result<Unnumbered, serde_json::Error> {
        let params = match self {
            Notification::Progress(params) => serde_json::to_string(params),
            Notification::State(params) => serde_json::to_string(params),
            Notification::Proposal(params) => serde_json::to_string(params),
            Notification::Action(params) => serde_json::to_string(params),
            Notification::Outcome(params) => serde_json::to_string(params),
        }?;
        let fields = params
            .strip_prefix('{')
            .and_then(|params| params.strip_suffix('}'))
            .unwrap_or_default();
        let comma = if fields.is_empty() { "" } else { "," };
        let method = self.method();
        Ok(Unnumbered {
            before: format!(
                r#"{{"jsonrpc":"2.0","method":"{method}","params":{{{fields}{comma}"seq":"#
            ),
            after: "}}",
        })
    }

    /// The wire method name.
    pub(crate) fn method(&self) -> &'static str {
        match self {
            Notification::Progress(_) => "run/progress",
            Notification::State(_) => "run/state",
            Notification::Proposal(_) => "run/proposal",
            Notification::Action(_) => "run/action",
            Notification::Outcome(_) => "run/outcome",
        }
    }
}

/// Where a turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub enum ProgressStatus {
    /// Context assembled; the LLM is about to be called.
    Thinking,
    /// The reply arrived; its commands are being executed.
    Processing,
}

/// `run/progress` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct RunProgress {
    /// Run alias.
    pub run: String,
    /// Run-global turn number.
    pub turn: i64,
    /// Where the turn is.
    pub status: ProgressStatus,
}

/// `run/proposal` params.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunProposal {
    /// Run alias.
    pub run: String,
    /// The new proposals.
    pub proposed: Vec<ProposedEntry>,
}

/// One proposal as announced by `run/proposal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// The rule of the person who requested the loop that allows this command without
    /// asking (a loop's outcome only, in a project whose clients run its commands).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Allowed>,
}

/// A person's command rule ("allow always", `agent::allow`) as the wire tells it: the rule
/// that allows a proposed command, or that accepted one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowed {
    /// The rule's id (`rules/revoke`).
    pub rule: i64,
    pub pattern: String,
    /// Whose rule it is (`null`: the operator's).
    pub person: Option<String>,
}

/// What a person did to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Act {
    /// Accepted a proposal.
    Accept,
    /// Rejected a proposal.
    Reject,
    /// Reported that a proposal failed to apply or run.
    Error,
    /// Aborted the run.
    Abort,
    /// Cancelled loops of the run (their own, or, allowed to abort it, another's).
    Cancel,
    /// Injected a message into it.
    Inject,
    /// Prompted it again (`ask`, `act` on the run).
    Prompt,
    /// Asked that a file the run changed be put back (`run/revert`): a proposal, `path`.
    Revert,
    /// Took its loop paused at a spend cap up again: `run/resume` (by an admin), or the
    /// server itself (`by` null) once the cap no longer stands.
    Resume,
}

/// `run/action` params: what a person did to a run, and who (`by`, `null`: the operator),
/// told to every client of its project in the unit of work that did it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunActed {
    /// Run alias.
    pub run: String,
    pub action: Act,
    pub by: Option<String>,
    /// The proposal resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The resolved proposal's status now (403 also for an acceptance the server refused,
    /// 500 for one that failed to apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<EntryStatus>,
    /// The proposals an abort or a cancel withdrew.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<String>,
    /// The loops a cancel stopped, by their number in the run (`getRun`'s `loops`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<i32>,
    /// The injected message, or the new prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The person's rule by which the server accepted the command for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Allowed>,
}

/// `run/outcome` params: where the run stands once one of its loops ended, or a resolution
/// settled it without a loop (completed, or other proposals still pending), as the request
/// that drove it is answered (PROTOCOL §2.11's run outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoopEnded {
    /// Run alias.
    pub run: String,
    pub status: RunStatus,
    /// Why a loop that completed, was aborted or failed ended (`done`, `turn_limit`,
    /// `stalled`, `refused`, `rejected`, `aborted`, `failed`, `cap_reached`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What does not fit (413), or which spend cap was reached (402).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The spend cap a paused loop (402) waits on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<StandingView>,
    /// Every pending proposal (202).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposed: Vec<ProposedEntry>,
}

/// `run/state` params: where the run stands after a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// Run alias.
    pub run: String,
    /// Run-global turn number.
    pub turn: i32,
    /// Proposed while proposals are pending, paused (402) once its loop paused at a spend
    /// cap, else running.
    pub status: RunStatus,
    /// The latest accepted `<summarize>` text, or empty.
    pub summary: String,
    /// The run's log entries, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The run's open questions.
    pub unknowns: Vec<UnknownEntry>,
    /// Every pending proposal of the run.
    pub proposed: Vec<PendingProposal>,
    /// Model, tokens and cost.
    pub telemetry: Telemetry,
    /// The person whose request queued the loop this turn belongs to (`None`: the operator).
    pub requested_by: Option<String>,
    /// The run's session notes (memory's `memory://session` attributes), `null` when it has
    /// none.
    pub session: Option<serde_json::Value>,
}

/// One log entry of `run/state.history`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The tool (the entry's scheme).
    pub tool: String,
    /// What it acted on (command, file, path or question).
    pub target: String,
    pub status: EntryStatus,
    pub path: String,
    pub body: String,
}

/// One open question of `run/state.unknowns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnknownEntry {
    pub path: String,
    /// The question.
    pub body: String,
}

/// One pending proposal of `run/state.proposed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingProposal {
    /// The proposal's entry path.
    pub path: String,
    /// Its scheme.
    #[serde(rename = "type")]
    pub kind: String,
    pub attributes: Value,
}

/// `run/state.telemetry`: the model and what the run has used so far (snake_case keys, as
/// the reference sends them, except `modelAlias`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Telemetry {
    /// The alias the client asked for.
    #[serde(rename = "modelAlias")]
    pub model_alias: String,
    /// The model the provider reports (the alias when it reports none).
    pub model: String,
    /// The temperature requests are sent with, `null` for the provider's default.
    pub temperature: Option<f64>,
    /// The context window in tokens.
    pub context_size: i64,
    /// The context of the latest turn.
    pub context_tokens: i32,
    /// Tokens and cost over the run.
    #[serde(flatten)]
    pub usage: UsageTotals,
    /// The latest packet's estimate split by bucket.
    pub context_distribution: Vec<BucketShare>,
}

/// What a run's model calls cost, as `run/state` and `getRun` report it: the tokens and cost
/// of the calls made for the run itself (its turns and its sidecar calls), then every call
/// by purpose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    #[serde(flatten)]
    pub tokens: Tokens,
    #[serde(flatten)]
    pub cost: Cost,
    /// The calls by purpose, `turn` first; `subagent` (the runs it delegated sub-tasks to,
    /// and theirs) is in none of the totals above, as those runs report their own.
    pub calls: Vec<PurposeCalls>,
}

/// An amount of money on the wire: `cost` in US dollars, and `cost_micros`, the exact
/// amount in micro-dollars.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub cost: f64,
    pub cost_micros: i64,
}

impl Cost {
    pub(crate) fn of(amount: Micros) -> Cost {
        Cost {
            cost: amount.dollars(),
            cost_micros: amount.0,
        }
    }
}

/// The calls of one purpose and their usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PurposeCalls {
    pub purpose: CallPurpose,
    pub calls: i64,
    #[serde(flatten)]
    pub tokens: Tokens,
    #[serde(flatten)]
    pub cost: Cost,
}

impl UsageTotals {
    /// The totals of a run's calls summed by purpose.
    pub fn of(purposes: &[PurposeUsage]) -> UsageTotals {
        let own = || {
            purposes
                .iter()
                .filter(|usage| usage.purpose != CallPurpose::Subagent)
        };
        UsageTotals {
            tokens: own().map(|usage| usage.tokens).sum(),
            cost: Cost::of(own().map(PurposeUsage::cost).sum()),
            calls: purposes
                .iter()
                .map(|usage| PurposeCalls {
                    purpose: usage.purpose,
                    calls: usage.calls,
                    tokens: usage.tokens,
                    cost: Cost::of(usage.cost()),
                })
                .collect(),
        }
    }

    /// How many turns the run took.
    pub fn turns(&self) -> i64 {
        self.calls
            .iter()
            .find(|calls| calls.purpose == CallPurpose::Turn)
            .map_or(0, |calls| calls.calls)
    }
}

/// A notification to every client bound to a project, about no run in particular: not
/// numbered, not kept for replay (a client that misses one misses it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UiNotification {
    /// `ui/render`: text to display, streamed.
    Render(UiRender),
    /// `ui/notify`: a toast or status message.
    Notify(UiNotify),
    /// `run/output`: a piece of the output of a command running on the server, or its
    /// end; its entry keeps the output, so a client that misses a piece loses nothing.
    Output(RunOutput),
    /// `usage/capReached`: a model call was refused, this spend cap being reached.
    CapReached(StandingView),
    /// `usage/capWarning`: spending passed the warning share (`RUMMY_CAP_WARNING_PERCENT`) of this cap, the first time in its period.
    CapWarning(StandingView),
    /// `run/presence`: who is in a run now (`presence`), the whole of it after each change.
    Presence(RunPresence),
    /// `inbox/changed`: what waits for the person may have changed (sent to their
    /// connections that asked for their `inbox`, never to a project's).
    InboxChanged(InboxChanged),
}

impl UiNotification {
    /// The wire method name.
    pub fn method(&self) -> &'static str {
        match self {
            UiNotification::Render(_) => "ui/render",
            UiNotification::Notify(_) => "ui/notify",
            UiNotification::Output(_) => "run/output",
            UiNotification::CapReached(_) => "usage/capReached",
            UiNotification::CapWarning(_) => "usage/capWarning",
            UiNotification::Presence(_) => "run/presence",
            UiNotification::InboxChanged(_) => "inbox/changed",
        }
    }

    /// The JSON-RPC notification frame.
    pub fn frame(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&UiFrame {
            jsonrpc: "2.0",
            method: self.method(),
            params: self,
        })
    }
}

#[derive(Serialize)]
struct UiFrame<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: &'a UiNotification,
}

/// `ui/render` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiRender {
    pub text: String,
    /// Append to what is displayed (else replace it).
    pub append: bool,
}

/// `ui/notify` params.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UiNotify {
    pub text: String,
    pub level: NotifyLevel,
}

/// `run/output` params: `text` as it comes, `skipped` bytes not streamed (more than a client
/// should be sent; the entry keeps what its cap allows), and last `done` with the entry's
/// status and the exit status.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct RunOutput {
    pub run: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<u8>,
}

/// What kind of client a connection is, as it said at `init` (`api` when it said nothing).
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientKind {
    /// An editor: `rummy acp`, a Neovim or VS Code client.
    Editor,
    /// The web console.
    Console,
    /// Anything else speaking the protocol.
    #[default]
    Api,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Editor => "editor",
            ClientKind::Console => "console",
            ClientKind::Api => "api",
        }
    }

    /// The kind stored as [`as_str`](Self::as_str) wrote it (`api` for anything else).
    pub fn parse(stored: &str) -> ClientKind {
        match stored {
            "editor" => ClientKind::Editor,
            "console" => ClientKind::Console,
            _ => ClientKind::Api,
        }
    }
}

/// A client as it named itself at `init`.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Client {
    pub name: String,
    pub kind: ClientKind,
}

/// `run/presence` params: everyone in the run now, longest present first.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPresence {
    /// Run alias.
    pub run: String,
    pub present: Vec<Present>,
}

/// One connection in a run.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Present {
    /// Who (`null`: the operator).
    pub person: Option<String>,
    pub client: Client,
    /// It acted on the run last of those present (it prompted, resolved, injected or
    /// aborted): at most one connection drives a run.
    pub driving: bool,
    /// Since when it is in the run (ms since the epoch).
    pub since: i64,
}

/// `inbox/changed` params: which run's item may have changed (`inbox` says what waits now).
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxChanged {
    /// The project's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Run alias.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The item the person dismissed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dismissed: Option<String>,
}

/// How a `ui/notify` message should stand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyLevel {
    Info,
    Warn,
    Error,
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[test]
    fn a_run_notification_is_numbered_as_the_last_of_its_params() {
        let progress = Notification::Progress(RunProgress {
            run: "r_1".into(),
            turn: 3,
            status: ProgressStatus::Thinking,
        });
        let text = progress.unnumbered().unwrap().numbered(42);
        let frame: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            frame,
            json!({"jsonrpc": "2.0", "method": "run/progress",
                   "params": {"run": "r_1", "turn": 3, "status": "thinking", "seq": 42}})
        );
        assert!(text.ends_with(r#""seq":42}}"#), "{text}");
    }

    #[test]
    fn ui_frames_carry_the_protocol_shapes_without_seq() {
        let render = UiNotification::Render(UiRender {
            text: "building".into(),
            append: true,
        });
        let frame: Value = serde_json::from_str(&render.frame().unwrap()).unwrap();
        assert_eq!(
            frame,
            json!({"jsonrpc": "2.0", "method": "ui/render",
                   "params": {"text": "building", "append": true}})
        );
        let notify = UiNotification::Notify(UiNotify {
            text: "done".into(),
            level: NotifyLevel::Warn,
        });
        let frame: Value = serde_json::from_str(&notify.frame().unwrap()).unwrap();
        assert_eq!(frame["method"], "ui/notify");
        assert_eq!(frame["params"], json!({"text": "done", "level": "warn"}));
    }
}
