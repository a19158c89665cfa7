//! The messages between rummy and a plugin process: JSON-RPC 2.0, one message per line on
//! the process's stdin (rummy's requests and notifications) and stdout (its answers). The
//! docs/src/plugins-at-run-time.md is the reference; each shape here is one of its messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::access::Role;
use crate::db::enums::LoopMode;
use crate::plugins::filters::RunRequest;
use crate::plugins::gather::RunPlace;

/// The protocol version rummy speaks, sent in `initialize`.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// `initialize`: the first request, answered with the [`Manifest`].
pub(crate) const INITIALIZE: &str = "initialize";
/// `tool/call`: one of the plugin's tools is called by the model ([`ToolCall`] →
/// [`ToolAnswer`]).
pub(crate) const TOOL_CALL: &str = "tool/call";
/// `section/render`: the text of one of its sections for a turn ([`SectionRequest`] →
/// [`SectionAnswer`]).
pub(crate) const SECTION_RENDER: &str = "section/render";
/// `filter/apply`: one of its filters is given a value ([`FilterRequest`] →
/// [`FilterAnswer`]).
pub(crate) const FILTER_APPLY: &str = "filter/apply";
/// `method/call`: a client called one of its RPC methods ([`MethodRequest`] → any result).
pub(crate) const METHOD_CALL: &str = "method/call";
/// `event` (a notification, never answered): a hook it observes was reached.
pub(crate) const EVENT: &str = "event";
/// `shutdown` (a notification, no params): the process is about to be stopped; its stdin
/// closes next, and it has a grace to exit.
pub(crate) const SHUTDOWN: &str = "shutdown";

/// `initialize`'s params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Initialize<'a> {
    pub protocol_version: u32,
    /// The name the configuration gives the plugin.
    pub name: &'a str,
}

/// What a plugin adds, answered to `initialize`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub name: String,
    pub version: String,
    pub tools: Vec<ToolDecl>,
    pub sections: Vec<SectionDecl>,
    /// The hooks it observes, by their AGENT §9.2 names.
    pub observes: Vec<String>,
    pub filters: Vec<FilterDecl>,
    pub methods: Vec<MethodDecl>,
    /// How long a call may take, in ms, unless its declaration file says (at most 10 min).
    pub timeout_ms: Option<u64>,
}

/// A model tool: its tag (and scheme), the doc the model reads, whether its calls change
/// things (then each is proposed to the client first), and the loop flags that exclude it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolDecl {
    pub name: String,
    pub doc: String,
    #[serde(default)]
    pub changes: bool,
    #[serde(default)]
    pub excluded_by: Vec<LoopFlag>,
}

/// A loop flag that excludes a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum LoopFlag {
    /// An `ask` loop (no changes).
    Ask,
    NoWeb,
    NoInteraction,
    NoProposals,
}

/// A packet section: the message it goes in, its priority there and its name (sent back
/// in `section/render`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SectionDecl {
    pub name: String,
    #[serde(default)]
    pub chain: SectionChain,
    #[serde(default = "default_priority")]
    pub priority: i32,
}

/// The message a section goes in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SectionChain {
    #[default]
    System,
    User,
}

/// A filter of one hook at a priority (lower runs first; the bundled ones use 100).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FilterDecl {
    pub hook: String,
    #[serde(default = "default_priority")]
    pub priority: i32,
}

fn default_priority() -> i32 {
    100
}

/// An RPC method clients may call: listed by `discover`, behind the same role check.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MethodDecl {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The least role that may call it.
    #[serde(default = "default_role")]
    pub role: Role,
    /// Param name → informal type and meaning, for `discover`.
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
}

fn default_role() -> Role {
    Role::Member
}

/// Where a run or a project is, as a plugin is told in every message about one: the run's
/// alias (none for a project), the project's name and its root.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Place {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub project: String,
    pub root: String,
}

impl From<&RunPlace> for Place {
    fn from(place: &RunPlace) -> Place {
        Place {
            run: Some(place.alias.clone()),
            project: place.project.clone(),
            root: place.root.display().to_string(),
        }
    }
}

