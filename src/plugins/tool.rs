//! What a model tool is and does ([`ToolInfo`], [`TypedTool`]), the registry's erased view
//! of it ([`Tool`]), and what a handler works with.
//!
//! A tool declares its scheme (category, visibility), when it is offered (mode and flags),
//! its two views (full and summary), its model-facing doc, and how it runs: lifecycle tools
//! write their entry while the response is recorded; action tools get a recorded result
//! entry and may rewrite it, write other entries, or leave a 202 proposal for the client,
//! whose acceptance side effects the tool also owns.

use std::borrow::Cow;
use std::path::Path;

use crate::db::Conn;
use serde_json::{Map, Value};

use crate::context::view::EntryView;
use crate::db::enums::Category;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::EntryRow;
use crate::parser::{Command, TagSpec};
use crate::plugins::engine::readonly::ReadonlyFiles;
use crate::plugins::gather::{Accepting, Gather, Gathered, Gathering};
use crate::plugins::policy::ToolPolicy;

pub use crate::plugins::error::ToolError;

/// How a tool's scheme is registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemeSpec {
    /// The section its entries render in.
    pub category: Category,
    /// Whether its entries can appear in the model's context at all.
    pub model_visible: bool,
}

impl SchemeSpec {
    /// A visible record of what happened (`<performed>` / `<previous>`).
    pub const LOGGING: SchemeSpec = SchemeSpec::visible(Category::Logging);

    /// A scheme whose entries the model sees, rendered in `category`.
    pub const fn visible(category: Category) -> SchemeSpec {
        SchemeSpec {
            category,
            model_visible: true,
        }
    }
}

/// When a tool's commands run relative to the others of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// A state declaration (`known`, `unknown`, `summarize`, `update`): always applied, never
    /// cancelled by an earlier failure.
    Lifecycle,
    /// Runs in order; a proposal or failure stops the actions after it.
    Action,
    /// Reasoning (`think`, and the legacy `thought` and `mcp`): recorded as written, never
    /// executed, never offered.
    Reasoning,
}

/// What a tool's commands do, for the rules that judge a turn (is it still investigating,
/// did it act, did it only take notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolEffect {
    /// Reads entries, the project or the web (`get`, `env`, `search`).
    Reads,
    /// Changes entries or files, or runs commands with side effects (`set`, `rm`, `sh`,
    /// `mv`, `cp`).
    Changes,
    /// Asks the user (`ask_user`).
    Asks,
    /// Ends or continues the loop (`summarize`, `update`).
    Signals,
    /// Takes notes or reasons (`known`, `unknown`, `think`).
    Notes,
}

impl ToolEffect {
    /// Whether a turn using it is still finding things out (it is not healed into a final
    /// answer).
    pub fn investigates(self) -> bool {
        matches!(self, ToolEffect::Reads | ToolEffect::Asks)
    }
}

/// What an action's target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// An entry or file path (or pattern): checked for length, control characters and
    /// escapes from the project.
    Path,
    /// Free text (a command line, a question, a query).
    Text,
}

/// Whether a policy lets the model use a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Availability {
    /// Documented and executed.
    Offered,
    /// Neither documented nor executed; an emitted command is recorded as 403.
    Excluded,
    /// Recorded as written but never documented (`think`).
    Unlisted,
}

/// Limits the handlers enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSettings {
    /// Characters per token (`RUMMY_TOKEN_DIVISOR`).
    pub token_divisor: u32,
    /// Largest `<known>` body accepted, in tokens; larger ones are refused with 413.
    pub max_entry_tokens: i32,
    /// Commands of one reply that run; the rest are refused with one 429 entry.
    pub max_commands: usize,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            token_divisor: crate::db::DEFAULT_TOKEN_DIVISOR,
            max_entry_tokens: 500,
            max_commands: 100,
        }
    }
}

/// Everything a handler works with: the writer connection (inside the dispatch
/// transaction) and the turn being dispatched.
pub struct ToolScope<'a> {
    /// The DB writer's connection.
    pub conn: &'a mut Conn,
    pub run_id: RunId,
    /// The loop, `None` for client calls.
    pub loop_id: Option<LoopId>,
    /// The turn number entries are written at.
    pub turn: i32,
    /// Mode and flags of the loop.
    pub policy: ToolPolicy,
    /// The project's source root: file paths must stay under it.
    pub project_root: &'a Path,
    /// Limits.
    pub settings: ToolSettings,
    /// Where accepted file changes are applied by the server (`RUMMY_APPLY_EDITS=server`);
    /// `None` when the client applies them.
    pub disk_root: Option<&'a Path>,
    /// The project files no tool may change.
    pub readonly: &'a ReadonlyFiles,
    /// What the tools' gather halves obtained for this unit.
    pub gathered: &'a mut Gathered,
}

impl ToolScope<'_> {
    /// What the gather half of the tool named `tool` obtained for this unit; `None` when it
    /// obtained nothing (a client's call, a command it did not take) or not a `T`.
    pub fn gathered<T: std::any::Any>(&mut self, tool: &str) -> Option<&mut T> {
        self.gathered.of(tool)
    }
}

