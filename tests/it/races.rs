//! The run's verbs racing from several clients (issue 41): abort, resolve and inject sent
//! by different connections at once. Whoever comes first wins, every other client gets a
//! clear answer (`-32602` naming what happened to the proposal, who did it, and `data`),
//! and an aborted run never revives. Each race is run in both orders, held deterministically
//! by the scripted model (a request held until the test lets it go) or by the command (a
//! server-side command that waits for the test's file), on the test's store;
//! `instances.rs` runs the ones that cross instances on PostgreSQL.

mod cancel;
mod cancel_instances;
mod queue;

use std::path::Path;

use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::{project_root, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use rummy::testing::ScratchDatabase;

pub(super) const PROPOSING: &str = "<sh>make deploy</sh><update>deploying</update>";

/// Two clients of one project, `driver` having run `act` to a 202: the run and its
/// proposal's path.
async fn proposal(app: &TestApp) -> (Client, Client, String, String) {
    let (mut driver, root) = app.client_in_project("races").await;
    let mut other = app.client().await;
    other.init("races", &root).await;
    let (run, path) = driver.act_until_proposal("deploy").await;
    (driver, other, run, path)
}

pub(super) fn resolution(run: &str, path: &str, action: &str) -> Value {
    json!({"run": run, "resolution": {"path": path, "action": action}})
}

/// The error of a call that must fail: its code, message and data.
pub(super) async fn refused(
    client: &mut Client,
    method: &str,
    params: Value,
) -> (i64, String, Value) {
    let reply = client.call(method, params).await;
    let error = reply
        .get("error")
        .unwrap_or_else(|| panic!("{method} should fail: {reply}"))
        .clone();
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_string(),
        error["data"].clone(),
    )
}

pub(super) async fn run_status(client: &mut Client, run: &str) -> Value {
    client.ok("getRun", json!({"run": run})).await["status"].clone()
}

#[actix_web::test]
async fn a_rejection_after_an_abort_is_told_the_run_was_aborted_and_the_run_stays_aborted() {
    let llm = FakeLlm::start([Step::reply(PROPOSING)]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, mut other, run, path) = proposal(&app).await;
    other.ok("run/abort", json!({"run": run})).await;
    let (code, message, data) = refused(
        &mut driver,
        "run/resolve",
        resolution(&run, &path, "reject"),
    )
    .await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!("{path} of run '{run}' is no longer pending: the run was aborted")
    );
    assert_eq!(
        data,
        json!({"run": run, "path": path, "status": 499, "action": "abort", "by": null})
    );
    assert_eq!(run_status(&mut driver, &run).await, json!(499));
    assert_eq!(
        driver.statuses(&run, "sh://**").await,
        vec![(path.clone(), 499)],
        "an abort withdraws the proposal"
    );
}

#[actix_web::test]
async fn an_acceptance_after_an_abort_never_revives_the_run() {
    let llm = FakeLlm::start([
        Step::reply(PROPOSING),
        Step::reply("<summarize>deployed</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, mut other, run, path) = proposal(&app).await;
    other.ok("run/abort", json!({"run": run})).await;
    let (code, message, _) = refused(
        &mut driver,
        "run/resolve",
        resolution(&run, &path, "accept"),
    )
    .await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("the run was aborted"), "{message}");
    assert_eq!(llm.requests().len(), 1, "no model call after the abort");
    assert_eq!(run_status(&mut driver, &run).await, json!(499));
    let blocked = driver
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "go on", "run": run}),
        )
        .await;
    assert_eq!(
        blocked["status"],
        json!(200),
        "a new prompt continues an aborted run, no proposal blocking it: {blocked}"
    );
}

#[actix_web::test]
async fn an_abort_after_an_acceptance_stops_the_resumed_loop() {
    let llm = FakeLlm::start([Step::reply(PROPOSING), Step::Hang]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, mut other, run, path) = proposal(&app).await;
    let accepting = driver
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    llm.wait_for_requests(2).await;
    other.ok("run/abort", json!({"run": run})).await;
    let reply = driver.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    assert_eq!(reply["result"]["reason"], json!("aborted"));
    llm.wait_for_dropped(1).await;
    assert_eq!(
        driver.statuses(&run, "sh://**").await,
        vec![(path.clone(), 200)],
        "the acceptance came first and stands"
    );
    let (code, message, data) =
        refused(&mut other, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!("{path} of run '{run}' is no longer pending: it was accepted")
    );
    assert_eq!(data["action"], json!("accept"));
    assert_eq!(data["status"], json!(200));
}

