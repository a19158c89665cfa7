//! Bulk fidelity changes the agent loop makes between turns and loops: the previous loop's
//! logging fades to summary, data written in an overflowing turn is summarised, and
//! summarised prompts come back in full. Each returns the changed paths, sorted.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::db::ids::{LoopId, RunId};
use crate::db::DbError;

#[derive(QueryableByName)]
struct ChangedPath {
    #[diesel(sql_type = Text)]
    path: String,
}

fn sorted(rows: Vec<ChangedPath>) -> Vec<String> {
    let mut paths: Vec<String> = rows.into_iter().map(|row| row.path).collect();
    paths.sort();
    paths
}

/// At the start of loop `loop_id`: every full entry of a `logging` scheme written by
/// another loop (or none) goes to summary.
pub(crate) fn demote_previous_loop_logging(
    conn: &mut Conn,
    run_id: RunId,
    loop_id: LoopId,
) -> Result<Vec<String>, DbError> {
    let rows = statement(
        "UPDATE known_entries SET fidelity = 'summary', updated_at = datetime('now')
         WHERE run_id = ? AND fidelity = 'full' AND (loop_id IS NULL OR loop_id <> ?)
           AND COALESCE(scheme, 'file') IN (SELECT name FROM schemes WHERE category = 'logging')
         RETURNING path",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<BigInt, _>(loop_id)
    .load::<ChangedPath>(conn)?;
    Ok(sorted(rows))
}

/// Every `prompt://` entry at summary goes back to full.
pub(crate) fn restore_summarized_prompts(
    conn: &mut Conn,
    run_id: RunId,
) -> Result<Vec<String>, DbError> {
    let rows = statement(
        "UPDATE known_entries SET fidelity = 'full', updated_at = datetime('now')
         WHERE run_id = ? AND scheme = 'prompt' AND fidelity = 'summary'
         RETURNING path",
    )
    .bind::<BigInt, _>(run_id)
    .load::<ChangedPath>(conn)?;
    Ok(sorted(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{EntryStatus, Fidelity};
    use crate::db::models::entry::Selector;

    use crate::db::queries::entries::{set_fidelity, upsert_entry};

    use crate::db::testing::{sample_loop, sample_run, write, TestDb};

    #[test]
    fn loop_start_and_overflow_demotions() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn);
        let current = sample_loop(conn, run.id, "go");
        upsert_entry(conn, &write(run.id, "get://turn_1/a", "old", 1)).unwrap();
        let mut fresh = write(run.id, "get://turn_2/b", "new", 2);
        fresh.loop_id = Some(current.id);
        upsert_entry(conn, &fresh).unwrap();
        upsert_entry(conn, &write(run.id, "known://k", "fact", 2)).unwrap();
        upsert_entry(conn, &write(run.id, "big.txt", "huge", 2)).unwrap();
        let mut failed = write(run.id, "known://bad", "x", 2);
        failed.status = EntryStatus::NotFound;
        upsert_entry(conn, &failed).unwrap();
        upsert_entry(conn, &write(run.id, "prompt://1", "task", 1)).unwrap();

        assert_eq!(
            demote_previous_loop_logging(conn, run.id, current.id).unwrap(),
            ["get://turn_1/a"]
        );

        set_fidelity(
            conn,
            run.id,
            &Selector::Path("prompt://1".into()),
            Fidelity::Summary,
        )
        .unwrap();
        assert_eq!(
            restore_summarized_prompts(conn, run.id).unwrap(),
            ["prompt://1"]
        );
        assert!(restore_summarized_prompts(conn, run.id).unwrap().is_empty());
    }
}
