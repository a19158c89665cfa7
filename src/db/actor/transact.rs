//! `Transact`: a unit of work made of several queries, run on the writer thread in one
//! immediate transaction, so a handler's reads and writes see one consistent store.

use crate::db::Conn;
use actix::{Handler, Message};

use super::DbActor;
use crate::db::DbError;

/// The work: any composition of [`queries`](crate::db::queries) functions.
type Work<T> = Box<dyn FnOnce(&mut Conn) -> Result<T, DbError> + Send>;

/// Runs a closure over the connection inside one transaction and returns its result.
pub(crate) struct Transact<T> {
    work: Work<T>,
}

impl<T> Transact<T> {
    /// Wraps a unit of work.
    pub(crate) fn new<F>(work: F) -> Self
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
    {
        Transact {
            work: Box::new(work),
        }
    }
}

impl<T: 'static> Message for Transact<T> {
    type Result = Result<T, DbError>;
}

impl<T: 'static> Handler<Transact<T>> for DbActor {
    type Result = Result<T, DbError>;

    fn handle(&mut self, message: Transact<T>, _: &mut Self::Context) -> Self::Result {
        self.unit(message.work)
    }
}
