//! [`DbHandle`]: how the rest of the server reaches the database. Writes (and reads that must
//! see them) run as one unit of work on the writer thread; reads that evaluate patterns run
//! beside it on a reader under the request limits; readiness is read from the writer's
//! watchdog so that a stuck unit of work cannot make the probe queue behind it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::db::Conn;
use actix::Addr;

use super::actor::{start_db, CheckReady, LogRpc, TruncateWal, WriterOptions};
use super::connection::ConnectionSetup;
use super::entry_changes::EntryChangeSink;
use super::event_batch::EventBatch;
use super::events::{EventSink, Publication};
use super::models::RpcLogInsertForm;
use super::queries::rpc_log::RpcLogBounds;
use super::queries::run_events::EventBounds;
use super::writer::{unavailable, Writer};
use super::{DbActor, DbError, DbWatch, ReadPool, Store, UnitError};
use crate::hedberg::Limits;
use crate::metrics::WorkCounters;

#[cfg(feature = "testing")]
mod probe;

/// What opening the database needs besides where it is.
#[derive(Debug, Clone)]
pub struct DbOptions {
    /// How every connection is set up.
    pub setup: ConnectionSetup,
    /// Pattern and edit work one unit of work on the writer may do.
    pub writer_limits: Limits,
    /// Pattern and edit work one read beside the writer may do.
    pub request_limits: Limits,
    /// Read-only connections beside the writer.
    pub readers: usize,
    /// What `rpc_log` keeps; pruned with each batch of audit rows.
    pub rpc_log: RpcLogBounds,
    /// Where the writer hands the changes each unit of work made to entries, once committed.
    pub entry_changes: Option<EntryChangeSink>,
    /// What the event log keeps (`run/replay`).
    pub events: EventBounds,
    /// Where the writer hands the notifications each unit of work numbered, once committed.
    pub sent: Option<EventSink>,
    /// Where the units of work, the reads and every connection's statements are counted.
    pub(crate) work: Arc<WorkCounters>,
}

/// The writer, its watchdog and the two reader pools. Cheap to clone.
#[derive(Clone)]
pub struct DbHandle {
    writer: Writer,
    rpc_logs: RpcLogBatch,
    events: EventBatch,
    watch: DbWatch,
    /// For pattern searches, which may run long: `DbOptions::readers` connections.
    searchers: ReadPool,
    /// For the read-only methods: one connection per core, so that no search delays them.
    readers: ReadPool,
    request_limits: Limits,
}

impl DbHandle {
    /// Opens the store (applying pending migrations) and starts the writer thread. Must be
    /// called inside a running actix `System`.
    pub fn open(store: &Store, options: DbOptions) -> Result<DbHandle, DbError> {
        let watch = DbWatch::default();
        let writer = start_db(
            store,
            WriterOptions {
                setup: options.setup,
                limits: options.writer_limits,
                watch: watch.clone(),
                entry_changes: options.entry_changes,
                events: options.sent,
                work: Arc::clone(&options.work),
            },
        )?;
        Ok(DbHandle {
            rpc_logs: RpcLogBatch::new(writer.actor.clone(), options.rpc_log),
            events: EventBatch::new(writer.clone(), options.events),
            writer,
            watch,
            searchers: ReadPool::new(store, options.setup, options.readers, &options.work),
            readers: ReadPool::new(
                store,
                options.setup,
                std::thread::available_parallelism().map_or(1, usize::from),
                &options.work,
            ),
            request_limits: options.request_limits,
        })
    }

