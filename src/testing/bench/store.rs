//! The known store at 10k entries of one run: upserting one entry (rewriting an existing path,
//! and writing a new one; and rewriting one with the change log on, as when a plugin observes
//! `entry.changed`) and a pattern query with a body search, each in the write transaction or
//! plain read the server's handlers use.

use std::time::{Duration, Instant};

use crate::db::Conn;
use criterion::Criterion;
use diesel::connection::SimpleConnection;

use crate::db::connection::write_transaction;
use crate::db::entry_changes;
use crate::db::enums::EntryStatus;
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::queries::entries;
use crate::db::testing::{migrated, project_with_run};
use crate::db::ConnectionSetup;

const ENTRIES: i64 = 10_000;
const TOKENS_PER_CHARACTER: u32 = 4;

/// One run holding `ENTRIES` entries: a quarter each of `known://`, files, tool results
/// and unknowns; one `known://` entry in a hundred mentions "deploy" in its body.
fn store(dir: &tempfile::TempDir) -> Option<(Conn, RunId)> {
    let mut conn = migrated(
        &crate::db::Store::Sqlite(dir.path().join("store.db")),
        ConnectionSetup {
            token_divisor: TOKENS_PER_CHARACTER,
            ..ConnectionSetup::default()
        },
    )
    .ok()?;
    let run = project_with_run(&mut conn, None).ok()?.id;
    conn.batch_execute(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ENTRIES})
         INSERT INTO known_entries (run_id, turn, path, body, fidelity)
         SELECT {run}, i % 50,
                CASE i % 4 WHEN 0 THEN 'known://topic/e' || i
                           WHEN 1 THEN 'src/file' || i || '.rs'
                           WHEN 2 THEN 'get://turn_' || (i % 50) || '/x' || i
                           ELSE 'unknown://q' || i END,
                CASE WHEN i % 400 = 0 THEN 'the deploy target is staging ' || i
                     ELSE 'lorem ipsum dolor sit amet ' || hex(zeroblob(40)) END,
                CASE WHEN i % 100 = 0 THEN 'full' ELSE 'archive' END
         FROM n;
         COMMIT;"
    ))
    .ok()?;
    Some((conn, run))
}

fn upsert(run: RunId, path: String, body: String) -> EntryUpsertForm {
    EntryUpsertForm {
        run_id: run,
        loop_id: None,
        turn: 51,
        path,
        body,
        status: EntryStatus::Ok,
        fidelity: None,
        hash: None,
        attributes: None,
    }
}

pub fn upsert_one(criterion: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let Some((mut conn, run)) = store(&dir) else {
        return;
    };
    let mut group = criterion.benchmark_group("store_upsert_10k");
    let mut written = 0i64;
    group.bench_function("existing_path", |bench| {
        bench.iter(|| {
            written += 1;
            let path = format!("known://topic/e{}", (written % (ENTRIES / 4) + 1) * 4);
            let entry = upsert(run, path, format!("rewritten {written}"));
            write_transaction(&mut conn, |conn| entries::upsert_entry(conn, &entry))
        });
    });
    group.bench_function("new_path", |bench| {
        bench.iter_custom(|iterations| {
            let started = Instant::now();
            for iteration in 0..iterations {
                let entry = upsert(run, format!("known://new/n{iteration}"), "fresh".into());
                let _ = write_transaction(&mut conn, |conn| entries::upsert_entry(conn, &entry));
            }
            let elapsed = started.elapsed();
            // Back to 10k entries, outside the measured time, so every sample sees the same store.
            let _ = conn.batch_execute("DELETE FROM known_entries WHERE path LIKE 'known://new/%'");
            elapsed
        });
    });
    group.finish();
}

/// Rewriting an existing path with the writer's change log on: the temporary trigger's row,
/// and the unit taking the log before it commits.
pub fn upsert_logged(criterion: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let Some((mut conn, run)) = store(&dir) else {
        return;
    };
    if entry_changes::record(&mut conn).is_err() {
        return;
    }
    let mut group = criterion.benchmark_group("store_upsert_10k");
    let mut written = 0i64;
    group.bench_function("existing_path_change_logged", |bench| {
        bench.iter(|| {
            written += 1;
            let path = format!("known://topic/e{}", (written % (ENTRIES / 4) + 1) * 4);
            let entry = upsert(run, path, format!("rewritten {written}"));
            write_transaction(&mut conn, |conn| {
                entries::upsert_entry(conn, &entry)?;
                entry_changes::take(conn)
            })
        });
    });
    group.finish();
}

pub fn pattern_query(criterion: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    let Some((mut conn, run)) = store(&dir) else {
        return;
    };
    let mut group = criterion.benchmark_group("store_query_10k");
    group.measurement_time(Duration::from_secs(8));
    let by_path = Selector::Pattern {
        path: "known://*".into(),
        body: None,
    };
    group.bench_function("known_star", |bench| {
        bench.iter(|| entries::list_entries(&mut conn, run, &by_path, None, None));
    });
    let with_body = Selector::Pattern {
        path: "known://*".into(),
        body: Some("deploy".into()),
    };
    group.bench_function("known_star_body_search", |bench| {
        bench.iter(|| entries::list_entries(&mut conn, run, &with_body, None, None));
    });
    group.finish();
}
