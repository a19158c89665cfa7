//! `abort` (`run/abort`): a person stops the run. Stages: *kill* (a command of the run
//! running on the server, with everything it started), *settle* (one unit of work on the
//! writer, [`settle`]), *wait* (until a cancelled loop's 499 is stored, or the waiter of a
//! dropped loop is answered) and *announce* (every client told, `hub`).
//!
//! An abort stops the whole run, everyone's work on it (`cancel` stops only the caller's).
//! The settle unit decides the race with everything else that moves the run, since those
//! moves are units of work on the same writer: every loop queued on the run (prompts behind
//! the running loop, the loop a resolution or an injection queued, a loop paused at a spend
//! cap, `agent::paused`) is dropped, its request answered 499; a loop this instance runs
//! whose outcome is not stored yet is cancelled there (its own unit then stores 499,
//! whatever it was about to store); a run no loop runs goes to 499, its pending proposals
//! withdrawn (those being carried out are marked, and their acceptance records them without
//! resuming the run). A loop running on another instance is that instance's to stop
//! ([`VerbError::Elsewhere`]).

use crate::agent::current::CurrentLoop;
use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{Ending, LoopOutcome};
use crate::agent::registry::RunRegistry;
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::{Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::enums::{RunAction, RunStatus};
use crate::db::ids::LoopId;
use crate::db::models::run::{RunActionForm, RunRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{loops, paused_loops, proposals, run_actions, runs};
use crate::db::{Conn, DbError};
use crate::hub::notifications::{Act, RunActed};

/// What the settle unit did.
enum Settled {
    /// Cancelled this loop, running here (its unit of work stores 499), and dropped the
    /// loops queued behind it.
    Stopping {
        current: CurrentLoop,
        dropped: Vec<LoopId>,
    },
    /// Stopped the idle run, dropping the loops queued to run next (a paused run: its paused
    /// loop too).
    Stopped { dropped: Vec<LoopId> },
    /// A loop of the run runs on another instance.
    Elsewhere,
}

/// `person` aborts `run`; answered once its 499 is stored.
pub(crate) async fn abort(
    agent: &AgentContext,
    run: &RunRow,
    person: Option<String>,
) -> Result<Answer, VerbError> {
    agent.commands.abort(run.id, person.clone());
    let settling = Settling {
        registry: agent.runs.clone(),
        bounds: agent.db.event_bounds(),
        run: run.clone(),
        person,
    };
    let settled = agent.db.call(move |conn| settling.settle(conn)).await?;
    let run = run.id;
    let (stopping, dropped) = match settled {
        Settled::Stopping { current, dropped } => (Some(current), dropped),
        Settled::Stopped { dropped } => (None, dropped),
        Settled::Elsewhere => return Err(VerbError::Elsewhere),
    };
    for dropped in dropped {
        agent.runs.dropped(run, dropped);
    }
    if let Some(mut current) = stopping {
        // An error means the drain is gone, and with it the loop.
        let _ = current.stored.wait_for(|stored| *stored).await;
    }
    Ok(Answer::Aborted)
}

/// What the settle stage's unit of work needs.
struct Settling {
    registry: RunRegistry,
    bounds: EventBounds,
    run: RunRow,
    person: Option<String>,
}

impl Settling {
    /// The settle stage's unit of work (see the module's doc); who aborted is recorded with
    /// the loop it stopped, and told with the proposals it withdrew.
    fn settle(self, conn: &mut Conn) -> Result<Settled, DbError> {
        let run = self.run.id;
        runs::lock(conn, run)?;
        loops::lock_in_flight(conn, run)?;
        let running_here = self
            .registry
            .current(run)
            .filter(|current| !current.is_settled());
        let record = serde_json::to_value(LoopOutcome::Ended(Ending::Aborted).to_record()).ok();
        if let Some(current) = running_here {
            current.cancel.cancel();
            let dropped = loops::drop_pending(conn, run, record.as_ref())?;
            self.record(conn, Some(current.id), Vec::new())?;
            return Ok(Settled::Stopping { current, dropped });
        }
        if loops::active_loop(conn, run)?.is_some() {
            return Ok(Settled::Elsewhere);
        }
        let from = runs::get_run(conn, run)?
            .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
            .status;
        if from == RunStatus::CapReached {
            paused_loops::unpause(conn, run)?;
        }
        let dropped = loops::drop_pending(conn, run, record.as_ref())?;
        let withdrawn = proposals::withdraw(conn, run)?;
        machine::take(conn, run, from, Transition::Abort)
            .map_err(|error| DbError::Invalid(error.to_string()))?;
        self.record(conn, dropped.first().copied(), withdrawn)?;
        Ok(Settled::Stopped { dropped })
    }

    /// Records who aborted (and the loop stopped), and tells every client.
    fn record(
        &self,
        conn: &mut Conn,
        stopped: Option<LoopId>,
        withdrawn: Vec<String>,
    ) -> Result<(), DbError> {
        let action = RunActionForm {
            run_id: self.run.id,
            loop_id: stopped,
            person: self.person.clone(),
            action: RunAction::Abort,
            path: None,
        };
        run_actions::record(conn, &action)?;
        let acted = RunActed {
            withdrawn,
            ..acted(&self.run, Act::Abort, self.person.clone())
        };
        announce(conn, &self.bounds, &self.run, acted)
    }
}
