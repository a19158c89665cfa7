//! One prompt turn of a session: `ask`/`act` of the prompt, the run's notifications shown
//! while it runs, each proposal asked of the person and resolved, until the loop ends.
//!
//! While the person is asked, another client may settle the proposal (resolve it, abort the
//! run, or cancel the loop that proposed it: `run/action`): the request is withdrawn, its
//! tool call shows who settled it and how, and the turn follows the run to its next
//! `run/outcome` (an abort or a cancel ends it `cancelled`). A resolution refused because
//! another came first is followed the same way.
//!
//! A cancelled turn (`session/cancel`, or the person answering a permission request
//! `cancelled`) cancels the session's own loops of the run once (`run/cancel`), which
//! withdraws what they proposed: the turn ends `cancelled` without resolving anything, and
//! the tool call the editor was asked about is marked failed; another client's prompt
//! queued on the run goes on. A decision the person made before the cancel arrived is still
//! sent; refused because the cancel came first, it ends the turn `cancelled` too.

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionNotification, SessionUpdate, StopReason, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::acp::error::AcpError;
use crate::acp::idle::{self, settled_by, settled_status};
use crate::acp::link::Notice;
use crate::acp::outcome::{self, stop_reason};
use crate::acp::permission::{Asking, Decided, Offers, Proposal};
use crate::acp::prompt::Prompt;
use crate::acp::session::{InFlight, Session};
use crate::acp::stream::{state_of, Stream};
use crate::acp::updates;
use crate::agent::verbs::ProposalView;
use crate::db::enums::{EntryStatus, RunStatus};
use crate::hub::notifications::{Act, LoopEnded, RunActed};

mod waiting;

/// The turn of the prompt `in_flight`: runs `blocks` in its session's mode, streams what
/// happens to the editor, asks it about each proposal, and says why the turn ended. The
/// prompt is no longer in flight once this returns, before the editor is answered.
pub(super) async fn prompt(
    in_flight: InFlight,
    cx: &ConnectionTo<Client>,
    offers: Offers,
    blocks: &[ContentBlock],
) -> Result<StopReason, AcpError> {
    let session = in_flight.session();
    let mut prompt = Prompt::of(blocks, session.root())?;
    let run = session.run().to_string();
    if let Some((slash, rest)) = session.slash_commands().parse(&prompt.text) {
        slash.apply(session.link(), &run).await?;
        if rest.is_empty() {
            return Ok(StopReason::EndTurn);
        }
        prompt.text = rest.to_string();
    }
    prompt.enter(session.link(), &run).await?;
    let mut stream = session.stream().await;
    let mut turn = Turn {
        session,
        cx,
        run: &run,
        stream: &mut stream,
        offers,
        own: Vec::new(),
    };
    turn.run(prompt.text).await
}

/// One prompt turn in progress.
pub(super) struct Turn<'a> {
    pub session: &'a Session,
    pub cx: &'a ConnectionTo<Client>,
    pub run: &'a str,
    pub stream: &'a mut Stream,
    pub offers: Offers,
    /// This turn's own resolutions (path, action) whose `run/action` it has not seen yet.
    pub own: Vec<(String, String)>,
}

/// How asking about a proposal ended.
enum Asked {
    /// The person decided.
    Decided(Decided),
    /// Another client settled it first.
    Settled(Settled),
}

/// Another client's `run/action` that settled a proposal, and its `seq`.
struct Settled {
    acted: RunActed,
    seq: u64,
}

/// Whether a resolution's error `data` (`agent::verbs::ProposalView`) says another request
/// settled the proposal first.
fn settled_by_another(data: &Value) -> bool {
    serde_json::from_value::<ProposalView>(data.clone())
        .is_ok_and(|view| view.status != EntryStatus::Proposed)
}

