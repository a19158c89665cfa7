//! Who is in a run (issue 41, people in the run): a connection is in a run while it watches
//! it (`run/watch`) or since it acted on it, until it leaves, watches another run or closes;
//! the one that acted last drives it; each change is told to every client of the run's
//! project (`run/presence`, unnumbered, never replayed) and `getRun` says the current
//! presence. Across instances on PostgreSQL too (ignored without it; `tests/run.sh` runs it).

use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::{project_root, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};
use rummy::testing::ScratchDatabase;

/// `(person, client name, client kind, driving)` of each present connection, in order.
pub(crate) fn who(presence: &Value) -> Vec<(Value, String, String, bool)> {
    presence["present"]
        .as_array()
        .unwrap_or_else(|| panic!("no present in {presence}"))
        .iter()
        .map(|present| {
            (
                present["person"].clone(),
                present["client"]["name"].as_str().unwrap().to_owned(),
                present["client"]["kind"].as_str().unwrap().to_owned(),
                present["driving"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// A client bound to `project` at `root` that says it is `client`.
pub(crate) async fn client_as(
    app: &TestApp,
    project: &str,
    root: &std::path::Path,
    client: Value,
) -> Client {
    let mut connection = app.client().await;
    connection
        .ok(
            "init",
            json!({"name": project, "projectRoot": root, "client": client}),
        )
        .await;
    connection
}

/// Waits until `client` is told that `run`'s presence is `expected` (those before it are
/// dropped).
pub(crate) async fn told(
    client: &mut Client,
    run: &str,
    expected: &[(Value, String, String, bool)],
) {
    client
        .until_notified("run/presence", |params| {
            params["run"] == run && who(params) == expected
        })
        .await;
}

fn editor(person: Value, driving: bool) -> (Value, String, String, bool) {
    (person, "nvim".into(), "editor".into(), driving)
}

fn api(driving: bool) -> (Value, String, String, bool) {
    (Value::Null, "api".into(), "api".into(), driving)
}

#[actix_web::test]
async fn every_client_of_a_run_sees_who_watches_and_who_drives_it() {
    let llm = FakeLlm::start([Step::reply("<summarize>done</summarize>")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let root = app.project_root("team");
    let mut watcher = client_as(
        &app,
        "team",
        &root,
        json!({"name": "nvim", "kind": "editor"}),
    )
    .await;
    let mut driver = app.client().await;
    driver.init("team", &root).await;
    let run = driver.start_run("fake").await;

    let watching = watcher.ok("run/watch", json!({"run": run})).await;
    assert_eq!(watching["run"], json!(run));
    assert_eq!(who(&watching), vec![editor(Value::Null, false)]);
    // A client of the project that is in no run is told too.
    told(&mut driver, &run, &[editor(Value::Null, false)]).await;

    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    let both = vec![editor(Value::Null, false), api(true)];
    told(&mut watcher, &run, &both).await;
    let detail = driver.ok("getRun", json!({"run": run})).await;
    assert_eq!(who(&detail), both, "getRun says the presence: {detail}");
    assert!(detail["present"][0]["since"].as_i64().unwrap() > 0);

    watcher.ok("run/watch", json!({"run": run})).await;
    driver
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    assert_eq!(
        who(&driver.ok("getRun", json!({"run": run})).await),
        both,
        "watching again and acting again change nothing"
    );

    let left = watcher.ok("run/unwatch", json!({"run": run})).await;
    assert_eq!(left, json!({"run": run, "left": true}));
    told(&mut driver, &run, &[api(true)]).await;
    assert_eq!(
        watcher.ok("run/unwatch", json!({"run": run})).await["left"],
        json!(false)
    );

    drop(driver);
    // A closed connection leaves the run.
    told(&mut watcher, &run, &[]).await;
}

#[actix_web::test]
async fn watching_another_run_leaves_the_first_and_presence_is_never_replayed() {
    let app = TestApp::start().await;
    let (mut one, root) = app.client_in_project("pair").await;
    one.add_model("m").await;
    let (first, second) = (one.start_run("m").await, one.start_run("m").await);
    let mut other = app.client().await;
    other.init("pair", &root).await;

    other.ok("run/watch", json!({"run": first})).await;
    told(&mut one, &first, &[api(false)]).await;
    other.ok("run/watch", json!({"run": second})).await;
    let (mut emptied, mut entered) = (false, false);
    while !(emptied && entered) {
        let presence = one.notification("run/presence").await["params"].clone();
        emptied |= presence["run"] == json!(first) && who(&presence).is_empty();
        entered |= presence["run"] == json!(second) && who(&presence) == vec![api(false)];
    }
    assert!(
        who(&one.ok("getRun", json!({"run": first})).await).is_empty(),
        "a connection is in one run at a time"
    );

    let replayed = one
        .ok("run/replay", json!({"run": second, "since": 0}))
        .await;
    assert!(
        replayed["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .all(|notification| notification["method"] != "run/presence"),
        "{replayed}"
    );
}

#[actix_web::test]
async fn presence_refuses_unknown_runs_other_projects_runs_and_bad_clients() {
    let app = TestApp::start().await;
    let (mut here, _) = app.client_in_project("here").await;
    let (mut there, _) = app.client_in_project("there").await;
    there.add_model("m").await;
    let theirs = there.start_run("m").await;

    let (code, message) = here.err("run/watch", json!({"run": "nope"})).await;
    assert_eq!(code, -32002, "{message}");
    let (code, _) = here.err("run/watch", json!({"run": theirs})).await;
    assert_eq!(code, -32002, "another project's run is not found");
    let (code, _) = here.err("run/unwatch", json!({"run": theirs})).await;
    assert_eq!(code, -32002);
    let (code, _) = here.err("run/watch", json!({})).await;
    assert_eq!(code, -32602);
    assert!(
        who(&there.ok("getRun", json!({"run": theirs})).await).is_empty(),
        "a refusal enters no one"
    );

    let mut unbound = app.client().await;
    let (code, _) = unbound.err("run/watch", json!({"run": theirs})).await;
    assert_eq!(code, -32001, "run/watch needs init");

    let root = app.project_root("here");
    for client in [
        json!({"name": "x", "kind": "robot"}),
        json!({"name": "", "kind": "editor"}),
        json!({"name": "x".repeat(101)}),
        json!("nvim"),
    ] {
        let (code, message) = unbound
            .err(
                "init",
                json!({"name": "here", "projectRoot": root, "client": client}),
            )
            .await;
        assert_eq!(code, -32602, "{client}: {message}");
    }
}

/// Two instances on one PostgreSQL database, a client of each in one run: each sees the
/// other's client present, `inbox/changed` crosses for a loop's end and for a dismissal, and
/// the connections of an instance killed with `kill -9` leave the run once its heartbeat
/// row expires (the surviving instance's beat releases it and tells the run).
#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn presence_crosses_instances_and_a_killed_instance_s_connections_leave() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let doomed = ServerProcess::start_with(home.path(), &llm, &env).await;
    let survivor = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut there = doomed.client().await;
    there
        .ok(
            "init",
            json!({"name": "pair", "projectRoot": root, "client": {"name": "nvim", "kind": "editor"}}),
        )
        .await;
    let mut here = survivor.client().await;
    here.init("pair", &root).await;
    let run = here.start_run("fake").await;

    there.ok("run/watch", json!({"run": run})).await;
    told(&mut here, &run, &[editor(Value::Null, false)]).await;
    here.ok("run/watch", json!({"run": run})).await;
    let both = [editor(Value::Null, false), api(false)];
    told(&mut there, &run, &both).await;
    assert_eq!(who(&here.ok("getRun", json!({"run": run})).await), both);

    there.ok("inbox", json!({})).await;
    let mut aside = survivor.client().await;
    aside.init("pair", &root).await;
    let finished = aside
        .ok("ask", json!({"model": "fake", "prompt": "elsewhere"}))
        .await["run"]
        .as_str()
        .unwrap()
        .to_owned();
    there
        .until_notified("inbox/changed", |params| params["run"] == finished)
        .await;
    let page = there.ok("inbox", json!({})).await;
    let id = page["items"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(page["items"][0]["run"], json!(finished));
    aside.ok("inbox/dismiss", json!({"id": id})).await;
    there
        .until_notified("inbox/changed", |params| params["dismissed"] == id)
        .await;

    let exit = doomed.stop_with("-9");
    assert!(!exit.success());
    told(&mut here, &run, &[api(false)]).await;
    assert_eq!(
        who(&here.ok("getRun", json!({"run": run})).await),
        [api(false)],
        "a killed instance's connection is no longer present"
    );
}
