//! Two `rummy serve` processes on one PostgreSQL database, as a team runs them behind a
//! proxy: a run's loops run on one instance at a time, a second instance's start leaves the
//! first one's runs alone, aliases stay unique when both create runs at once, a killed
//! instance's runs end 499 with their loops pending once its lease expires, and a stopping
//! one hands its runs over at once. Those need PostgreSQL (a SQLite file is one instance's):
//! they are `#[ignore]`d, so that a plain `cargo test` never counts them as passed, and
//! `tests/run.sh` runs them (`--ignored`) in its PostgreSQL pass. How any server stops (not ready, its running loop
//! finished, the rest left pending) is pinned on both backends.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::{eventually, project_root, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, WhenExhausted};
use rummy::testing::ScratchDatabase;

mod story;

/// Seconds a lease outlives its instance's last heartbeat in these tests.
const LEASE_TTL_SECS: &str = "3";

/// How long a test waits for something another instance does (a lease to expire, a loop
/// to be claimed); generous, as it is no measure of speed.
const DEADLINE: Duration = Duration::from_secs(60);

/// An instance on `database`, home `home`, model `fake` the scripted LLM.
async fn instance(home: &Path, llm: &FakeLlm, database: &ScratchDatabase) -> ServerProcess {
    instance_with(home, llm, database, &[]).await
}

/// [`instance`] with extra environment variables.
async fn instance_with(
    home: &Path,
    llm: &FakeLlm,
    database: &ScratchDatabase,
    extra: &[(&str, &str)],
) -> ServerProcess {
    let mut env = vec![
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", LEASE_TTL_SECS),
    ];
    env.extend_from_slice(extra);
    ServerProcess::start_with(home, llm, &env).await
}

/// A client of `server` bound to the project `name` rooted at `root`.
async fn client_in(server: &ServerProcess, name: &str, root: &Path) -> Client {
    let mut client = server.client().await;
    client.init(name, root).await;
    client
}

async fn status_of(client: &mut Client, run: &str) -> Value {
    client.ok("getRun", json!({"run": run})).await["status"].clone()
}

/// Waits until `run`'s status is `status`, as `client` reads it.
async fn wait_for_status(client: &mut Client, run: &str, status: i64) {
    eventually(&format!("run {run} to reach {status}"), async || {
        (status_of(client, run).await == json!(status)).then_some(())
    })
    .await;
}

/// Starts an `ask` on `client`; its request id and its run once `llm` has the loop's first
/// call (which the tests hang or hold).
async fn ask_in_flight(client: &mut Client, llm: &FakeLlm) -> (Value, String) {
    let asked = client
        .send("ask", json!({"model": "fake", "prompt": "first prompt"}))
        .await;
    let progress = client.notification("run/progress").await;
    llm.wait_for_requests(1).await;
    (
        asked,
        progress["params"]["run"].as_str().unwrap().to_string(),
    )
}

