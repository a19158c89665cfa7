//! `<mcp_<server> tool="…">{json arguments}</mcp_<server>>`: one model tool per configured
//! server. A call is a result entry `mcp_<server>://turn_N/<tool>` (attributes `tool` and
//! `arguments`) holding what the server answered; a call of a tool without
//! `readOnlyHint: true` on a server that is not trusted is a 202 proposal instead, and the
//! server is called only when the client accepts it. Offered to loops of the projects the
//! server serves, in ask and act mode (ask mode: read-only tools only); while the server
//! is down its calls are 502s. The calls themselves are made by its gather halves, before
//! the unit of work (`performed`); the handler and the acceptance record their outcomes.
//! A server that takes each person's own credential is reached on the connection of the
//! run's starter (`personal`), and its calls from a run without one are refused (403).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::ids::RunId;
use crate::db::models::entry::EntryRow;
use crate::mcp::outcome::CallOutcome;
use crate::mcp::performed::{accepted_call, gather_direct, CallKey, CallOutcomes};
use crate::mcp::personal::PersonalSessions;
use crate::mcp::server::{McpCall, Origin, Plan, Server};
use crate::parser::{AttrValue, Command, TagSpec, TaggedText};
use crate::plugins::gather::{Accepting, Gather, Gathering};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::writes::finish;
use crate::plugins::writes::resolve_accepted;

/// The doc every server's tag is taught with (`{tag}`, `{server}` filled in).
const DOC: &str = include_str!("../plugins/text/mcp/tool.md");

/// One server's tag.
pub(super) struct McpTool {
    server: Arc<Server>,
    /// The people's connections, for a server that takes each person's own credential.
    personal: Arc<PersonalSessions>,
    /// Made once per configured server, as the registry takes docs.
    doc: &'static str,
}

impl McpTool {
    /// The tag of `server`.
    pub(super) fn new(server: Arc<Server>, personal: Arc<PersonalSessions>) -> McpTool {
        let doc = DOC
            .replace("{tag}", server.tag)
            .replace("{server}", &server.config.name)
            .leak();
        McpTool {
            server,
            personal,
            doc,
        }
    }

    /// Whether each person reaches the server with their own credential.
    fn is_personal(&self) -> bool {
        self.server.config.personal.is_some()
    }

    /// The connection `run`'s calls reach the server on, or why they reach none.
    fn reached(&self, run: RunId) -> Result<Arc<Server>, String> {
        if self.is_personal() {
            self.personal.session(run, &self.server)
        } else {
            Ok(Arc::clone(&self.server))
        }
    }
}

impl ToolInfo for McpTool {
    fn name(&self) -> &'static str {
        self.server.tag
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if self.server.offered(policy) {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn excluded_because(&self, policy: &ToolPolicy) -> Option<&'static str> {
        let enabled = matches!(
            self.server.origin,
            Origin::Configured { index } if policy.mcp_servers.contains(index)
        );
        (!enabled).then_some("this MCP server is not enabled for this project")
    }

    fn effect(&self) -> ToolEffect {
        if !self.is_personal()
            && self
                .server
                .connection
                .tools()
                .iter()
                .all(|spec| spec.read_only)
        {
            ToolEffect::Reads
        } else {
            ToolEffect::Changes
        }
    }

