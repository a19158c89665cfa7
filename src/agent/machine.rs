//! The state machine of a run and of its proposals: every move of a run's status is a
//! named [`Transition`], taken only through [`take`], and the store's trigger
//! (`trg_run_state_transition`, migration `run_verbs`) holds the same table, which a test
//! checks move by move.
//!
//! A run is *idle* (100 new, 200 completed, 413 too large, 499 aborted, 500 failed),
//! *running* (102: a loop runs, or a resolution, an injection or an unpause has queued the
//! loop that continues it), *waiting* (202: proposals wait for a client), or *paused* (402:
//! its loop stopped at a spend cap and waits, pending, to be taken up again where it
//! stopped; `agent::paused`).
//! A proposal is *pending* (202), *claimed* while one request carries out its acceptance
//! (a `proposal_claims` row; still 202), then *resolved* once (200 accepted, 403 rejected or
//! refused, 500 failed) or *withdrawn* by an abort, or by a cancel of the loop that proposed
//! it (499). A later state (a run paused at a cap) is one more idle status and its
//! transitions here.

use crate::db::enums::{EntryStatus, RunAction, RunStatus};
use crate::db::ids::RunId;
use crate::db::queries::runs;
use crate::db::{Conn, DbError};

/// A named move of a run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    /// A loop is claimed and starts its turns: any state → running (already running when a
    /// verb queued it).
    Open,
    /// The running loop ends with this status: running → 200, 202, 413, 499 or 500.
    Settle(RunStatus),
    /// The running loop stops at a spend cap and keeps its place: running → paused (402).
    Pause,
    /// The paused loop goes back to the queue, taken up next where it stopped: paused →
    /// running (its cap raised or removed, its period reset, or `run/resume`).
    Unpause,
    /// The last pending proposal is resolved and the run goes on: → running, the loop that
    /// continues it queued in the same unit of work (behind the loop that runs, if one does:
    /// a prompt queued behind the proposing loop); never from paused.
    Resume,
    /// The last pending proposal is resolved and the run ends (a rejection, or an acceptance
    /// after the model summarized): idle → 200 (a paused run ends only by its own loop).
    Complete,
    /// A run no loop runs is aborted: any state → 499 (running only while the loop queued
    /// to continue it is not claimed yet).
    Abort,
    /// The loop a run no loop runs was waiting for is cancelled by whoever started it
    /// (`run/cancel`), and no other loop is queued: its proposals withdrawn (waiting → 499),
    /// or the loop queued to continue it dropped before it was claimed (running → 499).
    Cancel,
}

/// The statuses in which no loop runs and none waits to be taken up again.
const IDLE: [RunStatus; 6] = [
    RunStatus::Queued,
    RunStatus::Completed,
    RunStatus::Proposed,
    RunStatus::TooLarge,
    RunStatus::Aborted,
    RunStatus::Failed,
];

/// How a running loop may end.
const ENDINGS: [RunStatus; 5] = [
    RunStatus::Completed,
    RunStatus::Proposed,
    RunStatus::TooLarge,
    RunStatus::Aborted,
    RunStatus::Failed,
];

/// A move the machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a run at {from} cannot {}", .transition.describe())]
pub(crate) struct Illegal {
    pub from: RunStatus,
    pub transition: Transition,
}

impl Transition {
    /// The status it leaves the run in.
    pub(crate) fn target(self) -> RunStatus {
        match self {
            Transition::Open | Transition::Resume | Transition::Unpause => RunStatus::Running,
            Transition::Settle(status) => status,
            Transition::Pause => RunStatus::CapReached,
            Transition::Complete => RunStatus::Completed,
            Transition::Abort | Transition::Cancel => RunStatus::Aborted,
        }
    }

    /// Whether a run at `from` may take it.
    pub(crate) fn allowed_from(self, from: RunStatus) -> bool {
        let idle = IDLE.contains(&from);
        match self {
            Transition::Open => true,
            Transition::Settle(status) => from == RunStatus::Running && ENDINGS.contains(&status),
            Transition::Pause => from == RunStatus::Running,
            Transition::Unpause => from == RunStatus::CapReached,
            Transition::Resume => from != RunStatus::CapReached,
            Transition::Abort => true,
            Transition::Complete => idle,
            Transition::Cancel => matches!(from, RunStatus::Running | RunStatus::Proposed),
        }
    }

    /// What it does, for an error's message.
    fn describe(self) -> String {
        match self {
            Transition::Open => "start a loop".to_owned(),
            Transition::Settle(status) => format!("end a loop with {status}"),
            Transition::Pause => "pause at a spend cap".to_owned(),
            Transition::Unpause => "be unpaused".to_owned(),
            Transition::Resume => "resume".to_owned(),
            Transition::Complete => "complete".to_owned(),
            Transition::Abort => "be aborted".to_owned(),
            Transition::Cancel => "have its loop cancelled".to_owned(),
        }
    }
}

