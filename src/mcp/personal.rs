//! The connections of the servers that take each person's own credential (`personal` in
//! `mcp.toml`): one per server and person, made with the server's configured env or headers
//! plus that person's credential (`mcpCredentials/set`, sealed in `crate::secrets`, kind
//! [`MCP_CREDENTIAL`], named by the server), and shared by that person's runs.
//!
//! When a loop begins in a project such a server serves, [`PersonalSessions::open_for`]
//! reads, in one statement, the run's starter (a sub-agent's run: its delegating run's) and
//! their sealed MCP credentials, binds the run to that person, and makes a connection for
//! each credential that has none yet, or whose credential changed since (the old one is
//! closed); it waits for a new one as `run/mcp` waits, at most
//! [`ATTACH_PATIENCE`](super::ATTACH_PATIENCE). Each connection made is audited
//! (`mcp/credential`: who, which server, the run; never the value). The tool, the catalogue
//! and accepted proposals find a run's connection through its binding
//! ([`PersonalSessions::session`]); a run of the operator's, or of a person without a
//! credential for the server, is refused with a message saying how to add one.
//! `mcpCredentials/set` and `mcpCredentials/remove` close the person's connection at once.
//! Connections and bindings unused for [`IDLE`] are closed when the next loop opens one or a
//! credential changes: no timer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use super::connection::Link;
use super::server::Server;
use super::ATTACH_PATIENCE;
use crate::db::ids::RunId;
use crate::db::queries::admin_changes;
use crate::db::queries::secrets::SecretRow;
use crate::secrets::{ExposeSecret, SecretStore, MCP_CREDENTIAL};

/// How long a connection or a run's binding stays unused before it is closed.
pub(crate) const IDLE: Duration = Duration::from_secs(15 * 60);

/// One person's connection to one server.
struct Session {
    server: Arc<Server>,
    /// The credential's sealed bytes it was made with (a new seal is a changed credential).
    sealed: Vec<u8>,
    used: Instant,
}

/// Whom a run's calls reach the servers as.
struct Binding {
    /// `None`: the operator.
    person: Option<String>,
    used: Instant,
}

#[derive(Default)]
struct State {
    /// By server name and person.
    sessions: HashMap<(String, String), Session>,
    runs: HashMap<RunId, Binding>,
}

/// The people's connections, and the runs bound to their people.
#[derive(Default)]
pub(crate) struct PersonalSessions {
    state: Mutex<State>,
    /// Where the credentials are (set once the store is open).
    store: OnceLock<SecretStore>,
}