    fn proposes(&self) -> bool {
        !self.server.config.trusted
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["tool", "body"],
        }
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let tool = entry.attribute("tool").unwrap_or_default();
        let arguments = entry.attribute("arguments").unwrap_or_default();
        format!("# {} {tool} {arguments}\n{}", self.server.tag, entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("tool").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Other {
            name: self.server.tag.to_owned(),
            content: TaggedText {
                body: call.body.clone().unwrap_or_default(),
                attributes: vec![("tool".to_owned(), AttrValue::Text(call.path.clone()))],
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn gather_acceptance<'a>(&'a self, accepting: &'a Accepting<'a>) -> Option<Gather<'a>> {
        let call = accepted_call(accepting.proposal);
        let run = accepting.proposal.run_id;
        Some(Gather::of(async move {
            let reached = if self.is_personal() {
                self.personal.reopened(run, &self.server).await
            } else {
                Ok(Arc::clone(&self.server))
            };
            match reached {
                Ok(server) => server.call(&call, &CancellationToken::new()).await,
                Err(reason) => CallOutcome::Refused(reason),
            }
        }))
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let max_output_bytes = self.server.config.max_output_bytes;
        record_accepted(scope, self.server.tag, proposal, max_output_bytes)
    }
}

/// Records what the accepted call of `proposal` (made just before by `tool`'s gather half,
/// outside the writer) came to, its answer cut to `max_output_bytes`.
pub(super) fn record_accepted(
    scope: &mut ToolScope<'_>,
    tool: &str,
    proposal: &EntryRow,
    max_output_bytes: usize,
) -> Result<(), ToolError> {
    let made = scope
        .gathered::<CallOutcome>(tool)
        .map(|outcome| (outcome.status(), outcome.body(max_output_bytes)));
    resolve_accepted(scope, proposal, made)
}

/// Records `call` of `server` at `result_path` with `attributes`: the outcome of the call
/// `tool`'s gather half made for the reply, or what its plan says (a refusal, a proposal).
pub(super) fn record_call(
    scope: &mut ToolScope<'_>,
    tool: &str,
    (server, call): (&Server, &McpCall),
    result_path: &str,
    attributes: serde_json::Value,
) -> Result<Handled, ToolError> {
    let made = scope
        .gathered::<CallOutcomes>(tool)
        .and_then(|outcomes| outcomes.take(&CallKey::of(server, call)));
    if let Some(outcome) = made {
        let body = outcome.body(server.config.max_output_bytes);
        return finish(
            scope,
            result_path,
            outcome.status(),
            &body,
            Some(attributes),
        );
    }
    let (status, body) = match server.plan(call) {
        Plan::Refused(status, message) => (status, message),
        Plan::Proposed => (EntryStatus::Proposed, call.arguments_text()),
        Plan::Direct => (
            EntryStatus::Failed,
            "MCP tools are called from a loop's replies only".to_owned(),
        ),
    };
    finish(scope, result_path, status, &body, Some(attributes))
}

impl TypedTool for McpTool {
    type Input = McpCall;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, McpCall>> {
        self.server.call_of(command).map(Cow::Owned)
    }

    fn target(&self, call: &McpCall) -> String {
        call.tool.clone()
    }

    /// A personal server's refusals depend on the run's connection: its gather half and
    /// handler check them.
    fn forbids(&self, call: &McpCall, policy: &ToolPolicy) -> Option<String> {
        if self.is_personal() {
            return None;
        }
        self.server.forbids(call, policy)
    }

    /// Makes the reply's calls that run at once, in order (a loop's replies only), on the
    /// run's connection.
    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, McpCall>>,
    ) -> Option<Gather<'a>> {
        let server = self.reached(at.run).ok()?;
        let calls = inputs
            .into_iter()
            .filter(|call| server.forbids(call, at.policy).is_none())
            .map(|call| (Arc::clone(&server), call.into_owned()));
        gather_direct(at, calls)
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        call: &McpCall,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let attributes = json!({ "tool": call.tool, "arguments": call.arguments_text() });
        let tool = self.server.tag;
        let refused = |scope: &mut ToolScope<'_>, message: &str| {
            let attributes = Some(attributes.clone());
            finish(
                scope,
                result_path,
                EntryStatus::Forbidden,
                message,
                attributes,
            )
        };
        let server = match self.reached(scope.run_id) {
            Ok(server) => server,
            Err(message) => return refused(scope, &message),
        };
        if self.is_personal() {
            if let Some(message) = server.forbids(call, &scope.policy) {
                return refused(scope, &message);
            }
        }
        record_call(scope, tool, (&server, call), result_path, attributes)
    }
}
