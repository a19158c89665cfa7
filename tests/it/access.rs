//! People, roles and projects: every method tried by someone who may not call it changes
//! nothing; projects keep their roots; a reload of the users file applies to connections
//! already open; runs, loops, resolutions and aborts say who did them.

use std::path::{Path, PathBuf};

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::fairness::{abort, held_ask};
use crate::support::{eventually, Client, TestApp};

const SHARED: &str = "shared-token";
const VERA: &str = "vera-token";
const MO: &str = "mo-token";
const ADA: &str = "ada-token";
const OLGA: &str = "olga-token";

/// A users file: `(name, token, role, projects)`.
pub(crate) fn users(people: &[(&str, &str, &str, &[&str])]) -> String {
    people
        .iter()
        .map(|(name, token, role, projects)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = {}\n",
                hash_token(token),
                json!(projects)
            )
        })
        .collect()
}

/// The team of these tests: vera views `web*`, mo works on `web`, ada administers
/// everything, olga works on `ops`.
fn team() -> String {
    users(&[
        ("vera", VERA, "viewer", &["web*"]),
        ("mo", MO, "member", &["web"]),
        ("ada", ADA, "admin", &["*"]),
        ("olga", OLGA, "member", &["ops"]),
    ])
}

/// A server with the shared token and the users file `people` (kept in `dir`).
async fn server(llm: &FakeLlm, dir: &Path, people: &str) -> (TestApp, PathBuf) {
    server_with(llm, dir, people, &[]).await
}

/// [`server`] with more environment variables.
async fn server_with(
    llm: &FakeLlm,
    dir: &Path,
    people: &str,
    extra: &[(&str, &str)],
) -> (TestApp, PathBuf) {
    let file = dir.join("users.toml");
    std::fs::write(&file, people).unwrap();
    let file_text = file.display().to_string();
    let mut env = vec![
        ("RUMMY_AUTH_TOKEN", SHARED),
        ("RUMMY_USERS_FILE", file_text.as_str()),
    ];
    env.extend_from_slice(extra);
    let app = TestApp::with_llm(llm, &env).await;
    (app, file)
}

async fn connect(app: &TestApp, token: &str) -> Client {
    Client::connect(&format!("ws://{}/?token={token}", app.addr())).await
}

/// Everything a client can read of project `web` and the catalogue: what a refused call
/// must leave as it was.
async fn snapshot(app: &TestApp, reader: &mut Client, run: &str, project: i64) -> Value {
    json!({
        "models": reader.ok("getModels", json!({})).await,
        "runs": reader.ok("getRuns", json!({})).await,
        "run": reader.ok("getRun", json!({"run": run})).await,
        "entries": reader.ok("getEntries", json!({"run": run})).await,
        "skills": reader.ok("getSkills", json!({"run": run})).await,
        "constraints": format!("{:?}", app.constraints(project).await),
    })
}

/// Params a member would send to `method` on `run` (so that only the role stops it).
fn params_for(method: &str, run: &str, root: &Path) -> Value {
    match method {
        "init" => json!({"name": "web", "projectRoot": root}),
        "addModel" => json!({"alias": "rogue", "actual": "openai/rogue"}),
        "removeModel" => json!({"alias": "fake"}),
        "get" => json!({"run": run, "path": "known://*", "persist": true}),
        "store" => json!({"run": run, "path": "known://fact", "persist": true, "ignore": true}),
        "startRun" => json!({"model": "fake"}),
        "ask" | "act" => json!({"model": "fake", "prompt": "go", "run": run}),
        "run/resolve" => {
            json!({"run": run, "resolution": {"path": "sh://npm%20test", "action": "accept"}})
        }
        "run/abort" => json!({"run": run}),
        "run/rename" => json!({"run": run, "name": "taken_over"}),
        "run/inject" => json!({"run": run, "message": "do something else"}),
        "run/config" => json!({"run": run, "temperature": 1.5, "persona": "a pirate"}),
        "skill/add" | "skill/remove" => json!({"run": run, "name": "style"}),
        "persona/set" => json!({"run": run, "text": "a pirate"}),
        "mv" | "cp" => json!({"run": run, "path": "known://fact", "to": "known://moved"}),
        _ => json!({"run": run, "path": "known://fact", "body": "overwritten"}),
    }
}

