//! [`DbHandle`]: how the rest of the server reaches the database. Writes (and reads that must
//! see them) run as one unit of work on the writer thread; reads that evaluate patterns run
//! beside it on a reader under the request limits; readiness is read from the writer's
//! watchdog so that a stuck unit of work cannot make the probe queue behind it.

use std::path::Path;
use std::time::Duration;

use actix::Addr;
use diesel::SqliteConnection;

use super::actor::{start_db, CheckReady, LogRpc, TruncateWal, WriterOptions};
use super::connection::ConnectionSetup;
use super::models::RpcLogInsertForm;
use super::{DbActor, DbError, DbWatch, ReadPool, Transact};
use crate::hedberg::Limits;

/// What opening the database needs besides its file.
#[derive(Debug, Clone, Copy)]
pub struct DbOptions {
    /// How every connection is set up.
    pub setup: ConnectionSetup,
    /// Pattern and edit work one unit of work on the writer may do.
    pub writer_limits: Limits,
    /// Pattern and edit work one read beside the writer may do.
    pub request_limits: Limits,
    /// Read-only connections beside the writer.
    pub readers: usize,
}

/// The writer, its watchdog and the readers. Cheap to clone.
#[derive(Clone)]
pub struct DbHandle {
    writer: Addr<DbActor>,
    watch: DbWatch,
    readers: ReadPool,
    request_limits: Limits,
}

impl DbHandle {
    /// Opens the database at `path` (applying pending migrations) and starts the writer
    /// thread. Must be called inside a running actix `System`.
    pub fn open(path: &Path, options: DbOptions) -> Result<DbHandle, DbError> {
        let watch = DbWatch::default();
        let writer = start_db(
            path,
            WriterOptions {
                setup: options.setup,
                limits: options.writer_limits,
                watch: watch.clone(),
            },
        )?;
        Ok(DbHandle {
            writer,
            watch,
            readers: ReadPool::new(path, options.setup, options.readers),
            request_limits: options.request_limits,
        })
    }

    /// Runs `work` on the writer thread, in one transaction, and waits for its result.
    pub async fn call<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.writer
            .send(Transact::new(work))
            .await
            .map_err(unavailable)?
    }

    /// Runs `work` over a read-only connection on the blocking pool, with the request limits
    /// for its pattern work: for reads that evaluate patterns, which must not hold the writer.
    pub async fn read<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.readers.read(self.request_limits, work).await
    }

    /// Records one RPC call in `rpc_log`, without waiting.
    pub fn log_rpc(&self, form: RpcLogInsertForm) {
        self.writer.do_send(LogRpc { form });
    }

    /// Whether the database answers and its migrations are applied. Not while the writer
    /// has been busy with one unit of work for longer than `stall`: that is read from its
    /// watchdog, and the probe itself waits no longer than that.
    pub async fn ready(&self, stall: Duration) -> Result<(), DbError> {
        if let Some(busy) = self.watch.busy_for().filter(|busy| *busy > stall) {
            return Err(DbError::Internal(format!(
                "the database thread has been busy with one unit of work for {} ms",
                busy.as_millis()
            )));
        }
        let ready = tokio::time::timeout(stall, self.writer.send(CheckReady {}))
            .await
            .map_err(|_| {
                DbError::Internal(format!(
                    "the database thread did not answer within {} ms",
                    stall.as_millis()
                ))
            })?
            .map_err(unavailable)??;
        if ready {
            Ok(())
        } else {
            Err(DbError::Internal("migrations are pending".into()))
        }
    }

    /// Closes the readers and empties the write-ahead log (a clean stop).
    pub async fn close(&self) {
        self.readers.close();
        match self.writer.send(TruncateWal).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => tracing::warn!("a reader kept the database log from being truncated"),
            Ok(Err(error)) => tracing::warn!(%error, "cannot truncate the database log"),
            Err(error) => {
                tracing::warn!(%error, "the database stopped before its log was truncated")
            }
        }
    }
}

/// The writer's mailbox is gone: the server is stopping.
fn unavailable(error: actix::MailboxError) -> DbError {
    DbError::Internal(format!("database unavailable: {error}"))
}
