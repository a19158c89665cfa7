//! Fixtures over the store for the unit and integration tests and the benches: a migrated
//! database holding a project with one run, and a PostgreSQL database of a test's own
//! ([`ScratchDatabase`]). The server itself never calls them; the temporary-file helpers
//! exist in unit tests only (`tempfile` is a dev-dependency).

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) mod stored;

use diesel::connection::SimpleConnection;

use crate::db::Conn;

use super::models::run::{RunCreateForm, RunRow};
use super::models::ProjectInsertForm;
use super::queries::{projects, runs};
use super::{connect_postgres, open_connection, run_migrations, ConnectionSetup, DbError, Store};

/// Opens (creating a missing SQLite file) the store with `setup` and applies the
/// migrations.
pub(crate) fn migrated(store: &Store, setup: ConnectionSetup) -> Result<Conn, DbError> {
    let mut conn = open_connection(store, setup)?;
    run_migrations(&mut conn)?;
    Ok(conn)
}

/// The variable naming the PostgreSQL server the tests use, as a URL whose user may create
/// databases; unset: the tests run on SQLite only.
pub const TEST_DATABASE_URL: &str = "RUMMY_TEST_DATABASE_URL";

/// A PostgreSQL database of its own for one test (so tests stay independent and run in
/// parallel), created empty on the server and dropped, with whatever connections are still
/// open to it, when this value is.
pub struct ScratchDatabase {
    /// The URL it was created through (the server's maintenance database).
    admin_url: String,
    name: String,
    /// The new database's URL.
    url: String,
}

impl ScratchDatabase {
    /// Creates a database named after this process and a counter on the server `admin_url`
    /// names.
    pub fn create(admin_url: &str) -> Result<ScratchDatabase, DbError> {
        static CREATED: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "rummy_test_{}_{}",
            std::process::id(),
            CREATED.fetch_add(1, Ordering::Relaxed)
        );
        let mut url = url::Url::parse(admin_url)
            .map_err(|error| DbError::Invalid(format!("{TEST_DATABASE_URL}: {error}")))?;
        let mut admin = connect_postgres(admin_url)?;
        // One statement per call: several would be one transaction, which these refuse.
        admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))?;
        admin.batch_execute(&format!("CREATE DATABASE {name}"))?;
        url.set_path(&name);
        Ok(ScratchDatabase {
            admin_url: admin_url.to_owned(),
            name,
            url: url.to_string(),
        })
    }

    /// A database on the server [`TEST_DATABASE_URL`] names; `None` when it is unset.
    /// Panics when it is set and no database can be created (a test must not pass on SQLite
    /// while it was asked to run on PostgreSQL).
    pub fn from_environment() -> Option<ScratchDatabase> {
        let admin_url = std::env::var(TEST_DATABASE_URL).ok()?;
        match ScratchDatabase::create(&admin_url) {
            Ok(database) => Some(database),
            Err(error) => panic!("{TEST_DATABASE_URL} is set but no database was created: {error}"),
        }
    }

    /// A database on the server [`TEST_DATABASE_URL`] names, for a test of PostgreSQL alone:
    /// such a test is `#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]`, run only when asked for (`--ignored`, as
    /// `tests/run.sh` does in its PostgreSQL pass), so a missing server is a failure, not a
    /// skip.
    pub fn required() -> ScratchDatabase {
        match ScratchDatabase::from_environment() {
            Some(database) => database,
            None => panic!(
                "{TEST_DATABASE_URL} is not set: this test needs PostgreSQL \
                 (tests/run.sh runs it in its PostgreSQL pass)"
            ),
        }
    }

    /// Its URL (`RUMMY_DATABASE_URL` for a server on it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// It as a store.
    pub(crate) fn store(&self) -> Store {
        Store::Postgres(self.url.clone())
    }

    /// Ends every session connected to it, as a server restart would.
    pub fn end_sessions(&self) -> Result<(), DbError> {
        let mut admin = connect_postgres(&self.admin_url)?;
        admin.batch_execute(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{}'",
            self.name
        ))?;
        Ok(())
    }

    /// A connection to it with rummy's default setup, the migrations applied.
    pub fn migrated(&self) -> Result<Conn, DbError> {
        migrated(&self.store(), ConnectionSetup::default())
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let dropped = connect_postgres(&self.admin_url)
            .map_err(DbError::from)
            .and_then(|mut admin| {
                Ok(admin.batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ))?)
            });
        if let Err(error) = dropped {
            tracing::warn!(database = %self.name, %error, "a test database was not dropped");
        }
    }
}

