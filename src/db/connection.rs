//! Opening connections and applying the embedded migrations, per backend.
//!
//! Every SQLite connection gets the same setup: a 5 s busy timeout (so concurrent writers
//! wait instead of failing with "database is locked"), WAL journaling, foreign keys, the
//! configured memory map (`RUMMY_MMAP_MB`), and rummy's SQL functions, which the schema
//! itself needs (generated columns, triggers, views). A PostgreSQL connection works in UTC
//! (the stored timestamps are UTC text, as SQLite writes them) and carries the token divisor
//! as the setting `rummy.token_divisor`, which the migrations' `countTokens` reads.
//!
//! Every PostgreSQL connection is opened by [`connect_postgres`], which first initialises
//! OpenSSL (libpq's TLS) without its exit handler: see there.
//!
//! The SQLite write-ahead log is kept small three ways: SQLite's auto-checkpoint (every unit
//! of work commits explicitly, see [`DbActor`](super::DbActor)), a journal size limit that
//! shrinks the file after a checkpoint, and [`truncate_wal`] at start and at a clean stop.

use diesel::connection::{AnsiTransactionManager, SimpleConnection, TransactionManager};
use diesel::{Connection, ConnectionResult, PgConnection, SqliteConnection};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

use super::functions::register_functions;
use super::{Conn, DbError, Store};

/// The SQLite migrations under `migrations/sqlite/`, compiled into the binary.
pub(crate) const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");

/// The PostgreSQL migrations under `migrations/postgres/`, compiled into the binary: the
/// same tables, constraints, triggers and views as SQLite's.
pub(crate) const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

/// How long a SQLite connection waits for another writer's lock before giving up.
pub(crate) const BUSY_TIMEOUT_MS: u32 = 5_000;

/// The size the write-ahead log file is cut back to once a checkpoint has copied it into the
/// database (a large transaction may have grown it past this).
pub(crate) const JOURNAL_SIZE_LIMIT_BYTES: u64 = 16 * 1024 * 1024;

/// The token divisor used when none is configured (`RUMMY_TOKEN_DIVISOR`).
pub(crate) const DEFAULT_TOKEN_DIVISOR: u32 = 4;

/// The configurable part of every connection's setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSetup {
    /// Characters per token of `countTokens` (`RUMMY_TOKEN_DIVISOR`); at least 1.
    pub token_divisor: u32,
    /// How much of the file SQLite may read through a memory map (`PRAGMA mmap_size`,
    /// from `RUMMY_MMAP_MB`); 0 reads through the page cache only. PostgreSQL: unused.
    pub mmap_bytes: u64,
}

impl Default for ConnectionSetup {
    fn default() -> Self {
        ConnectionSetup {
            token_divisor: DEFAULT_TOKEN_DIVISOR,
            mmap_bytes: 0,
        }
    }
}

/// Opens a PostgreSQL connection to `url`: the only way rummy does (clippy.toml forbids
/// `Connection::establish` elsewhere). Before the first, OpenSSL is initialised with
/// `OPENSSL_INIT_NO_ATEXIT` (`openssl_sys::init`, once per process), so that it registers no
/// `atexit` clean-up. That clean-up (`OPENSSL_cleanup`) assumes that no other thread uses
/// OpenSSL: it frees every thread's OpenSSL state without a lock, while a thread that has
/// used TLS and ends at that moment (the frame bus's, the writer's, a reader pool's, a test's)
/// frees its own: glibc's "double free or corruption", and the process (a test binary, or
/// `rummy serve` stopping on SIGTERM) dies by SIGABRT or SIGSEGV after its work succeeded.
/// Without the clean-up the memory goes back to the system with the process.
pub(crate) fn connect_postgres(url: &str) -> ConnectionResult<PgConnection> {
    openssl_sys::init();
    #[allow(clippy::disallowed_methods)]
    PgConnection::establish(url)
}

