//! Test support: a migrated database in a fresh temporary directory.

use std::path::PathBuf;

use diesel::SqliteConnection;
use tempfile::TempDir;

use super::{open_connection, run_migrations};

/// A migrated database file that lives as long as this value.
pub struct TestDb {
    /// Keeps the directory alive.
    pub dir: TempDir,
    /// The database file.
    pub path: PathBuf,
    /// A connection with rummy's setup.
    pub conn: SqliteConnection,
}

impl TestDb {
    /// Creates and migrates a database with token divisor 4.
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rummy.db");
        let mut conn = open_connection(&path, crate::db::ConnectionSetup::default()).unwrap();
        run_migrations(&mut conn).unwrap();
        TestDb { dir, path, conn }
    }

    /// Another connection to the same file.
    pub fn connect(&self) -> SqliteConnection {
        open_connection(&self.path, crate::db::ConnectionSetup::default()).unwrap()
    }
}

/// A project `p` with one run of model `m`.
pub fn sample_run(conn: &mut SqliteConnection) -> crate::db::models::run::RunRow {
    use crate::db::models::run::RunCreateForm;
    use crate::db::models::ProjectInsertForm;
    use crate::db::queries::{projects, runs};
    let project = projects::upsert_project(
        conn,
        &ProjectInsertForm {
            name: "p".into(),
            project_root: Some("/p".into()),
            config_path: None,
        },
    )
    .unwrap();
    let create = RunCreateForm {
        project_id: project.id,
        model: "m".into(),
        temperature: None,
        persona: None,
        context_limit: None,
    };
    runs::create_run(conn, &create, 1_000).unwrap()
}

/// An act loop with prompt `prompt`, queued on `run`.
pub fn sample_loop(
    conn: &mut SqliteConnection,
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
    };
    crate::db::queries::loops::enqueue_loop(conn, &enqueue).unwrap()
}

/// A plain write of `body` at `path` on `turn`, status 200, keeping fidelity and attributes.
pub fn write(
    run_id: crate::db::ids::RunId,
    path: &str,
    body: &str,
    turn: i32,
) -> crate::db::models::entry::EntryUpsertForm {
    crate::db::models::entry::EntryUpsertForm {
        run_id,
        loop_id: None,
        turn,
        path: path.into(),
        body: body.into(),
        status: 200,
        fidelity: None,
        hash: None,
        attributes: None,
    }
}
