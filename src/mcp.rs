//! MCP servers as tools: the servers of `$RUMMY_HOME/mcp.toml` ([`config`]), each kept
//! connected by a task of its own (`connection`), each a model tool with its own tag
//! (`tool`, `server`) whose tools the packet lists (`catalogue`).
//!
//! A tool handler runs on the DB writer and never waits on a server: the calls a reply
//! makes at once (read-only tools, or any tool of a trusted server) are made by
//! [`McpServers::perform`] before the reply's commands are dispatched, in order, and the
//! call of an accepted proposal by [`McpServers::perform_accepted`] before the resolution;
//! their outcomes ([`CallOutcomes`]) go with the unit of work, where the handler or the
//! acceptance records them.
//! A call the dispatch then cancels (an earlier command of the reply stopped it) has been
//! made, and is recorded as cancelled.

mod catalogue;
pub mod config;
mod connection;
mod outcome;
mod performed;
mod server;
mod tool;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::db::enums::EntryStatus;
use crate::db::ids::RunId;
use crate::db::queries::entries;
use crate::db::{DbError, DbHandle};
use crate::parser::Command;
use crate::plugins::assembly::Chain;
use crate::plugins::plugin::{Plugin, Registrar};
use crate::plugins::policy::{McpServerSet, ToolPolicy};
use connection::Link;
use outcome::CallOutcome;
use performed::CallKey;
pub use performed::CallOutcomes;
use server::{parse_arguments, McpCall, Plan, Server};
use tool::{reply_key, McpTool};

/// The configured servers. Cheap to clone; dropping the last clone stops their tasks.
#[derive(Clone, Default)]
pub struct McpServers {
    servers: Arc<[Arc<Server>]>,
}

impl McpServers {
    /// Starts connecting to each of `configs` (on the current runtime; nothing waits).
    pub fn start(configs: Vec<config::ServerConfig>) -> McpServers {
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .enumerate()
            .map(|(index, config)| Arc::new(Server::start(index, config)))
            .collect();
        McpServers {
            servers: servers.into(),
        }
    }

    /// The plugin that offers these servers to the model: one tool per server, and the
    /// `<mcp_tools>` section listing their tools.
    pub fn plugin(&self) -> McpPlugin {
        McpPlugin(self.clone())
    }

    /// The servers whose tools loops of `project` are offered.
    pub fn enabled_for(&self, project: &str) -> McpServerSet {
        self.servers
            .iter()
            .filter(|server| server.config.serves(project))
            .fold(McpServerSet::NONE, |set, server| set.with(server.index))
    }

    /// Makes the calls of `commands` (one reply) that run at once, in order, each within its
    /// server's timeout; an abort (`cancel`) stops them.
    pub async fn perform(
        &self,
        policy: &ToolPolicy,
        commands: &[Command],
        cancel: &CancellationToken,
    ) -> CallOutcomes {
        let mut performed = CallOutcomes::default();
        for command in commands {
            let Some((server, call)) = self.call_of(command) else {
                continue;
            };
            let direct = server.offered(policy)
                && server.forbids(&call, policy).is_none()
                && server.plan(&call) == Plan::Direct;
            if !direct {
                continue;
            }
            let outcome = server.call(&call, cancel).await;
            if outcome == CallOutcome::Cancelled {
                break;
            }
            performed.put(reply_key(server, &call), outcome);
        }
        performed
    }

    /// Makes the call of the proposal at `path` of `run` when the client accepts it (a
    /// path that is no pending MCP call makes none, and the resolution says why).
    pub async fn perform_accepted(
        &self,
        db: &DbHandle,
        run: RunId,
        path: &str,
    ) -> Result<CallOutcomes, DbError> {
        let mut performed = CallOutcomes::default();
        let scheme = path.split_once("://").map_or("", |(scheme, _)| scheme);
        let Some(server) = self.servers.iter().find(|server| server.tag == scheme) else {
            return Ok(performed);
        };
        let owned = path.to_owned();
        let Some(proposal) = db
            .read(move |conn| entries::get_entry(conn, run, &owned))
            .await?
            .filter(|entry| entry.status == EntryStatus::Proposed)
        else {
            return Ok(performed);
        };
        let attributes: Value = serde_json::from_str(&proposal.attributes).unwrap_or_default();
        let text = |name: &str| {
            attributes
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let call = McpCall {
            tool: text("tool"),
            arguments: parse_arguments(&text("arguments")),
        };
        let outcome = server.call(&call, &CancellationToken::new()).await;
        performed.put(
            CallKey::Accepted {
                path: path.to_owned(),
            },
            outcome,
        );
        Ok(performed)
    }

    /// Every server, what it serves and the tools it lists now, for clients; whether loops
    /// of `project` are offered them.
    pub fn describe(&self, project: &str) -> Vec<ServerView> {
        self.servers
            .iter()
            .map(|server| {
                let (connected, error) = match server.connection.link() {
                    Link::Up { .. } => (true, None),
                    Link::Connecting => (false, None),
                    Link::Down { reason } => (false, Some(reason)),
                };
                ServerView {
                    name: server.config.name.clone(),
                    tag: server.tag,
                    transport: server.config.transport.kind(),
                    trusted: server.config.trusted,
                    projects: server.config.projects.written().to_vec(),
                    enabled: server.config.serves(project),
                    connected,
                    error,
                    tools: server
                        .connection
                        .tools()
                        .iter()
                        .map(|spec| ToolView {
                            name: spec.name.clone(),
                            description: spec.description.clone(),
                            input_schema: spec.input_schema.clone(),
                            read_only: spec.read_only,
                            asks_first: server.asks_first(spec),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// The server `command` is written to, and its call.
    fn call_of(&self, command: &Command) -> Option<(&Server, McpCall)> {
        self.servers
            .iter()
            .find_map(|server| Some((server.as_ref(), server.call_of(command)?)))
    }
}

/// One server as `getMcpServers` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub name: String,
    /// The model's tag and the scheme of its entries.
    pub tag: &'static str,
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub trusted: bool,
    /// The project names or globs it serves.
    pub projects: Vec<String>,
    /// Whether the connection's project is one of them.
    pub enabled: bool,
    pub connected: bool,
    /// Why it is not connected, when it failed.
    pub error: Option<String>,
    pub tools: Vec<ToolView>,
}

/// One tool as `getMcpServers` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    /// A call waits for the client's approval.
    pub asks_first: bool,
}

/// The MCP servers as a plugin (`mcp_servers`: disabling it offers none of them).
pub struct McpPlugin(McpServers);

impl Plugin for McpPlugin {
    fn name(&self) -> &'static str {
        "mcp_servers"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        let McpServers { servers } = self.0;
        for server in servers.iter() {
            registrar.tool(McpTool::new(Arc::clone(server)));
        }
        registrar.section(
            Chain::System,
            catalogue::Catalogue {
                servers: servers.to_vec(),
            },
        );
    }
}
