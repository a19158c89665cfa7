//! The shared-run story with the web console (issue 41): editor A (`rummy acp --url`, the
//! TypeScript SDK, person `mo`), editor B (the Python SDK, `jo`, who loads A's run), a
//! WebSocket client W (`wu`) and the console in Debian's chromium (`ada`, browse.py's `story`)
//! on one run. The console shows who is here, editors named with their client; it approves
//! the edit A is asked about, and A's request is withdrawn with its tool call saying who
//! accepted it; B's command appears on the page and B's allowing it redraws the page; with
//! B's prompt running and A's queued behind it, the console aborts the run and both editors'
//! prompts end `cancelled`. Every step is synchronised on notifications and marker files.
//!
//! It needs both ACP SDKs (tests/acp) and chromium with Playwright (tests/console/.venv):
//! `#[ignore]`d, run by tests/run.sh when it has all of them.

use serde_json::{json, Value};

use super::three_clients::{drive, said, updates, Story};
use super::Sdk;
use crate::access::users;
use crate::console_browser::browse;
use crate::process::ServerProcess;
use crate::support::{eventually, Client};
use rummy::testing::fake_llm::{FakeLlm, Step};

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp, the ACP Python SDK in tests/acp/.venv, and \
            Debian's chromium with Playwright in tests/console/.venv: tests/run.sh makes them"]
async fn two_editors_a_websocket_client_and_the_console_share_one_run() {
    let llm = FakeLlm::start([
        Step::reply(
            "<set path=\"a.txt\"><<<<<<< SEARCH\ntwo\n=======\nTWO\n>>>>>>> REPLACE</set>\
             <update>Editing a.txt.</update>",
        ),
        Step::reply("<summarize>Edited in the console.</summarize>"),
        Step::reply("<sh>echo checked</sh><update>Checking.</update>"),
        Step::reply("<summarize>Checked.</summarize>"),
        Step::Hang,
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let marks = tempfile::tempdir().unwrap();
    let story = Story {
        marks: marks.path().to_path_buf(),
    };
    let root = home.path().join("demo");
    let editor_a = drive(
        Sdk::TypeScript,
        "console-a",
        "mo",
        &server,
        home.path(),
        &llm,
        &story,
    );
    let editor_b = drive(
        Sdk::Python,
        "console-b",
        "jo",
        &server,
        home.path(),
        &llm,
        &story,
    );

    // A is asked about its edit; W joins the run and the console opens it.
    story.reached("ca-asking").await;
    let mut w = Client::connect(&format!("ws://127.0.0.1:{}/?token=wu-token", server.port)).await;
    w.init("demo", &root).await;
    let run = w.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    w.ok("run/watch", json!({"run": run})).await;
    let console = {
        let url = format!("http://127.0.0.1:{}/ui/", server.port);
        let env = [
            ("ADA", "ada-token".to_string()),
            ("STORY_RUN", run.clone()),
            ("STORY_MARKS", story.marks.display().to_string()),
        ];
        actix_web::rt::spawn(async move { browse("story", url, &env).await })
    };

    // The console approves A's edit: every client is told it was ada.
    let accepted = w
        .until_notified("run/action", |params| params["action"] == json!("accept"))
        .await;
    assert_eq!(accepted["params"]["by"], json!("ada"), "{accepted}");
    assert_eq!(accepted["params"]["path"], json!("set://a.txt"));
    story.mark("ca-settled");
    story.reached("ca-done").await;
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nTWO\n",
        "the server applied the edit the console approved, once"
    );

    // B loads the run and is asked about a command, which the console shows before B
    // allows it.
    std::fs::write(story.marks.join("cb-load"), &run).unwrap();
    story.reached("cb-asking").await;
    story.reached("c-saw-command").await;
    story.mark("cb-answer");
    let allowed = w
        .until_notified("run/action", |params| params["action"] == json!("accept"))
        .await;
    assert_eq!(allowed["params"]["by"], json!("jo"), "{allowed}");
    story.reached("cb-done").await;
    // The page says who accepted before anyone acts again (its line says the latest action).
    story.reached("c-saw-accept").await;

    // B's next prompt runs (its model call hangs), A's waits behind it; the console aborts.
    story.mark("cb-again");
    llm.wait_for_requests(5).await;
    story.mark("ca-again");
    eventually("A's prompt queued behind B's", async || {
        let detail = w.ok("getRun", json!({"run": run})).await;
        detail["loops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|one| one["requested_by"] == json!("mo") && one["status"] == json!(100))
            .then_some(())
    })
    .await;
    story.mark("c-abort");
    let aborted = w
        .until_notified("run/action", |params| params["action"] == json!("abort"))
        .await;
    assert_eq!(aborted["params"]["by"], json!("ada"), "{aborted}");
    console.await.unwrap();
    let editor_a = editor_a.await.unwrap();
    let editor_b = editor_b.await.unwrap();

    editor_a_saw(&editor_a);
    editor_b_saw(&editor_b);
    let detail = w.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(499), "{detail}");
    assert_eq!(
        llm.requests().len(),
        5,
        "A's queued prompt never reached the model"
    );
    llm.wait_for_dropped(1).await;
}

/// A team server whose members of project `demo` are mo, jo and wu, with ada its admin
/// (`<name>-token`); the server applies the edits people accept.
async fn team_server(home: &std::path::Path, llm: &FakeLlm) -> ServerProcess {
    let file = home.join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("mo", "mo-token", "member", &["demo"]),
            ("jo", "jo-token", "member", &["demo"]),
            ("wu", "wu-token", "member", &["demo"]),
            ("ada", "ada-token", "admin", &["*"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    ServerProcess::start_with(
        home,
        llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", file.as_str()),
            ("RUMMY_APPLY_EDITS", "server"),
        ],
    )
    .await
}

/// Editor A: its request withdrawn as the console's, its late answer writing nothing, its
/// queued prompt ended cancelled by the abort.
fn editor_a_saw(seen: &Value) {
    assert_eq!(
        seen["stopReasons"],
        json!(["end_turn", "cancelled"]),
        "{seen}"
    );
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 1, "{seen}");
    let withdrawn = updates(seen, "tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "set://a.txt" && update.get("content").is_some())
        .expect("the withdrawn request's tool call is updated");
    assert_eq!(withdrawn["status"], json!("completed"));
    assert_eq!(withdrawn["content"], said("Accepted by ada."));
    assert_eq!(seen["writes"], json!([]), "its late answer wrote nothing");
    assert_eq!(seen["exit"], json!({"code": 0, "signal": null}));
}

/// Editor B: its command allowed and run once in its terminal, its running prompt ended
/// cancelled by the console's abort.
fn editor_b_saw(seen: &Value) {
    assert_eq!(
        seen["stopReasons"],
        json!(["end_turn", "cancelled"]),
        "{seen}"
    );
    let created = seen["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step.get("created").is_some())
        .count();
    assert_eq!(created, 1, "the allowed command ran once: {seen}");
    assert_eq!(seen["exit"], json!({"code": 0, "signal": null}));
}