/// Creates project `p` at `project_root` with one run of model `m`, created at 1 s.
pub(crate) fn project_with_run(
    conn: &mut Conn,
    project_root: Option<String>,
) -> Result<RunRow, DbError> {
    let project = projects::upsert_project(
        conn,
        &ProjectInsertForm {
            name: "p".into(),
            project_root,
        },
    )?;
    let create = RunCreateForm {
        project_id: project.id,
        model: "m".into(),
        temperature: None,
        persona: None,
        context_limit: None,
        created_by: None,
    };
    runs::create_run(conn, &create, 1_000)
}

/// A migrated database that lives as long as this value: a SQLite file, or a PostgreSQL
/// database of its own when [`TEST_DATABASE_URL`] is set.
#[cfg(test)]
pub(crate) struct TestDb {
    /// A connection with rummy's setup.
    pub conn: Conn,
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// The SQLite file (not created on PostgreSQL).
    pub path: std::path::PathBuf,
    /// The PostgreSQL database, dropped with this value.
    pub database: Option<ScratchDatabase>,
}

#[cfg(test)]
impl TestDb {
    /// Creates and migrates a database with token divisor 4, on PostgreSQL when
    /// [`TEST_DATABASE_URL`] is set.
    pub(crate) fn new() -> TestDb {
        match ScratchDatabase::from_environment() {
            Some(database) => {
                let conn = database.migrated().unwrap();
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("rummy.db");
                TestDb {
                    conn,
                    dir,
                    path,
                    database: Some(database),
                }
            }
            None => TestDb::sqlite(),
        }
    }

    /// [`TestDb::new`] on SQLite whatever the environment says (a test of SQLite itself).
    pub(crate) fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rummy.db");
        let conn = migrated(&Store::Sqlite(path.clone()), ConnectionSetup::default()).unwrap();
        TestDb {
            conn,
            dir,
            path,
            database: None,
        }
    }

    /// Where it is.
    pub(crate) fn store(&self) -> Store {
        match &self.database {
            Some(database) => database.store(),
            None => Store::Sqlite(self.path.clone()),
        }
    }

    /// Another connection to the same file.
    pub(crate) fn connect(&self) -> Conn {
        open_connection(&self.store(), ConnectionSetup::default()).unwrap()
    }
}

/// A project `p` rooted at `/p` with one run of model `m`.
#[cfg(test)]
pub(crate) fn sample_run(conn: &mut Conn) -> RunRow {
    project_with_run(conn, Some("/p".into())).unwrap()
}

/// An act loop with prompt `prompt`, queued on `run`.
#[cfg(test)]
pub(crate) fn sample_loop(
    conn: &mut Conn,
    run: crate::db::ids::RunId,
    prompt: &str,
) -> crate::db::models::run::LoopRow {
    use crate::db::enums::{LoopMode, LoopPriority};
    use crate::db::models::run::LoopEnqueue;
    let enqueue = LoopEnqueue {
        run_id: run,
        mode: LoopMode::Act,
        model: None,
        prompt: prompt.into(),
        priority: LoopPriority::Normal,
        config: serde_json::json!({}),
        requested_by: None,
        requested_on: None,
    };
    crate::db::queries::loops::enqueue_loop(conn, &enqueue).unwrap()
}

/// `EntryUpsertForm::new` of `body` at `path` on `turn`, outside any loop.
#[cfg(test)]
pub(crate) fn write(
    run_id: crate::db::ids::RunId,
    path: &str,
    body: &str,
    turn: i32,
) -> crate::db::models::entry::EntryUpsertForm {
    crate::db::models::entry::EntryUpsertForm::new(run_id, None, turn, path, body)
}
