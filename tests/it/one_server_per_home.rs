//! One server per home on the SQLite store (`rummy::home_lock`): beside a running `rummy
//! serve`, a second `rummy serve`, a local `rummy acp` or `rummy migrate` on the same home
//! exits 1 at start saying why and what to do, having written nothing (the first server's
//! loop in flight is not aborted, as a second server's start-up recovery would); once the
//! first is gone, even killed, the home is free.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::process::{free_port, ServerProcess};
use crate::support::project_root;
use rummy::testing::fake_llm::{FakeLlm, Reply, Step};

/// How long a refused start may take before the test says it was not refused.
const REFUSED_WITHIN: Duration = Duration::from_secs(60);

/// `rummy <args>` on `home`, which must exit 1 at start with nothing on stdout: its stderr.
async fn refused(home: &Path, args: &[&str]) -> String {
    let started = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUMMY_HOME", home)
        .env("PORT", free_port().to_string())
        .env("RUMMY_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(REFUSED_WITHIN, started)
        .await
        .unwrap_or_else(|_| panic!("rummy {args:?} beside a server on its home kept running"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "rummy {args:?}: {stderr}");
    assert!(output.stdout.is_empty(), "rummy {args:?}: {output:?}");
    stderr
}

#[actix_web::test]
async fn beside_a_running_server_another_on_its_home_is_refused_until_it_is_gone() {
    let llm = FakeLlm::start([Step::Held(Reply::new("<summarize>Done.</summarize>"))]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let server = ServerProcess::start_with(home.path(), &llm, &[]).await;
    let mut client = server.client().await;
    client.init("held", &root).await;
    let asked = client
        .send("ask", json!({"model": "fake", "prompt": "take your time"}))
        .await;
    llm.wait_for_requests(1).await;
    let said = format!(
        "another rummy (process {}) is serving the home {} on its SQLite store",
        server.pid(),
        home.path().display()
    );
    for args in [&["serve"][..], &["acp"], &["migrate"]] {
        let stderr = refused(home.path(), args).await;
        for part in [said.as_str(), "RUMMY_HOME", "rummy acp --url"] {
            assert!(stderr.contains(part), "rummy {args:?}: {part}: {stderr}");
        }
    }
    llm.release();
    let answer = client.reply(&asked).await;
    assert_eq!(
        answer["result"]["status"],
        json!(200),
        "the refused starts aborted nothing: {answer}"
    );
    server.stop_with("-9");
    let after = ServerProcess::start_with(home.path(), &llm, &[]).await;
    let mut client = after.client().await;
    client.init("held", &root).await;
}