impl Turn<'_> {
    /// Runs `prompt` in the session's mode until its loop ends, and says why it ended.
    pub(super) async fn run(&mut self, prompt: String) -> Result<StopReason, AcpError> {
        self.session.watch_words().await;
        self.catch_up()?;
        if self.session.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        if let Some(stopped) = self.answer_waiting().await? {
            return Ok(stopped);
        }
        let method = self.session.mode().id();
        let params = json!({"model": self.session.model(), "run": self.run, "prompt": prompt});
        let mut outcome = outcome::of_reply(self.call(method, params).await?)?;
        // Whether the outcome is of this turn's own request, so its loop the person's: only
        // then is a command their rule allows not asked about.
        let mut own = true;
        loop {
            if outcome.status != RunStatus::Proposed {
                return self.ended(&outcome).await;
            }
            let Some(entry) = outcome.proposed.first().cloned() else {
                let told = serde_json::to_value(&outcome).unwrap_or_default();
                return Err(AcpError::unexpected(
                    "a 202 outcome without a proposal",
                    &told,
                ));
            };
            let mut proposal = Proposal::of(entry);
            proposal.id = self.stream.tracker.proposal_id(&proposal.entry.path);
            if !own {
                proposal.entry.allowed = None;
            }
            let asked = match self.session.is_cancelled() {
                true => None,
                false => Some(self.ask(&proposal).await?),
            };
            let next = match asked {
                Some(Asked::Decided(Decided {
                    resolution,
                    cancelled: false,
                })) => {
                    own = true;
                    self.resolve(&proposal, resolution).await?
                }
                Some(Asked::Settled(settled)) => {
                    own = false;
                    self.follow(&proposal, settled).await?
                }
                _ => {
                    self.session.cancel_turn().await?;
                    self.withdrawn(&proposal, ToolCallStatus::Failed, None)?;
                    None
                }
            };
            outcome = match next {
                Some(next) => next,
                None => return Ok(StopReason::Cancelled),
            };
        }
    }

    /// Resolves `proposal` as the person decided; the run's next outcome, `None` once the
    /// turn is cancelled. When another client settled it first, the turn follows the run.
    async fn resolve(
        &mut self,
        proposal: &Proposal,
        resolution: Value,
    ) -> Result<Option<LoopEnded>, AcpError> {
        self.resolved(proposal, &resolution)?;
        let action = resolution.get("action").and_then(Value::as_str);
        let own = (
            proposal.entry.path.clone(),
            action.unwrap_or_default().to_string(),
        );
        self.own.push(own);
        let params = json!({"run": self.run, "resolution": resolution});
        match self.call("run/resolve", params).await {
            Ok(outcome) => Ok(Some(outcome::of_reply(outcome)?)),
            Err(AcpError::Rpc { .. }) if self.session.is_cancelled() => Ok(None),
            Err(AcpError::Rpc {
                data: Some(data), ..
            }) if settled_by_another(&data) => {
                self.own.pop();
                let settled = self.settling(proposal).await?;
                self.follow(proposal, settled).await
            }
            Err(error) => Err(error),
        }
    }

    /// Shows `proposal` settled by another client as `settled` tells, then follows the run
    /// to its next outcome; `None` when the run was aborted or the proposing loop cancelled
    /// (the turn ends cancelled).
    async fn follow(
        &mut self,
        proposal: &Proposal,
        settled: Settled,
    ) -> Result<Option<LoopEnded>, AcpError> {
        let Settled { acted, seq } = settled;
        self.withdrawn(proposal, settled_status(&acted), Some(&acted))?;
        if matches!(acted.action, Act::Abort | Act::Cancel) {
            return Ok(None);
        }
        loop {
            let notice = self.next_notice().await?;
            if notice.method == "run/outcome" && self.is_later(&notice, seq) {
                return outcome::of_notice(&notice.params).map(Some);
            }
            self.show(notice)?;
        }
    }

    /// Waits for the `run/action` that settled `proposal` (another client's resolution, an
    /// abort, or a cancel that withdrew it), showing the rest.
    async fn settling(&mut self, proposal: &Proposal) -> Result<Settled, AcpError> {
        loop {
            let notice = self.next_notice().await?;
            if let Some(settled) = self.settles(&notice, &proposal.entry.path) {
                return Ok(settled);
            }
            self.show(notice)?;
        }
    }

    /// Asks the person about `proposal` and does what they allow, unless the turn is
    /// cancelled or another client settles it first: then the request is withdrawn
    /// (dropped, which asks the editor to cancel it: `$/cancel_request`, and an answer to
    /// it does nothing), a command running for it is killed, and how it was settled is
    /// the answer.
    async fn ask(&mut self, proposal: &Proposal) -> Result<Asked, AcpError> {
        let (session, cx) = (self.session, self.cx);
        let (stop, stopped) = watch::channel(false);
        let mut cancelled = session.cancelled();
        let asking = Asking {
            cx,
            session: &session.id,
            root: session.root(),
            offers: self.offers,
            commands_on_server: self.commands_on_server(proposal).await,
            cancel: stopped,
        };
        let decided = asking.decide(proposal);
        tokio::pin!(decided);
        let mut settled = None;
        loop {
            // Notices first: a settling one that came before the person's answer wins.
            tokio::select! {
                biased;
                _ = cancelled.wait_for(|cancelled| *cancelled), if !*stop.borrow() => {
                    stop.send_replace(true);
                }
                notice = self.stream.notices.recv(), if settled.is_none() => {
                    let notice = self.noted(notice.ok_or(AcpError::Disconnected)?);
                    let settles = match session.is_cancelled() {
                        true => None,
                        false => self.settles(&notice, &proposal.entry.path),
                    };
                    match settles {
                        Some(settles) => {
                            settled = Some(settles);
                            stop.send_replace(true);
                        }
                        None => self.show(notice)?,
                    }
                }
                decided = &mut decided => {
                    return Ok(match settled {
                        Some(settled) => Asked::Settled(settled),
                        None => Asked::Decided(decided?),
                    });
                }
            }
        }
    }

    /// The next notification from rummy.
    async fn next_notice(&mut self) -> Result<Notice, AcpError> {
        let notice = self.stream.notices.recv().await;
        notice
            .map(|notice| self.noted(notice))
            .ok_or(AcpError::Disconnected)
    }

    /// `notice`, its seq noted as shown when it is this run's.
    fn noted(&mut self, notice: Notice) -> Notice {
        let seq = notice.params.get("seq").and_then(Value::as_u64);
        if let (true, Some(seq)) = (self.is_ours(&notice), seq) {
            self.stream.saw(seq);
        }
        notice
    }

    fn is_ours(&self, notice: &Notice) -> bool {
        notice.params.get("run").and_then(Value::as_str) == Some(self.run)
    }

    /// Whether `notice` is this run's, numbered after `seq`.
    fn is_later(&self, notice: &Notice, seq: u64) -> bool {
        let numbered = notice.params.get("seq").and_then(Value::as_u64);
        self.is_ours(notice) && numbered.is_some_and(|numbered| numbered > seq)
    }

    /// The action `notice` tells, when it settles the proposal at `path` and is not this
    /// turn's own: another client's resolution of it, an abort of the run, or a cancel that
    /// withdrew it.
    fn settles(&mut self, notice: &Notice, path: &str) -> Option<Settled> {
        let acted = self.acted(notice)?;
        let settles = acted.action == Act::Abort
            || acted.path.as_deref() == Some(path)
            || acted.withdrawn.iter().any(|withdrawn| withdrawn == path);
        let seq = notice.params.get("seq").and_then(Value::as_u64)?;
        settles.then_some(Settled { acted, seq })
    }

    /// The `run/action` of this run `notice` is, unless it tells of one of this turn's own
    /// resolutions (which it forgets then).
    fn acted(&mut self, notice: &Notice) -> Option<RunActed> {
        if notice.method != "run/action" {
            return None;
        }
        let acted = serde_json::from_value::<RunActed>(notice.params.clone()).ok()?;
        if acted.run != self.run {
            return None;
        }
        let action = serde_json::to_value(acted.action).ok()?;
        let own = self.own.iter().position(|(path, own)| {
            acted.path.as_deref() == Some(path.as_str()) && action.as_str() == Some(own.as_str())
        });
        match own {
            Some(index) => {
                self.own.remove(index);
                None
            }
            None => Some(acted),
        }
    }

    /// Why the turn ended, by its loop's outcome.
    async fn ended(&self, outcome: &LoopEnded) -> Result<StopReason, AcpError> {
        if self.session.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        if let (Some(_), Some(paused)) = (&outcome.cap, &outcome.error) {
            let text = format!("Paused: {paused}");
            let said = ContentChunk::new(ContentBlock::from(text));
            self.send(SessionUpdate::AgentMessageChunk(said))?;
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
        if !matches!(proposal.entry.kind.as_str(), "sh" | "env") {
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

    /// Takes the notifications that arrived since the session was last idle as the idle
    /// session does (`acp::idle`: a proposal raised shown, to be asked about; the rest
    /// dropped, the run's own having been shown with the turn that caused them).
    fn catch_up(&mut self) -> Result<(), AcpError> {
        while let Ok(notice) = self.stream.notices.try_recv() {
            for update in idle::take(self.stream, &notice, self.run, self.session.root()) {
                self.send(update)?;
            }
        }
        Ok(())
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
        self.stream.tracker.announce(&proposal.entry.path, status);
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            proposal.id.clone(),
            ToolCallUpdateFields::new().status(updates::status_of(status)),
        ));
        self.send(update)
    }

    /// Shows `proposal` no longer asked about: its tool call ends `status`, and says who
    /// settled it when another client did (`acted`).
    fn withdrawn(
        &mut self,
        proposal: &Proposal,
        status: ToolCallStatus,
        acted: Option<&RunActed>,
    ) -> Result<(), AcpError> {
        let shown = match status {
            ToolCallStatus::Completed => 200,
            _ => 499,
        };
        self.stream.tracker.announce(&proposal.entry.path, shown);
        let mut fields = ToolCallUpdateFields::new().status(status);
        if let Some(acted) = acted {
            let said = ContentBlock::from(settled_by(acted));
            fields = fields.content(vec![ToolCallContent::from(said)]);
        }
        let update =
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(proposal.id.clone(), fields));
        self.send(update)
    }

    fn send(&self, update: SessionUpdate) -> Result<(), AcpError> {
        self.cx
            .send_notification(SessionNotification::new(self.session.id.clone(), update))
            .map_err(AcpError::protocol)
    }

    fn show(&mut self, notice: Notice) -> Result<(), AcpError> {
        let notice = self.noted(notice);
        if !self.is_ours(&notice) {
            return Ok(());
        }
        if notice.method == "run/action" {
            self.acted(&notice);
            return Ok(());
        }
        if notice.method == "run/delta" {
            return match self.stream.delta(&notice.params) {
                Some(update) => self.send(update),
                None => Ok(()),
            };
        }
        if notice.method != "run/state" {
            return Ok(());
        }
        let Some(state) = state_of(&notice.params) else {
            return Ok(());
        };
        for update in self.stream.updates(&state, self.session.root()) {
            self.send(update)?;
        }
        Ok(())
    }
}
