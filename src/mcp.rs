//! MCP servers as tools: the servers of `$RUMMY_HOME/mcp.toml` ([`config`]), each kept
//! connected by a task of its own (`connection`), each a model tool with its own tag
//! (`tool`, `server`) whose tools the packet lists (`catalogue`); and the servers clients
//! attach to a run ([`attached`]), all under one tag (`client_tool`). A configured server
//! that takes each person's own credential has no connection of its own: each person's
//! runs reach it on that person's connection ([`personal`]).
//!
//! A tool handler runs on the DB writer and never waits on a server: the calls a reply
//! makes at once (read-only tools, or any tool of a trusted server) are made by the server
//! tool's gather half before the reply's commands are dispatched, in order, and the call of
//! an accepted proposal by its acceptance's half before the resolution (`performed`); their
//! outcomes go with the unit of work, where the handler or the acceptance records them.
//! A call the dispatch then cancels (an earlier command of the reply stopped it) has been
//! made, and is recorded as cancelled.

pub(crate) mod attached;
mod catalogue;
pub(crate) mod changes;
mod client_tool;
pub(crate) mod config;
mod connection;
pub(crate) mod edit;
mod outcome;
mod performed;
pub(crate) mod personal;
mod server;
mod tool;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::db::ids::RunId;
use crate::hub::ConnId;
use crate::plugins::assembly::Chain;
use crate::plugins::plugin::{Plugin, Registrar};
use crate::plugins::policy::ConfiguredSet;
use attached::{AttachError, Attached, ClientServer};
use connection::Link;
use personal::PersonalSessions;
use server::Server;
use tool::McpTool;

/// The configured servers, and those clients attach to runs. Cheap to clone; dropping
/// the last clone stops their tasks.
#[derive(Clone, Default)]
pub(crate) struct McpServers {
    servers: Arc<[Arc<Server>]>,
    attached: Arc<Attached>,
    changes: Arc<changes::Changes>,
    personal: Arc<PersonalSessions>,
}

impl McpServers {
    /// Starts connecting to each of `configs` (on the current runtime; nothing waits), the
    /// servers of `home`'s `mcp.toml`, which admins' changes edit.
    pub(crate) fn start(
        configs: Vec<config::ServerConfig>,
        home: Option<std::path::PathBuf>,
    ) -> McpServers {
        let servers: Vec<Arc<Server>> = configs
            .into_iter()
            .enumerate()
            .map(|(index, config)| Arc::new(Server::start(index, config)))
            .collect();
        McpServers {
            servers: servers.into(),
            attached: Arc::default(),
            changes: Arc::new(changes::Changes::new(home)),
            personal: Arc::default(),
        }
    }

    /// Reads people's MCP credentials from `store` from now on.
    pub(crate) fn connect_store(&self, store: crate::secrets::SecretStore) {
        self.personal.connect_store(store);
    }

    /// Opens `run`'s connections to the servers of `project` that take each person's own
    /// credential (its starter's, when they hold one), as a loop of the run begins; reads
    /// nothing when no such server serves the project.
    pub(crate) async fn open_personal(&self, run: RunId, project: &str) {
        let servers: Vec<Arc<Server>> = self
            .running()
            .into_iter()
            .filter(|server| server.config.personal.is_some() && server.config.serves(project))
            .collect();
        if !servers.is_empty() {
            self.personal.open_for(run, &servers).await;
        }
    }

    /// The names of the running servers that take each person's own credential.
    pub(crate) fn personal_servers(&self) -> Vec<String> {
        self.running()
            .iter()
            .filter(|server| server.config.personal.is_some())
            .map(|server| server.config.name.clone())
            .collect()
    }

    /// Closes `person`'s connection to the server `name` (their credential changed).
    pub(crate) fn forget_credential(&self, person: &str, name: &str) {
        self.personal.forget(person, name);
    }

