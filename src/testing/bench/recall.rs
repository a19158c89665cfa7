//! Recall at 1k, 10k and 100k memory items: what a loop's first turn does on the writer to
//! find what its prompt recalls (the full-text queries over the project's facts, the
//! server-wide ones and the replaced ones, best first). Of the items, 80 % are the
//! project's facts, 10 % server-wide and 10 % replaced ones; each holds a dozen words of a
//! 5,000-word vocabulary, and half of them the common words the prompt also has. On SQLite
//! (FTS5), with its default page cache and a larger one, and on PostgreSQL (the tsvector
//! index) when `RUMMY_TEST_DATABASE_URL` names a server, as for the tests.

use std::any::Any;
use std::time::Duration;

use crate::db::ids::ProjectId;
use crate::db::queries::memory;
use crate::db::testing::{migrated, project_with_run, ScratchDatabase, TEST_DATABASE_URL};
use crate::db::{Conn, ConnectionSetup, Store};
use criterion::{BenchmarkId, Criterion};
use diesel::connection::SimpleConnection;

const SIZES: [i64; 3] = [1_000, 10_000, 100_000];
const PROMPT: &str = "How do we deploy the w17 service and which w3001 flags does the w1234 \
                      build need for the w4242 release?";

/// The SQL of a dozen vocabulary words for row `i` (and the common words in every other).
const WORDS: &str = "'w' || ((i * 7919) % 5000) || ' w' || ((i * 104729) % 5000) || ' w' || \
     ((i * 1299709) % 5000) || ' w' || ((i * 15485863) % 5000) || ' w' || ((i * 32452843) % 5000) \
     || ' w' || ((i * 49979687) % 5000) || ' w' || ((i * 67867967) % 5000) || ' w' || \
     ((i * 86028121) % 5000) || ' w' || ((i * 104395301) % 5000) || ' w' || \
     ((i * 122949823) % 5000) || ' w' || ((i * 141650939) % 5000) || ' w' || \
     ((i * 160481183) % 5000) || CASE WHEN i % 2 = 0 THEN ' the and for build' ELSE '' END";

/// What keeps a store alive while it is measured (its directory, or its database).
type Kept = Box<dyn Any>;

/// A new migrated SQLite store.
fn sqlite() -> Option<(Kept, Conn)> {
    let dir = tempfile::tempdir().ok()?;
    let conn = migrated(
        &Store::Sqlite(dir.path().join("recall.db")),
        ConnectionSetup::default(),
    )
    .ok()?;
    Some((Box::new(dir), conn))
}

/// A new migrated PostgreSQL database on the tests' server.
fn postgres() -> Option<(Kept, Conn)> {
    let database = ScratchDatabase::from_environment()?;
    let conn = database.migrated().ok()?;
    Some((Box::new(database), conn))
}

/// Fills `conn`'s store with `items` memory items of one project.
fn fill(mut conn: Conn, items: i64) -> Option<(Conn, ProjectId)> {
    let run = project_with_run(&mut conn, None).ok()?;
    let project = run.project_id;
    let (facts, shared) = (items * 8 / 10, items / 10);
    conn.batch_execute(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT i + 1 FROM n WHERE i < {facts})
         INSERT INTO memory_facts (project_id, topic, body)
         SELECT {project}, 'topic ' || i, {WORDS} FROM n;
         WITH RECURSIVE n(i) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT i + 1 FROM n WHERE i < {shared})
         INSERT INTO memory_facts (project_id, topic, body)
         SELECT NULL, 'shared ' || i, {WORDS} FROM n;
         WITH RECURSIVE n(i) AS (SELECT CAST(1 AS BIGINT) UNION ALL SELECT i + 1 FROM n WHERE i < {shared})
         INSERT INTO memory_history (project_id, topic, body, reason, written_at)
         SELECT {project}, 'topic ' || i, {WORDS}, 'replaced', datetime('now') FROM n;
         COMMIT;"
    ))
    .ok()?;
    if let Conn::Postgres(_) = conn {
        // As autovacuum would soon after such a fill: the index's pending list merged (else
        // every search reads it through) and the planner's statistics gathered.
        conn.batch_execute("VACUUM ANALYZE memory_facts, memory_history, memory_word_counts")
            .ok()?;
    }
    Some((conn, project))
}

/// What a prompt's recall reads.
fn recall(conn: &mut Conn, project: ProjectId) -> usize {
    let facts = memory::recall_facts(conn, project, PROMPT, 32).map_or(0, |items| items.len());
    let history = memory::recall_history(conn, project, PROMPT, 8).map_or(0, |items| items.len());
    facts + history
}

/// With the page cache the server's connections have (SQLite's default, 2 MiB), and with
/// one large enough to hold the 100k store's index (64 MiB).
pub fn recall_at_sizes(criterion: &mut Criterion) {
    measure(criterion, "memory_recall", sqlite, None);
    measure(
        criterion,
        "memory_recall_cache_64m",
        sqlite,
        Some("PRAGMA cache_size = -65536"),
    );
    if std::env::var_os(TEST_DATABASE_URL).is_some() {
        measure(criterion, "memory_recall_postgres", postgres, None);
    }
}

fn measure(
    criterion: &mut Criterion,
    name: &str,
    open: fn() -> Option<(Kept, Conn)>,
    pragma: Option<&str>,
) {
    let mut group = criterion.benchmark_group(name);
    group.measurement_time(Duration::from_secs(8));
    for items in SIZES {
        let Some((_kept, conn)) = open() else {
            return;
        };
        let Some((mut conn, project)) = fill(conn, items) else {
            return;
        };
        if let Some(pragma) = pragma {
            let _ = conn.batch_execute(pragma);
        }
        assert_eq!(recall(&mut conn, project), 40, "a full recall at {items}");
        group.bench_with_input(BenchmarkId::from_parameter(items), &items, |bench, _| {
            bench.iter(|| recall(&mut conn, project));
        });
    }
    group.finish();
}