/// Asserts `llm` had `count` requests, `why`, and the last of them saw `prompts`, one each,
/// in order.
fn assert_requests_end_with(llm: &FakeLlm, count: usize, why: &str, prompts: &[&str]) {
    let requests = llm.requests();
    assert_eq!(requests.len(), count, "{why}");
    for (request, prompt) in requests[count - prompts.len()..].iter().zip(prompts) {
        let seen = user_message(request);
        assert!(seen.contains(prompt), "{prompt:?} not in {seen}");
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_killed_instance_s_runs_end_499_when_its_lease_expires_and_another_continues_them() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([
        Step::Hang,
        Step::reply("<summarize>first, resumed</summarize>"),
        Step::reply("<summarize>second</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let doomed = instance(home.path(), &llm, &database).await;
    let mut first = client_in(&doomed, "failover", &root).await;
    let (_, run) = ask_in_flight(&mut first, &llm).await;

    let survivor = instance(home.path(), &llm, &database).await;
    let mut second = client_in(&survivor, "failover", &root).await;
    assert_eq!(
        status_of(&mut second, &run).await,
        json!(102),
        "a starting instance leaves a live one's runs alone"
    );
    let exit = doomed.stop_with("-9");
    assert!(!exit.success());

    wait_for_status(&mut second, &run, 499).await;
    assert_eq!(llm.requests().len(), 1, "nothing ran before a client asked");
    let outcome = second
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "second prompt", "run": run}),
        )
        .await;
    assert_eq!(
        outcome,
        json!({"run": run, "status": 200, "reason": "done"})
    );
    assert_requests_end_with(
        &llm,
        3,
        "the cut-short loop ran again, then the new one",
        &["first prompt", "second prompt"],
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_stopping_instance_hands_its_run_to_the_instance_whose_client_waits() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([
        Step::Hang,
        Step::reply("<summarize>first, resumed</summarize>"),
        Step::reply("<summarize>second</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let stopping = instance(home.path(), &llm, &database).await;
    let staying = instance(home.path(), &llm, &database).await;
    let mut first = client_in(&stopping, "handover", &root).await;
    let (_, run) = ask_in_flight(&mut first, &llm).await;

    let mut second = client_in(&staying, "handover", &root).await;
    let waiting = second
        .send(
            "ask",
            json!({"model": "fake", "prompt": "second prompt", "run": run}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        llm.requests().len(),
        1,
        "the other instance's loop waits while the run is driven elsewhere"
    );

    let exit = stopping.stop_with("-TERM");
    assert!(exit.success(), "{exit:?}");
    let outcome = second.reply(&waiting).await;
    assert_eq!(
        outcome["result"],
        json!({"run": run, "status": 200, "reason": "done"}),
        "{outcome}"
    );
    assert_requests_end_with(
        &llm,
        3,
        "the cut-short loop ran again, then the waiting one",
        &["first prompt", "second prompt"],
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_aliases_stay_unique_when_two_instances_create_fifty_runs_at_once() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let servers = [
        instance(home.path(), &llm, &database).await,
        instance(home.path(), &llm, &database).await,
    ];
    let mut clients = Vec::new();
    for index in 0..50 {
        clients.push(client_in(&servers[index % 2], "aliases", &root).await);
    }
    let aliases = join_all(
        clients
            .iter_mut()
            .map(|client| async move { client.start_run("fake").await }),
    )
    .await;
    let distinct: HashSet<&String> = aliases.iter().collect();
    assert_eq!(distinct.len(), 50, "{aliases:?}");
}

#[actix_web::test]
async fn a_stopping_server_is_not_ready_finishes_its_running_loop_and_leaves_the_rest_pending() {
    let llm = FakeLlm::builder([Step::delayed(
        Duration::from_secs(2),
        Reply::new("<summarize>finished while stopping</summarize>"),
    )])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let store = app.database();
    let readyz = format!("http://{}/readyz", app.addr());
    let (mut client, _root) = app.client_in_project("stopping").await;
    let (_, run) = ask_in_flight(&mut client, &llm).await;
    let mut other = app.client().await;
    other.init("stopping", &app.project_root("stopping")).await;
    other
        .send(
            "ask",
            json!({"model": "fake", "prompt": "never started", "run": run}),
        )
        .await;

    let TestApp {
        server,
        home,
        database,
        ..
    } = app;
    let stopping = actix_web::rt::spawn(server.stop());
    let http = awc::Client::new();
    eventually("/readyz to answer 503 while stopping", async || {
        let status = http.get(&readyz).send().await.unwrap().status().as_u16();
        if status == 503 {
            return Some(());
        }
        assert_eq!(status, 200);
        None
    })
    .await;
    stopping.await.unwrap();

    assert_eq!(llm.requests().len(), 1, "the queued loop never started");
    let mut conn = store.connect().unwrap();
    let stored = crate::stored::run_named(&mut conn, &run).unwrap();
    assert_eq!(
        stored.status, 200,
        "the running loop finished, not cut short"
    );
    assert_eq!(crate::stored::pending_loops(&mut conn, stored.id), 1);
    drop((home, database));
}

/// `client`'s notifications up to the `run/state` that ends the loop, in arrival order.
async fn notifications_until_the_state(client: &mut Client) -> Vec<Value> {
    let mut received = Vec::new();
    loop {
        let notification = tokio::time::timeout(DEADLINE, client.next_notification())
            .await
            .expect("no run/state arrived");
        let done = notification["method"] == "run/state" && notification["params"]["status"] != 102;
        received.push(notification);
        if done {
            return received;
        }
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_client_of_one_instance_gets_the_notifications_of_a_run_executing_on_another() {
    let database = ScratchDatabase::required();
    let command = format!("echo {}", "x".repeat(20_000));
    let llm = FakeLlm::builder([Step::reply(format!(
        "<sh>{command}</sh><update>running it</update>"
    ))])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let watched = instance(home.path(), &llm, &database).await;
    let executing = instance(home.path(), &llm, &database).await;
    let mut watcher = client_in(&watched, "relay", &root).await;
    let mut driver = client_in(&executing, "relay", &root).await;

    let result = driver
        .ok("act", json!({"model": "fake", "prompt": "Run it"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let sent = notifications_until_the_state(&mut driver).await;
    let relayed = notifications_until_the_state(&mut watcher).await;
    assert_eq!(relayed, sent, "the same frames, seq and order");
    let methods: Vec<&str> = sent
        .iter()
        .map(|frame| frame["method"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"run/progress"), "{methods:?}");
    assert!(methods.contains(&"run/proposal"), "{methods:?}");
    assert!(
        sent.iter().any(|frame| frame.to_string().len() > 8000),
        "a frame past NOTIFY's payload limit crossed"
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_abort_sent_to_one_instance_stops_the_loop_executing_on_another() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([Step::Hang])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let executing = instance(home.path(), &llm, &database).await;
    let other = instance(home.path(), &llm, &database).await;
    let mut driver = client_in(&executing, "abort", &root).await;
    let (asked, run) = ask_in_flight(&mut driver, &llm).await;

    let mut aborter = client_in(&other, "abort", &root).await;
    assert_eq!(
        aborter.ok("run/abort", json!({"run": run})).await,
        json!({"status": "ok"})
    );
    assert_eq!(
        status_of(&mut aborter, &run).await,
        json!(499),
        "the reply waited for the 499"
    );
    let outcome = driver.reply(&asked).await;
    assert_eq!(outcome["result"]["status"], json!(499), "{outcome}");
    assert_eq!(
        aborter
            .err("run/abort", json!({"run": "no_such_run"}))
            .await,
        driver.err("run/abort", json!({"run": "no_such_run"})).await,
        "bad input gets the same error on either instance"
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_abort_sent_to_one_instance_kills_a_command_running_on_another() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([
        Step::reply("<sh>echo started; sleep 1004</sh><update>waiting</update>"),
        Step::reply("<summarize>never asked</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let commands = [("RUMMY_RUN_COMMANDS", "server")];
    let executing = instance_with(home.path(), &llm, &database, &commands).await;
    let other = instance_with(home.path(), &llm, &database, &commands).await;
    let mut driver = client_in(&executing, "commands", &root).await;
    let (run, path) = driver.act_until_proposal("wait").await;
    let resolving = driver
        .send(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    driver
        .until_notified("run/output", |params| params["text"] == json!("started\n"))
        .await;
    let mut aborter = client_in(&other, "commands", &root).await;
    assert_eq!(
        aborter.ok("run/abort", json!({"run": run})).await,
        json!({"status": "ok"})
    );
    let outcome = driver.reply(&resolving).await;
    assert_eq!(outcome["result"]["status"], json!(499), "{outcome}");
    assert_eq!(llm.requests().len(), 1, "the aborted run did not resume");
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_resolve_sent_to_another_instance_than_the_one_that_drove_the_run_resumes_it() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([
        Step::reply("<sh>echo hi</sh><update>running it</update>"),
        Step::reply("<summarize>ran it</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let driving = instance(home.path(), &llm, &database).await;
    let other = instance(home.path(), &llm, &database).await;
    let mut driver = client_in(&driving, "resolve", &root).await;
    let mut resolver = client_in(&other, "resolve", &root).await;
    let (run, path) = driver.act_until_proposal("Run it").await;

    let nothing_to_resolve = json!({
        "run": run,
        "resolution": {"path": "sh://turn_1/nothing", "action": "accept"},
    });
    let unknown_run = json!({
        "run": "no_such_run",
        "resolution": {"path": path, "action": "accept"},
    });
    for params in [nothing_to_resolve, unknown_run] {
        assert_eq!(
            resolver.err("run/resolve", params.clone()).await,
            driver.err("run/resolve", params).await,
            "bad input gets the same error on either instance"
        );
    }
    let unknown_inject = json!({"run": "no_such_run", "message": "hello"});
    assert_eq!(
        resolver.err("run/inject", unknown_inject.clone()).await,
        driver.err("run/inject", unknown_inject).await
    );

    let resumed = resolver
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "hi"}}),
        )
        .await;
    assert_eq!(
        resumed,
        json!({"run": run, "status": 200, "reason": "done"})
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the resolution resumed the run once");
    assert_eq!(status_of(&mut driver, &run).await, json!(200));
}

/// A scripted LLM that answers nothing beyond `script` (500 then).
fn scripted(script: impl IntoIterator<Item = Step>) -> FakeLlm {
    FakeLlm::builder(script)
        .when_exhausted(WhenExhausted::Error(500))
        .start()
}

/// The loops of `run` waiting to run, as the store has them.
fn pending_loops_of(database: &ScratchDatabase, run: &str) -> i64 {
    let mut conn = database.database().connect().unwrap();
    let stored = crate::stored::run_named(&mut conn, run).unwrap();
    crate::stored::pending_loops(&mut conn, stored.id)
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_inject_sent_to_one_instance_joins_the_loop_executing_on_another() {
    let database = ScratchDatabase::required();
    let executing_llm = scripted([
        Step::held("<update>working</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let other_llm = scripted([]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let executing = instance(home.path(), &executing_llm, &database).await;
    let other = instance(home.path(), &other_llm, &database).await;
    let mut driver = client_in(&executing, "inject", &root).await;
    let (asked, run) = ask_in_flight(&mut driver, &executing_llm).await;

    let mut injector = client_in(&other, "inject", &root).await;
    let injected = tokio::time::timeout(
        DEADLINE,
        injector.ok(
            "run/inject",
            json!({"run": run, "message": "also check the tests"}),
        ),
    )
    .await
    .expect("the reply does not wait for the running loop");
    assert_eq!(
        injected,
        json!({"run": run, "status": 102, "injected": "next_turn"})
    );
    executing_llm.release();
    let outcome = driver.reply(&asked).await;
    assert_eq!(
        outcome["result"],
        json!({"run": run, "status": 200, "reason": "done"}),
        "{outcome}"
    );
    let requests = executing_llm.requests();
    assert_eq!(requests.len(), 2, "one loop of two turns");
    assert!(
        user_message(&requests[1]).contains("also check the tests"),
        "the running loop's next turn saw the injected text"
    );
    assert!(other_llm.requests().is_empty(), "nothing ran on the other");
    assert_eq!(
        pending_loops_of(&database, &run),
        0,
        "no second loop queued"
    );
}

/// A run whose `act` loop proposed `sh` on its executing instance, which still holds the
/// lease because a second loop of the run, queued by another client before the proposal,
/// runs there with its first turn held; and a client of the other instance.
struct ProposalUnderLease {
    database: ScratchDatabase,
    executing_llm: FakeLlm,
    other_llm: FakeLlm,
    executing: ServerProcess,
    driver: Client,
    resolver: Client,
    /// The client whose queued `ask` keeps the lease, and that `ask`'s request id.
    queued: (Client, Value),
    run: String,
    /// The proposal's path.
    path: String,
    _home: tempfile::TempDir,
    _other: ServerProcess,
}

/// [`ProposalUnderLease`] in a database of its own, in project `project`; `after` answers
/// the resumed loop, once the queued loop's held turn has been released and completed it.
async fn proposal_under_lease(project: &str, after: &[Step]) -> ProposalUnderLease {
    let database = ScratchDatabase::required();
    let mut script = vec![
        Step::held("<sh>echo hi</sh><update>running it</update>"),
        Step::held("<summarize>queued question answered</summarize>"),
    ];
    script.extend_from_slice(after);
    let executing_llm = scripted(script);
    let other_llm = scripted([]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let executing = instance(home.path(), &executing_llm, &database).await;
    let other = instance(home.path(), &other_llm, &database).await;
    let mut driver = client_in(&executing, project, &root).await;
    let mut queuer = client_in(&executing, project, &root).await;
    let resolver = client_in(&other, project, &root).await;

    let acting = driver
        .send("act", json!({"model": "fake", "prompt": "Run it"}))
        .await;
    let progress = driver.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    executing_llm.wait_for_requests(1).await;
    let asking = queuer
        .send(
            "ask",
            json!({"model": "fake", "run": run, "prompt": "queued question"}),
        )
        .await;
    eventually("the question queued behind the loop", async || {
        (pending_loops_of(&database, &run) > 0).then_some(())
    })
    .await;
    executing_llm.release();
    let proposed = driver.reply(&acting).await;
    assert_eq!(proposed["result"]["status"], json!(202), "{proposed}");
    let path = proposed["result"]["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    executing_llm.wait_for_requests(2).await;
    assert!(
        user_message(&executing_llm.requests()[1]).contains("queued question"),
        "the lease is held by the queued loop's turn"
    );
    ProposalUnderLease {
        database,
        executing_llm,
        other_llm,
        executing,
        driver,
        resolver,
        queued: (queuer, asking),
        run,
        path,
        _home: home,
        _other: other,
    }
}

/// Sends `proposal`'s acceptance through the other instance, and waits until the store
/// has the resumed loop pending.
async fn accept_through_the_other(proposal: &mut ProposalUnderLease) -> Value {
    let resolving = proposal
        .resolver
        .send(
            "run/resolve",
            json!({"run": proposal.run, "resolution": {"path": proposal.path, "action": "accept", "output": "hi"}}),
        )
        .await;
    eventually(
        "the resumed loop pending after the acceptance",
        async || (pending_loops_of(&proposal.database, &proposal.run) > 0).then_some(()),
    )
    .await;
    resolving
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn run_resolve_sent_to_one_instance_while_another_holds_the_lease_is_executed_there() {
    // The resumed loop outlasts several of the asker's checks that the holder lives: an
    // acknowledged call waits for its answer as long as the holder does.
    let after = [Step::delayed(
        Duration::from_secs(3),
        Reply::new("<summarize>ran it</summarize>"),
    )];
    let mut proposal = proposal_under_lease("cross_instance_resolve_held", &after).await;
    let (run, path) = (proposal.run.clone(), proposal.path.clone());
    let bad_params = [
        json!({"run": run, "resolution": {"path": "sh://turn_1/nothing", "action": "accept"}}),
        json!({"run": "no_such_run", "resolution": {"path": path, "action": "accept"}}),
        json!({"run": run, "resolution": {"path": path, "action": "maybe"}}),
        json!({"run": run}),
    ];
    for params in bad_params {
        assert_eq!(
            proposal.resolver.err("run/resolve", params.clone()).await,
            proposal.driver.err("run/resolve", params).await,
            "bad input gets the same error on either instance"
        );
    }
    for params in [
        json!({"run": run}),
        json!({"run": "no_such_run", "message": "hi"}),
    ] {
        assert_eq!(
            proposal.resolver.err("run/inject", params.clone()).await,
            proposal.driver.err("run/inject", params).await
        );
    }

    let resolving = accept_through_the_other(&mut proposal).await;
    proposal.executing_llm.release();
    let (queuer, asking) = &mut proposal.queued;
    let answered = queuer.reply(asking).await;
    assert_eq!(answered["result"]["status"], json!(200), "{answered}");
    let resumed = proposal.resolver.reply(&resolving).await;
    assert_eq!(
        resumed["result"],
        json!({"run": run, "status": 200, "reason": "done"}),
        "{resumed}"
    );
    let requests = proposal.executing_llm.requests();
    assert!(
        user_message(&requests[2]).contains("hi"),
        "the resumed loop ran on the lease's holder"
    );
    assert!(
        proposal.other_llm.requests().is_empty(),
        "nothing ran on the other"
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_call_for_a_killed_lease_holder_is_executed_by_the_instance_it_was_sent_to() {
    let database = ScratchDatabase::required();
    let doomed_llm = scripted([Step::Hang]);
    let survivor_llm = scripted([
        Step::reply("<summarize>first, resumed</summarize>"),
        Step::reply("<summarize>injected</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let doomed = instance(home.path(), &doomed_llm, &database).await;
    let survivor = instance(home.path(), &survivor_llm, &database).await;
    let mut driver = client_in(&doomed, "holder_gone", &root).await;
    let (_, run) = ask_in_flight(&mut driver, &doomed_llm).await;
    let mut injector = client_in(&survivor, "holder_gone", &root).await;

    let exit = doomed.stop_with("-9");
    assert!(!exit.success());
    let injected = injector
        .ok(
            "run/inject",
            json!({"run": run, "message": "injected prompt"}),
        )
        .await;
    assert_eq!(
        injected,
        json!({"run": run, "status": 200, "reason": "done"})
    );
    assert_requests_end_with(
        &survivor_llm,
        2,
        "the cut-short loop, then the injected one",
        &["first prompt", "injected prompt"],
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_call_whose_holder_dies_after_acknowledging_it_is_answered_with_an_error_not_run_twice() {
    let mut proposal = proposal_under_lease("cross_instance_holder_dies_after_ack", &[]).await;
    let resolving = accept_through_the_other(&mut proposal).await;

    let exit = proposal.executing.stop_with("-9");
    assert!(!exit.success());
    let answered = tokio::time::timeout(DEADLINE, proposal.resolver.reply(&resolving))
        .await
        .expect("the asker stops waiting once the holder is gone");
    assert_eq!(answered["error"]["code"], json!(-32603), "{answered}");
    assert!(
        answered["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopped before it answered"),
        "{answered}"
    );
    assert!(
        proposal.other_llm.requests().is_empty(),
        "the resolution is not executed a second time"
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_ui_notify_sent_on_one_instance_reaches_the_project_s_clients_on_another() {
    let database = ScratchDatabase::required();
    let llm = scripted([]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    // Session notes on: memory/session/set, which tells the project's clients with ui/notify.
    let first = instance_with(
        home.path(),
        &llm,
        &database,
        &[("RUMMY_MEMORY_SESSION_TOKENS", "600")],
    )
    .await;
    let second = instance(home.path(), &llm, &database).await;
    let mut writer = client_in(&first, "ui", &root).await;
    let mut watcher = client_in(&second, "ui", &root).await;
    let run = writer.ok("startRun", json!({"model": "fake"})).await["run"]
        .as_str()
        .unwrap()
        .to_owned();
    writer
        .ok(
            "memory/session/set",
            json!({"run": run, "notes": {"title": "Across instances"}}),
        )
        .await;
    let told = watcher.until_notified("ui/notify", |_| true).await;
    let text = told["params"]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("{run}: session notes set")),
        "{told}"
    );
    assert!(text.contains("Across instances"), "{told}");
}

/// Two instances under loop bounds, in a database of their own, sharing a scripted model
/// whose first loop is held until released and whose second answers at once.
struct BoundedPair {
    llm: FakeLlm,
    root: PathBuf,
    first: ServerProcess,
    second: ServerProcess,
    _home: tempfile::TempDir,
    _database: ScratchDatabase,
}

/// [`BoundedPair`] with the environment `bound` gives for the instances' home.
async fn bounded_pair(
    bound: impl FnOnce(&Path) -> Vec<(&'static str, &'static str)>,
) -> BoundedPair {
    let database = ScratchDatabase::required();
    let llm = scripted([
        Step::held("<summarize>first</summarize>"),
        Step::reply("<summarize>second</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let bound = bound(home.path());
    let first = instance_with(home.path(), &llm, &database, &bound).await;
    let second = instance_with(home.path(), &llm, &database, &bound).await;
    BoundedPair {
        llm,
        root,
        first,
        second,
        _home: home,
        _database: database,
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn the_bound_on_a_project_s_loops_holds_across_instances() {
    let pair = bounded_pair(|_| {
        vec![
            ("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "1"),
            ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
        ]
    })
    .await;
    let (llm, root) = (&pair.llm, &pair.root);
    let mut one = client_in(&pair.first, "bounded", root).await;
    let mut two = client_in(&pair.second, "bounded", root).await;
    let (asked, _) = ask_in_flight(&mut one, llm).await;

    let (code, message) = two
        .err("ask", json!({"model": "fake", "prompt": "second prompt"}))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32006,
            "project 'bounded' already has 1 loop running or queued; try again later."
        ),
        "the other instance's loop counts here"
    );
    llm.release();
    assert_eq!(one.reply(&asked).await["result"]["status"], json!(200));
    let after = two
        .ok("ask", json!({"model": "fake", "prompt": "second prompt"}))
        .await;
    assert_eq!(
        after["status"],
        json!(200),
        "the place is free once the loop ended"
    );
    assert_requests_end_with(llm, 2, "one loop each", &["first prompt", "second prompt"]);
}

/// A users file with the member `mo` (token `mo-token`), in `home`.
fn users_file_with_mo(home: &Path) -> &'static str {
    std::fs::write(
        home.join("users.toml"),
        format!(
            "[[person]]\nname = \"mo\"\ntoken_sha256 = \"{}\"\nrole = \"member\"\n\
             projects = [\"*\"]\n",
            rummy::hash_token("mo-token")
        ),
    )
    .unwrap();
    "users.toml"
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_person_s_loop_on_another_instance_waits_for_their_place_under_the_person_bound() {
    let pair = bounded_pair(|home| {
        vec![
            ("RUMMY_USERS_FILE", users_file_with_mo(home)),
            ("RUMMY_MAX_ACTIVE_LOOPS_PER_PERSON", "1"),
            ("RUMMY_LOOPS_OVER_LIMIT", "queue"),
        ]
    })
    .await;
    let (llm, root) = (&pair.llm, &pair.root);
    let connect =
        |server: &ServerProcess| format!("ws://127.0.0.1:{}/?token=mo-token", server.port);
    let mut one = Client::connect(&connect(&pair.first)).await;
    one.init("mine", root).await;
    let mut two = Client::connect(&connect(&pair.second)).await;
    two.init("mine", root).await;
    let (asked, _) = ask_in_flight(&mut one, llm).await;

    let waiting = two
        .send("ask", json!({"model": "fake", "prompt": "second prompt"}))
        .await;
    // A negative: over several of the waiting loop's tries, it does not start.
    tokio::time::sleep(rummy::testing::PLACE_POLL * 4).await;
    assert_eq!(
        llm.requests().len(),
        1,
        "mo's second loop waits for a place"
    );
    llm.release();
    assert_eq!(one.reply(&asked).await["result"]["status"], json!(200));
    let after = tokio::time::timeout(DEADLINE, two.reply(&waiting))
        .await
        .expect("the waiting loop runs once the place is given back");
    assert_eq!(after["result"]["status"], json!(200), "{after}");
    assert_requests_end_with(llm, 2, "one loop each", &["first prompt", "second prompt"]);
}

/// The sessions listening on `database`'s frame bus (their last statement a `LISTEN`).
fn bus_listeners_on(database: &ScratchDatabase) -> i64 {
    let mut conn = database.database().connect().unwrap();
    crate::stored::number(
        &mut conn,
        "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN %'",
    )
    .unwrap_or(0)
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_server_dropped_without_stopping_stops_listening_on_its_database() {
    let app = TestApp::start().await;
    let database = app.database.as_ref().expect("a PostgreSQL test database");
    eventually("the frame bus to listen", async || {
        (bus_listeners_on(database) == 1).then_some(())
    })
    .await;
    let TestApp {
        server,
        home: _home,
        database,
        ..
    } = app;
    drop(server);
    let database = database.unwrap();
    eventually(
        "the dropped server's frame bus to stop listening",
        async || (bus_listeners_on(&database) == 0).then_some(()),
    )
    .await;
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_start_that_fails_after_its_frame_bus_began_stops_listening_on_its_database() {
    let database = ScratchDatabase::required();
    let home = tempfile::tempdir().unwrap();
    let env: std::collections::HashMap<String, String> = [
        ("RUMMY_HOME", home.path().display().to_string()),
        ("PORT", "0".to_owned()),
        ("RUMMY_DATABASE_URL", database.url().to_owned()),
        ("RUMMY_RUN_COMMANDS", "server".to_owned()),
        ("RUMMY_SANDBOX_LAUNCHER", "/bin/false".to_owned()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let error = rummy::app::start(crate::support::settings(&env))
        .await
        .err()
        .expect("the start fails");
    assert!(error.to_string().contains("cannot run confined"), "{error}");
    eventually(
        "the failed start's frame bus to stop listening",
        async || (bus_listeners_on(&database) == 0).then_some(()),
    )
    .await;
}