    /// Makes `servers` the ones connection `conn` attaches to `run` (none detaches them),
    /// as `allowed` permits; an HTTP server's addresses are checked against `filter` first
    /// under `http`, and before each connection. Answers once each has connected or
    /// failed, or after [`ATTACH_PATIENCE`].
    pub(crate) async fn attach(
        &self,
        run: RunId,
        conn: ConnId,
        servers: Vec<ClientServer>,
        allowed: crate::config::ClientMcp,
        filter: &crate::web::NetFilter,
    ) -> Result<Vec<AttachedView>, AttachError> {
        if allowed == crate::config::ClientMcp::Off && !servers.is_empty() {
            return Err(AttachError::Off);
        }
        let mut configs = Vec::with_capacity(servers.len());
        for server in servers {
            let config = server.config(allowed, filter)?;
            if let config::Transport::Http {
                url,
                reach: Some(filter),
                ..
            } = &config.transport
            {
                connection::reachable(url, filter).await.map_err(|reason| {
                    AttachError::Unreachable {
                        name: config.name.clone(),
                        reason,
                    }
                })?;
            }
            configs.push(config);
        }
        let started = self.attached.set(run, conn, configs)?;
        let settled = started.iter().map(|server| async move {
            let (connected, error) = match server.connection.settled(ATTACH_PATIENCE).await {
                Link::Up { .. } => (true, None),
                Link::Connecting => (false, Some("still connecting".to_owned())),
                Link::Down { reason } => (false, Some(reason)),
            };
            AttachedView {
                name: server.config.name.clone(),
                connected,
                error,
                tools: server.connection.tools().len(),
            }
        });
        Ok(futures_util::future::join_all(settled).await)
    }

    /// Stops the servers connection `conn` attached (it closed).
    pub(crate) fn release(&self, conn: ConnId) {
        self.attached.release(conn);
    }

    /// Whether a client attached a server to `run`.
    pub(crate) fn attached_to(&self, run: RunId) -> bool {
        self.attached.any(run)
    }

    /// The plugin that offers these servers to the model: one tool per configured server,
    /// one for those clients attach, and the `<mcp_tools>` section listing their tools.
    pub(crate) fn plugin(&self) -> McpPlugin {
        McpPlugin(self.clone())
    }

    /// The servers whose tools loops of `project` are offered (those added since the start
    /// too).
    pub(crate) fn enabled_for(&self, project: &str) -> ConfiguredSet {
        self.running()
            .iter()
            .filter(|server| server.config.serves(project))
            .fold(ConfiguredSet::NONE, |set, server| match server.origin {
                server::Origin::Configured { index } => set.with(index),
                server::Origin::Client => set,
            })
    }

    /// Every running server, what it serves and the tools it lists now, for clients; whether
    /// loops of `project` are offered them. A server that takes each person's own
    /// credential is shown as `person`'s connection to it, when they have one.
    pub(crate) fn describe(&self, project: &str, person: Option<&str>) -> Vec<ServerView> {
        self.running()
            .iter()
            .map(|template| {
                let own = template
                    .config
                    .personal
                    .as_ref()
                    .and(person)
                    .and_then(|person| self.personal.of(&template.config.name, person));
                let server = own.as_ref().unwrap_or(template);
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
                    personal: server.config.personal.is_some(),
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
}

/// How long `run/mcp` waits for the servers it attaches to connect.
pub(crate) const ATTACH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// One server as `run/mcp` answers it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AttachedView {
    pub name: String,
    pub connected: bool,
    /// Why it is not connected (yet).
    pub error: Option<String>,
    /// How many tools it lists.
    pub tools: usize,
}

/// One server as `getMcpServers` shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServerView {
    pub name: String,
    /// The model's tag and the scheme of its entries.
    pub tag: &'static str,
    /// `stdio` or `http`.
    pub transport: &'static str,
    pub trusted: bool,
    /// The project names or globs it serves.
    pub projects: Vec<String>,
    /// Each person reaches it with their own credential (`mcpCredentials/set`).
    pub personal: bool,
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
pub(crate) struct ToolView {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub read_only: bool,
    /// A call waits for the client's approval.
    pub asks_first: bool,
}

/// The MCP servers as a plugin (`mcp_servers`: disabling it offers none of them).
pub(crate) struct McpPlugin(McpServers);

impl Plugin for McpPlugin {
    fn name(&self) -> &'static str {
        "mcp_servers"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        let servers = self.0;
        for server in servers.servers.iter() {
            let personal = Arc::clone(&servers.personal);
            registrar.tool(McpTool::new(Arc::clone(server), personal));
        }
        registrar.live_tools(servers.changes.live.clone());
        registrar.tool(client_tool::ClientMcpTool {
            attached: Arc::clone(&servers.attached),
        });
        registrar.section(Chain::System, catalogue::Catalogue { servers });
    }
}
