//! The event log through a crash: `kill -9` of the server (SQLite: the one server of a home,
//! started again on it) or of one of two instances (PostgreSQL) in the middle of a run, with
//! three clients attached — one driving, one watching, one gone since the run's first
//! notification —, and each client's replay afterwards is exactly what it missed; then the
//! run goes on, numbered above every seq given before the crash.

use serde_json::{json, Value};

use crate::event_log::{is_outcome, next_numbered, received_until, replayed, seq};
use crate::process::ServerProcess;
use crate::support::{project_root, Client};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use rummy::testing::ScratchDatabase;

/// A first turn that goes on, a second that hangs (the crash comes then), the interrupted
/// loop's turn once a client drives the run again, and the next prompt's.
fn cut_short() -> FakeLlm {
    FakeLlm::builder([
        Step::reply(
            "<known path=\"known://deploy\" summary=\"deploy\">staging</known>\
             <update>noting</update>",
        ),
        Step::Hang,
        Step::reply("<summarize>resumed</summarize>"),
        Step::reply("<summarize>after</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start()
}

async fn client_in(server: &ServerProcess, root: &std::path::Path) -> Client {
    let mut client = server.client().await;
    client.init("crash", root).await;
    client
}

/// Whether `notification` says turn 2 is thinking: the last before the crash.
fn second_thinking(notification: &Value) -> bool {
    notification["method"] == "run/progress"
        && notification["params"]["turn"] == 2
        && notification["params"]["status"] == "thinking"
}

/// Whether `notification` is the `run/state` of the loop the model summarized `summary`.
fn summarized(summary: &'static str) -> impl Fn(&Value) -> bool {
    move |notification| {
        notification["method"] == "run/state" && notification["params"]["summary"] == summary
    }
}

/// The three clients' sessions before the crash: what the watcher received (the driver
/// received the same), and the one notification the client gone early saw.
struct BeforeTheCrash {
    run: String,
    watched: Vec<Value>,
    gone_early: Value,
}

/// Starts the run on `driver` and waits until every client saw what it will have seen when
/// the crash comes: turn 2 thinking (sent once written), its model call hanging.
async fn run_until_the_second_call(
    driver: &mut Client,
    watcher: &mut Client,
    mut gone_early: Client,
    llm: &FakeLlm,
) -> BeforeTheCrash {
    driver
        .send("ask", json!({"model": "fake", "prompt": "first prompt"}))
        .await;
    let first = next_numbered(&mut gone_early).await;
    drop(gone_early);
    let watched = received_until(watcher, second_thinking).await;
    assert_eq!(received_until(driver, second_thinking).await, watched);
    assert_eq!(watched[0], first);
    assert_eq!(
        watched.len(),
        4,
        "thinking, processing, state, thinking: {watched:?}"
    );
    llm.wait_for_requests(2).await;
    BeforeTheCrash {
        run: watched[0]["params"]["run"].as_str().unwrap().to_owned(),
        watched,
        gone_early: first,
    }
}

/// After the crash, on `server`: each client's replay from the latest seq it saw is exactly
/// what it missed; then the run, driven again, is numbered on from the latest seq before.
async fn each_replays_what_it_missed(
    server: &ServerProcess,
    root: &std::path::Path,
    before: BeforeTheCrash,
) {
    let BeforeTheCrash {
        run,
        watched,
        gone_early,
    } = before;
    let latest = seq(watched.last().unwrap());
    let mut watcher = client_in(server, root).await;
    let mut driver = client_in(server, root).await;
    let mut late = client_in(server, root).await;
    assert_eq!(replayed(&mut watcher, &run, latest).await, [] as [Value; 0]);
    assert_eq!(replayed(&mut driver, &run, latest).await, [] as [Value; 0]);
    assert_eq!(
        replayed(&mut late, &run, seq(&gone_early)).await,
        watched[1..],
        "what it missed, in order, once"
    );
    assert_eq!(
        replayed(&mut late, &run, 0).await,
        watched,
        "from the start"
    );

    let outcome = driver
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "second prompt", "run": run}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let mut live = received_until(&mut watcher, summarized("after")).await;
    live.extend(received_until(&mut watcher, is_outcome).await);
    let seqs: Vec<u64> = live.iter().map(seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).map(|n| latest + n).collect();
    assert_eq!(
        seqs, expected,
        "numbered on from the latest before the crash"
    );
    assert!(live.iter().any(summarized("resumed")), "{live:?}");
    assert_eq!(replayed(&mut late, &run, latest).await, live);
}

#[actix_web::test]
async fn after_a_kill_9_each_client_replays_exactly_what_it_missed() {
    let llm = cut_short();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let server = ServerProcess::start_with(home.path(), &llm, &[]).await;
    let mut driver = client_in(&server, &root).await;
    let mut watcher = client_in(&server, &root).await;
    let gone_early = client_in(&server, &root).await;
    let before = run_until_the_second_call(&mut driver, &mut watcher, gone_early, &llm).await;
    assert!(!server.stop_with("-9").success());

    let server = ServerProcess::start_with(home.path(), &llm, &[]).await;
    each_replays_what_it_missed(&server, &root, before).await;
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn after_an_instance_is_killed_each_client_replays_on_another_exactly_what_it_missed() {
    let database = ScratchDatabase::required();
    let llm = cut_short();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let doomed = ServerProcess::start_with(home.path(), &llm, &env).await;
    let survivor = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut driver = client_in(&doomed, &root).await;
    let mut watcher = client_in(&survivor, &root).await;
    let gone_early = client_in(&doomed, &root).await;
    let before = run_until_the_second_call(&mut driver, &mut watcher, gone_early, &llm).await;
    assert!(!doomed.stop_with("-9").success());

    each_replays_what_it_missed(&survivor, &root, before).await;
}