#[actix_web::test]
async fn every_method_refuses_whoever_may_not_call_it_and_changes_nothing() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    app.write_document("skills", "style", "Write short lines.");
    let root = app.project_root("web");
    let mut ada = connect(&app, ADA).await;
    let project = ada.init("web", &root).await;
    let run = ada.start_run("fake").await;
    ada.ok(
        "known",
        json!({"run": run, "path": "known://fact", "body": "the sky is blue"}),
    )
    .await;
    ada.ok("skill/add", json!({"run": run, "name": "style"}))
        .await;
    ada.ok(
        "sh",
        json!({"run": run, "path": "npm test", "attributes": {"command": "npm test"}}),
    )
    .await;
    let before = snapshot(&app, &mut ada, &run, project).await;

    let mut vera = connect(&app, VERA).await;
    let catalogue = vera.ok("discover", json!({})).await;
    let methods = catalogue["methods"].as_object().unwrap();
    vera.init("web", &root).await;
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let mut refused = Vec::new();
    for (method, spec) in methods {
        let needed = spec["role"].as_str().unwrap();
        let params = params_for(method, &run, &root);
        let callers: &mut [(&str, &str, &mut Client)] =
            &mut [("vera", "viewer", &mut vera), ("mo", "member", &mut mo)];
        for (name, role, client) in callers.iter_mut() {
            let allowed = match needed {
                "viewer" => true,
                "member" => *role != "viewer",
                "admin" => false,
                other => panic!("{method} has role {other}"),
            };
            if allowed {
                continue;
            }
            let (code, message) = client.err(method, params.clone()).await;
            assert_eq!(code, -32005, "{name} calling {method}: {message}");
            assert_eq!(
                message,
                format!("{name} is a {role}; '{method}' needs the {needed} role.")
            );
            refused.push(format!("{name}:{method}"));
        }
    }
    for expected in ["vera:ask", "vera:run/resolve", "vera:set", "mo:addModel"] {
        assert!(refused.contains(&expected.to_string()), "{refused:?}");
    }
    assert!(
        refused.len() >= 20,
        "every method above viewer, twice for admin ones: {refused:?}"
    );
    assert_eq!(snapshot(&app, &mut ada, &run, project).await, before);

    let runs = vera.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["run"], json!(run), "a viewer reads the runs");
    let entries = vera
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    assert_eq!(entries[0]["path"], json!("known://fact"));
    let models = mo
        .err(
            "addModel",
            json!({"alias": "fake", "actual": "openai/other"}),
        )
        .await;
    assert_eq!(models.0, -32005, "only admins change the catalogue");
    ada.ok(
        "addModel",
        json!({"alias": "extra", "actual": "openai/extra"}),
    )
    .await;
}

#[actix_web::test]
async fn a_project_keeps_its_root_and_only_members_create_projects() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    let project = mo.init("web", &root).await;
    let run = mo.start_run("fake").await;
    let elsewhere = app.project_root("elsewhere");
    for token in [MO, ADA, SHARED] {
        let mut client = connect(&app, token).await;
        let (code, message) = client
            .err("init", json!({"name": "web", "projectRoot": elsewhere}))
            .await;
        assert_eq!(code, -32005, "{message}");
        assert!(
            message.contains("already exists with another root"),
            "{message}"
        );
        let (code, _) = client.err("getRuns", json!({})).await;
        assert_eq!(code, -32001, "nothing was bound");
    }
    let mut again = connect(&app, SHARED).await;
    assert_eq!(
        again.init("web", &root).await,
        project,
        "the same root opens it"
    );
    assert_eq!(again.ok("getRuns", json!({})).await[0]["run"], json!(run));

    let mut vera = connect(&app, VERA).await;
    let (code, message) = vera
        .err(
            "init",
            json!({"name": "web2", "projectRoot": app.project_root("web2")}),
        )
        .await;
    assert_eq!(code, -32005);
    assert_eq!(
        message,
        "Project 'web2' does not exist, and vera, a viewer, may not create it."
    );
    let mut ada = connect(&app, ADA).await;
    ada.init("web2", &app.project_root("web2")).await;
    vera.init("web2", &app.project_root("web2")).await;
}