/// Opens the store (creating a missing SQLite file) with rummy's connection setup.
pub(crate) fn open_connection(store: &Store, setup: ConnectionSetup) -> Result<Conn, DbError> {
    let ConnectionSetup {
        token_divisor,
        mmap_bytes,
    } = setup;
    if token_divisor == 0 {
        return Err(DbError::Invalid(
            "the token divisor must be at least 1".to_owned(),
        ));
    }
    match store {
        Store::Sqlite(path) => {
            let url = path.to_str().ok_or_else(|| {
                DbError::Invalid(format!("database path is not UTF-8: {}", path.display()))
            })?;
            #[allow(clippy::disallowed_methods)]
            let mut conn = SqliteConnection::establish(url)?;
            // SQLite's temporary files (statement journals, sorts, an index being rebuilt)
            // stay in memory: the image's root is read-only, and without a writable temporary
            // directory a migration that needs one failed, its transaction rolled back.
            conn.batch_execute(&format!(
                "PRAGMA busy_timeout = {BUSY_TIMEOUT_MS};
                 PRAGMA temp_store = MEMORY;
                 PRAGMA journal_mode = WAL;
                 PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES};
                 PRAGMA synchronous = NORMAL;
                 PRAGMA foreign_keys = ON;
                 PRAGMA mmap_size = {mmap_bytes};"
            ))?;
            register_functions(&mut conn, token_divisor)?;
            Ok(Conn::Sqlite(conn))
        }
        Store::Postgres(url) => {
            let mut conn = connect_postgres(url).map_err(|error| {
                DbError::Internal(format!("cannot connect to {store}: {error}"))
            })?;
            conn.batch_execute(&format!(
                "SET TIME ZONE 'UTC';
                 SET client_min_messages = WARNING;
                 SET rummy.token_divisor = {token_divisor};"
            ))?;
            Ok(Conn::Postgres(conn))
        }
    }
}

/// Makes `conn` refuse writes (a reader beside the writer).
pub(crate) fn read_only(conn: &mut Conn) -> Result<(), DbError> {
    let sql = match conn {
        Conn::Sqlite(_) => "PRAGMA query_only = ON;",
        Conn::Postgres(_) => "SET default_transaction_read_only = on;",
    };
    conn.batch_execute(sql)?;
    Ok(())
}

/// The PostgreSQL advisory lock key held while migrations run, so that instances starting
/// together on one database apply them one after the other (the second finds none pending).
const MIGRATION_LOCK_KEY: i64 = 0x7275_6d6d_795f_6d67;

/// Applies every pending migration of the connection's backend; a no-op on an up-to-date
/// database. On PostgreSQL, under `MIGRATION_LOCK_KEY`: SQLite's own write lock already
/// serializes them.
pub(crate) fn run_migrations(conn: &mut Conn) -> Result<(), DbError> {
    let applied = match conn {
        Conn::Sqlite(conn) => conn.run_pending_migrations(SQLITE_MIGRATIONS).map(|_| ()),
        Conn::Postgres(conn) => {
            conn.batch_execute(&format!("SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})"))?;
            let applied = conn.run_pending_migrations(POSTGRES_MIGRATIONS).map(|_| ());
            conn.batch_execute(&format!("SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})"))?;
            applied
        }
    };
    applied.map_err(|error| DbError::Internal(format!("migration failed: {error}")))
}

/// Whether any embedded migration is still to be applied (for readiness checks).
pub(crate) fn has_pending_migrations(conn: &mut Conn) -> Result<bool, DbError> {
    let pending = match conn {
        Conn::Sqlite(conn) => conn.has_pending_migration(SQLITE_MIGRATIONS),
        Conn::Postgres(conn) => conn.has_pending_migration(POSTGRES_MIGRATIONS),
    };
    pending.map_err(|error| DbError::Internal(format!("cannot read migration state: {error}")))
}

/// The row `PRAGMA wal_checkpoint` answers.
#[derive(diesel::QueryableByName)]
struct CheckpointRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    busy: i32,
}

