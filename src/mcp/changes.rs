//! Admins' changes to the configured servers while rummy runs (`mcp/add`, `mcp/remove`,
//! `mcp/restart`). The file is changed first (`edit`, under one lock, so two changes
//! through this server follow one another), then the running servers:
//!
//! - a removed server is closed at once: its tag is offered to no loop's next turn, a call
//!   already written to it is a 502, and `getMcpServers` no longer lists it;
//! - an added server is started at once, `getMcpServers` lists it (connected, with its
//!   tools), its scheme is registered, and its tag joins the registry's live tools: the
//!   loops of the projects it serves are offered it (and `<mcp_tools>` lists its tools)
//!   from their next turn;
//! - a restarted server ends its session (a child process is stopped) and connects again.
//!
//! Other instances sharing the store read the file at their next start.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::config::{ServerConfig, FILE_NAME, MAX_SERVERS};
use super::edit::{self, EditError, NewServer};
use super::server::Server;
use super::tool::McpTool;
use super::McpServers;
use crate::db::models::SchemeRow;
use crate::plugins::engine::live::LiveTools;
use crate::plugins::tool::ToolInfo;

/// What the changes need: the file, and the servers added since the start.
#[derive(Default)]
pub(super) struct Changes {
    /// `$RUMMY_HOME/mcp.toml` (`None`: a server built without a home changes nothing).
    file: Option<PathBuf>,
    /// Held while the file is read, changed and written.
    writing: Mutex<()>,
    /// Started since rummy started, in the order they were added (a removed one until a
    /// server of its name is added again, in its place).
    added: Mutex<Vec<Arc<Server>>>,
    /// Their tags, as the registry offers them.
    pub(super) live: LiveTools,
}

impl Changes {
    pub(super) fn new(home: Option<PathBuf>) -> Changes {
        Changes {
            file: home.map(|home| home.join(FILE_NAME)),
            ..Changes::default()
        }
    }

    /// The servers added since the start (removed ones too).
    fn added(&self) -> Vec<Arc<Server>> {
        self.added
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChangeError {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error("{FILE_NAME} cannot be written: {0}")]
    Io(#[from] std::io::Error),
    #[error("this server has no home to keep {FILE_NAME} in")]
    NoHome,
    #[error("{name} is not a running MCP server")]
    NotRunning { name: String },
    #[error("at most {MAX_SERVERS} MCP servers until rummy restarts")]
    TooMany,
}

impl McpServers {
    /// Adds `server` to the file (blocking: file I/O); [`McpServers::start_added`] starts
    /// what it answers.
    pub(crate) fn add_blocking(&self, server: &NewServer) -> Result<ServerConfig, ChangeError> {
        if self.index_for(&server.name) >= MAX_SERVERS {
            return Err(ChangeError::TooMany);
        }
        self.change_file(|text| edit::added(text, server))
    }

    /// The place of an added server `name` among the servers (its bit in the loops' sets):
    /// that of a removed one it replaces, else past every other.
    fn index_for(&self, name: &str) -> usize {
        let added = self.changes.added();
        let place = added
            .iter()
            .position(|server| server.config.name == name)
            .unwrap_or(added.len());
        self.servers.len() + place
    }

    /// Starts a server just added to the file (on the current runtime) and offers its tag
    /// from the loops' next turns; answers its scheme, for the caller to register.
    pub(crate) fn start_added(&self, config: ServerConfig) -> SchemeRow {
        let index = self.index_for(&config.name);
        let started = Arc::new(Server::start(index, config));
        // Kept for the process's life, as the registry lends its tools (one per change).
        let personal = Arc::clone(&self.personal);
        let tool: &'static McpTool =
            Box::leak(Box::new(McpTool::new(Arc::clone(&started), personal)));
        {
            let mut added = self
                .changes
                .added
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match added
                .iter_mut()
                .find(|server| server.config.name == started.config.name)
            {
                Some(removed) => *removed = started,
                None => added.push(started),
            }
        }
        self.changes.live.add(tool);
        let spec = tool.scheme();
        SchemeRow {
            name: tool.name().to_owned(),
            model_visible: spec.model_visible,
            category: spec.category,
        }
    }

    /// Removes the server `name` from the file, and closes it if it runs (blocking).
    pub(crate) fn remove_blocking(&self, name: &str) -> Result<(), ChangeError> {
        self.change_file(|text| edit::removed(text, name).map(|text| (text, ())))?;
        let reason = format!("server {name} was removed");
        for server in self.running() {
            if server.config.name == name {
                server.remove(&reason);
            }
        }
        self.personal.close_server(name, &reason);
        Ok(())
    }

    /// Restarts the running server `name`.
    pub(crate) fn restart(&self, name: &str) -> Result<(), ChangeError> {
        let server = self
            .running()
            .into_iter()
            .find(|server| server.config.name == name)
            .ok_or_else(|| ChangeError::NotRunning {
                name: name.to_owned(),
            })?;
        if server.config.personal.is_some() {
            self.personal.restart_server(name);
        } else {
            server.connection.restart();
        }
        Ok(())
    }

    /// The servers running now: those of the start not removed, then those added since.
    pub(super) fn running(&self) -> Vec<Arc<Server>> {
        self.servers
            .iter()
            .cloned()
            .chain(self.changes.added())
            .filter(|server| !server.is_removed())
            .collect()
    }

    /// Reads the file (none yet: empty), makes `change` of its text and writes the result
    /// atomically.
    fn change_file<T>(
        &self,
        change: impl FnOnce(&str) -> Result<(String, T), EditError>,
    ) -> Result<T, ChangeError> {
        let file = self.changes.file.as_ref().ok_or(ChangeError::NoHome)?;
        let _writing = self
            .changes
            .writing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(error) => return Err(error.into()),
        };
        let (text, made) = change(&text)?;
        crate::access::write_atomically(file, &text)?;
        Ok(made)
    }
}
