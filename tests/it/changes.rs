//! What a run changed (issue 42): `run/changes` combines the files each accepted proposal
//! changed, per loop and overall, and `run/revert` raises a proposal putting one back, which
//! applies (here on the server: `RUMMY_APPLY_EDITS=server`) only once accepted, is told to
//! every client, waits in the inbox of those who may resolve it though the run is idle, and
//! is refused to viewers and on a busy run.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::access::users;
use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Loop 1 edits app.js, writes new.txt and removes old.txt; loop 2 edits app.js again.
fn steps() -> Vec<Step> {
    vec![
        Step::reply("<set path=\"app.js\">s/3000/8080/</set><update>port</update>"),
        Step::reply("<set path=\"new.txt\">hello\n</set><update>new</update>"),
        Step::reply("<rm path=\"old.txt\"/><update>old</update>"),
        Step::reply("<summarize>done</summarize>"),
        Step::reply("<set path=\"app.js\">s/8080/9090/</set><update>port again</update>"),
        Step::reply("<summarize>done again</summarize>"),
    ]
}

/// bo and mo are members of `web`, vera a viewer.
async fn team(llm: &FakeLlm, dir: &Path) -> (TestApp, PathBuf) {
    let people = users(&[
        ("bo", "bo-token", "member", &["web"]),
        ("mo", "mo-token", "member", &["web"]),
        ("vera", "vera-token", "viewer", &["web"]),
    ]);
    let file = dir.join("users.toml");
    std::fs::write(&file, people).unwrap();
    let file_text = file.display().to_string();
    let app = TestApp::with_llm(
        llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", file_text.as_str()),
            ("RUMMY_APPLY_EDITS", "server"),
        ],
    )
    .await;
    let root = app.project_root("web");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    std::fs::write(root.join("old.txt"), "old\n").unwrap();
    (app, root)
}

async fn person(app: &TestApp, token: &str, root: &Path) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    client.init("web", root).await;
    client
}

/// Accepts `outcome`'s first proposal; the outcome after it.
async fn accept_next(client: &mut Client, run: &str, outcome: &Value) -> Value {
    assert_eq!(outcome["status"], json!(202), "{outcome}");
    let path = outcome["proposed"][0]["path"].clone();
    resolve(client, run, &path, "accept").await
}

async fn resolve(client: &mut Client, run: &str, path: &Value, action: &str) -> Value {
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": action}}),
        )
        .await
}

