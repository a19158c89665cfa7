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
//! prompts: they stay queued and run next. A loop running on another instance is that
//! instance's to stop ([`VerbError::Elsewhere`]).

use crate::agent::current::CurrentLoop;
use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{Ending, LoopOutcome};
use crate::agent::registry::RunRegistry;
use crate::agent::verbs::{Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::enums::RunAction;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::RunActionForm;
use crate::db::queries::{loops, proposals, run_actions, runs};
use crate::db::{Conn, DbError};

/// What the settle unit did.
enum Settled {
    /// Cancelled this loop, running here; its unit of work stores 499.
    Stopping(CurrentLoop),
    /// Stopped the idle run, dropping this loop that was to run next.
    Stopped { dropped: Option<LoopId> },
    /// A loop of the run runs on another instance.
    Elsewhere,
}

/// `person` aborts `run`; answered once its 499 is stored.
pub(crate) async fn abort(
    agent: &AgentContext,
    run: RunId,
    person: Option<String>,
) -> Result<Answer, VerbError> {
    agent.commands.abort(run, person.clone());
    let registry = agent.runs.clone();
    let settled = agent
        .db
        .call(move |conn| settle(conn, &registry, run, person))
        .await?;
    match settled {
        Settled::Stopping(mut current) => {
            // An error means the drain is gone, and with it the loop.
            let _ = current.stored.wait_for(|stored| *stored).await;
        }
        Settled::Stopped { dropped } => {
            if let Some(dropped) = dropped {
                agent.runs.dropped(run, dropped);
            }
        }
        Settled::Elsewhere => return Err(VerbError::Elsewhere),
    }
    Ok(Answer::Aborted)
}

/// The settle stage's unit of work (see the module's doc); who aborted is recorded with the
/// loop it stopped.
fn settle(
    conn: &mut Conn,
    registry: &RunRegistry,
    run: RunId,
    person: Option<String>,
) -> Result<Settled, DbError> {
    let action = |loop_id| RunActionForm {
        run_id: run,
        loop_id,
        person: person.clone(),
        action: RunAction::Abort,
        path: None,
    };
    let running_here = registry
        .current(run)
        .filter(|current| !current.is_settled());
    if let Some(current) = running_here {
        current.cancel.cancel();
        run_actions::record(conn, &action(Some(current.id)))?;
        return Ok(Settled::Stopping(current));
    }
    if loops::active_loop(conn, run)?.is_some() {
        return Ok(Settled::Elsewhere);
    }
    let from = runs::get_run(conn, run)?
        .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
        .status;
    let dropped = loops::next_pending(conn, run)?;
    if let Some(next) = &dropped {
        let record = serde_json::to_value(LoopOutcome::Ended(Ending::Aborted).to_record())
            .unwrap_or_default();
        loops::drop_loop(conn, next.id, Some(&record))?;
    }
    proposals::withdraw(conn, run)?;
    machine::take(conn, run, from, Transition::Abort)
        .map_err(|error| DbError::Invalid(error.to_string()))?;
    let dropped = dropped.map(|next| next.id);
    run_actions::record(conn, &action(dropped))?;
    Ok(Settled::Stopped { dropped })
}