/// `tool/call`'s params: one command of the model's.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCall<'a> {
    pub tool: &'a str,
    #[serde(flatten)]
    pub place: &'a Place,
    pub body: &'a str,
    /// The tag's attributes, as written.
    pub attributes: &'a serde_json::Map<String, Value>,
    /// The model's call waits for a client's approval first: this is the accepted one.
    pub accepted: bool,
}

/// What a tool call came to: a status (200 when left out; ≥ 400 is a failure) and the
/// text the model reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolAnswer {
    #[serde(default = "ok_status")]
    pub status: u16,
    #[serde(default)]
    pub body: String,
}

fn ok_status() -> u16 {
    200
}

/// `section/render`'s params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SectionRequest<'a> {
    pub section: &'a str,
    #[serde(flatten)]
    pub place: &'a Place,
    /// The turn it is shown in.
    pub turn: i32,
}

/// A section's text for the turn ("" shows nothing).
#[derive(Debug, Deserialize)]
pub(crate) struct SectionAnswer {
    #[serde(default)]
    pub text: String,
}

/// `filter/apply`'s params.
#[derive(Debug, Serialize)]
pub(crate) struct FilterRequest<'a> {
    pub hook: &'a str,
    pub value: Value,
    pub context: Value,
}

/// A filter's answer: the value to go on with (left out: unchanged) or, for
/// `entry.recording`, a refusal.
#[derive(Debug, Deserialize)]
pub(crate) struct FilterAnswer {
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub refuse: Option<FilterRefusal>,
}

/// An `entry.recording` filter's refusal: the status (at least 400; 403 when left out)
/// and the message the model reads.
#[derive(Debug, Deserialize)]
pub(crate) struct FilterRefusal {
    #[serde(default = "forbidden")]
    pub status: u16,
    #[serde(default)]
    pub message: String,
}

fn forbidden() -> u16 {
    403
}

/// A run's settings as a `run.config` filter is given them, and answers them (a setting
/// left out of the answer stays as it was; `mode`, `null` for a call that queues no loop,
/// may only become `ask`).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RunSettings {
    pub mode: Option<String>,
    pub model: Option<String>,
    pub temperature: Option<f64>,
    pub context_limit: Option<i64>,
    pub persona: Option<String>,
    pub no_repo: Option<bool>,
    pub no_interaction: Option<bool>,
    pub no_web: Option<bool>,
    pub no_proposals: Option<bool>,
}

impl RunSettings {
    /// What a filter is given of `request`.
    pub(crate) fn of(request: &RunRequest) -> RunSettings {
        RunSettings {
            mode: request.mode.map(|mode| mode.as_str().to_owned()),
            model: Some(request.model.clone()),
            temperature: request.temperature,
            context_limit: request.context_limit,
            persona: request.persona.clone(),
            no_repo: Some(request.no_repo),
            no_interaction: Some(request.no_interaction),
            no_web: Some(request.no_web),
            no_proposals: Some(request.no_proposals),
        }
    }

    /// Writes the settings the answer gives into `request`.
    pub(crate) fn apply_to(self, request: &mut RunRequest) {
        if self.mode.as_deref() == Some("ask") && request.mode.is_some() {
            request.mode = Some(LoopMode::Ask);
        }
        if let Some(model) = self.model {
            request.model = model;
        }
        request.temperature = self.temperature.or(request.temperature);
        request.context_limit = self.context_limit.or(request.context_limit);
        request.persona = self.persona.or(request.persona.take());
        request.no_repo = self.no_repo.unwrap_or(request.no_repo);
        request.no_interaction = self.no_interaction.unwrap_or(request.no_interaction);
        request.no_web = self.no_web.unwrap_or(request.no_web);
        request.no_proposals = self.no_proposals.unwrap_or(request.no_proposals);
    }
}

/// `method/call`'s params.
#[derive(Debug, Serialize)]
pub(crate) struct MethodRequest<'a> {
    pub method: &'a str,
    pub params: Value,
    /// The caller's project (bound with `init`, which such a method needs).
    #[serde(flatten)]
    pub place: &'a Place,
    /// Who calls (`null`: the operator).
    pub person: Option<&'a str>,
}
