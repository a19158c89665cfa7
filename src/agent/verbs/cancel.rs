//! `cancel` (`run/cancel`): a person stops their own work on a run, where `abort` stops the
//! whole run. Stages: *settle* (one unit of work on the writer, [`Settling::settle`]: the
//! loops to stop found — the caller's own, or the one named, another's only for whoever may
//! abort the run — and each stopped, the action recorded and told to every client), *drop*
//! (the requests waiting for a dropped loop answered 499) and *wait* (until a cancelled
//! running loop's 499 is stored).
//!
//! A loop of the caller's is in flight while it is queued (dropped: it never runs), running
//! (cancelled there, on the writer, before it can store another outcome: its own unit of
//! work stores 499), or waited on for its proposals (withdrawn, as an abort withdraws them;
//! one being carried out is marked, and its acceptance is recorded without resuming the run).
//! Loops others queued on the run go on: the next one is claimed as after any loop's end.
//! When the cancelled loop was the one the run waited for and nothing else is queued, the run
//! goes to 499 ([`Transition::Cancel`]). Who started a loop is its person, or for the
//! operator, the connection its request came on (`loops.requested_on`).

use crate::agent::current::CurrentLoop;
use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{Ending, LoopOutcome};
use crate::agent::registry::RunRegistry;
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::{Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::enums::{RunAction, RunStatus};
use crate::db::ids::LoopId;
use crate::db::models::run::{LoopRow, RunActionForm, RunRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{loops, proposals, run_actions, runs};
use crate::db::{Conn, DbError};
use crate::hub::notifications::{Act, RunActed};

/// Who cancels, and what they may cancel.
#[derive(Debug, Clone)]
pub(crate) struct Canceller {
    /// The person (`None`: the operator, whose own loops are those of `connection`).
    pub person: Option<String>,
    /// The connection the request came on (`Instance::connection_key`).
    pub connection: i64,
    /// Whether the caller may abort the run, and so cancel a loop another started.
    pub may_abort: bool,
}

impl Canceller {
    /// Whether the caller started `lp`.
    fn started(&self, lp: &LoopRow) -> bool {
        match &self.person {
            Some(person) => lp.requested_by.as_deref() == Some(person.as_str()),
            None => lp.requested_on == Some(self.connection),
        }
    }
}

/// `canceller` cancels `which` loop of `run` (its number; `None`: every loop of theirs).
pub(crate) async fn cancel(
    agent: &AgentContext,
    run: &RunRow,
    canceller: Canceller,
    which: Option<i32>,
) -> Result<Answer, VerbError> {
    let settling = Settling {
        registry: agent.runs.clone(),
        bounds: agent.db.event_bounds(),
        run: run.clone(),
        canceller,
        which,
    };
    let settled = agent.db.call(move |conn| settling.settle(conn)).await??;
    for dropped in &settled.dropped {
        agent.runs.dropped(run.id, *dropped);
    }
    if let Some(mut current) = settled.stopping {
        // An error means the drain is gone, and with it the loop.
        let _ = current.stored.wait_for(|stored| *stored).await;
    }
    Ok(Answer::Cancelled {
        alias: run.alias.clone(),
        cancelled: settled.cancelled,
        withdrawn: settled.withdrawn,
    })
}

/// What the settle unit did.
#[derive(Default)]
struct Settled {
    /// The loop running here it cancelled; its unit of work stores 499.
    stopping: Option<CurrentLoop>,
    /// The queued loops it dropped.
    dropped: Vec<LoopId>,
    /// The numbers of the loops it cancelled, in the run.
    cancelled: Vec<i32>,
    /// The proposals it withdrew.
    withdrawn: Vec<String>,
}

/// What the settle stage's unit of work needs.
struct Settling {
    registry: RunRegistry,
    bounds: EventBounds,
    run: RunRow,
    canceller: Canceller,
    which: Option<i32>,
}

impl Settling {
    /// The settle stage's unit of work (see the module's doc). A refusal, or a loop to stop
    /// that runs on another instance ([`VerbError::Elsewhere`]), changes nothing.
    fn settle(self, conn: &mut Conn) -> Result<Result<Settled, VerbError>, DbError> {
        let run = self.run.id;
        runs::lock(conn, run)?;
        loops::lock_in_flight(conn, run)?;
        let targets = match self.targets(conn)? {
            Ok(targets) => targets,
            Err(refused) => return Ok(Err(refused)),
        };
        let running_here = self
            .registry
            .current(run)
            .filter(|current| !current.is_settled());
        let running = targets.iter().find(|lp| lp.status == RunStatus::Running);
        let stopping = match (running, running_here) {
            (Some(lp), Some(current)) if current.id == lp.id => Some(current),
            (Some(_), _) => return Ok(Err(VerbError::Elsewhere)),
            (None, _) => None,
        };
        let mut settled = Settled {
            stopping,
            ..Settled::default()
        };
        if targets.is_empty() {
            return Ok(Ok(settled));
        }
        let record = serde_json::to_value(LoopOutcome::Ended(Ending::Aborted).to_record()).ok();
        for lp in &targets {
            match lp.status {
                RunStatus::Running => {
                    if let Some(current) = &settled.stopping {
                        current.cancel.cancel();
                    }
                }
                RunStatus::Queued => {
                    loops::drop_loop(conn, lp.id, record.as_ref())?;
                    settled.dropped.push(lp.id);
                }
                _ => settled
                    .withdrawn
                    .extend(proposals::withdraw_of(conn, run, lp.id)?),
            }
            settled.cancelled.push(lp.sequence);
        }
        if settled.stopping.is_none() {
            self.settle_run(conn, &targets)?;
        }
        self.record(conn, &targets, &settled)?;
        Ok(Ok(settled))
    }

    /// The loops to stop: the caller's in flight, or the one named when it is in flight.
    fn targets(&self, conn: &mut Conn) -> Result<Result<Vec<LoopRow>, VerbError>, DbError> {
        let run = self.run.id;
        let mut in_flight = loops::pending_loops(conn, run)?;
        in_flight.extend(loops::active_loop(conn, run)?);
        for proposing in proposals::proposing_loops(conn, run)? {
            in_flight.extend(loops::get_loop(conn, proposing)?);
        }
        let Some(sequence) = self.which else {
            in_flight.retain(|lp| self.canceller.started(lp));
            return Ok(Ok(in_flight));
        };
        let Some(named) = loops::by_sequence(conn, run, sequence)? else {
            return Ok(Err(VerbError::NoSuchLoop {
                run: self.run.alias.clone(),
                sequence,
            }));
        };
        if !self.canceller.started(&named) && !self.canceller.may_abort {
            return Ok(Err(VerbError::NotYours {
                run: self.run.alias.clone(),
                sequence,
                by: named.requested_by,
            }));
        }
        in_flight.retain(|lp| lp.id == named.id);
        Ok(Ok(in_flight))
    }

    /// A run left waiting for nothing — no loop running or queued, no proposal pending but
    /// those of the loops cancelled (being carried out: their acceptance is recorded without
    /// resuming the run) — goes to 499.
    fn settle_run(&self, conn: &mut Conn, cancelled: &[LoopRow]) -> Result<(), DbError> {
        let run = self.run.id;
        let proposing = proposals::proposing_loops(conn, run)?;
        let waits = loops::active_loop(conn, run)?.is_some()
            || loops::next_pending(conn, run)?.is_some()
            || proposing
                .iter()
                .any(|proposing| cancelled.iter().all(|lp| lp.id != *proposing));
        let from = runs::get_run(conn, run)?
            .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
            .status;
        if waits || !Transition::Cancel.allowed_from(from) {
            return Ok(());
        }
        machine::take(conn, run, from, Transition::Cancel)
            .map(drop)
            .map_err(|error| DbError::Invalid(error.to_string()))
    }

    /// Records who cancelled (with the first loop stopped), and tells every client.
    fn record(
        &self,
        conn: &mut Conn,
        targets: &[LoopRow],
        settled: &Settled,
    ) -> Result<(), DbError> {
        let person = self.canceller.person.clone();
        let action = RunActionForm {
            run_id: self.run.id,
            loop_id: targets.first().map(|lp| lp.id),
            person: person.clone(),
            action: RunAction::Cancel,
            path: None,
        };
        run_actions::record(conn, &action)?;
        let acted = RunActed {
            cancelled: settled.cancelled.clone(),
            withdrawn: settled.withdrawn.clone(),
            ..acted(&self.run, Act::Cancel, person)
        };
        announce(conn, &self.bounds, &self.run, acted)
    }
}
