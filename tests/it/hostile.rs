//! Hostile input under load (issue 24, item 11): `rummy-load hostile` runs clients whose
//! model answers every turn with a hostile reply or an HTTP fault against the binary, while
//! a fresh client probes it every second. The issue demands bounds, so this test states
//! them, with margins for an unoptimized build on a two-core machine: every probe answered,
//! a fresh client's `ping` within [`PING_BOUND`], its `init` + `getRuns` within
//! [`INIT_GET_RUNS_BOUND`], the server's resident memory within [`MEMORY_BOUND_KIB`], and no
//! panic in its log. The server is a process of its own, so its memory is its alone, and
//! in the PostgreSQL pass of `tests/run.sh` it stores in PostgreSQL too.

use std::time::Duration;

use rummy::testing::ScratchDatabase;
use serde_json::Value;
use tokio::process::Command;

use crate::process::{free_port, LoggedServer};

/// How long the hostile clients work.
const SECONDS: &str = "25";
/// How many hostile clients.
const CLIENTS: &str = "4";
/// The slowest fresh-client `ping` accepted, from opening the connection. The issue asks
/// for 1 s (its fuzzer saw 5 s missed in 6 of 18 probes), which the release build holds
/// with room to spare (docs/src/load-and-memory.md, "Hostile input under load": 180 ms at most over 120 s of six
/// clients); this is the unoptimized build sharing two cores with the hostile clients, the
/// fuzzing model and other builds, measured at 742 ms at most there.
const PING_BOUND: Duration = Duration::from_millis(2_000);
/// The slowest fresh-client `init` + `getRuns` accepted (the fuzzer saw 60 s missed; the
/// release build's slowest was 205 ms, this build's 710 ms).
const INIT_GET_RUNS_BOUND: Duration = Duration::from_millis(2_000);
/// The most resident memory the server may reach (the fuzzer saw 1.0–1.1 GB). This run
/// measured 200–321 MiB with glibc's malloc as it comes (387 MiB once, beside the whole suite
/// in CI's PostgreSQL pass), 162–211 MiB since the binary sets it (`tune_malloc` in
/// src/main.rs; docs/src/load-and-memory.md, "Hostile input under load").
const MEMORY_BOUND_KIB: u64 = 384 * 1024;

#[actix_web::test]
async fn a_fresh_client_is_answered_promptly_and_memory_stays_bounded_under_hostile_load() {
    let _measuring = crate::support::CPU_BURNERS.write().await;
    let home = tempfile::tempdir().unwrap();
    let projects = home.path().join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    let llm_port = free_port();
    let llm_url = format!("http://127.0.0.1:{llm_port}");
    let mut env = vec![
        ("RUMMY_PROJECTS_DIR", projects.to_str().unwrap()),
        ("OPENAI_BASE_URL", &llm_url),
    ];
    let database = ScratchDatabase::from_environment();
    if let Some(database) = &database {
        env.push(("RUMMY_DATABASE_URL", database.url()));
    }
    let server = LoggedServer::start(home, &env).await;
    let pid = server.pid().to_string();
    let output = Command::new(env!("CARGO_BIN_EXE_rummy-load"))
        .args(["hostile", "--json", "--seed", "24"])
        .args(["--url", &server.url()])
        .args(["--llm-port", &llm_port.to_string()])
        .args(["--clients", CLIENTS, "--seconds", SECONDS])
        .args(["--server-pid", &pid])
        .arg("--projects-dir")
        .arg(&projects)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        output.status.success(),
        "rummy-load failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let log = server.stop().await;
    assert!(!log.contains("panicked"), "the server panicked: {log}");

    // The load was real: the fuzzing model was asked many times, and loops ended (how many
    // depends on how much of two cores the other tests leave: 2 loops and 19 requests at the
    // worst seen, beside seven builds).
    assert!(report["llmRequests"].as_u64().unwrap() >= 10, "{report}");
    assert!(report["loops"].as_u64().unwrap() >= 2, "{report}");
    assert_eq!(report["probesFailed"], serde_json::json!({}), "{report}");
    assert!(report["probes"].as_u64().unwrap() >= 20, "{report}");
    let slowest = |name: &str| Duration::from_secs_f64(report[name]["max"].as_f64().unwrap() / 1e3);
    assert!(slowest("pingMs") <= PING_BOUND, "{report}");
    assert!(slowest("initGetRunsMs") <= INIT_GET_RUNS_BOUND, "{report}");
    let peak = report["rssHighWaterKib"].as_u64().unwrap();
    assert!(peak > 0 && peak <= MEMORY_BOUND_KIB, "{report}");
}
