//! The MCP servers clients attach to runs (`run/mcp`): an editor's own servers, passed to
//! `rummy acp` when it opens a session. Each is offered to the loops of its run only,
//! under the one tag [`CLIENT_TAG`](crate::mcp::server::CLIENT_TAG) with its name, and
//! lives as long as the connection that attached it: the connection's close stops it.
//! What a client may attach is the server's choice (`RUMMY_CLIENT_MCP`): on a team server
//! the server is the one that connects, so a command would run as rummy's user there and
//! a URL would be reached from rummy's network.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use crate::config::{ClientMcp, Secret};
use crate::db::ids::RunId;
use crate::hub::ConnId;
use crate::mcp::config::{default_max_output_bytes, default_timeout_secs, ServerConfig, Transport};
use crate::mcp::server::Server;
use crate::project::patterns::ProjectPatterns;
use crate::web::NetFilter;

/// The most servers one connection attaches to a run.
pub(crate) const MAX_PER_CONNECTION: usize = 16;

/// The longest server name.
const MAX_NAME_CHARS: usize = 64;

/// Why a client's servers were not attached.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AttachError {
    #[error("this server connects no client's MCP servers (RUMMY_CLIENT_MCP is off); an admin can allow them, or declare the server in $RUMMY_HOME/mcp.toml")]
    Off,
    #[error("MCP server {0:?}: this server runs no client's commands (RUMMY_CLIENT_MCP=http takes streamable-HTTP servers only)")]
    CommandRefused(String),
    #[error("MCP server {name:?}: {reason}")]
    Unreachable { name: String, reason: String },
    #[error("MCP server {name:?}: {reason}")]
    Invalid { name: String, reason: String },
    #[error("at most {MAX_PER_CONNECTION} MCP servers per connection and run")]
    TooMany,
    #[error("MCP server {0:?} is already attached to this run by another connection")]
    Taken(String),
}

/// One server as a client describes it: a command (with args, env) or a URL (with headers).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClientServer {
    pub name: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, Secret>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, Secret>,
}

impl ClientServer {
    /// The server to connect, as `allowed` permits it (an HTTP server's addresses are
    /// checked against `filter` before each connection under `http`).
    pub(crate) fn config(
        self,
        allowed: ClientMcp,
        filter: &NetFilter,
    ) -> Result<ServerConfig, AttachError> {
        let invalid = |reason: &str| AttachError::Invalid {
            name: self.name.clone(),
            reason: reason.to_owned(),
        };
        let well_named = !self.name.is_empty()
            && self.name.chars().count() <= MAX_NAME_CHARS
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !well_named {
            return Err(invalid("a name is 1–64 letters, digits, '_', '-' or '.'"));
        }
        let transport = match (self.command, self.url) {
            (Some(command), None) if self.headers.is_empty() && !command.trim().is_empty() => {
                if allowed != ClientMcp::All {
                    return Err(AttachError::CommandRefused(self.name));
                }
                Transport::Stdio {
                    command,
                    args: self.args,
                    env: self.env,
                }
            }
            (None, Some(url)) if self.args.is_empty() && self.env.is_empty() => Transport::Http {
                url,
                headers: self.headers,
                reach: (allowed == ClientMcp::Http).then(|| filter.clone()),
            },
            _ => {
                return Err(invalid(
                    "give either command (with args, env) or url (with headers)",
                ))
            }
        };
        Ok(ServerConfig {
            name: self.name,
            transport,
            trusted: false,
            timeout_secs: default_timeout_secs(),
            max_output_bytes: default_max_output_bytes(),
            projects: ProjectPatterns::none(),
            personal: None,
        })
    }
}

/// Which connection attached a server.
struct Attachment {
    conn: ConnId,
    server: Arc<Server>,
}

/// The servers attached to each run.
#[derive(Default)]
pub(crate) struct Attached {
    runs: Mutex<HashMap<RunId, Vec<Attachment>>>,
}

impl Attached {
    /// Makes `configs` the servers `conn` attached to `run` (none: it detaches them): the
    /// ones it attached before stop, these start connecting and are returned. A name another
    /// connection attached to the run is refused, and nothing changes.
    pub(crate) fn set(
        &self,
        run: RunId,
        conn: ConnId,
        configs: Vec<ServerConfig>,
    ) -> Result<Vec<Arc<Server>>, AttachError> {
        if configs.len() > MAX_PER_CONNECTION {
            return Err(AttachError::TooMany);
        }
        let mut names = std::collections::HashSet::new();
        if let Some(twice) = configs.iter().find(|config| !names.insert(&config.name)) {
            return Err(AttachError::Invalid {
                name: twice.name.clone(),
                reason: "listed twice".into(),
            });
        }
        let mut runs = self.lock();
        let attached = runs.entry(run).or_default();
        if let Some(taken) = attached
            .iter()
            .find(|held| held.conn != conn && names.contains(&held.server.config.name))
        {
            return Err(AttachError::Taken(taken.server.config.name.clone()));
        }
        attached.retain(|held| held.conn != conn);
        let started: Vec<Arc<Server>> = configs
            .into_iter()
            .map(|config| Arc::new(Server::start_client(config)))
            .collect();
        attached.extend(started.iter().map(|server| Attachment {
            conn,
            server: Arc::clone(server),
        }));
        if attached.is_empty() {
            runs.remove(&run);
        }
        Ok(started)
    }