    /// Runs `work` on the writer thread, in one transaction, and waits for its result.
    pub async fn call<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.writer.call(work).await
    }

    /// Runs `work` like [`call`](Self::call), for work that may refuse: the store's failure
    /// rolls the unit of work back, a refusal commits what it wrote; either is the error.
    pub async fn call_refusable<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&mut Conn) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: UnitError + Send + 'static,
    {
        let outcome = self
            .call(move |conn| match work(conn) {
                Ok(value) => Ok(Ok(value)),
                Err(error) => Ok(Err(error.refusal()?)),
            })
            .await;
        outcome.map_err(E::from).and_then(|refused| refused)
    }

    /// Queues `work` on the writer, in one transaction, without waiting for it: for what a
    /// value must do when it drops, where nothing can wait. A failure (`what` names the work)
    /// is logged.
    pub fn call_later<F>(&self, what: &'static str, work: F)
    where
        F: FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static,
    {
        self.writer.call_later(move |conn| {
            work(conn)
                .inspect_err(|error| tracing::warn!(%error, what, "a queued unit of work failed"))
        });
    }

    /// Runs `work` over a read-only connection on the blocking pool, with the request limits
    /// for its pattern work: for reads that evaluate patterns, which must not hold the writer.
    pub async fn search<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.searchers.read(self.request_limits, work).await
    }

    /// Runs `work` over a read-only connection of its own pool: for the read-only methods,
    /// which then run beside the writer, beside each other and beside the searches. It sees
    /// every unit of work committed before it starts.
    pub async fn read<T, F>(&self, work: F) -> Result<T, DbError>
    where
        F: FnOnce(&mut Conn) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        self.readers.read(self.request_limits, work).await
    }

    /// Records one RPC call in `rpc_log`, without waiting: rows written within 50 ms of each
    /// other (or 256 of them) share one statement, and the unit of work that writes them
    /// prunes the log to its bounds.
    pub fn log_rpc(&self, form: RpcLogInsertForm) {
        self.rpc_logs.add(form);
    }

    /// Numbers, writes and then sends a run's notification, without waiting: those published
    /// while the writer is busy share one unit of work (`db::events`).
    pub fn publish(&self, publication: Publication) {
        self.events.add(publication);
    }

    /// What the event log keeps, for a unit of work that appends notifications itself.
    pub fn event_bounds(&self) -> EventBounds {
        self.events.bounds()
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
        let ready = tokio::time::timeout(stall, self.writer.actor.send(CheckReady {}))
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

    /// Closes the readers and empties SQLite's write-ahead log (a clean stop).
    pub async fn close(&self) {
        self.searchers.close();
        self.readers.close();
        if let Some(last) = self.rpc_logs.take() {
            if let Err(error) = self.writer.actor.send(last).await {
                tracing::warn!(%error, "the last RPC audit rows were not written");
            }
        }
        let truncated = self
            .writer
            .actor
            .send(TruncateWal)
            .await
            .map_err(unavailable);
        match truncated.and_then(|truncated| truncated) {
            Ok(true) => {}
            Ok(false) => tracing::warn!("a reader kept the database log from being truncated"),
            Err(error) => tracing::warn!(%error, "cannot truncate the database log"),
        }
    }
}

/// How long an RPC audit row waits for others to share its transaction.
const RPC_LOG_DELAY: Duration = Duration::from_millis(50);

/// Rows that, gathered, are written at once without waiting for the delay.
const RPC_LOG_BATCH: usize = 256;

/// The RPC audit rows not yet sent to the writer. The first row of a batch schedules the
/// batch's write [`RPC_LOG_DELAY`] later; a full batch is written at once.
#[derive(Clone)]
struct RpcLogBatch {
    writer: Addr<DbActor>,
    pending: Arc<Mutex<Vec<RpcLogInsertForm>>>,
    bounds: RpcLogBounds,
}

impl RpcLogBatch {
    fn new(writer: Addr<DbActor>, bounds: RpcLogBounds) -> RpcLogBatch {
        RpcLogBatch {
            writer,
            pending: Arc::default(),
            bounds,
        }
    }

