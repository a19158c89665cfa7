//! [`Writer`]: how units of work reach the writer thread. A unit is queued (`actor::group`'s
//! [`UnitQueue`]) and the thread woken with a `Drain`, so the units queued while it commits
//! share its next transaction; the writer's other messages go to its mailbox directly.

use std::future::Future;

use actix::Addr;
use tokio::sync::oneshot;

use super::actor::group::{Drain, UnitQueue};
use super::actor::transact::Transact;
use super::{Conn, DbActor, DbError};

/// The writer thread's address and its queue of units. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Writer {
    /// For the messages that are not units of work.
    pub(crate) actor: Addr<DbActor>,
    queue: UnitQueue,
}

impl Writer {
    pub(crate) fn new(actor: Addr<DbActor>, queue: UnitQueue) -> Writer {
        Writer { actor, queue }
    }

    /// Queues `work` as a unit of work now, behind every unit queued before; the future
    /// waits until the transaction holding it has committed (or it failed): its result.
    pub(crate) fn call<T, F>(&self, work: F) -> impl Future<Output = Result<T, DbError>> + 'static
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.queue.push(Box::new(Transact::new(work, reply)));
        let drained = self.actor.send(Drain);
        async move {
            drained.await.map_err(unavailable)?;
            answer.await.map_err(|_| {
                DbError::Internal("database unavailable: the unit was dropped".into())
            })?
        }
    }

    /// Queues `work` as a unit of work without waiting for it; what becomes of it is the
    /// work's to report.
    pub(crate) fn call_later<F>(&self, work: F)
    where
        F: FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static,
    {
        let (reply, _) = oneshot::channel();
        self.queue.push(Box::new(Transact::new(work, reply)));
        self.actor.do_send(Drain);
    }
}

/// The writer's mailbox is gone: the server is stopping.
pub(crate) fn unavailable(error: actix::MailboxError) -> DbError {
    DbError::Internal(format!("database unavailable: {error}"))
}
