//! What clients are told at the end of a turn: `run/state`, and `run/proposal` for each new
//! proposal.

pub(crate) mod carried;

use carried::CarriedState;

use crate::db::Conn;
use serde_json::Value;

use crate::agent::turn::input::TurnInput;
use crate::agent::AgentContext;
use crate::context::Packet;
use crate::db::enums::RunStatus;
use crate::db::events::Unnumbered;
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::entry::UnresolvedRow;
use crate::db::models::run::PurposeUsage;
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{run_events, turns, usage};
use crate::db::DbError;
use crate::hub::notifications::{
    HistoryEntry, Notification, PendingProposal, ProposedEntry, RunProposal, RunState, Telemetry,
    UnknownEntry, UsageTotals,
};
use crate::llm::ChatResponse;
use crate::plugins::events::Event;
use crate::plugins::filters::{Proposing, TurnProposing};

/// What `run/state` and `run/proposal` report of the store, read at the end of a turn in
/// the unit of work that ran the turn's commands.
pub(crate) struct StoredState {
    log: Vec<HistoryEntry>,
    unknowns: Vec<UnknownEntry>,
    unresolved: Vec<UnresolvedRow>,
    usage: Vec<PurposeUsage>,
    latest_summary: Option<String>,
    context_tokens: i32,
    session: Option<Value>,
}

/// The context size of the run's latest turn, when the caller knows it (the turn that just
/// recorded it), else read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LatestTokens {
    Known(i32),
    Read,
}

impl StoredState {
    /// Reads the run's state (`tokens`: its latest turn's context size, when known) from
    /// `carried` and what changed since; with the state it read its entries from, to carry.
    pub(crate) fn read(
        conn: &mut Conn,
        run: RunId,
        tokens: LatestTokens,
        carried: Option<CarriedState>,
    ) -> Result<(StoredState, CarriedState), DbError> {
        let carried = CarriedState::read(conn, run, carried)?;
        let context_tokens = match tokens {
            LatestTokens::Known(tokens) => tokens,
            LatestTokens::Read => turns::latest_turn(conn, run)?
                .map(|row| row.context_tokens)
                .unwrap_or(0),
        };
        let stored = StoredState {
            log: carried.history(),
            unknowns: carried.unknowns(),
            unresolved: carried.unresolved(),
            usage: usage::by_purpose(conn, run)?,
            latest_summary: carried.latest_summary(),
            context_tokens,
            session: crate::memory::stored_notes(conn, run)?
                .and_then(|stored| serde_json::to_value(stored.notes).ok()),
        };
        Ok((stored, carried))
    }
}

/// Where a turn's state goes and what it reports besides the store.
pub(crate) struct TurnFacts<'a> {
    pub run: RunId,
    /// Its project, for routing.
    pub project: ProjectId,
    /// Its alias now.
    pub alias: &'a str,
    /// The run-wide turn number.
    pub turn: i32,
}

/// What a turn tells clients besides what its unit of work reads, settled before that unit.
pub(crate) struct Telling {
    run: RunId,
    project: ProjectId,
    alias: String,
    turn: i32,
    telemetry: Telemetry,
    requested_by: Option<String>,
    /// What the event log keeps, when the unit appends `run/proposal` and `run/state`
    /// itself; `None` when `turn.proposing` filters offer the proposals after it.
    in_unit: Option<EventBounds>,
    /// The run's state as its previous turn told it, when its loop carries one.
    carried: Option<CarriedState>,
}

impl Telling {
    /// What the turn of `facts` tells, from its input, the model's response and its packet
    /// (`context_tokens`: the turn's context size, as its audit records it).
    pub(crate) fn new(
        agent: &AgentContext,
        facts: TurnFacts<'_>,
        input: &TurnInput<'_>,
        response: &ChatResponse,
        packet: &Packet,
        context_tokens: i32,
    ) -> Telling {
        let filtered = agent.plugins.has_filters::<TurnProposing>();
        Telling {
            run: facts.run,
            project: facts.project,
            alias: facts.alias.to_owned(),
            turn: facts.turn,
            telemetry: Telemetry {
                model_alias: input.model_alias.to_string(),
                model: if response.model.is_empty() {
                    input.model_alias.to_string()
                } else {
                    response.model.clone()
                },
                temperature: input.temperature,
                context_size: input.context_size,
                context_tokens,
                usage: UsageTotals::of(&[]),
                context_distribution: packet.distribution.clone(),
            },
            requested_by: input.loop_row.requested_by.clone(),
            in_unit: (!filtered).then(|| agent.db.event_bounds()),
            carried: input.carried.take(),
        }
    }

    /// In the turn's unit of work, after its commands: reads the run's state and, unless
    /// filters offer the proposals later, appends `run/proposal` (the proposals this turn
    /// made, if any) and `run/state` to the event log, sent once the unit commits.
    pub(crate) fn read(self, conn: &mut Conn) -> Result<Told, DbError> {
        let tokens = LatestTokens::Known(self.telemetry.context_tokens);
        let (stored, carried) = StoredState::read(conn, self.run, tokens, self.carried)?;
        let proposed = fresh_proposals(&stored.unresolved, self.turn);
        let mut telemetry = self.telemetry;
        telemetry.context_tokens = stored.context_tokens;
        telemetry.usage = UsageTotals::of(&stored.usage);
        let facts = TurnFacts {
            run: self.run,
            project: self.project,
            alias: &self.alias,
            turn: self.turn,
        };
        let state = stored.into_run_state(&facts, telemetry, self.requested_by);
        let proposal = (!proposed.is_empty()).then(|| {
            Notification::Proposal(RunProposal {
                run: self.alias.clone(),
                proposed,
            })
        });
        let told = Told {
            run: self.run,
            project: self.project,
            turn: self.turn,
            notifications: proposal
                .into_iter()
                .chain([Notification::State(Box::new(state))])
                .collect(),
            sent: self.in_unit.is_some(),
            carried: Some(carried),
        };
        if let Some(bounds) = self.in_unit {
            let frames: Vec<Unnumbered> = told
                .notifications
                .iter()
                .filter_map(|notification| {
                    crate::hub::publication(told.project, told.run, notification)
                })
                .map(|publication| publication.frame)
                .collect();
            run_events::append(conn, &bounds, told.project, told.run, &frames)?;
        }
        Ok(told)
    }
}

