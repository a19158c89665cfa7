//! `<mcp_<server> tool="…">{json arguments}</mcp_<server>>`: one model tool per configured
//! server. A call is a result entry `mcp_<server>://turn_N/<tool>` (attributes `tool` and
//! `arguments`) holding what the server answered; a call of a tool without
//! `readOnlyHint: true` on a server that is not trusted is a 202 proposal instead, and the
//! server is called only when the client accepts it. Offered to loops of the projects the
//! server serves, in ask and act mode (ask mode: read-only tools only); while the server
//! is down its calls are 502s. The calls themselves are made before the unit of work
//! (`performed`); the handler and the acceptance record their outcomes.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::models::entry::EntryRow;
use crate::db::queries::entries;
use crate::mcp::performed::{CallKey, CallOutcomes};
use crate::mcp::server::{McpCall, Origin, Plan, Server};
use crate::parser::{AttrValue, Command, TagSpec, TaggedText};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::tools::finish;

/// The doc every server's tag is taught with (`{tag}`, `{server}` filled in).
const DOC: &str = include_str!("../plugins/text/mcp/tool.md");

/// One server's tag.
pub struct McpTool {
    server: Arc<Server>,
    /// Made once per configured server, as the registry takes docs.
    doc: &'static str,
}

impl McpTool {
    /// The tag of `server`.
    pub fn new(server: Arc<Server>) -> McpTool {
        let doc = DOC
            .replace("{tag}", server.tag)
            .replace("{server}", &server.config.name)
            .leak();
        McpTool { server, doc }
    }
}

/// Where the outcome of `call`, made for the reply, waits.
pub fn reply_key(server: &Server, call: &McpCall) -> CallKey {
    CallKey::Reply {
        tag: server.tag.to_owned(),
        server: server.config.name.clone(),
        tool: call.tool.clone(),
        arguments: call.arguments_text(),
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
        if self
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

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        record_accepted(scope, proposal, self.server.config.max_output_bytes)
    }
}

/// Records what the accepted call of `proposal` (made just before, outside the writer)
/// came to, its answer cut to `max_output_bytes`.
pub fn record_accepted(
    scope: &mut ToolScope<'_>,
    proposal: &EntryRow,
    max_output_bytes: usize,
) -> Result<(), ToolError> {
    let key = CallKey::Accepted {
        path: proposal.path.clone(),
    };
    let (status, body) = match CallOutcomes::take(&key) {
        Some(outcome) => (outcome.status(), outcome.body(max_output_bytes)),
        None => (
            EntryStatus::Failed,
            "the accepted call was not made".to_owned(),
        ),
    };
    entries::resolve_entry(
        scope.conn,
        scope.run_id,
        &proposal.path,
        status,
        Some(&body),
    )?;
    Ok(())
}

/// Records `call` of `server` at `result_path` with `attributes`: the outcome of the call
/// made for the reply, or what its plan says (a refusal, a proposal).
pub fn record_call(
    scope: &mut ToolScope<'_>,
    server: &Server,
    call: &McpCall,
    result_path: &str,
    attributes: serde_json::Value,
) -> Result<Handled, ToolError> {
    if let Some(outcome) = CallOutcomes::take(&reply_key(server, call)) {
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

    fn forbids(&self, call: &McpCall, policy: &ToolPolicy) -> Option<String> {
        self.server.forbids(call, policy)
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        call: &McpCall,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let attributes = json!({ "tool": call.tool, "arguments": call.arguments_text() });
        record_call(scope, &self.server, call, result_path, attributes)
    }
}
