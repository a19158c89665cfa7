//! Group commit: the units of work queued while the writer is busy share its next
//! transaction, so the store commits (on SQLite: syncs its log) once for many runs' turns.
//!
//! A caller queues its unit on the [`UnitQueue`] and then sends the writer a [`Drain`]; the
//! writer, handling one, takes every unit queued by then, at most [`GROUP_LIMIT`] to a
//! transaction, in the order they were queued (so a run's units, which its caller queues one
//! after another, keep their order). In a transaction the first unit runs as a lone unit
//! would, without a savepoint: should it fail, the transaction holds nothing else and is
//! rolled back, and the next unit begins another. Each further unit runs in a savepoint, so
//! one that fails (an error or a panic) is rolled back alone and its caller alone gets the
//! error. A unit that succeeded is answered only once the transaction holding it has
//! committed; should the commit fail, every unit in it gets the error.
//!
//! A unit alone is the transaction it always was, statement for statement, and n units in one
//! transaction send as many statements as n transactions (`BEGIN` … `COMMIT` for the first,
//! `SAVEPOINT` … `RELEASE` for each other), so the counted work of a turn does not depend on
//! how its units were grouped; the transactions are counted apart (`WorkCounters`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};

use actix::Handler;
use diesel::connection::TransactionManager;
use diesel::Connection;

use super::transact::Unit;
use super::DbActor;
use crate::db::connection::begin_write;
use crate::db::entry_changes::{self, EntryChange};
use crate::db::events::{self, NumberedEvent};
use crate::db::{Conn, DbError};
use crate::hedberg::budget::{self, Budget};

/// The most units one transaction holds; the rest go to the next.
pub(crate) const GROUP_LIMIT: usize = 64;

/// The units handed to the writer and not yet taken: shared by the writer and its handles.
#[derive(Clone, Default)]
pub(crate) struct UnitQueue(Arc<Mutex<Vec<Box<dyn Unit>>>>);

impl UnitQueue {
    /// Queues `unit` behind those queued before it.
    pub(crate) fn push(&self, unit: Box<dyn Unit>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(unit);
    }

    /// Every unit queued, oldest first; the queue is left empty.
    fn take(&self) -> Vec<Box<dyn Unit>> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Wakes the writer to run the queued units. Each unit has one sent after it was queued, so
/// once a caller's `Drain` has been handled its unit has run (this one took it, or an earlier
/// one did); a `Drain` that finds the queue empty does nothing.
#[derive(Debug, Clone, Copy, actix::Message)]
#[rtype(result = "()")]
pub(crate) struct Drain;

impl Handler<Drain> for DbActor {
    type Result = ();

    fn handle(&mut self, _: Drain, _: &mut Self::Context) {
        let mut queued = self.queue.take();
        while !queued.is_empty() {
            let later = queued.split_off(queued.len().min(GROUP_LIMIT));
            let mut units = queued.into_iter();
            while let Some(first) = units.next() {
                self.transaction(first, &mut units);
            }
            queued = later;
        }
    }
}

/// A unit that ran and waits for its transaction's commit.
struct Ran {
    unit: Box<dyn Unit>,
    changes: Vec<EntryChange>,
    events: Vec<NumberedEvent>,
}

/// What became of a unit's attempt.
enum Attempt {
    /// It ran; its changes wait for the commit.
    Ran(Ran),
    /// It failed and was rolled back alone: answered.
    Failed,
    /// It failed and the transaction could not be brought back to where it was before it:
    /// the connection is dropped, with everything the transaction held.
    Lost(DbError),
}

impl DbActor {
    /// One transaction: `first`, then as many of `rest` as it can hold; every unit it took is
    /// answered when it returns. A unit it did not take stays in `rest`.
    fn transaction(&mut self, first: Box<dyn Unit>, rest: &mut std::vec::IntoIter<Box<dyn Unit>>) {
        self.work.transaction();
        let begun = self
            .connection()
            .and_then(|conn| begin_write(conn).map_err(DbError::from));
        if let Err(error) = begun {
            self.work.unit();
            first.answer(Err(error));
            self.drop_lost_connection();
            return;
        }
        let mut ran = match self.attempt(first, false) {
            Attempt::Ran(ran) => vec![ran],
            Attempt::Failed | Attempt::Lost(_) => return,
        };
        for unit in rest.by_ref() {
            match self.attempt(unit, true) {
                Attempt::Ran(unit) => ran.push(unit),
                Attempt::Failed => {}
                Attempt::Lost(error) => return answer_all(ran, &error),
            }
        }
        let committed = match self.connection.as_mut() {
            Some(conn) => {
                <Conn as TransactionManager<Conn>>::commit_transaction(conn).map_err(DbError::from)
            }
            None => Err(DbError::Internal("the connection was lost".into())),
        };
        match committed {
            Ok(()) => self.deliver(ran),
            Err(error) => {
                self.connection = None;
                answer_all(ran, &error);
            }
        }
    }