#[actix_web::test]
async fn a_person_reaches_only_their_projects() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let run = mo.start_run("fake").await;

    let mut olga = connect(&app, OLGA).await;
    let (code, message) = olga
        .err("init", json!({"name": "web", "projectRoot": root}))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (-32005, "olga may not open project 'web'.")
    );
    for method in ["getRuns", "getRun", "ask", "run/abort", "getEntries"] {
        let (code, _) = olga.err(method, json!({"run": run})).await;
        assert_eq!(code, -32001, "{method}: olga has no project bound");
    }
    olga.init("ops", &app.project_root("ops")).await;
    for method in ["getRun", "run/abort", "run/rename"] {
        let (code, message) = olga.err(method, json!({"run": run, "name": "mine"})).await;
        assert_eq!(code, -32002, "{method}: {message}");
    }
    let detail = mo.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["run"], json!(run), "the run kept its name");
    assert_eq!(detail["status"], json!(100), "and was not aborted");

    let unknown = awc::Client::new()
        .ws(format!("ws://{}/?token=nobody", app.addr()))
        .connect()
        .await;
    assert!(unknown.is_err(), "an unknown token opens nothing");
}

/// Calls `method` until it fails with `message`, for as long as the users file watch may
/// take to see a change.
async fn until_refused(client: &mut Client, method: &str, message: &str) {
    let reply = eventually(&format!("{method} to fail with {message:?}"), async || {
        let reply = client.call(method, json!({})).await;
        (reply["error"]["message"] == json!(message)).then_some(reply)
    })
    .await;
    assert_eq!(reply["error"]["code"], json!(-32005));
}

#[actix_web::test]
async fn a_changed_users_file_applies_to_open_connections() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, file) = server(&llm, dir.path(), &team()).await;
    let mut mo = connect(&app, MO).await;
    mo.init("web", &app.project_root("web")).await;
    mo.ok("getRuns", json!({})).await;

    std::fs::write(&file, users(&[("mo", MO, "member", &["ops"])])).unwrap();
    until_refused(&mut mo, "getRuns", "mo may not open project 'web'.").await;

    std::fs::write(&file, "this is not toml [").unwrap();
    std::fs::write(&file, users(&[("mo", MO, "viewer", &["web"])])).unwrap();
    until_refused(
        &mut mo,
        "startRun",
        "mo is a viewer; 'startRun' needs the member role.",
    )
    .await;
    mo.ok("getRuns", json!({})).await;

    std::fs::write(&file, users(&[("ada", ADA, "admin", &["*"])])).unwrap();
    until_refused(&mut mo, "ping", "mo is no longer a user of this server.").await;
    let gone = awc::Client::new()
        .ws(format!("ws://{}/?token={MO}", app.addr()))
        .connect()
        .await;
    assert!(gone.is_err(), "a removed person cannot connect");
}

#[actix_web::test]
async fn runs_loops_resolutions_and_aborts_say_who_did_them() {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo hello</sh><update>running it</update>"),
        Step::reply("<summarize>it printed hello</summarize>"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    let (run, path) = mo.act_until_proposal("Run: echo hello").await;
    let state = mo.notification("run/state").await;
    assert_eq!(state["params"]["requested_by"], json!("mo"));
    let resumed = ada
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "hello\n"}}),
        )
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    let state = ada
        .until_notified("run/state", |state| state["turn"] == json!(2))
        .await;
    assert_eq!(state["params"]["requested_by"], json!("ada"));
    mo.ok("run/abort", json!({"run": run})).await;
    let detail = ada.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["created_by"], json!("mo"));
    let loops: Vec<(Value, Value, Value)> = detail["loops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lp| {
            (
                lp["sequence"].clone(),
                lp["mode"].clone(),
                lp["requested_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        loops,
        [
            (json!(1), json!("act"), json!("mo")),
            (json!(2), json!("act"), json!("ada"))
        ]
    );
    let actions: Vec<(Value, Value, Value, Value)> = detail["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|action| {
            (
                action["action"].clone(),
                action["person"].clone(),
                action["path"].clone(),
                action["loop"].clone(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            (json!("accept"), json!("ada"), json!(path), json!(1)),
            (json!("abort"), json!("mo"), Value::Null, Value::Null),
        ]
    );

    let mut operator = connect(&app, SHARED).await;
    operator.init("web", &root).await;
    let anonymous = operator.start_run("fake").await;
    let detail = operator.ok("getRun", json!({"run": anonymous})).await;
    assert_eq!(
        detail["created_by"],
        Value::Null,
        "the shared token is nobody"
    );
    let forked = mo
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run, "fork": true}),
        )
        .await;
    let fork = forked["run"].as_str().unwrap();
    let detail = mo.ok("getRun", json!({"run": fork})).await;
    assert_eq!(detail["created_by"], json!("mo"), "a fork is its forker's");
}