#[actix_web::test]
async fn two_resolutions_of_one_proposal_the_first_wins_and_the_second_is_told_by_whom() {
    let llm = FakeLlm::start([
        Step::reply(PROPOSING),
        Step::held("<summarize>deployed</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, mut other, run, path) = proposal(&app).await;
    let accepting = driver
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    llm.wait_for_requests(2).await;
    let (code, message, data) =
        refused(&mut other, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!("{path} of run '{run}' is no longer pending: it was accepted")
    );
    assert_eq!(
        data,
        json!({"run": run, "path": path, "status": 200, "action": "accept", "by": null})
    );
    llm.release();
    let reply = driver.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    assert_eq!(llm.requests().len(), 2, "the rejection changed nothing");
}

/// A server whose users file has ann and bo, members of every project, and a client of each
/// bound to project `team`.
async fn team(llm: &FakeLlm) -> (TestApp, Client, Client) {
    let (app, mut clients) = people(llm, &[("ann", "member"), ("bo", "member")]).await;
    let bo = clients.pop().unwrap();
    let ann = clients.pop().unwrap();
    (app, ann, bo)
}

/// A server whose users file has these people (name, role), each with access to every
/// project, and a client of each, in that order, bound to project `team` (the token of each
/// is `<name>-token`).
pub(super) async fn people(llm: &FakeLlm, who: &[(&str, &str)]) -> (TestApp, Vec<Client>) {
    let home = tempfile::tempdir().unwrap();
    let people: String = who
        .iter()
        .map(|(name, role)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = [\"*\"]\n",
                rummy::hash_token(&format!("{name}-token"))
            )
        })
        .collect();
    let file = home.path().join("users.toml");
    std::fs::write(&file, people).unwrap();
    let file = file.display().to_string();
    let mut env = crate::support::llm_env(llm);
    env.extend_from_slice(&[("RUMMY_AUTH_TOKEN", "shared"), ("RUMMY_USERS_FILE", &file)]);
    let app = TestApp::start_in(home, &env, |plugins| plugins).await;
    let root = app.project_root("team");
    let mut clients = Vec::new();
    for (name, _) in who {
        let mut client = Client::connect(&format!("ws://{}/?token={name}-token", app.addr())).await;
        client.init("team", &root).await;
        clients.push(client);
    }
    (app, clients)
}

/// The next `run/action` or `run/outcome` `client` is told of, its params without `seq`.
async fn told(client: &mut Client) -> Value {
    loop {
        let notification = client.next_notification().await;
        let method = notification["method"].as_str().unwrap().to_string();
        if method == "run/action" || method == "run/outcome" {
            let mut params = notification["params"].clone();
            params.as_object_mut().unwrap().remove("seq");
            return json!({method: params});
        }
    }
}

#[actix_web::test]
async fn every_client_is_told_what_each_person_did_to_a_run_and_how_its_loops_ended() {
    let llm = FakeLlm::start([
        Step::reply(PROPOSING),
        Step::reply("<summarize>deployed</summarize>"),
        Step::reply("<sh>make docs</sh><update>documenting</update>"),
        Step::reply("<summarize>asked again</summarize>"),
    ]);
    let (_app, mut ann, mut bo) = team(&llm).await;
    let (run, path) = ann.act_until_proposal("deploy").await;
    let deploy = json!({"run/outcome": {"run": run, "status": 202, "proposed": [
        {"path": path, "type": "sh", "body": "make deploy", "attributes": {"command": "make deploy"}}
    ]}});
    assert_eq!(told(&mut bo).await, deploy);
    let resumed = bo
        .ok("run/resolve", resolution(&run, &path, "accept"))
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    assert_eq!(
        told(&mut ann).await,
        deploy,
        "ann's own loop's end, told to her too"
    );
    assert_eq!(
        told(&mut ann).await,
        json!({"run/action": {"run": run, "action": "accept", "by": "bo", "path": path, "status": 200}})
    );
    assert_eq!(
        told(&mut ann).await,
        json!({"run/outcome": {"run": run, "status": 200, "reason": "done"}})
    );
    let injected = ann
        .ok("run/inject", json!({"run": run, "message": "and the docs"}))
        .await;
    assert_eq!(injected["status"], json!(202), "{injected}");
    let docs = injected["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let documenting = json!({"run/outcome": {"run": run, "status": 202, "proposed": [
        {"path": docs, "type": "sh", "body": "make docs", "attributes": {"command": "make docs"}}
    ]}});
    for expected in [
        json!({"run/action": {"run": run, "action": "accept", "by": "bo", "path": path, "status": 200}}),
        json!({"run/outcome": {"run": run, "status": 200, "reason": "done"}}),
        json!({"run/action": {"run": run, "action": "inject", "by": "ann", "message": "and the docs"}}),
        documenting.clone(),
    ] {
        assert_eq!(told(&mut bo).await, expected);
    }
    bo.ok("run/abort", json!({"run": run})).await;
    assert_eq!(
        told(&mut ann).await,
        json!({"run/action": {"run": run, "action": "inject", "by": "ann", "message": "and the docs"}})
    );
    assert_eq!(told(&mut ann).await, documenting);
    assert_eq!(
        told(&mut ann).await,
        json!({"run/action": {"run": run, "action": "abort", "by": "bo", "withdrawn": [docs]}})
    );
    let again = bo
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "once more", "run": run}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    assert_eq!(
        told(&mut ann).await,
        json!({"run/action": {"run": run, "action": "prompt", "by": "bo", "message": "once more"}})
    );
    assert_eq!(
        told(&mut ann).await,
        json!({"run/outcome": {"run": run, "status": 200, "reason": "done"}})
    );
}

