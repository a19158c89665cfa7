//! `abort` (`run/abort`): a person stops the run. Stages: *kill* (a command of the run
//! running on the server, with everything it started), *settle* (one unit of work on the
//! writer, [`settle`]), *wait* (until a cancelled loop's 499 is stored, or the waiter of a
//! dropped loop is answered) and *announce* (every client told, `hub`).
//!
//! The settle unit decides the race with everything else that moves the run, since those
//! moves are units of work on the same writer: a loop this instance runs whose outcome is
//! not stored yet is cancelled there (its own unit then stores 499, whatever it was about
//! to store); a run no loop runs is stopped whole — 499, its pending proposals withdrawn
//! (those being carried out are marked, and their acceptance records them without resuming
//! the run), and the loop it would run next (queued by a resolution, an injection or a
//! prompt, not claimed yet) dropped. Loops queued behind a running loop are someone's
//! prompts: they stay queued and run next. A run paused at a spend cap (`agent::paused`)
//! drops its paused loop and every loop queued behind it, whose requests were answered
//! paused: nothing of it runs again. A loop running on another instance is that
//! instance's to stop ([`VerbError::Elsewhere`]).

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
    /// Cancelled this loop, running here; its unit of work stores 499.
    Stopping(CurrentLoop),
    /// Stopped the idle run, dropping the loop that was to run next (a paused run: its
    /// paused loop and those queued behind it).
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
    match settled {
        Settled::Stopping(mut current) => {
            // An error means the drain is gone, and with it the loop.
            let _ = current.stored.wait_for(|stored| *stored).await;
        }
        Settled::Stopped { dropped } => {
            for dropped in dropped {
                agent.runs.dropped(run, dropped);
            }
        }
        Settled::Elsewhere => return Err(VerbError::Elsewhere),
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
        let running_here = self
            .registry
            .current(run)
            .filter(|current| !current.is_settled());
        if let Some(current) = running_here {
            current.cancel.cancel();
            self.record(conn, Some(current.id), Vec::new())?;
            return Ok(Settled::Stopping(current));
        }
        if loops::active_loop(conn, run)?.is_some() {
            return Ok(Settled::Elsewhere);
        }
        let from = runs::get_run(conn, run)?
            .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
            .status;
        let paused = from == RunStatus::CapReached && paused_loops::unpause(conn, run)?.is_some();
        let dropped = match paused {
            true => loops::pending_loops(conn, run)?,
            false => loops::next_pending(conn, run)?.into_iter().collect(),
        };
        let record = serde_json::to_value(LoopOutcome::Ended(Ending::Aborted).to_record())
            .unwrap_or_default();
        for next in &dropped {
            loops::drop_loop(conn, next.id, Some(&record))?;
        }
        let withdrawn = proposals::withdraw(conn, run)?;
        machine::take(conn, run, from, Transition::Abort)
            .map_err(|error| DbError::Invalid(error.to_string()))?;
        let dropped: Vec<LoopId> = dropped.into_iter().map(|next| next.id).collect();
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
