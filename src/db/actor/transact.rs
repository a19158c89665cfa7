//! `Transact`: a unit of work made of several queries, queued for the writer thread and run
//! in one transaction (its own, or one it shares with the units queued beside it: `group`),
//! so a handler's reads and writes see one consistent store. Its caller is answered once that
//! transaction has committed.

use tokio::sync::oneshot;

use crate::db::{Conn, DbError};

/// The work: any composition of [`queries`](crate::db::queries) functions.
type Work<T> = Box<dyn FnOnce(&mut Conn) -> Result<T, DbError> + Send>;

/// A queued unit of work, its result's type erased so units of any type share a queue.
pub(crate) trait Unit: Send {
    /// Runs the work over `conn`, keeping its value until the unit is answered.
    fn run(&mut self, conn: &mut Conn) -> Result<(), DbError>;

    /// Answers the caller: with the value kept when `outcome` is `Ok`, else with its error.
    fn answer(self: Box<Self>, outcome: Result<(), DbError>);
}

/// A closure over the connection and where its result goes.
pub(crate) struct Transact<T> {
    work: Option<Work<T>>,
    value: Option<T>,
    reply: oneshot::Sender<Result<T, DbError>>,
}

impl<T> Transact<T> {
    /// Wraps a unit of work, answered on `reply`.
    pub(crate) fn new<F>(work: F, reply: oneshot::Sender<Result<T, DbError>>) -> Self
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
    {
        Transact {
            work: Some(Box::new(work)),
            value: None,
            reply,
        }
    }
}

impl<T: Send> Unit for Transact<T> {
    fn run(&mut self, conn: &mut Conn) -> Result<(), DbError> {
        let work = self
            .work
            .take()
            .ok_or_else(|| DbError::Internal("a unit of work ran twice".into()))?;
        self.value = Some(work(conn)?);
        Ok(())
    }

    fn answer(self: Box<Self>, outcome: Result<(), DbError>) {
        let Transact { value, reply, .. } = *self;
        let answer = outcome.and_then(|()| {
            value.ok_or_else(|| DbError::Internal("a unit of work answered unrun".into()))
        });
        // A caller that stopped waiting (a queued unit's, or one dropped) needs no answer.
        let _ = reply.send(answer);
    }
}