/// `(path, by)` of each prompt entry of `run`, as `getRun`'s history has them.
async fn prompts_by(client: &mut Client, run: &str) -> Vec<(String, Value)> {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["scheme"] == "prompt")
        .map(|entry| {
            (
                entry["path"].as_str().unwrap().to_owned(),
                entry["attributes"]["by"].clone(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn every_prompt_and_injected_message_says_who_wrote_it() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>one</summarize>"),
        Step::reply("<summarize>two</summarize>"),
        Step::Hang,
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    let mut operator = connect(&app, SHARED).await;
    operator.init("web", &root).await;

    let run = mo
        .ok("ask", json!({"model": "fake", "prompt": "first"}))
        .await["run"]
        .as_str()
        .unwrap()
        .to_owned();
    ada.ok("run/inject", json!({"run": run, "message": "and then"}))
        .await;
    assert_eq!(
        prompts_by(&mut ada, &run).await,
        [
            ("prompt://1".to_owned(), json!("mo")),
            ("prompt://2".to_owned(), json!("ada"))
        ],
        "a prompt, and a message that ran a loop of its own, say who wrote them"
    );

    operator
        .send("ask", json!({"model": "fake", "prompt": "hanging"}))
        .await;
    let progress = operator
        .until_notified("run/progress", |params| params["run"] != run)
        .await;
    let hanging = progress["params"]["run"].as_str().unwrap().to_owned();
    llm.wait_for_requests(3).await;
    mo.ok(
        "run/inject",
        json!({"run": hanging, "message": "meanwhile"}),
    )
    .await;
    operator.ok("run/abort", json!({"run": hanging})).await;
    let prompts = prompts_by(&mut mo, &hanging).await;
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert_eq!(
        prompts[0].1,
        Value::Null,
        "the operator is nobody in particular"
    );
    assert_eq!(
        prompts[1].1,
        json!("mo"),
        "a message joining the running loop"
    );
}

#[actix_web::test]
async fn metrics_are_for_admins() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let url = format!("http://{}/metrics", app.addr());
    let http = awc::Client::new();
    for (token, status) in [
        (SHARED, 200),
        (ADA, 200),
        (MO, 403),
        (VERA, 403),
        ("x", 401),
    ] {
        let answer = http
            .get(url.as_str())
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), status, "{token}");
    }
}

/// `(method, person, params, result, error)` of every `rpc_log` row, once `count` are written.
async fn audit_rows(app: &TestApp, count: usize) -> Vec<[Option<String>; 5]> {
    let rows = eventually(&format!("{count} audit rows"), async || {
        let rows = crate::audit::committed(app).await;
        (rows.len() >= count).then_some(rows)
    })
    .await;
    rows.into_iter()
        .map(|row| {
            [
                Some(row.method),
                row.person,
                row.params,
                row.result,
                row.error,
            ]
        })
        .collect()
}

