//! The database file under sustained load: calls that only write their audit row let SQLite
//! checkpoint, so the write-ahead log stays bounded, and a clean stop empties it.

use std::path::Path;

use serde_json::json;

use crate::support::TestApp;

/// Audit-only calls of one round: `ping`, an unknown method, a method called before `init`.
const CALLS_PER_ROUND: usize = 300;
/// Rounds; each round alone wrote about 5 MB of log while checkpoints never ran.
const ROUNDS: usize = 8;
/// The log may hold about 1000 pages (SQLite's auto-checkpoint) plus one transaction.
const WAL_BOUND_BYTES: u64 = 8 * 1024 * 1024;

fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |metadata| metadata.len())
}

#[actix_web::test]
async fn audit_only_calls_keep_the_wal_bounded_and_a_clean_stop_empties_it() {
    let app = TestApp::start().await;
    if app.database.is_some() {
        // PostgreSQL keeps its own log; there is no file of rummy's to bound.
        return;
    }
    let database = app.server.settings().storage.db_path.clone();
    let wal = database.with_file_name(format!(
        "{}-wal",
        database.file_name().unwrap().to_string_lossy()
    ));
    let mut client = app.client().await;
    for round in 0..ROUNDS {
        for call in 0..CALLS_PER_ROUND {
            match call % 3 {
                0 => client.ok("ping", json!({})).await,
                1 => client.call("no/such/method", json!({})).await,
                _ => client.call("getRuns", json!({})).await,
            };
        }
        // No unit of work of its own here: any would let SQLite checkpoint.
        let size = size_of(&wal);
        assert!(
            size <= WAL_BOUND_BYTES,
            "after {} calls the WAL holds {size} bytes",
            (round + 1) * CALLS_PER_ROUND
        );
    }
    let TestApp { server, home, .. } = app;
    server.stop().await;
    assert_eq!(size_of(&wal), 0, "a clean stop truncates the WAL");
    drop(home);
}