/// A server whose projects run their commands on it (`server_commands.rs`'s limits).
pub(super) async fn commands_server(llm: &FakeLlm) -> TestApp {
    let env = [
        ("RUMMY_RUN_COMMANDS", "server"),
        (
            "RUMMY_SANDBOX_LAUNCHER",
            env!("CARGO_BIN_EXE_rummy-sandbox"),
        ),
        ("RUMMY_SANDBOX_MAX_WALL_SECS", "60"),
    ];
    TestApp::with_llm(llm, &env).await
}

/// A command that says it started, waits until the test makes the file `go`, then appends
/// a line to `ran.txt`: each run of it is one line.
pub(super) const WAITING_COMMAND: &str =
    "echo waiting; while [ ! -e go ]; do sleep 0.02; done; echo ran >> ran.txt";

pub(super) fn runs_of_the_command(root: &Path) -> usize {
    std::fs::read_to_string(root.join("ran.txt"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[actix_web::test]
async fn a_second_resolution_while_a_server_command_runs_or_before_it_is_recorded_never_runs_it_again(
) {
    let llm = FakeLlm::start([
        Step::reply(format!(
            "<sh>{WAITING_COMMAND}</sh><update>running</update>"
        )),
        Step::reply("<summarize>ran once</summarize>"),
    ]);
    let app = commands_server(&llm).await;
    let (mut driver, root) = app.client_in_project("commands").await;
    let mut other = app.client().await;
    other.init("commands", &root).await;
    let (run, path) = driver.act_until_proposal("run it").await;
    let accepting = driver
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    driver
        .until_notified("run/output", |params| params["text"] == json!("waiting\n"))
        .await;
    let (code, message, data) =
        refused(&mut other, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!(
            "{path} of run '{run}' is being resolved: it was accepted and is being carried out"
        )
    );
    assert_eq!(data["status"], json!(202));
    assert_eq!(data["action"], json!("accept"));
    // The command ends while the store's writer is held, so that its resolution cannot be
    // recorded yet: a second acceptance then must still not run it.
    let (hold, held) = std::sync::mpsc::channel::<()>();
    let (entered, holding) = tokio::sync::oneshot::channel::<()>();
    let writer = actix_web::rt::spawn(app.server.on_database_thread(move |_| {
        let _ = entered.send(());
        held.recv()
    }));
    holding.await.unwrap();
    std::fs::write(root.join("go"), "").unwrap();
    driver
        .until_notified("run/output", |params| params["done"] == json!(true))
        .await;
    let (code, message, _) =
        refused(&mut other, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("is being resolved"), "{message}");
    hold.send(()).unwrap();
    writer.await.unwrap().unwrap().unwrap();
    let reply = driver.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    let (code, message, data) =
        refused(&mut other, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("it was accepted"), "{message}");
    assert_eq!(data["status"], json!(200));
    assert_eq!(runs_of_the_command(&root), 1, "the command ran once");
    assert_eq!(llm.requests().len(), 2);
}

/// Two instances on one PostgreSQL database (`instances.rs`'s way), each with its own
/// scripted model, and a client of each bound to project `races` in one home.
pub(super) struct TwoInstances {
    pub(super) a: Client,
    pub(super) b: Client,
    pub(super) a_llm: FakeLlm,
    pub(super) b_llm: FakeLlm,
    _servers: (ServerProcess, ServerProcess),
    _home: tempfile::TempDir,
    _database: ScratchDatabase,
}

pub(super) async fn two_instances(a_script: Vec<Step>, b_script: Vec<Step>) -> TwoInstances {
    let database = ScratchDatabase::required();
    let a_llm = FakeLlm::builder(a_script)
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let b_llm = FakeLlm::builder(b_script)
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let server_a = ServerProcess::start_with(home.path(), &a_llm, &env).await;
    let server_b = ServerProcess::start_with(home.path(), &b_llm, &env).await;
    let mut a = server_a.client().await;
    a.init("races", &root).await;
    let mut b = server_b.client().await;
    b.init("races", &root).await;
    TwoInstances {
        a,
        b,
        a_llm,
        b_llm,
        _servers: (server_a, server_b),
        _home: home,
        _database: database,
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_an_abort_first_withdraws_the_proposal_the_other_instance_is_asked_to_resolve(
) {
    let mut two = two_instances(vec![Step::reply(PROPOSING)], vec![]).await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    two.b.ok("run/abort", json!({"run": run})).await;
    for client in [&mut two.a, &mut two.b] {
        let (code, message, data) =
            refused(client, "run/resolve", resolution(&run, &path, "accept")).await;
        assert_eq!(code, -32602, "{message}");
        assert!(message.ends_with("the run was aborted"), "{message}");
        assert_eq!(data["status"], json!(499));
    }
    assert_eq!(run_status(&mut two.a, &run).await, json!(499));
    assert_eq!(two.a_llm.requests().len(), 1);
    assert!(two.b_llm.requests().is_empty(), "nothing revived the run");
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_resolution_first_resumes_the_run_and_an_abort_from_the_other_stops_it()
{
    let mut two = two_instances(vec![Step::reply(PROPOSING)], vec![Step::Hang]).await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    let accepting = two
        .b
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    two.b_llm.wait_for_requests(1).await;
    two.a.ok("run/abort", json!({"run": run})).await;
    let reply = two.b.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    let (code, message, data) =
        refused(&mut two.a, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("it was accepted"), "{message}");
    assert_eq!(data["action"], json!("accept"));
    assert_eq!(run_status(&mut two.a, &run).await, json!(499));
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_two_resolutions_of_one_proposal_the_second_is_told_the_first_won() {
    let mut two = two_instances(
        vec![
            Step::reply(PROPOSING),
            Step::held("<summarize>deployed</summarize>"),
        ],
        vec![],
    )
    .await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    let accepting = two
        .a
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    two.a_llm.wait_for_requests(2).await;
    let (code, message, data) =
        refused(&mut two.b, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("it was accepted"), "{message}");
    assert_eq!(data["status"], json!(200));
    two.a_llm.release();
    let reply = two.a.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    assert!(two.b_llm.requests().is_empty());
}
