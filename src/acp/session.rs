//! One ACP session: a connection to rummy bound to the project at the session's directory,
//! the run its prompts continue (made by `session/new`, found by `session/load`; its name is
//! the session id), its mode, model and slash commands, and whether its prompt in flight
//! is cancelled; each prompt is a turn (`acp::turn`, which holds the session, never the
//! other way round).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    McpServer, SessionConfigOption, SessionConfigOptionValue, SessionId, SessionInfo, SessionUpdate,
};
use serde_json::{json, Value};
use tokio::sync::watch;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;

use crate::acp::commands::Commands;
use crate::acp::error::AcpError;
use crate::acp::idle::{self, Shown};
use crate::acp::link::{Connected, Link};
use crate::acp::mode::Mode;
use crate::acp::options::{Catalogue, Choice};
use crate::acp::plan::PlanTracker;
use crate::acp::stream::Stream;
use crate::acp::updates::LogTracker;
use crate::acp::words::Words;
use crate::rpc::handlers::runs::HistoryItem;

/// rummy's code for a run alias that names no run of the project.
const RUN_NOT_FOUND: i32 = crate::error::code::RUN_NOT_FOUND.get() as i32;

/// One session: one run of the project at its directory, named after the run.
pub(super) struct Session {
    /// The run's name.
    pub id: SessionId,
    /// The project root (the session's directory).
    root: PathBuf,
    link: Link,
    /// The model prompts run with.
    model: Mutex<String>,
    /// rummy's notifications and what the editor was shown of them; held by the prompt
    /// turn running, and between prompts by the task that shows what the idle run is told
    /// (`acp::idle`), which lets it go when anything else asks for it (`wanted`).
    stream: Arc<tokio::sync::Mutex<Stream>>,
    /// Bumped whenever something other than the idle task wants the stream.
    wanted: watch::Sender<u64>,
    mode: Mutex<Mode>,
    /// rummy's models, one of which its prompts run with.
    catalogue: Catalogue,
    /// The skills and personas its prompts may start with.
    commands: Commands,
    /// Set when the prompt in flight is cancelled, cleared by the next prompt.
    cancelled: watch::Sender<bool>,
    /// The prompts in flight, from their request to their answer ([`InFlight`]).
    prompts: watch::Sender<usize>,
    /// Whether its connection asked for the run's deltas ([`Session::watch_words`]).
    watching: AtomicBool,
}

/// A prompt of the session in flight, from its request until its turn ends: while one is,
/// `session/cancel` cancels it; with none, a cancel (an editor's late or idle one) has
/// nothing to cancel and leaves the run alone.
pub(super) struct InFlight {
    session: Arc<Session>,
}

impl InFlight {
    /// The session whose prompt it is.
    pub(super) fn session(&self) -> &Session {
        &self.session
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.session
            .prompts
            .send_modify(|prompts| *prompts = prompts.saturating_sub(1));
    }
}

/// What a session is made of besides its connection.
struct Run {
    /// The run's name (the session id).
    name: String,
    root: PathBuf,
    model: String,
    mode: Mode,
    catalogue: Catalogue,
    commands: Commands,
}

/// A session loaded by `session/load`, and its run's log as updates for the editor.
pub(super) struct Loaded {
    pub session: Session,
    pub replay: Vec<SessionUpdate>,
}

impl Session {
    /// `session/new`: binds a new connection to the project at `root` (named after its
    /// directory) and starts the run the session's prompts continue.
    pub(super) async fn open(
        root: PathBuf,
        connected: Connected,
        model: Option<String>,
    ) -> Result<Session, AcpError> {
        let link = bind(&connected.link, &root).await?;
        let catalogue = Catalogue::fetch(link).await?;
        let model = match model {
            Some(model) => model,
            None => catalogue.first()?,
        };
        let started = link.call("startRun", json!({"model": model})).await?;
        let run = started
            .get("run")
            .and_then(Value::as_str)
            .ok_or_else(|| AcpError::unexpected("startRun without a run", &started))?
            .to_string();
        let commands = Commands::fetch(link).await?;
        let run = Run {
            name: run,
            root,
            model,
            mode: Mode::Act,
            catalogue,
            commands,
        };
        Ok(Session::of(run, connected, LogTracker::default()))
    }

