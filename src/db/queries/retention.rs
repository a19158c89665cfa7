//! The start-up purge: finished runs and RPC log rows older than `RUMMY_RETENTION_DAYS`.

use diesel::prelude::*;
use diesel::sql_types::Integer;

use crate::db::DbError;

/// What the purge removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Purged {
    /// Runs (with their loops, turns and entries).
    pub runs: usize,
    pub rpc_log: usize,
}

/// Deletes runs that are finished (200, 413, 499, 500) and untouched for `days` days, and
/// RPC log rows older than that. `days == 0` keeps everything.
pub fn purge_older_than(conn: &mut SqliteConnection, days: u32) -> Result<Purged, DbError> {
    if days == 0 {
        return Ok(Purged::default());
    }
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    let runs = diesel::sql_query(
        "DELETE FROM runs
         WHERE status IN (200, 413, 499, 500)
           AND created_at < datetime('now', '-' || ?1 || ' days')
           AND NOT EXISTS (
               SELECT 1 FROM loops
               WHERE loops.run_id = runs.id
                 AND loops.created_at >= datetime('now', '-' || ?1 || ' days'))",
    )
    .bind::<Integer, _>(days)
    .execute(conn)?;
    let rpc_log = diesel::sql_query(
        "DELETE FROM rpc_log WHERE created_at < datetime('now', '-' || ?1 || ' days')",
    )
    .bind::<Integer, _>(days)
    .execute(conn)?;
    Ok(Purged { runs, rpc_log })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_run, TestDb};

    #[test]
    fn old_finished_runs_and_log_rows_go_recent_ones_stay() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let old = sample_run(conn);
        let recent = sample_run(conn);
        diesel::sql_query(
            "UPDATE runs SET status = 102, created_at = datetime('now', '-40 days') WHERE id = ?1",
        )
        .bind::<diesel::sql_types::BigInt, _>(old.id)
        .execute(conn)
        .unwrap();
        diesel::sql_query("UPDATE runs SET status = 200 WHERE id = ?1")
            .bind::<diesel::sql_types::BigInt, _>(old.id)
            .execute(conn)
            .unwrap();
        diesel::sql_query(
            "INSERT INTO rpc_log (method, created_at) VALUES ('ping', datetime('now', '-40 days')), ('ping', datetime('now'))",
        )
        .execute(conn)
        .unwrap();
        assert_eq!(purge_older_than(conn, 0).unwrap(), Purged::default());
        let purged = purge_older_than(conn, 31).unwrap();
        assert_eq!(
            purged,
            Purged {
                runs: 1,
                rpc_log: 1
            }
        );
        let left: i64 = crate::db::schema::runs::table
            .count()
            .get_result(conn)
            .unwrap();
        assert_eq!(left, 1);
        assert!(crate::db::queries::runs::get_run(conn, recent.id)
            .unwrap()
            .is_some());
    }
}