    /// Runs `unit` in the open transaction (in a savepoint when `nested`), under a fresh
    /// budget for its pattern and edit work, marked on the watchdog, counted. A failure is
    /// rolled back (the savepoint, or the whole transaction, which holds nothing else) and
    /// answered here.
    fn attempt(&mut self, mut unit: Box<dyn Unit>, nested: bool) -> Attempt {
        self.work.unit();
        self.watch.begin();
        events::discard_staged();
        let budget = Rc::new(Budget::new(self.limits));
        let logged = self.entry_changes.is_some();
        let outcome = match self.connection.as_mut() {
            Some(conn) => catch_unwind(AssertUnwindSafe(|| {
                budget::scoped(budget, || {
                    let mut work = |conn: &mut Conn| {
                        unit.run(conn)?;
                        match logged {
                            true => entry_changes::take(conn),
                            false => Ok(Vec::new()),
                        }
                    };
                    match nested {
                        true => conn.transaction(work),
                        false => work(conn),
                    }
                })
            })),
            None => Ok(Err(DbError::Internal("the connection was lost".into()))),
        };
        self.watch.end();
        let error = match outcome {
            Ok(Ok(changes)) => {
                let events = events::take_staged();
                return Attempt::Ran(Ran {
                    unit,
                    changes,
                    events,
                });
            }
            Ok(Err(error)) => error,
            Err(_) => {
                tracing::error!("a unit of database work panicked; rolled back");
                DbError::Internal("a unit of database work failed unexpectedly".into())
            }
        };
        events::discard_staged();
        let restored = match nested {
            true => self.back_to_the_transaction(),
            false => self.roll_back(),
        };
        if !restored {
            self.connection = None;
        }
        match (nested, restored) {
            (true, false) => {
                unit.answer(Err(copy(&error)));
                Attempt::Lost(error)
            }
            _ => {
                unit.answer(Err(error));
                Attempt::Failed
            }
        }
    }

    /// After a nested unit failed: rolls back what it left open (a panic leaves its
    /// savepoint, and any inside it, open) until the transaction is as it was before it;
    /// false when that cannot be done.
    fn back_to_the_transaction(&mut self) -> bool {
        let Some(conn) = self.connection.as_mut() else {
            return false;
        };
        loop {
            let depth = <Conn as TransactionManager<Conn>>::transaction_manager_status_mut(conn)
                .transaction_depth();
            match depth {
                Ok(Some(depth)) if depth.get() > 1 => {
                    if <Conn as TransactionManager<Conn>>::rollback_transaction(conn).is_err() {
                        return false;
                    }
                }
                Ok(Some(_)) => return true,
                Ok(None) | Err(_) => return false,
            }
        }
    }

    /// After the first unit of a transaction failed: rolls the transaction back, with any
    /// savepoint a panic left open in it; false when that cannot be done (the connection is
    /// then dropped, which ends it).
    fn roll_back(&mut self) -> bool {
        let Some(conn) = self.connection.as_mut() else {
            return false;
        };
        loop {
            let depth = <Conn as TransactionManager<Conn>>::transaction_manager_status_mut(conn)
                .transaction_depth();
            match depth {
                Ok(Some(_)) => {
                    if <Conn as TransactionManager<Conn>>::rollback_transaction(conn).is_err() {
                        return false;
                    }
                }
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }

    /// After the commit: each unit's changes to entries and then every unit's notifications
    /// to their sinks, in the order the units ran; then each unit is answered.
    fn deliver(&self, ran: Vec<Ran>) {
        if let Some(sink) = &self.entry_changes {
            for unit in &ran {
                sink.deliver(&unit.changes);
            }
        }
        let mut numbered = Vec::new();
        let mut units = Vec::with_capacity(ran.len());
        for Ran { unit, events, .. } in ran {
            numbered.extend(events);
            units.push(unit);
        }
        if let Some(sink) = &self.events {
            sink.deliver(numbered);
        }
        for unit in units {
            unit.answer(Ok(()));
        }
    }
}

/// Answers every unit of a transaction that did not commit with `error`.
fn answer_all(ran: Vec<Ran>, error: &DbError) {
    for Ran { unit, .. } in ran {
        unit.answer(Err(copy(error)));
    }
}

/// The same error for another unit of the transaction it ended.
fn copy(error: &DbError) -> DbError {
    match error {
        DbError::NotFound(text) => DbError::NotFound(text.clone()),
        DbError::Conflict(text) => DbError::Conflict(text.clone()),
        DbError::Invalid(text) => DbError::Invalid(text.clone()),
        DbError::WorkLimit(limit) => DbError::WorkLimit(*limit),
        DbError::Corrupt(corrupt) => DbError::Internal(corrupt.to_string()),
        DbError::Internal(text) => DbError::Internal(text.clone()),
    }
}

#[cfg(test)]
mod tests;