/// Copies the whole SQLite write-ahead log into the database and truncates the log file to
/// zero bytes. `Ok(false)` when a reader's open transaction kept it from finishing (the busy
/// timeout has passed by then). Must run outside any transaction. PostgreSQL keeps its own
/// log: nothing to do.
pub(crate) fn truncate_wal(conn: &mut Conn) -> Result<bool, DbError> {
    use diesel::RunQueryDsl;
    let Conn::Sqlite(conn) = conn else {
        return Ok(true);
    };
    let row =
        diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").get_result::<CheckpointRow>(conn)?;
    Ok(row.busy == 0)
}

/// Opens a top-level write transaction: `BEGIN IMMEDIATE` on SQLite (so concurrent writers
/// on other connections queue on the busy timeout instead of deadlocking), `BEGIN` on
/// PostgreSQL. Its end is diesel's (`TransactionManager`'s commit or rollback).
pub(crate) fn begin_write(conn: &mut Conn) -> diesel::QueryResult<()> {
    match conn {
        Conn::Sqlite(inner) => {
            AnsiTransactionManager::begin_transaction_sql(inner, "BEGIN IMMEDIATE")
        }
        Conn::Postgres(inner) => {
            <AnsiTransactionManager as TransactionManager<PgConnection>>::begin_transaction(inner)
        }
    }
}

