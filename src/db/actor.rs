//! `DbActor`: the single writer. One `SyncArbiter` thread owns the store's connection and
//! runs one query function per message, so diesel never runs on an async executor thread
//! and writes are serialised without lock contention.
//!
//! Most work arrives as a [`Transact`](transact::Transact): a closure composing
//! [`queries`](super::queries) functions, queued and run in one transaction with the units
//! queued beside it (group commit, [`group`]). The few other messages are small structs whose
//! handler is a one-line call into the queries, each in a transaction of its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::db::Conn;
use actix::{Actor, SyncArbiter, SyncContext};
use diesel::r2d2::R2D2Connection;

use super::connection::{
    has_pending_migrations, open_connection, run_migrations, truncate_wal, write_transaction,
    ConnectionSetup,
};
use super::counted::count_statements;
use super::entry_changes::{self, EntryChangeSink};
use super::events::{self, EventSink};
use super::models::RpcLogInsertForm;
use super::queries::rpc_log::{self, RpcLogBounds};
use super::writer::Writer;
use super::{DbError, DbWatch, Store};
use crate::hedberg::budget::{self, Budget, Limits};
use crate::metrics::{StatementsOn, WorkCounters};
use group::UnitQueue;

/// Defines message structs and their `DbActor` handlers: each handler gets the connection
/// and the message and evaluates one query call, in a transaction.
///
/// The transaction is not only for atomicity: SQLite runs its auto-checkpoint from a
/// statement that steps to its end in autocommit mode. An `INSERT … RETURNING` read with
/// `get_result` is reset after its first row instead, so in autocommit it commits without
/// ever checkpointing, and the write-ahead log grows without limit. `COMMIT` always steps
/// to its end.
macro_rules! db_messages {
    ($(
        $(#[$doc:meta])*
        $name:ident { $($(#[$field_doc:meta])* $field:ident : $field_type:ty),* $(,)? }
            -> $result:ty = |$conn:ident, $message:ident| $body:expr;
    )*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub(crate) struct $name {
            $(
                #[doc = concat!("`", stringify!($field), "`, passed to the query.")]
                $(#[$field_doc])*
                pub(crate) $field: $field_type,
            )*
        }

        impl actix::Message for $name {
            type Result = Result<$result, $crate::db::DbError>;
        }

        impl actix::Handler<$name> for $crate::db::actor::DbActor {
            type Result = Result<$result, $crate::db::DbError>;

            #[allow(unused_variables)]
            fn handle(&mut self, $message: $name, _: &mut Self::Context) -> Self::Result {
                self.unit(|$conn| $body)
            }
        }
    )*};
}

pub(crate) mod group;
#[cfg(feature = "testing")]
pub(crate) mod probe;
pub(crate) mod transact;

/// The database actor. Start it with [`start_db`].
pub(crate) struct DbActor {
    connection: Option<Conn>,
    queue: UnitQueue,
    store: Store,
    setup: ConnectionSetup,
    limits: Limits,
    watch: DbWatch,
    entry_changes: Option<EntryChangeSink>,
    events: Option<EventSink>,
    work: Arc<WorkCounters>,
}

/// What the writer thread is given besides the store.
#[derive(Debug, Clone)]
pub(crate) struct WriterOptions {
    /// How its connection is set up.
    pub setup: ConnectionSetup,
    /// The pattern and edit work one unit may do (a fresh budget per unit).
    pub limits: Limits,
    /// Where the thread records when its current unit started.
    pub watch: DbWatch,
    /// Where each committed unit's changes to entries go; with none they are not logged.
    pub entry_changes: Option<EntryChangeSink>,
    /// Where each committed unit's notifications go (`db::events`); with none they are
    /// written and not sent.
    pub events: Option<EventSink>,
    /// Where its units of work and statements are counted.
    pub work: Arc<WorkCounters>,
}

impl DbActor {
    /// Runs one unit of work: in a transaction (see [`db_messages`]), under a fresh budget
    /// for its pattern and edit work, marked on the watchdog. A panic rolls the transaction
    /// back (the connection is dropped and reopened by the next unit) and is an error, so
    /// the thread survives it. The changes it made to entries and the notifications it
    /// numbered go to their sinks once it has committed. Each is counted.
    fn unit<T>(
        &mut self,
        work: impl FnOnce(&mut Conn) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        self.work.unit();
        self.work.transaction();
        self.watch.begin();
        events::discard_staged();
        let budget = Rc::new(Budget::new(self.limits));
        let logged = self.entry_changes.is_some();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let conn = self.connection()?;
            budget::scoped(budget, || {
                write_transaction(conn, |conn| {
                    let value = work(conn)?;
                    let changes = match logged {
                        true => entry_changes::take(conn)?,
                        false => Vec::new(),
                    };
                    Ok((value, changes))
                })
            })
        }));
        self.watch.end();
        let (value, changes) = outcome
            .unwrap_or_else(|_| {
                self.connection = None;
                tracing::error!("a unit of database work panicked; rolled back");
                Err(DbError::Internal(
                    "a unit of database work failed unexpectedly".into(),
                ))
            })
            .inspect_err(|_| {
                events::discard_staged();
                self.drop_lost_connection();
            })?;
        if let Some(sink) = &self.entry_changes {
            sink.deliver(&changes);
        }
        let numbered = events::take_staged();
        if let Some(sink) = &self.events {
            sink.deliver(numbered);
        }
        Ok(value)
    }

    /// After a failed unit: a connection that no longer answers (a PostgreSQL server that
    /// restarted or ended the session) is dropped, so the next unit opens another.
    fn drop_lost_connection(&mut self) {
        if let Some(connection) = &mut self.connection {
            if connection.ping().is_err() {
                tracing::warn!("the database connection was lost; the next unit reconnects");
                self.connection = None;
            }
        }
    }

    /// The connection, reopened if a previous one was lost.
    fn connection(&mut self) -> Result<&mut Conn, DbError> {
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => writer_connection(
                &self.store,
                self.setup,
                self.entry_changes.is_some(),
                &self.work,
            )?,
        };
        Ok(self.connection.insert(connection))
    }
}

