//! One ACP session: a connection to rummy bound to the project at the session's directory,
//! the run its prompts continue (made by the first prompt), its mode, and the prompt turn:
//! `ask`/`act`, the updates streamed from rummy's notifications, each proposal asked of the
//! person and resolved, until the loop ends.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionId, SessionMode, SessionModeState, SessionNotification, SessionUpdate,
    StopReason, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::acp::error::AcpError;
use crate::acp::link::{Connected, Link, Notice};
use crate::acp::permission::{Asking, Offers, Proposal};
use crate::acp::prompt::Prompt;
use crate::acp::updates::{self, LogTracker, StateParams};

/// A session's mode: which rummy method its prompts call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `ask`: the model may read, not change files or run commands.
    Ask,
    /// `act`: the model may propose edits and commands (the default).
    Act,
}

impl Mode {
    const ALL: [Mode; 2] = [Mode::Ask, Mode::Act];

    fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Act => "act",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::Act => "Act",
        }
    }

    fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Answers questions; changes no file and runs no command",
            Mode::Act => "Proposes edits and commands for you to allow",
        }
    }

    /// The mode named `id`.
    pub fn parse(id: &str) -> Result<Mode, AcpError> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.id() == id)
            .ok_or_else(|| AcpError::UnknownMode(id.to_string()))
    }

    /// The modes offered, `current` selected.
    pub fn state(current: Mode) -> SessionModeState {
        SessionModeState::new(
            current.id(),
            Mode::ALL
                .into_iter()
                .map(|mode| {
                    SessionMode::new(mode.id(), mode.name()).description(mode.description())
                })
                .collect(),
        )
    }
}

/// How a prompt turn ends, by a loop's outcome status.
pub fn stop_reason(status: i64) -> Option<StopReason> {
    match status {
        200 => Some(StopReason::EndTurn),
        499 => Some(StopReason::Cancelled),
        413 => Some(StopReason::MaxTokens),
        _ => None,
    }
}

/// One session.
pub struct Session {
    pub id: SessionId,
    /// The project root (the session's directory).
    root: PathBuf,
    link: Link,
    /// The model prompts run with.
    model: String,
    /// rummy's notifications and what the editor was shown of them; held by the prompt
    /// turn running.
    stream: tokio::sync::Mutex<Stream>,
    mode: Mutex<Mode>,
    /// The run's name, once the first prompt made it.
    run: Mutex<Option<String>>,
    /// Set by `session/cancel`, cleared by the next prompt.
    cancelled: AtomicBool,
}

impl Session {
    /// Binds a new connection to the project at `root` (named after its directory) and
    /// makes the session.
    pub async fn open(
        id: SessionId,
        root: PathBuf,
        connected: Connected,
        model: Option<String>,
    ) -> Result<Session, AcpError> {
        let name = project_name(&root)?;
        let link = connected.link;
        link.call("init", json!({"name": name, "projectRoot": root}))
            .await?;
        let model = match model {
            Some(model) => model,
            None => first_model(&link).await?,
        };
        Ok(Session {
            id,
            root,
            link,
            model,
            stream: tokio::sync::Mutex::new(Stream {
                notices: connected.notices,
                tracker: LogTracker::default(),
            }),
            mode: Mutex::new(Mode::Act),
            run: Mutex::new(None),
            cancelled: AtomicBool::new(false),
        })
    }

