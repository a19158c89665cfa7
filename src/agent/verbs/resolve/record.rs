//! The resolution's unit of work: the proposal resolved (and, with a disk root, an accepted
//! file change applied under it: `RUMMY_APPLY_EDITS=server`), who resolved it, and the run's
//! next move on the state machine once none is pending: [`Transition::Complete`], or
//! [`Transition::Resume`] with the loop that continues it queued in the same unit (so that
//! an abort after it finds that loop, and one before it finds the proposal withdrawn).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::agent::allow::person_key;
use crate::agent::loop_config::LoopConfig;
use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{Ending, LoopOutcome, LoopRecord, ProposedRow};
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::resolve::standing::{not_pending, proposal_state};
use crate::agent::verbs::revert::is_revert;
use crate::agent::verbs::{queue, VerbError};
use crate::db::enums::{LoopMode, LoopPriority, RunAction, RunStatus};
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::UnresolvedRow;
use crate::db::models::run::{LoopEnqueue, LoopRow, RunActionForm, RunRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{command_rules, entries, instances, loops, proposals, run_actions, runs};
use crate::db::{Conn, DbError, UnitError};
use crate::hub;
use crate::hub::notifications::{Act, Notification, RunActed};
use crate::plugins::engine::resolve::{
    resolve_proposal, resolve_proposal_on_disk, Resolution, ResolveInput, ResolveOutcome,
};
use crate::plugins::gather::Gathered;
use crate::plugins::tool::ToolError;
use crate::plugins::Plugins;

/// What the run does after one resolution.
#[derive(Debug)]
pub(super) enum Decision {
    /// Other proposals of the run are still pending.
    StillPending(Vec<UnresolvedRow>),
    /// The run is complete: [`Ending::Rejected`], or [`Ending::Done`] when the model had
    /// already summarized.
    Completed(Ending),
    /// This loop, queued here, continues the run.
    Resumed(LoopId),
    /// The run was aborted while the acceptance was carried out: it is recorded, and the
    /// run stays aborted.
    Aborted,
}

impl Decision {
    /// Where the run stands when no loop goes on (a continuation's loop tells its own end).
    fn settled(&self) -> Option<LoopOutcome> {
        match self {
            Decision::StillPending(proposed) => Some(LoopOutcome::Proposed {
                turn: proposed.last().map_or(0, |row| row.turn),
                proposed: proposed.iter().cloned().map(ProposedRow::from).collect(),
                summarized: false,
            }),
            Decision::Completed(ending) => Some(LoopOutcome::Ended(*ending)),
            Decision::Aborted => Some(LoopOutcome::Ended(Ending::Aborted)),
            Decision::Resumed(_) => None,
        }
    }
}

/// One resolution, ready for its unit of work.
pub(super) struct Recording {
    pub run: RunRow,
    /// The proposal, what the client did, and its output.
    pub path: String,
    pub action: Resolution,
    pub output: Option<String>,
    /// The pattern of the rule an accepted command makes for its resolver (`always`).
    pub always: Option<String>,
    /// Who resolves it, and so who requested the loop that continues the run.
    pub person: Option<String>,
    /// The connection the resolution came on, and so the one the continuation was asked on.
    pub connection: Option<i64>,
    /// The resolver claimed the proposal (and the run's lease) while it carried it out.
    pub claimed: bool,
    /// This instance, which waits for the continuation.
    pub instance: String,
    /// What the event log keeps, for the resolution's `run/action`.
    pub bounds: EventBounds,
    /// Where accepted file changes are applied (`None`: the client applies them).
    pub disk_root: Option<PathBuf>,
    /// What the proposal's tool obtained for accepting it.
    pub gathered: Gathered,
    pub plugins: Arc<Plugins>,
}

impl Recording {
    /// The unit of work: a refusal (the proposal no longer pending, its tool's refusal) is
    /// the inner error, and commits only the claim given back; the store's failure rolls
    /// everything back.
    pub(super) fn record(
        mut self,
        conn: &mut Conn,
    ) -> Result<Result<Decision, VerbError>, DbError> {
        let run = self.run.id;
        runs::lock(conn, run)?;
        let path = self.path.clone();
        let input = ResolveInput {
            run_id: run,
            path: path.clone(),
            resolution: self.action,
            output: self.output.clone(),
            claimed: self.claimed,
            by: self.person.clone(),
        };
        let resolved = match &self.disk_root {
            Some(root) => {
                resolve_proposal_on_disk(conn, &self.plugins, &input, &mut self.gathered, root)
            }
            None => resolve_proposal(conn, &self.plugins, &input, &mut self.gathered),
        };
        let aborted = match self.claimed {
            true => {
                let aborted = proposals::release(conn, run, &path)?;
                instances::let_go(conn, run, &self.instance)?;
                aborted
            }
            false => false,
        };
        let outcome = match resolved {
            Ok(outcome) => outcome,
            Err(error) => return self.refused(conn, error),
        };
        run_actions::record(
            conn,
            &RunActionForm {
                run_id: run,
                loop_id: outcome.loop_id,
                person: self.person.clone(),
                action: match outcome.resolution {
                    Resolution::Accept => RunAction::Accept,
                    Resolution::Reject => RunAction::Reject,
                    Resolution::Error => RunAction::Error,
                },
                path: Some(path.clone()),
            },
        )?;
        if let Some(pattern) = self.always.as_deref() {
            let person = person_key(self.person.as_deref());
            command_rules::add(conn, self.run.project_id, person, pattern, person)?;
        }
        let acted = RunActed {
            path: Some(path),
            status: Some(outcome.status),
            ..acted(&self.run, told(outcome.resolution), self.person.clone())
        };
        announce(conn, &self.bounds, &self.run, acted)?;
        let decided = if aborted {
            Decision::Aborted
        } else if !outcome.remaining.is_empty() {
            Decision::StillPending(outcome.remaining)
        } else {
            match self.next_move(conn, outcome)? {
                Ok(decided) => decided,
                Err(refused) => return Ok(Err(refused)),
            }
        };
        if let Some(settled) = decided.settled() {
            let told = Notification::Outcome(settled.told(&self.run.alias));
            hub::append(conn, &self.bounds, self.run.project_id, run, &told)?;
        }
        Ok(Ok(decided))
    }

    /// The answer to a resolution the engine refused.
    fn refused(
        &self,
        conn: &mut Conn,
        error: ToolError,
    ) -> Result<Result<Decision, VerbError>, DbError> {
        Ok(Err(match error.refusal()? {
            ToolError::NotPending(_) => {
                let state = proposal_state(conn, self.run.id, &self.path)?;
                not_pending(&self.run, &self.path, state)
            }
            refusal => VerbError::Refused(refusal.to_string()),
        }))
    }

    /// Completes or resumes the run, none of its proposals pending any more.
    fn next_move(
        &self,
        conn: &mut Conn,
        outcome: ResolveOutcome,
    ) -> Result<Result<Decision, VerbError>, DbError> {
        let run = &self.run;
        let proposing = match outcome.loop_id {
            Some(id) => loops::get_loop(conn, id)?,
            None => None,
        };
        let from = outcome.run_status;
        if let Some(ending) = reverted(conn, run.id, &outcome)? {
            return Ok(Ok(Decision::Completed(ending)));
        }
        if let Some(ending) = ending(conn, &self.plugins, run.id, proposing.as_ref(), &outcome)? {
            // A loop queued behind the proposing one may run now: its end is the run's.
            let completes = from != RunStatus::Running;
            if let Err(error) = completes
                .then(|| machine::take(conn, run.id, from, Transition::Complete))
                .transpose()
            {
                return Ok(Err(VerbError::taking(&run.alias, error)));
            }
            return Ok(Ok(Decision::Completed(ending)));
        }
        if let Err(error) = machine::take(conn, run.id, from, Transition::Resume) {
            return Ok(Err(VerbError::taking(&run.alias, error)));
        }
        let requester = (self.person.clone(), self.connection);
        let continuation = continuation(conn, run, proposing, requester)?;
        let queued = queue::insert(conn, &continuation, &self.instance)?;
        Ok(Ok(Decision::Resumed(queued)))
    }
}

/// How a person's revert (`verbs::revert`) ends once resolved, `None` for any other
/// proposal: it never resumes the model, and the run's status stays as it was.
fn reverted(
    conn: &mut Conn,
    run: RunId,
    outcome: &ResolveOutcome,
) -> Result<Option<Ending>, DbError> {
    let Some(row) = entries::get_entry(conn, run, &outcome.path)? else {
        return Ok(None);
    };
    Ok(
        is_revert(&row.attributes).then_some(match outcome.resolution {
            Resolution::Accept => Ending::Done,
            Resolution::Reject | Resolution::Error => Ending::Rejected,
        }),
    )
}

/// What a resolution is told as.
fn told(resolution: Resolution) -> Act {
    match resolution {
        Resolution::Accept => Act::Accept,
        Resolution::Reject => Act::Reject,
        Resolution::Error => Act::Error,
    }
}

/// How the run ends now that no proposal is pending, if it does: [`Ending::Rejected`] when
/// this resolution or another of the proposing turn rejected, [`Ending::Done`] when the
/// proposing loop had summarized.
fn ending(
    conn: &mut Conn,
    plugins: &Plugins,
    run: RunId,
    proposing: Option<&LoopRow>,
    outcome: &ResolveOutcome,
) -> Result<Option<Ending>, DbError> {
    let rejected = outcome.resolution == Resolution::Reject
        || entries::rejected_at_turn(conn, run, outcome.turn, &plugins.proposing())?;
    if rejected {
        return Ok(Some(Ending::Rejected));
    }
    let summarized = proposing
        .and_then(|lp| lp.result.as_ref())
        .and_then(|result| LoopRecord::deserialize(&result.0).ok())
        .and_then(|record| record.summarized)
        .unwrap_or(false);
    Ok(summarized.then_some(Ending::Done))
}

/// The loop that continues the run: like the proposing loop, with no prompt. A proposal a
/// client made through a tool method has no loop: the run resumes like the run's latest
/// loop, or as a plain ask when it never ran one. `requester`: the person and the connection
/// that resolved.
fn continuation(
    conn: &mut Conn,
    run: &RunRow,
    proposing: Option<LoopRow>,
    requester: (Option<String>, Option<i64>),
) -> Result<LoopEnqueue, DbError> {
    let like = match proposing {
        Some(lp) => Some(lp),
        None => loops::latest_loop(conn, run.id)?,
    };
    let (mode, model, config) = match like {
        Some(lp) => (lp.mode, lp.model, LoopConfig::of(&lp.config).to_json()),
        None => (LoopMode::Ask, None, LoopConfig::default().to_json()),
    };
    Ok(LoopEnqueue {
        run_id: run.id,
        mode,
        model: model.or_else(|| run.model.clone()),
        prompt: String::new(),
        priority: LoopPriority::Normal,
        config,
        requested_by: requester.0,
        requested_on: requester.1,
    })
}
