//! What clients are told at the end of a turn: `run/state`, and `run/proposal` for each new
//! proposal.

use crate::db::Conn;
use serde_json::Value;

use crate::agent::turn::input::TurnInput;
use crate::agent::AgentContext;
use crate::context::Packet;
use crate::db::enums::{EntryStatus, RunStatus};
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::entry::{EntryRow, RunLogRow, UnresolvedRow};
use crate::db::models::run::PurposeUsage;
use crate::db::queries::{entries, turns, usage};
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
    log: Vec<RunLogRow>,
    unknowns: Vec<EntryRow>,
    unresolved: Vec<UnresolvedRow>,
    usage: Vec<PurposeUsage>,
    latest_summary: Option<String>,
    context_tokens: i32,
    session: Option<Value>,
}

impl StoredState {
    /// Reads the run's state.
    pub(crate) fn read(conn: &mut Conn, run: RunId) -> Result<StoredState, DbError> {
        let latest_summary = entries::entries_of_scheme(conn, run, "summarize")?
            .into_iter()
            .rev()
            .find(|row| row.status == EntryStatus::Ok)
            .map(|row| row.body);
        let context_tokens = turns::latest_turn(conn, run)?
            .map(|row| row.context_tokens)
            .unwrap_or(0);
        Ok(StoredState {
            log: entries::run_log(conn, run)?,
            unknowns: entries::entries_of_scheme(conn, run, "unknown")?,
            unresolved: entries::unresolved(conn, run)?,
            usage: usage::by_purpose(conn, run)?,
            latest_summary,
            context_tokens,
            session: crate::memory::stored_notes(conn, run)?
                .and_then(|stored| serde_json::to_value(stored.notes).ok()),
        })
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

/// Publishes `run/proposal` for the proposals this turn made, then `run/state`.
pub(crate) async fn publish_turn_state(
    agent: &AgentContext,
    facts: TurnFacts<'_>,
    stored: StoredState,
    input: &TurnInput<'_>,
    response: &ChatResponse,
    packet: &Packet,
) {
    publish_proposals(agent, &facts, &stored.unresolved).await;
    let telemetry = Telemetry {
        model_alias: input.model_alias.to_string(),
        model: if response.model.is_empty() {
            input.model_alias.to_string()
        } else {
            response.model.clone()
        },
        temperature: input.temperature,
        context_size: input.context_size,
        context_tokens: stored.context_tokens,
        usage: UsageTotals::of(&stored.usage),
        context_distribution: packet.distribution.clone(),
    };
    let requested_by = input.loop_row.requested_by.clone();
    let state = stored.into_run_state(&facts, telemetry, requested_by);
    agent.plugins.emit(Event::RunState {
        project: facts.project,
        state: &state,
    });
    agent.hubs.publish(
        facts.project,
        facts.run,
        Notification::State(Box::new(state)),
    );
}

/// Publishes `run/proposal` with the unresolved proposals made in this turn, if any, as
/// the `turn.proposing` filters offer them (each path stays as recorded).
async fn publish_proposals(
    agent: &AgentContext,
    facts: &TurnFacts<'_>,
    unresolved: &[UnresolvedRow],
) {
    let mut fresh: Vec<ProposedEntry> = unresolved
        .iter()
        .filter(|row| row.turn == facts.turn)
        .map(|row| ProposedEntry {
            path: row.path.clone(),
            kind: scheme_or_unknown(&row.path),
            body: row.body.clone(),
            attributes: row.attributes.to_value(),
        })
        .collect();
    if fresh.is_empty() {
        return;
    }
    if agent.plugins.has_filters::<TurnProposing>() {
        let proposing = Proposing {
            project: facts.project,
            run: facts.run,
            turn: facts.turn,
        };
        let mut offered = fresh.clone();
        agent
            .plugins
            .filter::<TurnProposing>(&mut offered, &proposing)
            .await;
        let same_paths = offered.len() == fresh.len()
            && offered
                .iter()
                .zip(&fresh)
                .all(|(offered, recorded)| offered.path == recorded.path);
        if same_paths {
            fresh = offered;
        } else {
            tracing::warn!(
                "a turn.proposing filter dropped, added or moved a proposal; offered as recorded"
            );
        }
    }
    agent.hubs.publish(
        facts.project,
        facts.run,
        Notification::Proposal(RunProposal {
            run: facts.alias.to_string(),
            proposed: fresh,
        }),
    );
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
            history: self
                .log
                .into_iter()
                .map(|row| HistoryEntry {
                    tool: row.tool,
                    target: row.target,
                    status: row.status,
                    path: row.path,
                    body: row.body,
                })
                .collect(),
            unknowns: self
                .unknowns
                .into_iter()
                .map(|row| UnknownEntry {
                    path: row.path,
                    body: row.body,
                })
                .collect(),
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