/// `(path, status, added, removed)` of each file of a `run/changes` answer.
fn listed(changes: &Value) -> Vec<(String, String, u64, u64)> {
    changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            (
                file["path"].as_str().unwrap().to_owned(),
                file["status"].as_str().unwrap().to_owned(),
                file["added"].as_u64().unwrap(),
                file["removed"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn row(path: &str, status: &str, added: u64, removed: u64) -> (String, String, u64, u64) {
    (path.to_owned(), status.to_owned(), added, removed)
}

/// Runs both loops, every proposal accepted by bo; the run's alias.
async fn both_loops(bo: &mut Client) -> String {
    let first = bo
        .ok("act", json!({"model": "fake", "prompt": "change things"}))
        .await;
    let run = first["run"].as_str().unwrap().to_owned();
    let second = accept_next(bo, &run, &first).await;
    let third = accept_next(bo, &run, &second).await;
    let done = accept_next(bo, &run, &third).await;
    assert_eq!(done["status"], json!(200), "{done}");
    let again = bo
        .ok(
            "act",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    let done = accept_next(bo, &run, &again).await;
    assert_eq!(done["status"], json!(200), "{done}");
    run
}

#[actix_web::test]
async fn a_runs_changes_are_combined_per_file_per_loop_and_overall() {
    let llm = FakeLlm::start(steps());
    let dir = tempfile::tempdir().unwrap();
    let (app, root) = team(&llm, dir.path()).await;
    let mut bo = person(&app, "bo-token", &root).await;
    let mut vera = person(&app, "vera-token", &root).await;
    let run = both_loops(&mut bo).await;
    let overall = vera.ok("run/changes", json!({"run": run})).await;
    assert_eq!(
        listed(&overall),
        [
            row("app.js", "modified", 1, 1),
            row("new.txt", "added", 1, 0),
            row("old.txt", "deleted", 0, 1),
        ],
        "{overall}"
    );
    // Each resolution's continuation is a loop of its own (getRun's loops): the act (1) made
    // the edit, its continuations (2, 3) the write and the removal, the second act (5) the
    // second edit.
    assert_eq!(overall["loops"], json!([1, 2, 3, 5]));
    let app_js = &overall["files"][0];
    let diff = app_js["diff"].as_str().unwrap();
    assert!(
        diff.contains("-const port = 3000;\n+const port = 9090;\n"),
        "one diff from before the first change to after the last: {diff}"
    );
    assert!(!diff.contains("8080"), "{diff}");
    assert_eq!(app_js["by"], json!(["bo", "bo"]));
    let second = vera.ok("run/changes", json!({"run": run, "loop": 5})).await;
    assert_eq!(listed(&second), [row("app.js", "modified", 1, 1)]);
    assert!(second["files"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("-const port = 8080;\n+const port = 9090;\n"));
    let first = vera.ok("run/changes", json!({"run": run, "loop": 1})).await;
    assert_eq!(listed(&first), [row("app.js", "modified", 1, 1)]);
    assert!(first["files"][0]["diff"]
        .as_str()
        .unwrap()
        .contains("-const port = 3000;\n+const port = 8080;\n"));
    let (code, _) = vera
        .err("run/changes", json!({"run": run, "loop": 7}))
        .await;
    assert_eq!(code, -32602);
}

#[actix_web::test]
async fn a_revert_is_a_proposal_told_to_every_client_that_applies_only_once_accepted() {
    let mut steps = steps();
    steps.push(Step::reply(
        "<set path=\"app.js\">s/3000/1/</set><update>x</update>",
    ));
    let llm = FakeLlm::start(steps);
    let dir = tempfile::tempdir().unwrap();
    let (app, root) = team(&llm, dir.path()).await;
    let mut bo = person(&app, "bo-token", &root).await;
    let mut mo = person(&app, "mo-token", &root).await;
    let mut vera = person(&app, "vera-token", &root).await;
    let run = both_loops(&mut bo).await;
    let app_js = || std::fs::read_to_string(root.join("app.js")).unwrap();
    assert_eq!(inbox(&mut mo).await, [], "mo asked for nothing");

    let (code, _) = vera
        .err("run/revert", json!({"run": run, "path": "app.js"}))
        .await;
    assert_eq!(code, -32005, "a viewer may not revert");
    let (code, _) = bo
        .err("run/revert", json!({"run": run, "path": "nothing.txt"}))
        .await;
    assert_eq!(code, -32602);

    let raised = bo
        .ok("run/revert", json!({"run": run, "path": "app.js"}))
        .await;
    let path = raised["path"].clone();
    assert_eq!(raised["type"], json!("set"));
    let told = mo
        .until_notified("run/proposal", |params| {
            params["proposed"][0]["path"] == path
        })
        .await;
    let attributes = &told["params"]["proposed"][0]["attributes"];
    let attributes: Value = match attributes.as_str() {
        Some(text) => serde_json::from_str(text).unwrap(),
        None => attributes.clone(),
    };
    assert!(
        attributes["patch"]
            .as_str()
            .unwrap()
            .contains("-const port = 9090;\n+const port = 3000;\n"),
        "{attributes}"
    );
    let acted = mo
        .until_notified("run/action", |params| params["action"] == "revert")
        .await;
    assert_eq!(acted["params"]["by"], json!("bo"));
    assert_eq!(acted["params"]["path"], path);
    assert_eq!(app_js(), "const port = 9090;\n", "nothing applied yet");
    assert_eq!(
        inbox(&mut mo).await,
        [(run.clone(), "approval".to_owned(), 200)],
        "the revert waits on the idle run for whoever may resolve it"
    );
    assert_eq!(
        inbox(&mut bo).await,
        [(run.clone(), "approval".to_owned(), 200)]
    );
    assert!(
        inbox(&mut vera)
            .await
            .iter()
            .all(|(_, why, _)| why != "approval"),
        "a viewer resolves nothing"
    );
    let (code, _) = bo
        .err("run/revert", json!({"run": run, "path": "app.js"}))
        .await;
    assert_eq!(code, -32004, "already waiting");

    let rejected = resolve(&mut mo, &run, &path, "reject").await;
    assert_eq!(rejected["status"], json!(200), "{rejected}");
    assert_eq!(inbox(&mut mo).await, [], "resolved, it leaves the inbox");
    assert_eq!(
        app_js(),
        "const port = 9090;\n",
        "a rejection leaves the file"
    );

    let raised = bo
        .ok("run/revert", json!({"run": run, "path": "app.js"}))
        .await;
    let accepted = resolve(&mut mo, &run, &raised["path"], "accept").await;
    assert_eq!(accepted["status"], json!(200), "{accepted}");
    assert_eq!(
        app_js(),
        "const port = 3000;\n",
        "accepted: the file is back"
    );
    let removal = bo
        .ok(
            "run/revert",
            json!({"run": run, "path": "new.txt", "loop": 2}),
        )
        .await;
    assert_eq!(removal["type"], json!("rm"));
    resolve(&mut mo, &run, &removal["path"], "accept").await;
    assert!(
        !root.join("new.txt").exists(),
        "a file the run added is removed"
    );
    let restored = bo
        .ok("run/revert", json!({"run": run, "path": "old.txt"}))
        .await;
    resolve(&mut mo, &run, &restored["path"], "accept").await;
    assert_eq!(
        std::fs::read_to_string(root.join("old.txt")).unwrap(),
        "old\n"
    );
    let after = vera.ok("run/changes", json!({"run": run})).await;
    assert_eq!(listed(&after), [], "all put back: {after}");

    let run_state = bo.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        run_state["status"],
        json!(200),
        "a revert leaves the run as it was"
    );
    let waiting = bo
        .ok(
            "act",
            json!({"model": "fake", "prompt": "more", "run": run}),
        )
        .await;
    assert_eq!(waiting["status"], json!(202), "{waiting}");
    let (code, message) = bo
        .err(
            "run/revert",
            json!({"run": run, "path": "app.js", "loop": 5}),
        )
        .await;
    assert_eq!(code, -32004, "{message}");
    assert!(message.contains("busy"), "{message}");
}

/// `(run, why, status)` of each item of `client`'s inbox.
async fn inbox(client: &mut Client) -> Vec<(String, String, i64)> {
    let page = client.ok("inbox", json!({})).await;
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {page}"))
        .iter()
        .map(|item| {
            (
                item["run"].as_str().unwrap().to_owned(),
                item["why"].as_str().unwrap().to_owned(),
                item["status"].as_i64().unwrap(),
            )
        })
        .collect()
}
