//! `<mcp_tools>` (system chain, priority 50, after the instructions): the tools of each MCP
//! server the loop is offered, as the server lists them now: name, description, whether it
//! asks first, and the JSON schema of its arguments (a server that is down lists none).

use std::sync::Arc;

use crate::context::packet::{Bucket, MessageBuilder};
use crate::mcp::server::Server;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// The heading of the section.
const HEADING: &str = include_str!("../plugins/text/mcp/catalogue.md");
/// What a server that lists no tools now shows.
const NOT_CONNECTED: &str = include_str!("../plugins/text/mcp/not_connected.md");

/// Renders `<mcp_tools>`.
pub struct Catalogue {
    pub servers: Vec<Arc<Server>>,
}

impl AssemblyFilter for Catalogue {
    fn priority(&self) -> i32 {
        50
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let offered: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .filter(|server| context.active_tools.contains(&server.tag))
            .collect();
        if offered.is_empty() {
            return;
        }
        message.open_section(Bucket::System);
        message.push(Bucket::System, "<mcp_tools>\n");
        message.push(Bucket::System, HEADING.trim_end());
        for server in offered {
            let tools = server.connection.tools();
            if tools.is_empty() {
                message.push(
                    Bucket::System,
                    &format!("\n\n### <{}>\n{}", server.tag, NOT_CONNECTED.trim_end()),
                );
            }
            for spec in tools.iter() {
                message.count_entry(Bucket::System);
                let asks = if server.asks_first(spec) {
                    " (asks first)"
                } else {
                    ""
                };
                message.push(
                    Bucket::System,
                    &format!(
                        "\n\n### <{} tool=\"{}\">{asks}\n{}\nArguments: {}",
                        server.tag,
                        spec.name,
                        spec.description.trim(),
                        spec.input_schema
                    ),
                );
            }
        }
        message.push(Bucket::System, "\n</mcp_tools>");
    }
}
