//! Preparations: what a plugin writes to the store before a turn's packet is assembled
//! (memory recalls what the prompt needs). Each runs on the writer, inside the unit of work
//! that materializes the turn's context, in a savepoint of its own: what it writes is part
//! of what the model sees on that very turn; a preparation that fails is rolled back and
//! logged, and the turn goes on without it. A preparation must be quick (it holds the
//! writer) and must not call out of the process.

use std::sync::Arc;

use diesel::Connection;

use crate::db::enums::LoopMode;
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::{Conn, DbError};

/// The turn being prepared.
#[derive(Debug, Clone, Copy)]
pub struct PreparingTurn<'a> {
    pub run: RunId,
    pub loop_id: LoopId,
    pub project: ProjectId,
    pub mode: LoopMode,
    /// The run-wide turn number.
    pub turn: i32,
    /// The loop's prompt, on the turn that writes it (a loop's first); `None` on later turns.
    pub prompt: Option<&'a str>,
}

/// A plugin's work before a turn's packet is assembled.
pub trait Preparation: Send + Sync {
    /// Writes what the turn should see.
    fn prepare(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) -> Result<(), DbError>;
}

/// The preparations, in registration order.
#[derive(Default, Clone)]
pub struct Preparations {
    preparations: Vec<Arc<dyn Preparation>>,
}

impl Preparations {
    pub fn register(&mut self, preparation: Arc<dyn Preparation>) {
        self.preparations.push(preparation);
    }

    /// Runs each in a savepoint; one that fails is rolled back and logged.
    pub fn run(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) {
        for preparation in &self.preparations {
            let outcome = conn.transaction::<_, DbError, _>(|conn| preparation.prepare(conn, turn));
            if let Err(error) = outcome {
                tracing::warn!(%error, run = %turn.run, "a turn's preparation failed; the turn goes on without it");
            }
        }
    }
}