/// What a turn's unit of work read for its clients.
pub(crate) struct Told {
    run: RunId,
    project: ProjectId,
    turn: i32,
    /// `run/proposal` (when the turn proposed), then `run/state`.
    notifications: Vec<Notification>,
    /// Whether the unit appended them to the event log.
    sent: bool,
    /// The state the unit read the run's entries into, for the next turn to carry.
    carried: Option<CarriedState>,
}

impl Told {
    /// The state the unit read, to carry to the run's next turn once the unit committed.
    pub(crate) fn carried(&mut self) -> Option<CarriedState> {
        self.carried.take()
    }

    /// Tells the observers the run's state; unless the unit sent them, publishes the
    /// proposals (as the `turn.proposing` filters offer them) and the state.
    pub(crate) async fn publish(mut self, agent: &AgentContext) {
        if let Some(Notification::State(state)) = self.notifications.last() {
            agent.plugins.emit(Event::RunState {
                project: self.project,
                state,
            });
        }
        if self.sent {
            return;
        }
        let context = Proposing {
            project: self.project,
            run: self.run,
            turn: self.turn,
        };
        for notification in &mut self.notifications {
            if let Notification::Proposal(proposal) = notification {
                let fresh = std::mem::take(&mut proposal.proposed);
                proposal.proposed = offered(agent, &context, fresh).await;
            }
            crate::hub::publish(&agent.db, self.project, self.run, notification);
        }
    }
}

/// The unresolved proposals made in turn `turn`, as `run/proposal` announces them.
fn fresh_proposals(unresolved: &[UnresolvedRow], turn: i32) -> Vec<ProposedEntry> {
    unresolved
        .iter()
        .filter(|row| row.turn == turn)
        .map(|row| ProposedEntry {
            path: row.path.clone(),
            kind: scheme_or_unknown(&row.path),
            body: row.body.clone(),
            attributes: row.attributes.to_value(),
            allowed: None,
        })
        .collect()
}

/// The proposals `fresh` as the `turn.proposing` filters offer them (each path stays as
/// recorded: a filter that drops, adds or moves one is ignored).
async fn offered(
    agent: &AgentContext,
    proposing: &Proposing,
    fresh: Vec<ProposedEntry>,
) -> Vec<ProposedEntry> {
    if !agent.plugins.has_filters::<TurnProposing>() {
        return fresh;
    }
    let mut offered = fresh.clone();
    agent
        .plugins
        .filter::<TurnProposing>(&mut offered, proposing)
        .await;
    let same_paths = offered.len() == fresh.len()
        && offered
            .iter()
            .zip(&fresh)
            .all(|(offered, recorded)| offered.path == recorded.path);
    if same_paths {
        offered
    } else {
        tracing::warn!(
            "a turn.proposing filter dropped, added or moved a proposal; offered as recorded"
        );
        fresh
    }
}

/// The `run/state` of run `alias` paused at a spend cap (402) in its turn `turn`, told in the
/// pause's unit of work with `telemetry` (the loop's model; its usage read here).
pub(crate) fn paused_state(
    conn: &mut Conn,
    run: RunId,
    alias: &str,
    turn: i32,
    mut telemetry: Telemetry,
) -> Result<RunState, DbError> {
    let (stored, _) = StoredState::read(conn, run, LatestTokens::Read, None)?;
    telemetry.context_tokens = stored.context_tokens;
    telemetry.usage = UsageTotals::of(&stored.usage);
    let facts = TurnFacts {
        run,
        project: ProjectId(0),
        alias,
        turn,
    };
    let mut state = stored.into_run_state(&facts, telemetry, None);
    state.status = RunStatus::CapReached;
    Ok(state)
}

impl StoredState {
    /// The `run/state` of this store after the turn of `facts`; a run with unresolved
    /// proposals is reported proposed (202), any other running (102).
    fn into_run_state(
        self,
        facts: &TurnFacts<'_>,
        telemetry: Telemetry,
        requested_by: Option<String>,
    ) -> RunState {
        RunState {
            run: facts.alias.to_string(),
            turn: facts.turn,
            status: if self.unresolved.is_empty() {
                RunStatus::Running
            } else {
                RunStatus::Proposed
            },
            summary: self.latest_summary.unwrap_or_default(),
            history: self.log,
            unknowns: self.unknowns,
            proposed: self
                .unresolved
                .iter()
                .map(|row| PendingProposal {
                    path: row.path.clone(),
                    kind: scheme_or_unknown(&row.path),
                    attributes: row.attributes.to_value(),
                })
                .collect(),
            telemetry,
            requested_by,
            session: self.session,
        }
    }
}

fn scheme_or_unknown(path: &str) -> String {
    crate::db::paths::scheme_of(path)
        .unwrap_or("unknown")
        .to_string()
}
