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
        let mut conn = open_connection(&path, 4).unwrap();
        run_migrations(&mut conn).unwrap();
        TestDb { dir, path, conn }
    }

    /// Another connection to the same file.
    pub fn connect(&self) -> SqliteConnection {
        open_connection(&self.path, 4).unwrap()
    }
}
