//! [`CurrentLoop`]: the loop a run's actor is executing now, shared by the actor's drain
//! (which sets it in the unit of work that claims the loop), the loop itself (which settles
//! it in the unit that stores its outcome) and the run's verbs (whose units of work, on the
//! same writer, cancel it or join a message to it while it is not settled).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::db::ids::LoopId;

/// The loop a run actor is executing now, how to stop it, and when it has stopped.
#[derive(Debug, Clone)]
pub(crate) struct CurrentLoop {
    pub id: LoopId,
    /// Cancelling it ends the loop with 499 and drops its LLM request.
    pub cancel: CancellationToken,
    /// Becomes true once the loop's outcome (the run's status included) is stored.
    pub stored: watch::Receiver<bool>,
    /// Set on the writer, in the unit of work that stores the loop's outcome; a verb's unit
    /// of work (also on the writer) that finds it unset finds the loop still deciding its
    /// outcome, so that a cancel it makes there is seen by that unit.
    settled: Arc<AtomicBool>,
    /// The turn an injected message joined the loop for (0: none), set on the writer by
    /// the injection's unit of work; the unit that stores the loop's outcome queues a loop
    /// to take the message in when no turn that late ran.
    joined_at: Arc<AtomicI32>,
    /// The latest turn the loop completed.
    latest_turn: Arc<AtomicI32>,
}

impl CurrentLoop {
    pub(crate) fn new(
        id: LoopId,
        cancel: CancellationToken,
        stored: watch::Receiver<bool>,
    ) -> CurrentLoop {
        CurrentLoop {
            id,
            cancel,
            stored,
            settled: Arc::default(),
            joined_at: Arc::default(),
            latest_turn: Arc::default(),
        }
    }

    /// Whether its outcome is decided in the store (only meaningful on the writer).
    pub(crate) fn is_settled(&self) -> bool {
        self.settled.load(Ordering::SeqCst)
    }

    /// Marks its outcome decided; whether a message that joined it was never seen by one of
    /// its turns (on the writer, in the unit of work that stores the outcome).
    pub(crate) fn settle(&self) -> bool {
        self.settled.store(true, Ordering::SeqCst);
        self.joined_at.load(Ordering::SeqCst) > self.latest_turn.load(Ordering::SeqCst)
    }

    /// A message injected for turn `turn` joins it (on the writer, while it is not settled).
    pub(crate) fn join(&self, turn: i32) {
        self.joined_at.store(turn, Ordering::SeqCst);
    }

    /// The loop completed its turn `turn`.
    pub(crate) fn completed_turn(&self, turn: i32) {
        self.latest_turn.store(turn, Ordering::SeqCst);
    }
}
