//! The web console in a real browser: Debian's chromium, headless, driven by Playwright for
//! Python (`tests/console/browse.py`, pinned by `tests/console/requirements.txt`) against
//! this server and the scripted model. A member signs in, sees the projects, asks from the
//! page and watches the run finish live, opens a run whose model reply is hostile HTML and
//! 1 MB long and finds it inert, sees a waiting proposal's controls and signs out, after
//! which the old cookie is refused; a viewer sees no control that changes anything and has
//! a forged call refused. Screenshots of the pages go to `target/console-screenshots`.
//!
//! It needs chromium (apt) and the venv tests/console/.venv, which `tests/run.sh` makes: it
//! is `#[ignore]`d, so that a plain `cargo test` lists it as ignored instead of counting it
//! as passed, and run.sh runs it (`--ignored`). Run without them, it fails and says why.

use std::path::Path;
use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Reply, Step};
use serde_json::json;

use crate::access::users;
use crate::support::{Client, TestApp};

const NEEDS: &str = "needs Debian's chromium and Playwright in tests/console/.venv \
                     (tests/console/requirements.txt): tests/run.sh installs both";

/// A model reply that would run script, load an image, or link to script if it were HTML,
/// then a megabyte of text.
fn hostile_reply() -> String {
    format!(
        "<script>window.pwned = true</script> <img src=x onerror=\"window.pwned = true\"> \
         <a href=\"javascript:window.pwned = true\">click me</a>\n{}\n\
         <summarize>hostile</summarize>",
        "A".repeat(1_000_000)
    )
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_member_and_a_viewer_use_the_console_in_chromium() {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect(NEEDS);
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console");
    let python = tests.join(".venv/bin/python");
    assert!(python.exists(), "{NEEDS}");

    let llm = FakeLlm::start([
        Step::reply(hostile_reply()),
        Step::reply("<sh>echo hello</sh><update>running it</update>"),
        Step::delayed(
            Duration::from_secs(4),
            Reply::new("<summarize>four</summarize>"),
        ),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("mo", "mo-token", "member", &["web"]),
            ("vera", "vera-token", "viewer", &["web"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", &file),
        ],
    )
    .await;
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &app.project_root("web")).await;
    let hostile = operator
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "say something nasty"}),
        )
        .await;
    assert_eq!(hostile["status"], json!(200), "{hostile}");
    let waiting = operator
        .ok("act", json!({"model": "fake", "prompt": "run echo hello"}))
        .await;
    assert_eq!(waiting["status"], json!(202), "{waiting}");

    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
    let output = tokio::process::Command::new(python)
        .arg("browse.py")
        .current_dir(&tests)
        .env("RUMMY_CONSOLE", format!("http://{}/ui/", app.addr()))
        .env("CHROMIUM", chromium)
        .env("MO", "mo-token")
        .env("VERA", "vera-token")
        .env("HOSTILE_RUN", hostile["run"].as_str().unwrap())
        .env("WAITING_RUN", waiting["run"].as_str().unwrap())
        .env("SHOTS", &shots)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(300), output)
        .await
        .expect("the browser finished within 5 minutes")
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for page in [
        "sign-in",
        "projects",
        "runs",
        "runs-phone",
        "run",
        "run-dark",
        "run-viewer",
    ] {
        assert!(shots.join(format!("{page}.png")).exists(), "{page}.png");
    }
}
