//! `<mcp server="…" tool="…">{json arguments}</mcp>`: the one tag of the servers clients
//! attached to the run ([`Attached`]). A call is a result entry
//! `mcp://turn_N/<server>/<tool>` (attributes `server`, `tool`, `arguments`) holding what
//! the server answered; a call of a changing tool (none is trusted) is a 202 proposal, and
//! the server is called when the client accepts it. Offered to the loops of runs with a
//! server attached, in ask and act mode (ask mode: read-only tools only); a server the run
//! does not have is a 404.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::db::models::entry::EntryRow;
use crate::mcp::attached::Attached;
use crate::mcp::config::default_max_output_bytes;
use crate::mcp::outcome::CallOutcome;
use crate::mcp::performed::{accepted_call, gather_direct};
use crate::mcp::server::{parse_call, server_name, McpCall, CLIENT_TAG};
use crate::mcp::tool::{record_accepted, record_call};
use crate::parser::{AttrValue, Command, TagSpec, TaggedText};
use crate::plugins::bundled::tools::fail;
use crate::plugins::gather::{Accepting, Gather, Gathering};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};

/// The tag's doc.
const DOC: &str = include_str!("../plugins/text/mcp/client_tool.md");

/// A call written to a client's server: the server's name and the call.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ClientMcpCall {
    pub server: String,
    pub call: McpCall,
}

/// The tag of the servers clients attached.
pub(super) struct ClientMcpTool {
    pub attached: Arc<Attached>,
}

impl ToolInfo for ClientMcpTool {
    fn name(&self) -> &'static str {
        CLIENT_TAG
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.client_mcp && policy.optional_tools && policy.mode != LoopMode::Panic {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn excluded_because(&self, policy: &ToolPolicy) -> Option<&'static str> {
        (!policy.client_mcp).then_some("no MCP server is attached to this run")
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Changes
    }

    fn proposes(&self) -> bool {
        true
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["server", "tool", "body"],
        }
    }

    fn doc(&self) -> &'static str {
        DOC
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let server = entry.attribute("server").unwrap_or_default();
        let tool = entry.attribute("tool").unwrap_or_default();
        let arguments = entry.attribute("arguments").unwrap_or_default();
        format!("# {CLIENT_TAG} {server} {tool} {arguments}\n{}", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        let server = entry.attribute("server").unwrap_or_default();
        let tool = entry.attribute("tool").unwrap_or_default();
        format!("{server}/{tool}")
    }

    /// A client names the call `<server>/<tool>` as its path.
    fn command_from_call(&self, call: &ClientCall) -> Command {
        let (server, tool) = call.path.split_once('/').unwrap_or(("", &call.path));
        Command::Other {
            name: CLIENT_TAG.to_owned(),
            content: TaggedText {
                body: call.body.clone().unwrap_or_default(),
                attributes: vec![
                    ("server".to_owned(), AttrValue::Text(server.to_owned())),
                    ("tool".to_owned(), AttrValue::Text(tool.to_owned())),
                ],
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    /// Calls the proposal's server, if it is still attached to the run.
    fn gather_acceptance<'a>(&'a self, accepting: &'a Accepting<'a>) -> Option<Gather<'a>> {
        let proposal = accepting.proposal;
        let name = proposal.attributes.text("server").unwrap_or_default();
        let server = self
            .attached
            .of(proposal.run_id)
            .into_iter()
            .find(|server| server.config.name == name);
        let call = accepted_call(proposal);
        Some(Gather::of(async move {
            match server {
                Some(server) => server.call(&call, &CancellationToken::new()).await,
                None => CallOutcome::Gone("its server is no longer attached to this run".into()),
            }
        }))
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        record_accepted(scope, CLIENT_TAG, proposal, default_max_output_bytes())
    }
}

impl TypedTool for ClientMcpTool {
    type Input = ClientMcpCall;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, ClientMcpCall>> {
        match command {
            Command::Other { name, content } if name == CLIENT_TAG => {
                Some(Cow::Owned(ClientMcpCall {
                    server: server_name(content),
                    call: parse_call(content),
                }))
            }
            _ => None,
        }
    }

    fn target(&self, input: &ClientMcpCall) -> String {
        format!("{}/{}", input.server, input.call.tool)
    }

    /// Makes the reply's calls that run at once, each to its attached server, in order (a
    /// loop's replies only).
    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, ClientMcpCall>>,
    ) -> Option<Gather<'a>> {
        let attached = self.attached.of(at.run);
        let calls = inputs.into_iter().filter_map(|input| {
            let server = attached
                .iter()
                .find(|server| server.config.name == input.server)?;
            let allowed = server.forbids(&input.call, at.policy).is_none();
            allowed.then(|| (Arc::clone(server), input.into_owned().call))
        });
        gather_direct(at, calls)
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        input: &ClientMcpCall,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let attached = self.attached.of(scope.run_id);
        let Some(server) = attached
            .iter()
            .find(|server| server.config.name == input.server)
        else {
            let names: Vec<&str> = attached
                .iter()
                .map(|server| server.config.name.as_str())
                .collect();
            let message = format!(
                "no MCP server {:?} is attached to this run; its servers: {}",
                input.server,
                names.join(", ")
            );
            return fail(scope, result_path, EntryStatus::NotFound, &message);
        };
        if let Some(message) = server.forbids(&input.call, &scope.policy) {
            return fail(scope, result_path, EntryStatus::Forbidden, &message);
        }
        let attributes = json!({
            "server": input.server,
            "tool": input.call.tool,
            "arguments": input.call.arguments_text(),
        });
        record_call(
            scope,
            CLIENT_TAG,
            (server, &input.call),
            result_path,
            attributes,
        )
    }
}
