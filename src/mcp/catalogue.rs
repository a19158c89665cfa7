//! `<mcp_tools>` (system chain, priority 50, after the instructions): the tools of each MCP
//! server the loop is offered (the configured ones of its project, then those a client
//! attached to its run), as the server lists them now: name, description, whether it asks
//! first, and the JSON schema of its arguments (a server that is down lists none). A server
//! that takes each person's own credential lists the tools of the run's starter's
//! connection, or says why the run has none.

use std::sync::Arc;

use crate::context::packet::{Bucket, MessageBuilder};
use crate::mcp::server::Server;
use crate::mcp::McpServers;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// The heading of the section.
const HEADING: &str = include_str!("../plugins/text/mcp/catalogue.md");
/// One tool (`{address}`, `{tool}`, `{asks}`, `{description}`, `{schema}` filled in).
const TOOL: &str = include_str!("../plugins/text/mcp/catalogue_tool.md");
/// `{asks}` of a tool that waits for the client's approval.
const ASKS_FIRST: &str = include_str!("../plugins/text/mcp/asks_first.md");
/// What a server that lists no tools now shows (`{address}` filled in).
const NOT_CONNECTED: &str = include_str!("../plugins/text/mcp/not_connected.md");
/// What a server the run reaches on no connection of its starter's shows (`{address}`).
const NO_CREDENTIAL: &str = include_str!("../plugins/text/mcp/no_credential.md");

/// Renders `<mcp_tools>`.
pub(super) struct Catalogue {
    /// The configured servers (those added since the start too) and those attached.
    pub servers: McpServers,
}

impl AssemblyFilter for Catalogue {
    fn priority(&self) -> i32 {
        50
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let running = self.servers.running();
        let attached = self.servers.attached.of(context.input.run);
        let offered: Vec<&Arc<Server>> = running
            .iter()
            .chain(&attached)
            .filter(|server| context.active_tools.contains(&server.tag))
            .collect();
        if offered.is_empty() {
            return;
        }
        message.open_section(Bucket::System);
        message.push(Bucket::System, "<mcp_tools>\n");
        message.push(Bucket::System, HEADING.trim_end());
        for offered in offered {
            let own;
            let server = if offered.config.personal.is_some() {
                match self.servers.personal.session(context.input.run, offered) {
                    Ok(session) => {
                        own = session;
                        &own
                    }
                    Err(_) => {
                        let text = NO_CREDENTIAL.replace("{address}", &offered.address());
                        message.push(Bucket::System, "\n\n");
                        message.push(Bucket::System, text.trim_end());
                        continue;
                    }
                }
            } else {
                offered
            };
            let tools = server.connection.tools();
            if tools.is_empty() {
                let text = NOT_CONNECTED.replace("{address}", &server.address());
                message.push(Bucket::System, "\n\n");
                message.push(Bucket::System, text.trim_end());
            }
            for spec in tools.iter() {
                message.count_entry(Bucket::System);
                let asks = if server.asks_first(spec) {
                    ASKS_FIRST.trim_end()
                } else {
                    ""
                };
                let text = TOOL
                    .replace("{address}", &server.address())
                    .replace("{tool}", &spec.name)
                    .replace("{asks}", asks)
                    .replace("{schema}", &spec.input_schema.to_string())
                    .replace("{description}", spec.description.trim());
                message.push(Bucket::System, "\n\n");
                message.push(Bucket::System, text.trim_end());
            }
        }
        message.push(Bucket::System, "\n</mcp_tools>");
    }
}
