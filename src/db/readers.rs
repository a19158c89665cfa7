//! Read-only connections beside the writer, pooled by r2d2. A read that evaluates patterns
//! (`getEntries` with a body search) runs on the blocking pool over one of these, inside
//! one read transaction and under a [`Budget`], so its work never holds the writer and stops
//! when the budget is spent or its caller goes away (the future is dropped on a timeout or a
//! closed connection, which cancels the budget).
//!
//! The pool size bounds how many such reads compute at once; a read waits for a free
//! connection, and gives it back only when its work has really ended. Each read and each
//! statement of a reader is counted in the server's [`WorkCounters`].

use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::Conn;
use diesel::r2d2::{ManageConnection, Pool, R2D2Connection};
use diesel::Connection;
use tokio::sync::Semaphore;

use super::connection::{open_connection, read_only, ConnectionSetup};
use super::counted::count_statements;
use super::{DbError, Store};
use crate::hedberg::budget::{self, Budget, Limits};
use crate::metrics::{StatementsOn, WorkCounters};

/// How long a read waits for the pool to open a connection before it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A bounded set of read-only connections to the store.
#[derive(Clone)]
pub(crate) struct ReadPool {
    /// `None` once closed.
    pool: Arc<Mutex<Option<Pool<Readers>>>>,
    permits: Arc<Semaphore>,
    work: Arc<WorkCounters>,
}

/// How the pool (r2d2) opens and checks a reader: rummy's connection setup, read-only, its
/// statements counted.
#[derive(Debug)]
struct Readers {
    store: Store,
    setup: ConnectionSetup,
    work: Arc<WorkCounters>,
}

impl ManageConnection for Readers {
    type Connection = Conn;
    type Error = DbError;

    fn connect(&self) -> Result<Conn, DbError> {
        let mut conn = open_connection(&self.store, self.setup)?;
        read_only(&mut conn)?;
        count_statements(&mut conn, &self.work, StatementsOn::Reader);
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), DbError> {
        Ok(conn.ping()?)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.is_broken()
    }
}

/// Sets the flag when the waiting future is dropped before the work ended.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl ReadPool {
    /// A pool of at most `size` (at least 1) connections, opened when first needed, whose
    /// reads and statements are counted in `work`.
    pub(crate) fn new(
        store: &Store,
        setup: ConnectionSetup,
        size: usize,
        work: &Arc<WorkCounters>,
    ) -> ReadPool {
        let size = size.max(1);
        let pool = Pool::builder()
            .max_size(u32::try_from(size).unwrap_or(u32::MAX))
            .min_idle(Some(0))
            .connection_timeout(CONNECT_TIMEOUT)
            // A connection a PostgreSQL restart ended is replaced, not handed out; a SQLite
            // file's connection has no server to lose, and is not pinged before each read.
            .test_on_check_out(matches!(store, Store::Postgres(_)))
            .build_unchecked(Readers {
                store: store.clone(),
                setup,
                work: Arc::clone(work),
            });
        ReadPool {
            pool: Arc::new(Mutex::new(Some(pool))),
            permits: Arc::new(Semaphore::new(size)),
            work: Arc::clone(work),
        }
    }

    /// Runs `work` in a read transaction on the blocking pool, with `limits` for its
    /// pattern work. The query functions report a spent budget ([`DbError::WorkLimit`]);
    /// `work` decides what to make of it.
    pub(crate) async fn read<T, F>(&self, limits: Limits, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        // Waiting for a connection happens here, not on a blocking thread.
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|error| DbError::Internal(format!("reader pool closed: {error}")))?;
        self.work.read();
        let cancelled = Arc::new(AtomicBool::new(false));
        let _cancel_on_drop = CancelOnDrop(Arc::clone(&cancelled));
        let pool = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| DbError::Internal("reader pool closed".into()))?;
        actix_web::rt::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = pool
                .get()
                .map_err(|error| DbError::Internal(format!("no reader connection: {error}")))?;
            let budget = Rc::new(Budget::new(limits).cancelled_by(cancelled));
            let conn: &mut Conn = &mut conn;
            budget::scoped(budget, || conn.transaction::<T, DbError, _>(work))
        })
        .await
        .map_err(|error| DbError::Internal(format!("a read failed: {error}")))?
    }

    /// Closes the pool (a clean stop, before SQLite's log is truncated): its idle
    /// connections at once, a connection still reading when its read ends.
    pub(crate) fn close(&self) {
        self.permits.close();
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }
}