/// A connection for the writer, logging the changes to entries when they are `logged`, its
/// statements counted in `work`.
fn writer_connection(
    store: &Store,
    setup: ConnectionSetup,
    logged: bool,
    work: &Arc<WorkCounters>,
) -> Result<Conn, DbError> {
    let mut connection = open_connection(store, setup)?;
    if logged {
        entry_changes::record(&mut connection)?;
    }
    count_statements(&mut connection, work, StatementsOn::Writer);
    Ok(connection)
}

impl Actor for DbActor {
    type Context = SyncContext<Self>;
}

/// Opens the store (creating a missing SQLite file), applies pending migrations and starts
/// the actor on its own thread. Must be called inside a running actix `System`.
pub(crate) fn start_db(store: &Store, options: WriterOptions) -> Result<Writer, DbError> {
    let WriterOptions {
        setup,
        limits,
        watch,
        entry_changes,
        events,
        work,
    } = options;
    if actix::System::try_current().is_none() {
        return Err(DbError::Internal(
            "start_db needs a running actix System".to_owned(),
        ));
    }
    let mut connection = open_connection(store, setup)?;
    run_migrations(&mut connection)?;
    if !truncate_wal(&mut connection)? {
        tracing::warn!("another process holds the database open: its log was not truncated");
    }
    if entry_changes.is_some() {
        entry_changes::record(&mut connection)?;
    }
    count_statements(&mut connection, &work, StatementsOn::Writer);
    let first_connection = Mutex::new(Some(connection));
    let store = store.clone();
    let queue = UnitQueue::default();
    let units = queue.clone();
    let actor = SyncArbiter::start(1, move || DbActor {
        connection: first_connection
            .lock()
            .ok()
            .and_then(|mut slot| slot.take()),
        queue: units.clone(),
        store: store.clone(),
        setup,
        limits,
        watch: watch.clone(),
        entry_changes: entry_changes.clone(),
        events: events.clone(),
        work: Arc::clone(&work),
    });
    Ok(Writer::new(actor, queue))
}

db_messages! {
    /// Readiness: the database answers and every migration is applied.
    CheckReady {} -> bool = |conn, message| Ok(!has_pending_migrations(conn)?);

    /// Audits a batch of RPC calls, gathered by the [`DbHandle`](super::DbHandle) so that
    /// calls do not cost a transaction each, and prunes the log to its bounds in the same
    /// unit, so that it never holds more while the server runs. Returns the rows written.
    LogRpc { forms: Vec<RpcLogInsertForm>, bounds: RpcLogBounds } -> usize =
        |conn, message| {
            let written = rpc_log::insert_rpc_logs(conn, &message.forms)?;
            rpc_log::prune(conn, message.bounds)?;
            Ok(written)
        };
}

/// Copies SQLite's write-ahead log into the database and truncates it (a clean stop);
/// `false` when a reader kept it from finishing.
#[derive(Debug, Clone, Copy, actix::Message)]
#[rtype(result = "Result<bool, DbError>")]
pub(crate) struct TruncateWal;

impl actix::Handler<TruncateWal> for DbActor {
    type Result = Result<bool, DbError>;