impl PersonalSessions {
    /// Reads the credentials from `store` from now on.
    pub(crate) fn connect_store(&self, store: SecretStore) {
        let _ = self.store.set(store);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds `run` to its starter and makes sure the starter has a connection to each of
    /// `servers` (the personal servers its project uses) they hold a credential for. Reads
    /// nothing when `servers` is empty.
    pub(crate) async fn open_for(&self, run: RunId, servers: &[Arc<Server>]) {
        let Some(store) = self.store.get().filter(|_| !servers.is_empty()) else {
            return;
        };
        let (person, held) = match store.of_starter(run, MCP_CREDENTIAL).await {
            Ok(read) => read,
            Err(error) => {
                tracing::error!(%error, run.id = %run, "cannot read MCP credentials");
                return;
            }
        };
        self.sweep();
        self.state().runs.insert(
            run,
            Binding {
                person: person.clone(),
                used: Instant::now(),
            },
        );
        let Some(person) = person else {
            return;
        };
        for server in servers {
            let name = &server.config.name;
            match held.iter().find(|row| row.name == *name) {
                Some(row) => self.reach(store, server, &person, row, run).await,
                None => self.forget(&person, name),
            }
        }
    }

    /// Makes sure `person` has a connection to `server` made with the credential `row`
    /// holds (a new one when it has none, or one made with another), and waits for a new one.
    async fn reach(
        &self,
        store: &SecretStore,
        server: &Server,
        person: &str,
        row: &SecretRow,
        run: RunId,
    ) {
        let key = (server.config.name.clone(), person.to_owned());
        let held = {
            let mut state = self.state();
            state.sessions.get_mut(&key).and_then(|session| {
                session.used = Instant::now();
                (session.sealed == row.sealed).then(|| Arc::clone(&session.server))
            })
        };
        let (session, made) = match held {
            Some(session) => (session, false),
            None => {
                let credential = match store.open_row(row) {
                    Ok(credential) => credential,
                    Err(error) => {
                        tracing::error!(%error, mcp.server = %key.0, "cannot open an MCP credential");
                        return;
                    }
                };
                let config = server.config.with_credential(credential.expose_secret());
                let session = Arc::new(server.start_personal(config));
                let replaced = self.state().sessions.insert(
                    key.clone(),
                    Session {
                        server: Arc::clone(&session),
                        sealed: row.sealed.clone(),
                        used: Instant::now(),
                    },
                );
                if let Some(replaced) = replaced {
                    replaced
                        .server
                        .remove("the credential it was made with changed");
                }
                (session, true)
            }
        };
        if matches!(session.connection.link(), Link::Connecting) {
            session.connection.settled(ATTACH_PATIENCE).await;
        }
        if made {
            let (server_name, by) = key;
            let detail = json!({"server": server_name, "run": run.0}).to_string();
            let subject = by.clone();
            let audited = store
                .used(&by, MCP_CREDENTIAL, &server_name, move |conn| {
                    admin_changes::record(conn, &subject, "mcp/credential", &subject, &detail)
                })
                .await;
            if let Err(error) = audited {
                tracing::error!(%error, "cannot audit a use of an MCP credential");
            }
        }
    }

    /// The connection `run`'s calls to `server` (a personal one) reach it on, or why there
    /// is none.
    pub(crate) fn session(&self, run: RunId, server: &Server) -> Result<Arc<Server>, String> {
        let name = &server.config.name;
        let mut state = self.state();
        let now = Instant::now();
        let person = match state.runs.get_mut(&run) {
            Some(binding) => {
                binding.used = now;
                binding.person.clone()
            }
            None => {
                return Err(format!(
                    "server {name} takes each person's own credential, and this run has not \
                     opened its connection: its next loop does"
                ))
            }
        };
        let Some(person) = person else {
            return Err(format!(
                "server {name} takes each person's own credential, and this run is the \
                 operator's, who has none: runs of a person with one reach it"
            ));
        };
        match state.sessions.get_mut(&(name.clone(), person.clone())) {
            Some(session) => {
                session.used = now;
                Ok(Arc::clone(&session.server))
            }
            None => Err(format!(
                "server {name} takes each person's own credential, and {person} has none: \
                 add one with mcpCredentials/set (the console's Keys page)"
            )),
        }
    }

    /// `run`'s connection to `server`, opened first when the run is not bound (a proposal
    /// accepted after its loop's binding was closed).
    pub(crate) async fn reopened(
        &self,
        run: RunId,
        server: &Arc<Server>,
    ) -> Result<Arc<Server>, String> {
        if !self.state().runs.contains_key(&run) {
            self.open_for(run, std::slice::from_ref(server)).await;
        }
        self.session(run, server)
    }

    /// `person`'s connection to the server `name`, if open.
    pub(crate) fn of(&self, name: &str, person: &str) -> Option<Arc<Server>> {
        let state = self.state();
        let session = state.sessions.get(&(name.to_owned(), person.to_owned()))?;
        Some(Arc::clone(&session.server))
    }

    /// Closes `person`'s connection to the server `name` (their credential changed or
    /// was removed), and those unused for [`IDLE`].
    pub(crate) fn forget(&self, person: &str, name: &str) {
        let closed = self
            .state()
            .sessions
            .remove(&(name.to_owned(), person.to_owned()));
        if let Some(closed) = closed {
            closed.server.remove("its credential changed");
        }
        self.sweep();
    }

    /// Closes every person's connection to the server `name`, saying `reason`.
    pub(crate) fn close_server(&self, name: &str, reason: &str) {
        let mut state = self.state();
        state.sessions.retain(|(server, _), session| {
            let keep = server != name;
            if !keep {
                session.server.remove(reason);
            }
            keep
        });
    }

    /// Restarts every person's connection to the server `name`.
    pub(crate) fn restart_server(&self, name: &str) {
        for ((server, _), session) in &self.state().sessions {
            if server == name {
                session.server.connection.restart();
            }
        }
    }

    /// Closes the connections and forgets the bindings unused for [`IDLE`].
    fn sweep(&self) {
        let now = Instant::now();
        let idle = |used: Instant| now.duration_since(used) >= IDLE;
        let mut state = self.state();
        state.runs.retain(|_, binding| !idle(binding.used));
        state.sessions.retain(|_, session| {
            let keep = !idle(session.used);
            if !keep {
                session.server.remove("unused for a while");
            }
            keep
        });
    }
}