    /// Stops every server `conn` attached (its connection closed).
    pub(crate) fn release(&self, conn: ConnId) {
        let mut runs = self.lock();
        for attached in runs.values_mut() {
            attached.retain(|held| held.conn != conn);
        }
        runs.retain(|_, attached| !attached.is_empty());
    }

    /// The servers attached to `run`, in the order they were attached.
    pub(crate) fn of(&self, run: RunId) -> Vec<Arc<Server>> {
        self.lock()
            .get(&run)
            .map(|attached| {
                attached
                    .iter()
                    .map(|held| Arc::clone(&held.server))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether any server is attached to `run`.
    pub(crate) fn any(&self, run: RunId) -> bool {
        self.lock().contains_key(&run)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Vec<Attachment>>> {
        self.runs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::Transport;

    fn stdio(name: &str) -> ClientServer {
        ClientServer {
            name: name.into(),
            command: Some("/nonexistent/mcp".into()),
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
        }
    }

    fn http(name: &str) -> ClientServer {
        ClientServer {
            command: None,
            url: Some("https://mcp.example/mcp".into()),
            ..stdio(name)
        }
    }

    fn config(server: ClientServer) -> ServerConfig {
        server
            .config(ClientMcp::All, &NetFilter::default())
            .unwrap()
    }

    fn names(servers: &[Arc<Server>]) -> Vec<&str> {
        servers
            .iter()
            .map(|server| server.config.name.as_str())
            .collect()
    }

    #[test]
    fn what_a_server_takes_follows_its_setting() {
        let filter = NetFilter::default();
        assert!(matches!(
            stdio("a").config(ClientMcp::Http, &filter),
            Err(AttachError::CommandRefused(name)) if name == "a"
        ));
        let reached = |allowed| match http("a").config(allowed, &filter).unwrap().transport {
            Transport::Http { reach, .. } => reach,
            Transport::Stdio { .. } => panic!("an URL became a command"),
        };
        assert_eq!(reached(ClientMcp::Http), Some(filter.clone()));
        assert_eq!(reached(ClientMcp::All), None);
        assert!(stdio(&"x".repeat(64))
            .config(ClientMcp::All, &filter)
            .is_ok());
        let taken = config(stdio("git-hub.v2"));
        assert!(!taken.trusted && !taken.serves("any"));
        for bad in ["", "a b", "a/b", &"x".repeat(65)] {
            assert!(
                matches!(
                    stdio(bad).config(ClientMcp::All, &filter),
                    Err(AttachError::Invalid { .. })
                ),
                "{bad:?}"
            );
        }
        let both = ClientServer {
            url: Some("https://h".into()),
            ..stdio("both")
        };
        assert!(matches!(
            both.config(ClientMcp::All, &filter),
            Err(AttachError::Invalid { .. })
        ));
    }

    #[tokio::test]
    async fn a_connection_replaces_its_own_servers_and_cannot_take_anothers_name() {
        let attached = Attached::default();
        let (run, other_run) = (RunId(1), RunId(2));
        attached
            .set(run, 7, vec![config(stdio("a")), config(http("b"))])
            .unwrap();
        attached
            .set(other_run, 8, vec![config(stdio("a"))])
            .unwrap();
        assert_eq!(names(&attached.of(run)), ["a", "b"]);
        assert!(matches!(
            attached.set(run, 9, vec![config(stdio("b"))]),
            Err(AttachError::Taken(name)) if name == "b"
        ));
        attached.set(run, 9, vec![config(stdio("c"))]).unwrap();
        attached.set(run, 7, vec![config(stdio("d"))]).unwrap();
        assert_eq!(names(&attached.of(run)), ["c", "d"]);
        assert!(matches!(
            attached.set(run, 7, vec![config(stdio("e")), config(http("e"))]),
            Err(AttachError::Invalid { .. })
        ));
        let many = |count| {
            (0..count)
                .map(|n| config(stdio(&format!("s{n}"))))
                .collect()
        };
        assert!(matches!(
            attached.set(run, 7, many(MAX_PER_CONNECTION + 1)),
            Err(AttachError::TooMany)
        ));
        assert!(attached.set(other_run, 6, many(MAX_PER_CONNECTION)).is_ok());
        attached.release(6);
        assert_eq!(names(&attached.of(run)), ["c", "d"]);
        attached.release(9);
        assert_eq!(names(&attached.of(run)), ["d"]);
        attached.set(run, 7, Vec::new()).unwrap();
        assert!(!attached.any(run) && attached.of(run).is_empty());
        assert!(attached.any(other_run));
        attached.release(8);
        assert!(!attached.any(other_run));
    }
}