/// Where a command's outcome lives: its status there decides whether later actions run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// The entry holding the outcome (the result path, or `set://<file>` for file edits).
    pub path: String,
}

impl Handled {
    /// The outcome is at `path`.
    pub fn at(path: impl Into<String>) -> Handled {
        Handled { path: path.into() }
    }
}

/// A tool call from a client (the RPC tool-dispatch methods).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientCall {
    /// The path (or command, or question) the call targets.
    pub path: String,
    /// The body, when given.
    pub body: Option<String>,
    /// The destination of `cp`/`mv`.
    pub to: Option<String>,
    /// Extra tool attributes (`fidelity`, `command`, `summary` ...).
    pub attributes: Map<String, Value>,
}

impl ClientCall {
    /// A string attribute.
    pub fn attribute(&self, name: &str) -> Option<String> {
        match self.attributes.get(name) {
            Some(Value::String(text)) if !text.is_empty() => Some(text.clone()),
            Some(Value::Number(number)) => Some(number.to_string()),
            _ => None,
        }
    }

    /// Whether a boolean attribute is set (`preview`).
    pub fn flag(&self, name: &str) -> bool {
        match self.attributes.get(name) {
            Some(Value::Bool(flag)) => *flag,
            Some(Value::String(text)) => text != "false",
            Some(Value::Null) | None => false,
            Some(_) => true,
        }
    }

    /// A numeric attribute (`line`, `limit`).
    pub fn number(&self, name: &str) -> Option<u64> {
        match self.attributes.get(name) {
            Some(Value::Number(number)) => number.as_u64(),
            Some(Value::String(text)) => text.trim().parse().ok(),
            _ => None,
        }
    }
}

/// What a model tool is, apart from its commands: its name and scheme, when it is offered,
/// what the model reads about it and of its entries, how a client calls it, and what
/// accepting one of its proposals does. Implementations live in `plugins/bundled/tools/`, one file
/// each, beside their [`TypedTool`] impl.
pub trait ToolInfo: Send + Sync {
    /// The tag name and scheme.
    fn name(&self) -> &'static str;

    /// How the scheme is registered.
    fn scheme(&self) -> SchemeSpec {
        SchemeSpec::LOGGING
    }

    /// When its commands run.
    fn kind(&self) -> ToolKind {
        ToolKind::Action
    }

    /// Whether the loop's mode and flags allow it (offered in every mode unless the tool
    /// says otherwise).
    fn availability(&self, _policy: &ToolPolicy) -> Availability {
        Availability::Offered
    }

    /// Why `policy` excludes it beyond the loop's mode and flags, told to a model that used
    /// it anyway (`search`: no search backend); `None` when nothing else does.
    fn excluded_because(&self, _policy: &ToolPolicy) -> Option<&'static str> {
        None
    }

    /// What its commands do.
    fn effect(&self) -> ToolEffect {
        ToolEffect::Notes
    }

    /// Whether its entries' paths are made of the model's words (a slug of the text, as an
    /// `update`'s): a plugin process's events then name such an entry by scheme, turn and id,
    /// never by its path.
    fn paths_are_words(&self) -> bool {
        false
    }

    /// Whether its commands can become proposals the client resolves.
    fn proposes(&self) -> bool {
        false
    }

    /// The command line one of its proposals runs (`body` and `attributes` the proposal's),
    /// for a tool whose proposals are shell commands: what a person's command rules
    /// ("allow always", `agent::allow`) are matched against. `None` (the default) for any
    /// other tool, whose proposals no rule allows.
    fn command_line(&self, _body: &str, _attributes: &Map<String, Value>) -> Option<String> {
        None
    }

    /// Whether an accepted proposal keeps the body it was proposed with (the file content
    /// an edit started from) instead of taking the client's output.
    fn keeps_proposed_body(&self) -> bool {
        false
    }

    /// Whether an `error` resolution still runs its acceptance (a question can be answered
    /// with an error: the output is the user's answer).
    fn accepts_on_error(&self) -> bool {
        false
    }

    /// What the parser needs to know of its tag beyond the name: the registry declares the
    /// parser's tags from these.
    fn tag(&self) -> TagSpec {
        TagSpec::BODY
    }

    /// The model-facing documentation.
    fn doc(&self) -> &'static str;

    /// The entry at full fidelity.
    fn full_view(&self, entry: &EntryView<'_>) -> String;

    /// The entry at summary fidelity ("" falls back to the summary attribute).
    fn summary_view(&self, _entry: &EntryView<'_>) -> String {
        String::new()
    }

    /// The command a client call stands for.
    fn command_from_call(&self, call: &ClientCall) -> Command;

    /// Whether the target names a path or is free text.
    fn target_kind(&self) -> TargetKind {
        TargetKind::Path
    }

    /// What accepting `proposal` needs from outside the store (an MCP server's answer),
    /// obtained before the unit of work that resolves it; [`ToolInfo::accept`] finds it in
    /// its scope. `None` (the default) when accepting needs nothing.
    fn gather_acceptance<'a>(&'a self, _accepting: &'a Accepting<'a>) -> Option<Gather<'a>> {
        None
    }

    /// Side effects of accepting one of its proposals (the entry is already resolved).
    fn accept(
        &self,
        _scope: &mut ToolScope<'_>,
        _proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        Ok(())
    }
}

