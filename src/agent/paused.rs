//! Caps pause a loop, not kill it. A loop whose model call a spend cap refuses *pauses*
//! ([`pause`], the one stage where a loop becomes paused, in the unit of work that stores
//! its outcome): the run goes to 402 (`Transition::Pause`), the loop goes back to pending
//! with its place — the turn it numbered for the refused call and its iteration, in
//! `loops.result` — and a row of `paused_loops` names the cap and when its period ends; no
//! drain claims a loop of the run while that row exists. The request that drove it is
//! answered paused (402, the cap), and so is every request queued behind it (their loops
//! stay queued); every client is told (`run/outcome` with the cap, `run/state` at 402).
//!
//! It is taken up again ([`unpause`]: `Transition::Unpause`, the row gone, the loops anyone's
//! to run, `run/action resume`) by the [`Resumer`] when its caps no longer stand — raised or
//! removed (a run's caps given again by `ask`/`act`, the users file reloaded, a server
//! restarted with other settings), its period over — or by an admin's `run/resume`. Any
//! instance may do it: the paused loops are the store's, not an instance's, so a cap raised
//! on one instance resumes a loop paused on another, and a paused loop outlives the
//! instance it paused on. The loop then continues with the turn the cap refused, its prompt
//! not written again and its turn count where it was.
//!
//! A sub-agent's loop does not pause (nobody would wait for it when it resumed): it fails
//! (`Ending::CapReached`), and the loop that delegated to it pauses at its own next call.

mod resumer;

pub(crate) use resumer::{resume_run, watch, Resumed, Resumer};

use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{LoopOutcome, LoopRecord, Paused};
use crate::agent::verbs::announce::{acted, announce};
use crate::db::enums::RunStatus;
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::queries::paused_loops::{self, PausedRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::runs;
use crate::db::{Conn, DbError};
use crate::hub;
use crate::hub::notifications::{Act, Notification, RunState};
use crate::usage::Standing;

/// A running loop that a spend cap stopped, and where.
pub(crate) struct Pausing {
    pub run: RunId,
    pub loop_id: LoopId,
    /// The turn numbered for the refused call (taken up again first).
    pub turn: i32,
    /// The loop's iteration that turn is.
    pub iteration: u32,
    pub cap: Standing,
    /// The run's project and alias, and its state at 402, for its clients (`None` when
    /// the loop stopped before it read its run).
    pub told: Option<(ProjectId, String, Box<RunState>)>,
}

impl Pausing {
    /// The outcome its request is answered with.
    pub(crate) fn outcome(&self) -> LoopOutcome {
        LoopOutcome::Paused(Box::new(Paused {
            error: self.cap.describe(),
            cap: Some(self.cap.view()),
        }))
    }

    fn row(&self) -> PausedRow {
        row_of(self.run, self.loop_id, &self.cap)
    }
}

/// The pause stage, in the unit of work that stores the loop's outcome: the run to 402, the
/// loop back to pending with its place, its row entered, its clients told. Webhooks and
/// inboxes that follow a run stopped by a cap hook in here.
pub(crate) fn pause(
    conn: &mut Conn,
    bounds: &EventBounds,
    pausing: &Pausing,
) -> Result<(), DbError> {
    machine::take(conn, pausing.run, RunStatus::Running, Transition::Pause)
        .map_err(|error| DbError::Invalid(error.to_string()))?;
    let outcome = pausing.outcome();
    let record = LoopRecord {
        turn: Some(pausing.turn),
        iteration: Some(pausing.iteration),
        ..outcome.to_record()
    };
    let record = serde_json::to_value(record).unwrap_or_default();
    paused_loops::pause(conn, &pausing.row(), &record)?;
    if let Some((project, alias, state)) = &pausing.told {
        let ended = Notification::Outcome(outcome.told(alias));
        hub::append(conn, bounds, *project, pausing.run, &ended)?;
        let state = Notification::State(state.clone());
        hub::append(conn, bounds, *project, pausing.run, &state)?;
    }
    Ok(())
}

/// Where a paused loop stopped, as its `loops.result` keeps it while it waits.
pub(crate) struct PausedPlace {
    pub turn: i32,
    pub iteration: u32,
}

impl PausedPlace {
    /// The place a claimed loop takes up again, if it was paused.
    pub(crate) fn of(result: Option<&serde_json::Value>) -> Option<PausedPlace> {
        let record: LoopRecord = serde::Deserialize::deserialize(result?).ok()?;
        match (record.status, record.turn, record.iteration) {
            (RunStatus::CapReached, Some(turn), Some(iteration)) => {
                Some(PausedPlace { turn, iteration })
            }
            _ => None,
        }
    }
}

/// The unpause unit: the run's paused loop taken up again — its row gone, the run 402 →
/// 102, every client told who resumed it (`by`, `None`: the server, or the operator) —;
/// false when the run has no paused loop (another unit of work got there first).
pub(crate) fn unpause(
    conn: &mut Conn,
    bounds: &EventBounds,
    run: RunId,
    by: Option<String>,
) -> Result<bool, DbError> {
    if paused_loops::unpause(conn, run)?.is_none() {
        return Ok(false);
    }
    let row = runs::get_run(conn, run)?.ok_or_else(|| DbError::NotFound(format!("run {run}")))?;
    machine::take(conn, run, row.status, Transition::Unpause)
        .map_err(|error| DbError::Invalid(error.to_string()))?;
    announce(conn, bounds, &row, acted(&row, Act::Resume, by))?;
    Ok(true)
}

/// The outcome a request queued behind a paused loop is answered with.
pub(crate) fn outcome_of(row: &PausedRow) -> LoopOutcome {
    LoopOutcome::Paused(Box::new(Paused {
        error: row.error.clone(),
        cap: serde_json::from_str(&row.cap).ok(),
    }))
}

/// The row of `run`'s loop `loop_id` paused by `cap`.
fn row_of(run: RunId, loop_id: LoopId, cap: &Standing) -> PausedRow {
    PausedRow {
        loop_id,
        run_id: run,
        cap: serde_json::to_string(&cap.view()).unwrap_or_default(),
        error: cap.describe(),
        resets_at: cap.resets.0,
    }
}