    fn handle(&mut self, _: TruncateWal, _: &mut Self::Context) -> Self::Result {
        truncate_wal(self.connection()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::RunStatus;
    use crate::db::models::run::RunCreateForm;
    use crate::db::models::ProjectInsertForm;
    use crate::db::queries::{context, entries, projects, runs};
    use crate::db::testing::write;

    fn options() -> WriterOptions {
        WriterOptions {
            setup: ConnectionSetup::default(),
            limits: Limits::default(),
            watch: DbWatch::default(),
            entry_changes: None,
            events: None,
            work: Arc::default(),
        }
    }

    #[actix::test]
    async fn a_panicking_unit_is_an_error_and_the_thread_goes_on() {
        let test_db = crate::db::testing::TestDb::new();
        let db = start_db(&test_db.store(), options()).unwrap();
        let failed = db
            .call(|_| -> Result<(), DbError> { panic!("a bug") })
            .await;
        assert!(matches!(failed, Err(DbError::Internal(_))));
        assert!(db.actor.send(CheckReady {}).await.unwrap().unwrap());
    }

    #[actix::test]
    async fn units_of_work_run_on_the_actor_thread() {
        let test_db = crate::db::testing::TestDb::new();
        let db = start_db(&test_db.store(), options()).unwrap();
        assert!(db.actor.send(CheckReady {}).await.unwrap().unwrap());
        let run = db
            .call(|conn| {
                let project = projects::upsert_project(
                    conn,
                    &ProjectInsertForm {
                        name: "p".into(),
                        project_root: None,
                    },
                )?;
                let create = RunCreateForm {
                    project_id: project.id,
                    model: "grok".into(),
                    temperature: None,
                    persona: None,
                    context_limit: None,
                    created_by: None,
                };
                runs::create_run(conn, &create, 1)
            })
            .await
            .unwrap();
        assert!(run.alias.starts_with("grok_"));
        let run_id = run.id;
        let context = db
            .call(move |conn| {
                entries::upsert_entry(conn, &write(run_id, "known://fact", "text", 1))?;
                context::model_context(conn, run_id)
            })
            .await
            .unwrap();
        assert_eq!(
            context
                .iter()
                .map(|row| row.path.as_str())
                .collect::<Vec<_>>(),
            ["known://fact"]
        );
        let illegal = db
            .call(move |conn| runs::set_run_status(conn, run_id, RunStatus::Proposed))
            .await;
        assert!(matches!(illegal, Err(DbError::Invalid(_))), "{illegal:?}");
    }

    #[actix::test]
    async fn committed_units_hand_over_their_changes_and_failed_ones_none() {
        let test_db = crate::db::testing::TestDb::new();
        let seen = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = std::sync::Arc::clone(&seen);
            EntryChangeSink::new(move |changes| {
                let paths = changes.iter().map(|change| change.path.clone());
                seen.lock().unwrap().push(paths.collect::<Vec<_>>());
            })
        };
        let observed = WriterOptions {
            entry_changes: Some(sink),
            ..options()
        };
        let db = start_db(&test_db.store(), observed).unwrap();
        let run = db
            .call(|conn| Ok(crate::db::testing::sample_run(conn).id))
            .await
            .unwrap();
        let failed = db
            .call(move |conn| {
                entries::upsert_entry(conn, &write(run, "known://lost", "x", 1))?;
                Err::<(), _>(DbError::Invalid("refused".into()))
            })
            .await;
        assert!(failed.is_err());
        let panicked = db
            .call(move |conn| -> Result<(), DbError> {
                entries::upsert_entry(conn, &write(run, "known://lost", "x", 1))?;
                panic!("a bug")
            })
            .await;
        assert!(panicked.is_err());
        db.call(move |conn| {
            entries::upsert_entry(conn, &write(run, "known://a", "a", 1))?;
            entries::upsert_entry(conn, &write(run, "known://b", "b", 1))
        })
        .await
        .unwrap();
        db.call(move |conn| entries::upsert_entry(conn, &write(run, "known://c", "c", 1)))
            .await
            .unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            [vec!["known://a", "known://b"], vec!["known://c"]],
            "one delivery per committed unit, after a reopened connection too"
        );
    }

    /// PostgreSQL only: a SQLite file has no server to end the session.
    #[actix::test]
    #[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
    async fn a_lost_connection_fails_one_unit_and_the_next_reconnects() {
        let database = crate::db::testing::ScratchDatabase::required();
        let db = start_db(&database.store(), options()).unwrap();
        assert!(db.actor.send(CheckReady {}).await.unwrap().unwrap());
        database.end_sessions().unwrap();
        let create =
            |conn: &mut Conn| crate::db::testing::project_with_run(conn, None).map(|run| run.id);
        assert!(db.call(create).await.is_err(), "the lost session");
        assert!(db.call(create).await.is_ok(), "a new session");
    }

    #[test]
    fn starting_outside_a_system_is_an_error() {
        let test_db = crate::db::testing::TestDb::new();
        assert!(matches!(
            start_db(&test_db.store(), options()),
            Err(DbError::Internal(_))
        ));
    }
}