    fn add(&self, form: RpcLogInsertForm) {
        let count = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.push(form);
            pending.len()
        };
        if count >= RPC_LOG_BATCH {
            self.send();
        } else if count == 1 {
            let batch = self.clone();
            actix::spawn(async move {
                tokio::time::sleep(RPC_LOG_DELAY).await;
                batch.send();
            });
        }
    }

    /// The message that writes the rows gathered so far, if any.
    fn take(&self) -> Option<LogRpc> {
        let forms =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        (!forms.is_empty()).then_some(LogRpc {
            forms,
            bounds: self.bounds,
        })
    }

    fn send(&self) {
        if let Some(batch) = self.take() {
            self.writer.do_send(batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use diesel::prelude::*;

    use super::*;
    use crate::db::schema::rpc_log;
    use crate::db::{open_connection, ConnectionSetup};

    fn options() -> DbOptions {
        DbOptions {
            setup: ConnectionSetup::default(),
            writer_limits: Limits::default(),
            request_limits: Limits::default(),
            readers: 1,
            rpc_log: RpcLogBounds::default(),
            entry_changes: None,
            events: EventBounds::default(),
            sent: None,
            work: Arc::default(),
        }
    }

    fn call(method: &str) -> RpcLogInsertForm {
        RpcLogInsertForm {
            project_id: None,
            method: method.into(),
            rpc_id: Some("1".into()),
            params: Some("{}".into()),
            result: Some("{}".into()),
            error: None,
            duration_ms: 0,
            status: None,
            params_bytes: 2,
            result_bytes: Some(2),
            run: None,
            person: None,
        }
    }

    fn logged(store: &Store) -> Vec<String> {
        let mut conn = open_connection(store, ConnectionSetup::default()).unwrap();
        rpc_log::table
            .order(rpc_log::id)
            .select(rpc_log::method)
            .load(&mut conn)
            .unwrap()
    }

    /// The logged methods once they are `expected`, or as they are after 10 s.
    async fn logged_eventually(store: &Store, expected: &[&str]) -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let rows = logged(store);
            if rows == expected || std::time::Instant::now() > deadline {
                return rows;
            }
            tokio::time::sleep(RPC_LOG_DELAY).await;
        }
    }

    /// A unit's error for the test: a refusal, or the store's failure.
    #[derive(Debug)]
    enum Refusable {
        Refused,
        Db(DbError),
    }

    impl From<DbError> for Refusable {
        fn from(error: DbError) -> Self {
            Refusable::Db(error)
        }
    }

    impl UnitError for Refusable {
        fn refusal(self) -> Result<Self, DbError> {
            match self {
                Refusable::Db(error) => Err(error),
                refused => Ok(refused),
            }
        }
    }

    #[actix::test]
    async fn a_refusal_keeps_what_its_unit_wrote_and_a_store_failure_rolls_it_back() {
        use crate::db::models::ProjectInsertForm;
        use crate::db::queries::projects;
        let test_db = crate::db::testing::TestDb::new();
        let db = DbHandle::open(&test_db.store(), options()).unwrap();
        let write_then = |name: &'static str, error: fn() -> Refusable| {
            move |conn: &mut Conn| -> Result<(), Refusable> {
                let form = ProjectInsertForm {
                    name: name.into(),
                    project_root: None,
                };
                projects::upsert_project(conn, &form)?;
                Err(error())
            }
        };
        let refused = db
            .call_refusable(write_then("kept", || Refusable::Refused))
            .await;
        assert!(matches!(refused, Err(Refusable::Refused)), "{refused:?}");
        let failed = db
            .call_refusable(write_then("dropped", || {
                Refusable::Db(DbError::Internal("lost".into()))
            }))
            .await;
        assert!(matches!(failed, Err(Refusable::Db(_))), "{failed:?}");
        let found = db
            .call(|conn| {
                Ok((
                    projects::find_project(conn, "kept")?.is_some(),
                    projects::find_project(conn, "dropped")?.is_some(),
                ))
            })
            .await
            .unwrap();
        assert_eq!(found, (true, false));
        db.close().await;
    }

    #[actix::test]
    async fn audit_rows_are_written_after_the_delay_in_order() {
        let test_db = crate::db::testing::TestDb::new();
        let store = test_db.store();
        let db = DbHandle::open(&store, options()).unwrap();
        db.log_rpc(call("init"));
        assert_eq!(
            logged_eventually(&store, &["init"]).await,
            ["init"],
            "a row alone is written too"
        );
        let logged_at = std::time::Instant::now();
        for method in ["ping", "getRuns", "ask"] {
            db.log_rpc(call(method));
        }
        let early = logged(&store);
        // A machine that stalled past the delay may already have written them.
        if logged_at.elapsed() < RPC_LOG_DELAY {
            assert_eq!(early, ["init"], "not before the delay");
        }
        assert_eq!(
            logged_eventually(&store, &["init", "ping", "getRuns", "ask"]).await,
            ["init", "ping", "getRuns", "ask"]
        );
        db.close().await;
    }

    #[actix::test]
    async fn a_full_batch_is_written_at_once_and_a_clean_stop_writes_the_rest() {
        let test_db = crate::db::testing::TestDb::new();
        let store = test_db.store();
        let db = DbHandle::open(&store, options()).unwrap();
        for _ in 0..RPC_LOG_BATCH {
            db.log_rpc(call("ping"));
        }
        db.log_rpc(call("last"));
        db.ready(Duration::from_secs(5)).await.unwrap();
        // On a loaded machine the last row's own delay may have passed by now too.
        assert!(
            logged(&store).len() >= RPC_LOG_BATCH,
            "the full batch, not waiting"
        );
        db.close().await;
        assert_eq!(logged(&store).last().map(String::as_str), Some("last"));
    }

    #[actix::test]
    async fn each_batch_prunes_the_log_to_its_bounds() {
        let test_db = crate::db::testing::TestDb::new();
        let store = test_db.store();
        let bounded = DbOptions {
            rpc_log: RpcLogBounds {
                max_days: 7,
                max_rows: 3,
            },
            ..options()
        };
        let db = DbHandle::open(&store, bounded).unwrap();
        for _ in 0..RPC_LOG_BATCH {
            db.log_rpc(call("ping"));
        }
        db.ready(Duration::from_secs(5)).await.unwrap();
        assert_eq!(logged(&store), ["ping"; 3], "pruned as it was written");
        for method in ["a", "b"] {
            db.log_rpc(call(method));
        }
        db.close().await;
        assert_eq!(logged(&store), ["ping", "a", "b"]);
    }
}
