//! Read-only connections beside the writer. A read that evaluates patterns (`getEntries`
//! with a body search) runs on the blocking pool over one of these, inside one read
//! transaction and under a [`Budget`], so its work never holds the writer and stops when
//! the budget is spent or its caller goes away (the future is dropped on a timeout or a
//! closed connection, which cancels the budget).
//!
//! The pool size bounds how many such reads compute at once; a read waits for a free
//! connection, and gives it back only when its work has really ended.

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::db::Conn;
use diesel::connection::SimpleConnection;
use diesel::Connection;
use tokio::sync::Semaphore;

use super::connection::{open_connection, ConnectionSetup};
use super::DbError;
use crate::hedberg::budget::{self, Budget, Limits};

/// A bounded set of read-only connections to the database file.
#[derive(Clone)]
pub struct ReadPool {
    inner: Arc<Inner>,
}

struct Inner {
    path: std::path::PathBuf,
    setup: ConnectionSetup,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
}

/// Sets the flag when the waiting future is dropped before the work ended.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl ReadPool {
    /// A pool of at most `size` (at least 1) connections, opened when first needed.
    pub fn new(path: &std::path::Path, setup: ConnectionSetup, size: usize) -> ReadPool {
        ReadPool {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                setup,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(size.max(1))),
            }),
        }
    }

    /// Runs `work` in a read transaction on the blocking pool, with `limits` for its
    /// pattern work. The query functions report a spent budget ([`DbError::WorkLimit`]);
    /// `work` decides what to make of it.
    pub async fn read<T, F>(&self, limits: Limits, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let permit = Arc::clone(&self.inner.permits)
            .acquire_owned()
            .await
            .map_err(|error| DbError::Internal(format!("reader pool closed: {error}")))?;
        let cancelled = Arc::new(AtomicBool::new(false));
        let _cancel_on_drop = CancelOnDrop(Arc::clone(&cancelled));
        let inner = Arc::clone(&self.inner);
        actix_web::rt::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = inner.take()?;
            let budget = Rc::new(Budget::new(limits).cancelled_by(cancelled));
            let outcome = budget::scoped(budget, || conn.transaction::<T, DbError, _>(work));
            inner.give_back(conn);
            outcome
        })
        .await
        .map_err(|error| DbError::Internal(format!("a read failed: {error}")))?
    }

    /// Closes the idle connections (a clean stop, before the log is truncated).
    pub fn close(&self) {
        self.inner
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl Inner {
    fn take(&self) -> Result<Conn, DbError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(conn) => Ok(conn),
            None => {
                let mut conn = open_connection(&self.path, self.setup)?;
                conn.batch_execute("PRAGMA query_only = ON;")?;
                Ok(conn)
            }
        }
    }

    fn give_back(&self, conn: Conn) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(conn);
    }
}