    pub fn mode(&self) -> Mode {
        *self
            .mode
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn set_mode(&self, mode: Mode) {
        *self
            .mode
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = mode;
    }

    fn run_name(&self) -> Option<String> {
        self.run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// `session/cancel`: the turn ends `cancelled`; the run's loop is aborted.
    pub async fn cancel(&self) -> Result<(), AcpError> {
        self.cancelled.store(true, Ordering::SeqCst);
        match self.run_name() {
            Some(run) => self
                .link
                .call("run/abort", json!({"run": run}))
                .await
                .map(drop),
            None => Ok(()),
        }
    }

    /// One prompt turn: runs `blocks` in the session's mode, streams what happens to the
    /// editor, asks it about each proposal, and says why the turn ended.
    pub async fn prompt(
        &self,
        cx: &ConnectionTo<Client>,
        offers: Offers,
        blocks: &[ContentBlock],
    ) -> Result<StopReason, AcpError> {
        self.cancelled.store(false, Ordering::SeqCst);
        let prompt = Prompt::of(blocks, &self.root)?;
        let run = self.ensure_run().await?;
        prompt.enter(&self.link, &run).await?;
        let mut stream = self.stream.lock().await;
        let mut turn = Turn {
            session: self,
            cx,
            run: &run,
            stream: &mut stream,
        };
        turn.drain_stale();
        if self.cancelled.load(Ordering::SeqCst) {
            return Ok(StopReason::Cancelled);
        }
        let method = self.mode().id();
        let params = json!({"model": self.model, "run": run, "prompt": prompt.text});
        let mut outcome = turn.call(method, params).await?;
        loop {
            let status = outcome.get("status").and_then(Value::as_i64).unwrap_or(0);
            if status == 202 {
                let Some(proposal) = outcome
                    .get("proposed")
                    .and_then(Value::as_array)
                    .and_then(|rows| rows.first())
                    .and_then(Proposal::parse)
                else {
                    return Err(unexpected("a 202 outcome without a proposal", &outcome));
                };
                let resolution = if self.cancelled.load(Ordering::SeqCst) {
                    crate::acp::permission::resolution(&proposal, "reject", None)
                } else {
                    let asking = Asking {
                        cx,
                        session: &self.id,
                        root: &self.root,
                        offers,
                    };
                    let decided = asking.decide(&proposal).await?;
                    if decided.cancelled {
                        self.cancelled.store(true, Ordering::SeqCst);
                    }
                    decided.resolution
                };
                turn.resolved(&proposal, &resolution)?;
                let params = json!({"run": run, "resolution": resolution});
                outcome = turn.call("run/resolve", params).await?;
                continue;
            }
            if self.cancelled.load(Ordering::SeqCst) {
                return Ok(StopReason::Cancelled);
            }
            return match stop_reason(status) {
                Some(reason) => Ok(reason),
                None => Err(AcpError::LoopFailed {
                    run: run.clone(),
                    reason: self.failure(&run).await,
                }),
            };
        }
    }

    /// The session's run, made on the first prompt.
    async fn ensure_run(&self) -> Result<String, AcpError> {
        if let Some(run) = self.run_name() {
            return Ok(run);
        }
        let started = self
            .link
            .call("startRun", json!({"model": self.model}))
            .await?;
        let run = started
            .get("run")
            .and_then(Value::as_str)
            .ok_or_else(|| unexpected("startRun without a run", &started))?
            .to_string();
        *self
            .run
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(run.clone());
        Ok(run)
    }

    /// Why the run's latest loop failed: its newest `error://` entry.
    async fn failure(&self, run: &str) -> String {
        let entries = self
            .link
            .call("getEntries", json!({"run": run, "pattern": "error://*"}))
            .await
            .unwrap_or_default();
        entries
            .as_array()
            .and_then(|rows| rows.last())
            .and_then(|row| row.get("body"))
            .and_then(Value::as_str)
            .map(|body| body.lines().next().unwrap_or(body).to_string())
            .unwrap_or_else(|| "the server reported no error".to_string())
    }
}

/// A session's notifications from rummy and what the editor was shown of its run.
struct Stream {
    notices: mpsc::UnboundedReceiver<Notice>,
    tracker: LogTracker,
}

/// One prompt turn in progress.
struct Turn<'a> {
    session: &'a Session,
    cx: &'a ConnectionTo<Client>,
    run: &'a str,
    stream: &'a mut Stream,
}

impl Turn<'_> {
    /// Drops the notifications that arrived between turns (the run's own were shown with
    /// the turn that caused them; other runs' are not this session's).
    fn drain_stale(&mut self) {
        while self.stream.notices.try_recv().is_ok() {}
    }