/// Runs `work` in a write transaction: at the top level `BEGIN IMMEDIATE` on SQLite (so
/// concurrent writers on other connections queue on the busy timeout instead of
/// deadlocking) and `BEGIN` on PostgreSQL; a savepoint when a transaction (a
/// unit of work, `actor::group`) is open. Any error of `work` rolls it back.
pub(crate) fn write_transaction<T, E, F>(conn: &mut Conn, work: F) -> Result<T, E>
where
    F: FnOnce(&mut Conn) -> Result<T, E>,
    E: From<diesel::result::Error>,
{
    let depth = <Conn as TransactionManager<Conn>>::transaction_manager_status_mut(conn)
        .transaction_depth()?;
    if depth.is_some() {
        return conn.transaction(work);
    }
    begin_write(conn)?;
    match work(conn) {
        Ok(value) => {
            <Conn as TransactionManager<Conn>>::commit_transaction(conn)?;
            Ok(value)
        }
        Err(error) => match <Conn as TransactionManager<Conn>>::rollback_transaction(conn) {
            Ok(()) | Err(diesel::result::Error::BrokenTransactionManager) => Err(error),
            Err(rollback) => Err(rollback.into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use diesel::sql_types::{BigInt, Integer, Nullable, Text};
    use diesel::{sql_query, QueryableByName, RunQueryDsl};

    use super::*;
    use crate::db::testing::{ScratchDatabase, TestDb};

    #[derive(QueryableByName)]
    struct Value {
        #[diesel(sql_type = Nullable<Text>)]
        value: Option<String>,
    }

    #[derive(QueryableByName)]
    struct Number {
        #[diesel(sql_type = Integer)]
        number: i32,
    }

    fn text(conn: &mut Conn, sql: &str) -> Option<String> {
        sql_query(sql).get_result::<Value>(conn).unwrap().value
    }

    #[derive(QueryableByName)]
    struct MmapSize {
        #[diesel(sql_type = BigInt)]
        mmap_size: i64,
    }

    /// `PRAGMA mmap_size` has no table-valued form.
    fn mmap_size(conn: &mut Conn) -> i64 {
        sql_query("PRAGMA mmap_size")
            .get_result::<MmapSize>(conn)
            .unwrap()
            .mmap_size
    }

    fn number(conn: &mut Conn, sql: &str) -> i32 {
        sql_query(sql).get_result::<Number>(conn).unwrap().number
    }

    #[test]
    fn migrations_apply_twice_without_change() {
        let mut db = TestDb::sqlite();
        run_migrations(&mut db.conn).unwrap();
        assert!(!has_pending_migrations(&mut db.conn).unwrap());
        let mut again = db.connect();
        run_migrations(&mut again).unwrap();
        let schemes = number(&mut again, "SELECT count(*) AS number FROM schemes");
        assert_eq!(schemes, 30, "the initial 29 and memory's");
    }

    /// Instances started together on one PostgreSQL database each migrate it: all succeed.
    #[test]
    #[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
    fn concurrent_migrations_of_one_postgres_database_all_succeed() {
        let database = ScratchDatabase::required();
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            let migrations: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        let mut conn =
                            open_connection(&database.store(), ConnectionSetup::default())?;
                        start.wait();
                        run_migrations(&mut conn)
                    })
                })
                .collect();
            for migration in migrations {
                migration.join().unwrap().unwrap();
            }
        });
        let mut conn = database.migrated().unwrap();
        assert!(!has_pending_migrations(&mut conn).unwrap());
    }

    #[test]
    fn connection_setup_is_applied() {
        let mut db = TestDb::sqlite();
        assert_eq!(
            text(
                &mut db.conn,
                "SELECT journal_mode AS value FROM pragma_journal_mode"
            ),
            Some("wal".to_owned())
        );
        assert_eq!(
            number(
                &mut db.conn,
                "SELECT foreign_keys AS number FROM pragma_foreign_keys"
            ),
            1
        );
        assert_eq!(
            number(
                &mut db.conn,
                "SELECT timeout AS number FROM pragma_busy_timeout"
            ),
            5000
        );
        let mapped = ConnectionSetup {
            mmap_bytes: 2 * 1024 * 1024,
            ..ConnectionSetup::default()
        };
        let mut mapped = open_connection(&db.store(), mapped).unwrap();
        assert_eq!(mmap_size(&mut mapped), 2 * 1024 * 1024);
        assert_eq!(mmap_size(&mut db.conn), 0);
        assert_eq!(
            text(
                &mut db.conn,
                "SELECT CAST(journal_size_limit AS TEXT) AS value FROM pragma_journal_size_limit"
            ),
            Some(JOURNAL_SIZE_LIMIT_BYTES.to_string())
        );
    }

    #[test]
    fn truncating_the_wal_empties_it() {
        let mut db = TestDb::sqlite();
        sql_query("INSERT INTO projects (name) VALUES ('logged')")
            .execute(&mut db.conn)
            .unwrap();
        let wal = db.path.with_file_name("rummy.db-wal");
        assert!(std::fs::metadata(&wal).unwrap().len() > 0);
        assert!(truncate_wal(&mut db.conn).unwrap());
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0);
    }

    #[test]
    fn sql_functions_are_registered() {
        let mut db = TestDb::sqlite();
        let conn = &mut db.conn;
        assert_eq!(
            text(conn, "SELECT schemeOf('known://a') AS value"),
            Some("known".to_owned())
        );
        assert_eq!(text(conn, "SELECT schemeOf('src/a.js') AS value"), None);
        assert_eq!(number(conn, "SELECT countTokens('abcdefghi') AS number"), 3);
        assert_eq!(number(conn, "SELECT countTokens(NULL) AS number"), 0);
    }

    #[test]
    fn token_divisor_is_per_connection() {
        let db = TestDb::sqlite();
        let halves = ConnectionSetup {
            token_divisor: 2,
            ..ConnectionSetup::default()
        };
        let mut halves = open_connection(&db.store(), halves).unwrap();
        assert_eq!(
            number(&mut halves, "SELECT countTokens('abcdefghi') AS number"),
            5
        );
        assert!(matches!(
            open_connection(
                &db.store(),
                ConnectionSetup {
                    token_divisor: 0,
                    ..ConnectionSetup::default()
                }
            ),
            Err(DbError::Invalid(_))
        ));
    }

    #[test]
    fn data_survives_reopening_the_file() {
        let db = TestDb::sqlite();
        let path = db.path.clone();
        let mut conn = db.connect();
        sql_query("INSERT INTO projects (name) VALUES ('kept')")
            .execute(&mut conn)
            .unwrap();
        drop(conn);
        let TestDb {
            dir, conn: first, ..
        } = db;
        drop(first);
        let mut reopened =
            open_connection(&Store::Sqlite(path.clone()), ConnectionSetup::default()).unwrap();
        run_migrations(&mut reopened).unwrap();
        assert_eq!(
            number(
                &mut reopened,
                "SELECT count(*) AS number FROM projects WHERE name = 'kept'"
            ),
            1
        );
        drop(dir);
    }
}