    /// `session/load`: binds a new connection to the project at `root` and takes its run
    /// named `id`, in the mode of its latest prompt, with the run's model unless `model` is
    /// given; its log is replayed.
    pub(super) async fn load(
        id: &SessionId,
        root: PathBuf,
        connected: Connected,
        model: Option<String>,
    ) -> Result<Loaded, AcpError> {
        let link = bind(&connected.link, &root).await?;
        let run = id.0.to_string();
        let detail = call_on_run(link, "getRun", &run, &root).await?;
        let history: Vec<HistoryItem> =
            serde_json::from_value(detail["context"]["history"].clone())
                .map_err(|_| AcpError::unexpected("getRun without a readable history", &detail))?;
        let mode = history
            .iter()
            .rev()
            .find(|row| row.scheme.as_deref() == Some("prompt"))
            .and_then(|row| row.attributes.get("mode").and_then(Value::as_str))
            .and_then(|mode| Mode::parse(mode).ok())
            .unwrap_or(Mode::Act);
        let stored = detail
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        let catalogue = Catalogue::fetch(link).await?;
        let model = match model.or(stored) {
            Some(model) => model,
            None => catalogue.first()?,
        };
        let commands = Commands::fetch(link).await?;
        let mut tracker = LogTracker::default();
        let replay = tracker.replay(history, &root);
        let seen = detail.get("seq").and_then(Value::as_u64).unwrap_or(0);
        let run = Run {
            name: run,
            root,
            model,
            mode,
            catalogue,
            commands,
        };
        let session = Session::of(run, connected, tracker);
        session.stream().await.seen = seen;
        Ok(Loaded { session, replay })
    }

    fn of(run: Run, connected: Connected, tracker: LogTracker) -> Session {
        Session {
            id: SessionId::new(run.name),
            root: run.root,
            link: connected.link,
            model: Mutex::new(run.model),
            stream: Arc::new(tokio::sync::Mutex::new(Stream {
                notices: connected.notices,
                tracker,
                plan: PlanTracker::default(),
                words: Words::default(),
                seen: 0,
                waiting: Vec::new(),
            })),
            wanted: watch::channel(0).0,
            mode: Mutex::new(run.mode),
            catalogue: run.catalogue,
            commands: run.commands,
            cancelled: watch::channel(false).0,
            prompts: watch::channel(0).0,
            watching: AtomicBool::new(false),
        }
    }

    /// Its config options: its mode and its model.
    pub(super) fn config_options(&self) -> Vec<SessionConfigOption> {
        self.catalogue.options(self.mode(), &self.model())
    }

