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
    /// Whether it has anything to do for `turn`, said without the store: when not, no
    /// savepoint is opened for it (two statements less on the writer).
    fn applies(&self, _turn: &PreparingTurn<'_>) -> bool {
        true
    }

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

    /// Runs each that applies to `turn` in a savepoint; one that fails is rolled back and
    /// logged.
    pub fn run(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) {
        for preparation in self.preparations.iter().filter(|p| p.applies(turn)) {
            let outcome = conn.transaction::<_, DbError, _>(|conn| preparation.prepare(conn, turn));
            if let Err(error) = outcome {
                tracing::warn!(%error, run = %turn.run, "a turn's preparation failed; the turn goes on without it");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::models::entry::EntryUpsertForm;
    use crate::db::queries::entries;
    use crate::db::testing::{sample_loop, sample_run, TestDb};

    /// Writes `path`, then fails when `fails`.
    struct Writes {
        path: &'static str,
        fails: bool,
    }

    impl Preparation for Writes {
        fn prepare(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) -> Result<(), DbError> {
            entries::write_entry(
                conn,
                &EntryUpsertForm::new(turn.run, None, turn.turn, self.path, "x"),
            )?;
            match self.fails {
                true => Err(DbError::Internal("a plugin bug".into())),
                false => Ok(()),
            }
        }
    }

    #[test]
    fn a_failed_preparation_is_rolled_back_and_the_others_still_run() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let queued = sample_loop(&mut db.conn, run.id, "go");
        let mut preparations = Preparations::default();
        preparations.register(Arc::new(Writes {
            path: "known://failed",
            fails: true,
        }));
        preparations.register(Arc::new(Writes {
            path: "known://kept",
            fails: false,
        }));
        let turn = PreparingTurn {
            run: run.id,
            loop_id: queued.id,
            project: run.project_id,
            mode: LoopMode::Act,
            turn: 1,
            prompt: Some("go"),
        };
        preparations.run(&mut db.conn, &turn);
        let conn = &mut db.conn;
        assert!(entries::get_entry(conn, run.id, "known://failed")
            .unwrap()
            .is_none());
        assert!(entries::get_entry(conn, run.id, "known://kept")
            .unwrap()
            .is_some());
    }
}
