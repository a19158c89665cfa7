//! Fixtures over the store for the unit tests and the benches: a migrated database file
//! holding a project with one run. The server itself never calls them; the temporary-file
//! helpers exist in unit tests only (`tempfile` is a dev-dependency).

use std::path::Path;

use crate::db::Conn;

use super::models::run::{RunCreateForm, RunRow};
use super::models::ProjectInsertForm;
use super::queries::{projects, runs};
use super::{open_connection, run_migrations, ConnectionSetup, DbError};

/// Opens (creating if needed) the SQLite file at `path` with `setup` and applies the
/// migrations.
pub fn migrated(path: &Path, setup: ConnectionSetup) -> Result<Conn, DbError> {
    let mut conn = open_connection(path, setup)?;
    run_migrations(&mut conn)?;
    Ok(conn)
}

/// Creates project `p` at `project_root` with one run of model `m`, created at 1 s.
pub fn project_with_run(conn: &mut Conn, project_root: Option<String>) -> Result<RunRow, DbError> {
    let project = projects::upsert_project(
        conn,
        &ProjectInsertForm {
            name: "p".into(),
            project_root,
            config_path: None,
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

/// A migrated database file that lives as long as this value.
#[cfg(test)]
pub(crate) struct TestDb {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
    /// A connection with rummy's setup.
    pub conn: Conn,
}

#[cfg(test)]
impl TestDb {
    /// Creates and migrates a database with token divisor 4.
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rummy.db");
        let conn = migrated(&path, ConnectionSetup::default()).unwrap();
        TestDb { dir, path, conn }
    }

    /// Another connection to the same file.
    pub fn connect(&self) -> Conn {
        open_connection(&self.path, ConnectionSetup::default()).unwrap()
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