    /// `session/set_config_option`: sets option `id` to `value`.
    pub(super) fn choose(
        &self,
        id: &str,
        value: &SessionConfigOptionValue,
    ) -> Result<(), AcpError> {
        match self.catalogue.choice(id, value)? {
            Choice::Mode(mode) => self.set_mode(mode),
            Choice::Model(model) => {
                *self
                    .model
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner()) = model;
            }
        }
        Ok(())
    }

    /// The `available_commands_update` of its skills and personas.
    pub(super) fn commands(&self) -> SessionUpdate {
        self.commands.update()
    }

    /// Attaches the editor's MCP servers to the run for as long as the session lasts; what
    /// rummy refuses is logged, and the session goes on without it.
    pub(super) async fn attach_mcp(&self, servers: &[McpServer]) {
        let servers = crate::acp::mcp::client_servers(servers);
        if servers.is_empty() {
            return;
        }
        let params = json!({"run": self.run(), "servers": servers});
        if let Err(error) = self.link.call("run/mcp", params).await {
            tracing::warn!(%error, "the editor's MCP servers are not attached");
        }
    }

    /// The run's name.
    pub(super) fn run(&self) -> &str {
        &self.id.0
    }

    /// Its skills and personas, as slash commands.
    pub(super) fn slash_commands(&self) -> &Commands {
        &self.commands
    }

    /// Its notifications and what the editor was shown of them, held by the prompt turn
    /// running (the idle task told to let them go).
    pub(super) async fn stream(&self) -> tokio::sync::MutexGuard<'_, Stream> {
        self.wanted
            .send_modify(|wanted| *wanted = wanted.wrapping_add(1));
        self.stream.lock().await
    }

    /// Shows what its run is told until something else wants its stream (`acp::idle`):
    /// started once the session is made and after each prompt's turn.
    pub(super) fn between_prompts(&self, cx: &ConnectionTo<Client>) {
        let stream = Arc::clone(&self.stream);
        let wanted = self.wanted.subscribe();
        let shown = Shown {
            cx: cx.clone(),
            session: self.id.clone(),
            root: self.root.clone(),
            run: self.run().to_string(),
        };
        if let Err(error) = cx.spawn(idle::watch(stream, wanted, shown)) {
            tracing::warn!(%error, "proposals raised between prompts are shown at the next");
        }
    }

    pub(super) fn model(&self) -> String {
        self.model
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    pub(super) fn mode(&self) -> Mode {
        *self
            .mode
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn set_mode(&self, mode: Mode) {
        *self
            .mode
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = mode;
    }

    /// A prompt arrived: it is in flight until the returned value's turn ends or it is
    /// dropped. Called as the request arrives, before the turn's task runs, so that a
    /// cancel the editor sends right after it finds it in flight.
    pub(super) fn begin(self: &Arc<Self>) -> InFlight {
        self.cancelled.send_replace(false);
        self.prompts.send_modify(|prompts| *prompts += 1);
        InFlight {
            session: Arc::clone(self),
        }
    }

    /// `session/cancel`: the prompt in flight ends `cancelled` and its loop is cancelled
    /// ([`Session::cancel_turn`]); without a prompt in flight, nothing happens.
    pub(super) async fn cancel(&self) -> Result<(), AcpError> {
        if *self.prompts.borrow() == 0 {
            tracing::debug!(
                run = self.run(),
                "session/cancel without a prompt in flight"
            );
            return Ok(());
        }
        self.cancel_turn().await
    }

    /// Cancels the prompt in flight, once however many times the turn is cancelled (by
    /// `session/cancel`, by a permission request answered `cancelled`): `run/cancel` of the
    /// session's own loops of the run (those its connection, or its person, started: the
    /// prompt's, running, queued or waiting on its proposals, which are withdrawn, and the
    /// loop its own resolution queued). Loops other clients queued on the run go on.
    pub(super) async fn cancel_turn(&self) -> Result<(), AcpError> {
        if self.cancelled.send_replace(true) {
            return Ok(());
        }
        self.link
            .call("run/cancel", json!({"run": self.run()}))
            .await
            .map(drop)
    }

    /// Asks for the model's words of the run as they come (`run/watch` with `deltas`, which
    /// also shows the session in the run's presence, as the editor it is), once per
    /// connection; refused, the words are shown once recorded, and the refusal logged.
    pub(super) async fn watch_words(&self) {
        if self.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let params = json!({"run": self.run(), "deltas": true});
        if let Err(error) = self.link.call("run/watch", params).await {
            tracing::warn!(%error, "the model's words are shown once recorded");
        }
    }

    /// Whether the prompt in flight is cancelled.
    pub(super) fn is_cancelled(&self) -> bool {
        *self.cancelled.borrow()
    }

    /// Becomes true when the prompt in flight is cancelled.
    pub(super) fn cancelled(&self) -> watch::Receiver<bool> {
        self.cancelled.subscribe()
    }

    /// The project root.
    pub(super) fn root(&self) -> &Path {
        &self.root
    }

    /// The connection to rummy.
    pub(super) fn link(&self) -> &Link {
        &self.link
    }
}

mod resume;

/// The project's name: its directory's.
fn project_name(root: &Path) -> Result<String, AcpError> {
    let bad = || AcpError::BadDirectory(root.display().to_string());
    if !root.is_absolute() {
        return Err(bad());
    }
    root.file_name()
        .and_then(|name| name.to_str())
        .map(str::to_string)
        .ok_or_else(bad)
}

/// How many sessions one `session/list` page holds.
const LIST_PAGE: usize = 50;

/// `session/list`: a page of the runs of the project at `root`, newest first, from
/// `cursor` (the number of runs before the page; none: the first page), and the next
/// page's cursor. Sub-agents' runs are no sessions and are left out.
pub(super) async fn list(
    root: &Path,
    connected: Connected,
    cursor: Option<&str>,
) -> Result<(Vec<SessionInfo>, Option<String>), AcpError> {
    let offset = match cursor {
        Some(cursor) => cursor
            .parse::<usize>()
            .map_err(|_| AcpError::BadCursor(cursor.to_string()))?,
        None => 0,
    };
    let link = bind(&connected.link, root).await?;
    let page = json!({"limit": LIST_PAGE + 1, "offset": offset});
    let runs = link.call("getRuns", page).await?;
    let rows = runs
        .as_array()
        .ok_or_else(|| AcpError::unexpected("getRuns without a list", &runs))?;
    let next = (rows.len() > LIST_PAGE).then(|| (offset + LIST_PAGE).to_string());
    let sessions = rows
        .iter()
        .take(LIST_PAGE)
        .filter(|row| row.get("delegated_by").is_none_or(Value::is_null))
        .filter_map(|row| {
            let run = row.get("run")?.as_str()?.to_string();
            let title = row
                .get("summary")
                .and_then(Value::as_str)
                .and_then(|summary| summary.lines().next())
                .map(|line| line.chars().take(TITLE_CHARS).collect::<String>());
            let updated = row.get("created").and_then(Value::as_str).map(iso_8601);
            Some(
                SessionInfo::new(run, root.to_path_buf())
                    .title(title)
                    .updated_at(updated),
            )
        })
        .collect();
    Ok((sessions, next))
}

/// The most characters of a run's summary a session's title shows.
const TITLE_CHARS: usize = 80;

/// rummy's `YYYY-MM-DD HH:MM:SS` (UTC) as ISO 8601; anything else as it is.
fn iso_8601(time: &str) -> String {
    match time.split_once(' ') {
        Some((day, clock)) if !clock.contains(' ') => format!("{day}T{clock}Z"),
        _ => time.to_string(),
    }
}

/// `method` of the run named `run` in the project at `root`: a run the server does not know
/// is [`AcpError::NoRun`].
async fn call_on_run(link: &Link, method: &str, run: &str, root: &Path) -> Result<Value, AcpError> {
    link.call(method, json!({"run": run}))
        .await
        .map_err(|error| match error {
            AcpError::Rpc {
                code: RUN_NOT_FOUND,
                ..
            } => AcpError::NoRun {
                run: run.to_owned(),
                project: root.display().to_string(),
            },
            other => other,
        })
}

/// `init` of the project at `root` on `link`, named after its directory.
async fn bind<'a>(link: &'a Link, root: &Path) -> Result<&'a Link, AcpError> {
    let name = project_name(root)?;
    link.call(
        "init",
        json!({"name": name, "projectRoot": root, "client": {"name": "rummy acp", "kind": "editor"}}),
    )
        .await?;
    Ok(link)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_iso_8601() {
        assert_eq!(iso_8601("2026-11-27 06:01:02"), "2026-11-27T06:01:02Z");
        assert_eq!(iso_8601("2026-11-27T06:01:02Z"), "2026-11-27T06:01:02Z");
    }

    #[test]
    fn a_project_is_named_after_its_directory() {
        assert_eq!(project_name(Path::new("/work/my-app")).unwrap(), "my-app");
        assert!(project_name(Path::new("relative/dir")).is_err());
        assert!(project_name(Path::new("/")).is_err());
    }
}