#[actix_web::test]
async fn the_audit_log_names_the_person_and_never_a_token() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server(&llm, dir.path(), &team()).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    mo.start_run("fake").await;
    let mut vera = connect(&app, VERA).await;
    vera.init("web", &root).await;
    vera.err("startRun", json!({"model": "fake"})).await;
    let mut operator = connect(&app, SHARED).await;
    operator.ok("ping", json!({})).await;
    let rows = audit_rows(&app, 5).await;
    let who: Vec<(Option<&str>, Option<&str>)> = rows
        .iter()
        .map(|row| (row[0].as_deref(), row[1].as_deref()))
        .collect();
    assert_eq!(
        who,
        [
            (Some("init"), Some("mo")),
            (Some("startRun"), Some("mo")),
            (Some("init"), Some("vera")),
            (Some("startRun"), Some("vera")),
            (Some("ping"), None),
        ]
    );
    assert_eq!(
        rows[3][4].as_deref(),
        Some("vera is a viewer; 'startRun' needs the member role.")
    );
    for row in &rows {
        for text in row.iter().flatten() {
            for token in [SHARED, VERA, MO, ADA, OLGA] {
                assert!(!text.contains(token), "{token} in {text}");
            }
        }
    }
}

#[actix_web::test]
async fn a_persons_loop_bound_counts_all_their_connections() {
    let llm = FakeLlm::start([Step::Hang, Step::reply("<summarize>ada's</summarize>")]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server_with(
        &llm,
        dir.path(),
        &team(),
        &[
            ("RUMMY_MAX_ACTIVE_LOOPS_PER_PERSON", "1"),
            ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
        ],
    )
    .await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let mut mo_elsewhere = connect(&app, MO).await;
    mo_elsewhere.init("web", &root).await;
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    let (held, run) = held_ask(&mut mo, &mut ada, &llm, "one", 1, &mut Vec::new()).await;
    let (code, message) = mo_elsewhere
        .err("ask", json!({"model": "fake", "prompt": "two"}))
        .await;
    assert_eq!(code, -32006);
    assert_eq!(
        message,
        "person mo already has 1 loop running or queued; try again later."
    );
    let theirs = ada
        .ok("ask", json!({"model": "fake", "prompt": "ada's"}))
        .await;
    assert_eq!(
        theirs["status"],
        json!(200),
        "another person is not held back"
    );
    abort(&mut mo, &run, &held).await;
}

#[actix_web::test]
async fn a_persons_in_flight_bound_counts_all_their_connections() {
    let llm = FakeLlm::start([Step::Hang]);
    let dir = tempfile::tempdir().unwrap();
    let (app, _) = server_with(
        &llm,
        dir.path(),
        &team(),
        &[("RUMMY_MAX_IN_FLIGHT_PER_PERSON", "1")],
    )
    .await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let mut mo_elsewhere = connect(&app, MO).await;
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    let (held, run) = held_ask(&mut mo, &mut ada, &llm, "one", 1, &mut Vec::new()).await;
    let (code, _) = mo_elsewhere.err("ping", json!({})).await;
    assert_eq!(code, -32006, "mo's other connection shares mo's bound");
    ada.ok("ping", json!({})).await;
    ada.ok("run/abort", json!({"run": run})).await;
    let reply = mo.reply(&held).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    mo_elsewhere.ok("ping", json!({})).await;
}

#[actix_web::test]
async fn only_admins_choose_where_a_projects_commands_run() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let launcher = [(
        "RUMMY_SANDBOX_LAUNCHER",
        env!("CARGO_BIN_EXE_rummy-sandbox"),
    )];
    let (app, _) = server_with(&llm, dir.path(), &team(), &launcher).await;
    let root = app.project_root("web");
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    for token in [VERA, MO] {
        let mut person = connect(&app, token).await;
        person.init("web", &root).await;
        let read = person.ok("project/config", json!({})).await;
        assert_eq!(read["effective"]["commands"], json!("client"));
        let (code, message) = person
            .err("project/config", json!({"commands": "server"}))
            .await;
        assert_eq!(code, -32005, "{message}");
    }
    let set = ada
        .ok("project/config", json!({"commands": "server"}))
        .await;
    assert_eq!(set["effective"]["commands"], json!("server"));
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    assert_eq!(
        mo.ok("project/config", json!({})).await["effective"]["commands"],
        json!("server"),
        "what the admin chose holds for everyone"
    );
}