/// A model tool over its own command type: what it does with its commands. The registry
/// holds every tool as a [`Tool`], which erases the type once, here.
pub trait TypedTool: ToolInfo {
    /// The command shape it handles.
    type Input: Clone;

    /// Its own command in a parsed one (borrowed from a typed command, built from a generic
    /// [`Command::Other`]); `None` for another tool's.
    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Self::Input>>;

    /// The text an action's result path is named after (path, command, question).
    fn target(&self, _input: &Self::Input) -> String {
        String::new()
    }

    /// Why the policy forbids this particular command although the tool is offered (ask
    /// and panic mode may not change files); `None` when allowed.
    fn forbids(&self, _input: &Self::Input, _policy: &ToolPolicy) -> Option<String> {
        None
    }

    /// Whether this command adds to the pending proposal at `proposal` (made earlier in
    /// the same response) instead of acting anew, so that proposal does not stop it: more
    /// edits of the same file join its `set://<file>` proposal.
    fn amends(&self, _input: &Self::Input, _proposal: &str) -> bool {
        false
    }

    /// Its gather half: what `inputs` (its commands of one reply that the policy allows, in
    /// reply order) need from outside the store (the network, a model, a process), obtained
    /// before the unit of work that records them; the handler finds it in its scope
    /// ([`ToolScope::gathered`]). The half orders its commands, bounds their concurrency
    /// and stops when `at.cancel` is cancelled. `None` (the default) when its commands
    /// need nothing.
    fn gather<'a>(
        &'a self,
        _at: &'a Gathering<'a>,
        _inputs: Vec<Cow<'a, Self::Input>>,
    ) -> Option<Gather<'a>> {
        None
    }

    /// Lifecycle tools: write the entry while the response is recorded; `None` when the
    /// command is dropped (an empty fact, a duplicate question).
    fn record(
        &self,
        _scope: &mut ToolScope<'_>,
        _input: &Self::Input,
    ) -> Result<Option<Handled>, ToolError> {
        Ok(None)
    }

    /// Action tools: run the command whose result entry was recorded at `result_path`.
    fn handle(
        &self,
        _scope: &mut ToolScope<'_>,
        _input: &Self::Input,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        Ok(Handled::at(result_path))
    }
}

/// A model tool as the registry holds it: its commands arrive as parsed, and another tool's
/// command is an error (dispatch never hands one over).
pub trait Tool: ToolInfo {
    /// See [`TypedTool::target`]; "" for another tool's command.
    fn target(&self, command: &Command) -> String;

    /// See [`TypedTool::forbids`].
    fn forbids(&self, command: &Command, policy: &ToolPolicy) -> Option<String>;

    /// See [`TypedTool::amends`].
    fn amends(&self, command: &Command, proposal: &str) -> bool;

    /// See [`TypedTool::gather`]; `None` when none of `commands` is its.
    fn gather<'a>(&'a self, at: &'a Gathering<'a>, commands: &[&'a Command]) -> Option<Gather<'a>>;

    /// See [`TypedTool::record`].
    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
    ) -> Result<Option<Handled>, ToolError>;

    /// See [`TypedTool::handle`].
    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
        result_path: &str,
    ) -> Result<Handled, ToolError>;
}

impl<T: TypedTool> Tool for T {
    fn target(&self, command: &Command) -> String {
        self.input(command)
            .map(|input| TypedTool::target(self, &input))
            .unwrap_or_default()
    }

    fn forbids(&self, command: &Command, policy: &ToolPolicy) -> Option<String> {
        let input = self.input(command)?;
        TypedTool::forbids(self, &input, policy)
    }

    fn amends(&self, command: &Command, proposal: &str) -> bool {
        self.input(command)
            .is_some_and(|input| TypedTool::amends(self, &input, proposal))
    }

    fn gather<'a>(&'a self, at: &'a Gathering<'a>, commands: &[&'a Command]) -> Option<Gather<'a>> {
        let inputs: Vec<_> = commands
            .iter()
            .filter_map(|command| self.input(command))
            .collect();
        if inputs.is_empty() {
            return None;
        }
        TypedTool::gather(self, at, inputs)
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
    ) -> Result<Option<Handled>, ToolError> {
        let input = self.input(command).ok_or_else(|| mismatched(self.name()))?;
        TypedTool::record(self, scope, &input)
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let input = self.input(command).ok_or_else(|| mismatched(self.name()))?;
        TypedTool::handle(self, scope, &input, result_path)
    }
}

/// The error for a command of another tool.
fn mismatched(tool: &str) -> ToolError {
    ToolError::InvalidParams(format!("{tool} was handed another tool's command"))
}
