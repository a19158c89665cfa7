//! What a test asks of the writer thread beside the units of work (the `testing` feature):
//! [`Uncounted`] work on its connection, outside any transaction, whose statements and unit
//! are not counted, so that measuring the writer's work adds none.

use actix::{Handler, Message};

use super::DbActor;
use crate::db::counted::uncounted;
use crate::db::{Conn, DbError};

/// The work: anything over the writer's connection.
type Work<T> = Box<dyn FnOnce(&mut Conn) -> Result<T, DbError> + Send>;

/// Runs a closure over the writer's connection, in autocommit, uncounted. Being in the
/// writer's mailbox, it runs after every message sent to it before.
pub(crate) struct Uncounted<T> {
    work: Work<T>,
}

impl<T> Uncounted<T> {
    /// Wraps `work`.
    pub(crate) fn new<F>(work: F) -> Self
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
    {
        Uncounted {
            work: Box::new(work),
        }
    }
}

impl<T: 'static> Message for Uncounted<T> {
    type Result = Result<T, DbError>;
}

impl<T: 'static> Handler<Uncounted<T>> for DbActor {
    type Result = Result<T, DbError>;

    fn handle(&mut self, message: Uncounted<T>, _: &mut Self::Context) -> Self::Result {
        uncounted(self.connection()?, message.work)
    }
}
