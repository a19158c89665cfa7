//! What a test asks of the store beside the server's work (the `testing` feature): that what
//! was handed to the writer is written ([`DbHandle::settle_writes`]), and work on the writer's
//! connection that is not counted ([`DbHandle::uncounted`]).

use super::DbHandle;
use crate::db::actor::probe::Uncounted;
use crate::db::writer::unavailable;
use crate::db::{Conn, DbError};

impl DbHandle {
    /// Writes the RPC audit rows gathered so far without waiting for their delay, then
    /// waits until the writer has handled every message sent to it before (its mailbox is
    /// first in, first out): afterwards nothing handed to the writer is still to be written.
    pub(crate) async fn settle_writes(&self) -> Result<(), DbError> {
        if let Some(batch) = self.rpc_logs.take() {
            self.writer.actor.send(batch).await.map_err(unavailable)??;
        }
        self.uncounted(|_| Ok(())).await
    }

    /// Runs `work` on the writer's connection, in autocommit, its statements uncounted.
    pub(crate) async fn uncounted<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.writer
            .actor
            .send(Uncounted::new(work))
            .await
            .map_err(unavailable)?
    }
}