    /// Calls `method`, showing the run's notifications while it runs and those that came
    /// before its reply.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, AcpError> {
        let link = self.session.link.clone();
        let reply = link.call(method, params);
        tokio::pin!(reply);
        let result = loop {
            tokio::select! {
                biased;
                notice = self.stream.notices.recv() => match notice {
                    Some(notice) => self.show(notice)?,
                    None => break Err(AcpError::Disconnected),
                },
                result = &mut reply => break result,
            }
        };
        while let Ok(notice) = self.stream.notices.try_recv() {
            self.show(notice)?;
        }
        result
    }

    /// Shows how the person resolved `proposal` (a rejection ends the run without another
    /// turn, so no `run/state` would), and remembers it as shown so: the run's log updates
    /// it only if it ends otherwise (an accepted edit that no longer applies fails).
    fn resolved(&mut self, proposal: &Proposal, resolution: &Value) -> Result<(), AcpError> {
        let status = match resolution.get("action").and_then(Value::as_str) {
            Some("accept") => 200,
            Some("reject") => 403,
            _ => 500,
        };
        self.stream.tracker.announce(&proposal.path, status);
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            proposal.path.clone(),
            ToolCallUpdateFields::new().status(updates::status_of(status)),
        ));
        self.send(update)
    }

    fn send(&self, update: SessionUpdate) -> Result<(), AcpError> {
        self.cx
            .send_notification(SessionNotification::new(self.session.id.clone(), update))
            .map_err(AcpError::protocol)
    }

    fn show(&mut self, notice: Notice) -> Result<(), AcpError> {
        if notice.method != "run/state" {
            return Ok(());
        }
        let Ok(state) = serde_json::from_value::<StateParams>(notice.params) else {
            tracing::warn!("rummy sent a run/state this agent cannot read");
            return Ok(());
        };
        if state.run != self.run {
            return Ok(());
        }
        for update in self
            .stream
            .tracker
            .updates(&state.history, &self.session.root)
        {
            self.send(update)?;
        }
        Ok(())
    }
}

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

/// The catalogue's first model, when none was named.
async fn first_model(link: &Link) -> Result<String, AcpError> {
    let models = link.call("getModels", json!({})).await?;
    models
        .as_array()
        .and_then(|rows| rows.first())
        .and_then(|row| row.get("alias"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(AcpError::NoModel)
}

fn unexpected(what: &str, answer: &Value) -> AcpError {
    AcpError::Unexpected {
        method: what.to_string(),
        detail: answer.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_end_the_turn_by_status() {
        assert_eq!(stop_reason(200), Some(StopReason::EndTurn));
        assert_eq!(stop_reason(499), Some(StopReason::Cancelled));
        assert_eq!(stop_reason(413), Some(StopReason::MaxTokens));
        assert_eq!(stop_reason(500), None);
    }

    #[test]
    fn modes_are_ask_and_act() {
        assert_eq!(Mode::parse("ask").unwrap(), Mode::Ask);
        assert_eq!(Mode::parse("act").unwrap(), Mode::Act);
        assert!(Mode::parse("plan").is_err());
        let state = serde_json::to_value(Mode::state(Mode::Act)).unwrap();
        assert_eq!(state["currentModeId"], json!("act"));
        assert_eq!(state["availableModes"][0]["id"], json!("ask"));
    }

    #[test]
    fn a_project_is_named_after_its_directory() {
        assert_eq!(project_name(Path::new("/work/my-app")).unwrap(), "my-app");
        assert!(project_name(Path::new("relative/dir")).is_err());
        assert!(project_name(Path::new("/")).is_err());
    }
}
