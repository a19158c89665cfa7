//! One prompt turn of a session: `ask`/`act` of the prompt, the run's notifications shown
//! while it runs, each proposal asked of the person and resolved, until the loop ends.
//!
//! A cancelled turn (`session/cancel`, or the person answering a permission request
//! `cancelled`) aborts the run once, which withdraws what it proposed: the turn ends
//! `cancelled` without resolving anything, and the tool call the editor was asked about
//! is marked failed. A decision the person made before the cancel arrived is still sent;
//! refused because the abort came first, it ends the turn `cancelled` too.

use agent_client_protocol::v1::schema::{
    SessionNotification, SessionUpdate, StopReason, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::acp::error::AcpError;
use crate::acp::link::Notice;
use crate::acp::permission::{Asking, Decided, Offers, Proposal};
use crate::acp::plan::PlanTracker;
use crate::acp::session::{stop_reason, unexpected, Session};
use crate::acp::updates::{self, LogTracker, StateParams};

/// A session's notifications from rummy and what the editor was shown of its run.
pub(super) struct Stream {
    pub notices: mpsc::UnboundedReceiver<Notice>,
    pub tracker: LogTracker,
    pub plan: PlanTracker,
}

/// One prompt turn in progress.
pub(super) struct Turn<'a> {
    pub session: &'a Session,
    pub cx: &'a ConnectionTo<Client>,
    pub run: &'a str,
    pub stream: &'a mut Stream,
    pub offers: Offers,
}

impl Turn<'_> {
    /// Runs `prompt` in the session's mode until its loop ends, and says why it ended.
    pub(super) async fn run(&mut self, prompt: String) -> Result<StopReason, AcpError> {
        self.drain_stale();
        if self.session.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        let method = self.session.mode().id();
        let params = json!({"model": self.session.model(), "run": self.run, "prompt": prompt});
        let mut outcome = self.call(method, params).await?;
        loop {
            let status = outcome.get("status").and_then(Value::as_i64).unwrap_or(0);
            if status != 202 {
                return self.ended(&outcome).await;
            }
            let Some(proposal) = outcome
                .get("proposed")
                .and_then(Value::as_array)
                .and_then(|rows| rows.first())
                .and_then(Proposal::parse)
            else {
                return Err(unexpected("a 202 outcome without a proposal", &outcome));
            };
            let decided = match self.session.is_cancelled() {
                true => None,
                false => Some(self.ask(&proposal).await?),
            };
            let resolution = match decided {
                Some(Decided {
                    resolution,
                    cancelled: false,
                }) => resolution,
                _ => {
                    self.session.cancel_turn().await?;
                    self.withdrawn(&proposal)?;
                    return Ok(StopReason::Cancelled);
                }
            };
            self.resolved(&proposal, &resolution)?;
            let params = json!({"run": self.run, "resolution": resolution});
            outcome = match self.call("run/resolve", params).await {
                Err(AcpError::Rpc { .. }) if self.session.is_cancelled() => {
                    return Ok(StopReason::Cancelled)
                }
                outcome => outcome?,
            };
        }
    }

    /// Asks the person about `proposal` and does what they allow.
    async fn ask(&self, proposal: &Proposal) -> Result<Decided, AcpError> {
        let asking = Asking {
            cx: self.cx,
            session: &self.session.id,
            root: self.session.root(),
            offers: self.offers,
            commands_on_server: self.commands_on_server(proposal).await,
            cancel: self.session.cancelled(),
        };
        asking.decide(proposal).await
    }

    /// Why the turn ended, by its loop's outcome.
    async fn ended(&self, outcome: &Value) -> Result<StopReason, AcpError> {
        if self.session.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        match stop_reason(outcome) {
            Some(reason) => Ok(reason),
            None => Err(AcpError::LoopFailed {
                run: self.run.to_string(),
                reason: self.failure().await,
            }),
        }
    }

    /// Whether `proposal` is a command the rummy server runs itself once accepted (its
    /// project runs commands there); asked each time, as an admin may change it.
    async fn commands_on_server(&self, proposal: &Proposal) -> bool {
        if !matches!(proposal.kind.as_str(), "sh" | "env") {
            return false;
        }
        let config = self
            .session
            .link()
            .call("project/config", json!({}))
            .await
            .unwrap_or_default();
        config["effective"]["commands"] == "server"
    }

    /// Why the run's latest loop failed: its newest `error://` entry.
    async fn failure(&self) -> String {
        let entries = self
            .session
            .link()
            .call(
                "getEntries",
                json!({"run": self.run, "pattern": "error://*"}),
            )
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

    /// Drops the notifications that arrived between turns (the run's own were shown with
    /// the turn that caused them; other runs' are not this session's).
    fn drain_stale(&mut self) {
        while self.stream.notices.try_recv().is_ok() {}
    }

    /// Calls `method`, showing the run's notifications while it runs and those that came
    /// before its reply.
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, AcpError> {
        let link = self.session.link().clone();
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

    /// Shows `proposal` withdrawn by the turn's cancel: its tool call failed.
    fn withdrawn(&mut self, proposal: &Proposal) -> Result<(), AcpError> {
        self.stream.tracker.announce(&proposal.path, 499);
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            proposal.path.clone(),
            ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
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
            .updates(&state.history, self.session.root())
        {
            self.send(update)?;
        }
        if let Some(plan) = self.stream.plan.update(&state.unknowns) {
            self.send(plan)?;
        }
        Ok(())
    }
}
