//! The start-up purge: finished runs older than `RUMMY_RETENTION_DAYS`. (The RPC log has
//! bounds of its own: [`rpc_log::prune`](super::rpc_log::prune).)

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::Integer;

use crate::db::DbError;

/// Deletes runs that are finished (200, 413, 499, 500) and untouched for `days` days, with
/// their loops, turns and entries; returns how many runs went. `days == 0` keeps everything.
pub(crate) fn purge_older_than(conn: &mut Conn, days: u32) -> Result<usize, DbError> {
    if days == 0 {
        return Ok(0);
    }
    let days = i32::try_from(days).unwrap_or(i32::MAX);
    Ok(statement(
        "DELETE FROM runs
         WHERE status IN (200, 413, 499, 500)
           AND created_at < datetime('now', '-' || ? || ' days')
           AND NOT EXISTS (
               SELECT 1 FROM loops
               WHERE loops.run_id = runs.id
                 AND loops.created_at >= datetime('now', '-' || ? || ' days'))",
    )
    .bind::<Integer, _>(days)
    .bind::<Integer, _>(days)
    .execute(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_run, TestDb};

    #[test]
    fn old_finished_runs_go_recent_ones_stay() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let old = sample_run(conn);
        let recent = sample_run(conn);
        statement(
            "UPDATE runs SET status = 102, created_at = datetime('now', '-40 days') WHERE id = ?",
        )
        .bind::<diesel::sql_types::BigInt, _>(old.id)
        .execute(conn)
        .unwrap();
        statement("UPDATE runs SET status = 200 WHERE id = ?")
            .bind::<diesel::sql_types::BigInt, _>(old.id)
            .execute(conn)
            .unwrap();
        assert_eq!(purge_older_than(conn, 0).unwrap(), 0);
        assert_eq!(purge_older_than(conn, 31).unwrap(), 1);
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