/// Moves `run`, now at `from`, by `transition`; staying where it is writes nothing.
pub(crate) fn take(
    conn: &mut Conn,
    run: RunId,
    from: RunStatus,
    transition: Transition,
) -> Result<RunStatus, TakeError> {
    if !transition.allowed_from(from) {
        return Err(TakeError::Illegal(Illegal { from, transition }));
    }
    let to = transition.target();
    if to != from {
        runs::set_run_status(conn, run, to)?;
    }
    Ok(to)
}

/// Why [`take`] did not move the run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TakeError {
    #[error(transparent)]
    Illegal(#[from] Illegal),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Where one proposal stands, as a second request for it finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProposalState {
    /// Waiting for a client.
    Pending,
    /// Being accepted by another request (`by`), which carries out what accepting it does.
    Claimed { by: Option<String> },
    /// Resolved once, with `status`, by `action` of `by`.
    Resolved {
        status: EntryStatus,
        action: Option<RunAction>,
        by: Option<String>,
    },
    /// Withdrawn by `action` (an abort of the run, or a cancel of the loop that proposed
    /// it) of `by`.
    Withdrawn {
        action: RunAction,
        by: Option<String>,
    },
    /// The run has no proposal at that path.
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{project_with_run, TestDb};

    const ALL: [RunStatus; 8] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::Proposed,
        RunStatus::CapReached,
        RunStatus::TooLarge,
        RunStatus::Aborted,
        RunStatus::Failed,
    ];

    fn transitions() -> Vec<Transition> {
        let mut all = vec![
            Transition::Open,
            Transition::Pause,
            Transition::Unpause,
            Transition::Resume,
            Transition::Complete,
            Transition::Abort,
            Transition::Cancel,
        ];
        all.extend(ALL.map(Transition::Settle));
        all
    }

    /// A new run brought to `status` the way runs get there.
    fn run_at(conn: &mut Conn, status: RunStatus) -> RunId {
        let run = project_with_run(conn, None).unwrap().id;
        let path: &[RunStatus] = match status {
            RunStatus::Queued => &[],
            RunStatus::Running => &[RunStatus::Running],
            RunStatus::Completed | RunStatus::Aborted => &[status],
            other => &[RunStatus::Running, other],
        };
        for step in path {
            runs::set_run_status(conn, run, *step).unwrap();
        }
        run
    }

    /// Every move the machine allows the store's trigger allows, and every move between two
    /// statuses no transition names the trigger refuses.
    #[test]
    fn the_store_s_trigger_holds_the_machine_s_table() {
        let mut db = TestDb::new();
        for from in ALL {
            for to in ALL.into_iter().filter(|to| *to != from) {
                let named = transitions()
                    .into_iter()
                    .any(|transition| transition.allowed_from(from) && transition.target() == to);
                let run = run_at(&mut db.conn, from);
                let stored = runs::set_run_status(&mut db.conn, run, to);
                assert_eq!(
                    stored.is_ok(),
                    named,
                    "{from} -> {to}: the machine says {named}, the store {stored:?}"
                );
                if !named {
                    assert!(matches!(stored, Err(DbError::Invalid(_))));
                    let now = runs::get_run(&mut db.conn, run).unwrap().unwrap().status;
                    assert_eq!(now, from, "a refused move changes nothing");
                }
            }
        }
    }

    #[test]
    fn an_illegal_move_is_refused_before_the_store_is_asked() {
        let mut db = TestDb::new();
        let run = run_at(&mut db.conn, RunStatus::Running);
        let refused = take(&mut db.conn, run, RunStatus::Running, Transition::Complete);
        assert!(matches!(
            refused,
            Err(TakeError::Illegal(Illegal {
                from: RunStatus::Running,
                transition: Transition::Complete
            }))
        ));
        assert_eq!(
            Illegal {
                from: RunStatus::Aborted,
                transition: Transition::Settle(RunStatus::Completed)
            }
            .to_string(),
            "a run at 499 cannot end a loop with 200"
        );
        let paused_run = run_at(&mut db.conn, RunStatus::CapReached);
        for transition in [Transition::Complete, Transition::Resume] {
            assert!(matches!(
                take(&mut db.conn, paused_run, RunStatus::CapReached, transition),
                Err(TakeError::Illegal(_))
            ));
        }
        let unpaused = take(
            &mut db.conn,
            paused_run,
            RunStatus::CapReached,
            Transition::Unpause,
        );
        assert_eq!(unpaused.unwrap(), RunStatus::Running);
        let paused = take(
            &mut db.conn,
            paused_run,
            RunStatus::Running,
            Transition::Pause,
        );
        assert_eq!(paused.unwrap(), RunStatus::CapReached);
        let aborted = take(&mut db.conn, run, RunStatus::Running, Transition::Abort).unwrap();
        assert_eq!(aborted, RunStatus::Aborted);
        for (run, now) in [
            (paused_run, RunStatus::CapReached),
            (run, RunStatus::Aborted),
        ] {
            let stored = runs::get_run(&mut db.conn, run).unwrap().unwrap().status;
            assert_eq!(stored, now, "a move taken is stored");
        }
        let staying = take(&mut db.conn, run, RunStatus::Aborted, Transition::Abort);
        assert_eq!(
            staying.unwrap(),
            RunStatus::Aborted,
            "staying writes nothing"
        );
    }
}
