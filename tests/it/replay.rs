//! `run/replay`: a client that connects late, or reconnects, gets the notifications of a run
//! it missed, in order and as they were sent, or is told to call `getRun`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step};

/// A turn that learns something and goes on, then one that ends the loop.
fn two_turns() -> [Step; 2] {
    [
        Step::reply(
            "<known path=\"known://deploy\" summary=\"deploy\">staging</known>\
             <update>noting</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]
}

/// The notifications `client` receives, in arrival order and as `{method, params}`, up to
/// the loop's `run/outcome`.
async fn received_until_outcome(client: &mut Client) -> Vec<Value> {
    let mut received = Vec::new();
    loop {
        let notification = crate::event_log::next_numbered(client).await;
        let last = notification["method"] == "run/outcome";
        received.push(notification);
        if last {
            return received;
        }
    }
}

fn seq(notification: &Value) -> u64 {
    notification["params"]["seq"].as_u64().unwrap()
}

/// Runs an `ask` loop on `client`; returns the run alias and the notifications it got.
async fn ask(client: &mut Client) -> (String, Vec<Value>) {
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "go"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap().to_string();
    (run, received_until_outcome(client).await)
}

async fn replayed(client: &mut Client, run: &str, since: u64) -> Vec<Value> {
    let result = client
        .ok("run/replay", json!({"run": run, "since": since}))
        .await;
    result["notifications"].as_array().unwrap().clone()
}

#[actix_web::test]
async fn a_late_client_replays_what_it_missed_in_order_as_it_was_sent() {
    let llm = FakeLlm::start(two_turns());
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut first, root) = app.client_in_project("replay").await;
    let (run, sent) = ask(&mut first).await;
    assert_eq!(
        sent.len(),
        7,
        "thinking, processing, state, twice, then the loop's outcome: {sent:?}"
    );
    let seqs: Vec<u64> = sent.iter().map(seq).collect();
    assert!(
        seqs.windows(2).all(|pair| pair[1] == pair[0] + 1),
        "{seqs:?}"
    );

    let mut late = app.client().await;
    late.init("replay", &root).await;
    assert_eq!(replayed(&mut late, &run, 0).await, sent, "since 0: all");
    assert_eq!(
        replayed(&mut late, &run, seqs[2]).await,
        sent[3..],
        "the tail"
    );
    assert_eq!(replayed(&mut late, &run, seqs[6]).await, [] as [Value; 0]);
    let (code, message) = late
        .err("run/replay", json!({"run": run, "since": seqs[6] + 1}))
        .await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("ahead"), "{message}");
    assert!(
        late.pending_notifications().is_empty(),
        "a replay is a reply, not notifications"
    );
}

#[actix_web::test]
async fn a_replay_from_before_what_is_kept_says_call_get_run() {
    let llm = FakeLlm::start(two_turns());
    let app = TestApp::with_llm(&llm, &[("RUMMY_REPLAY_PER_RUN", "2")]).await;
    let (mut client, _) = app.client_in_project("tiny").await;
    let (run, sent) = ask(&mut client).await;
    let last = seq(&sent[6]);
    assert_eq!(
        replayed(&mut client, &run, last - 2).await,
        sent[5..],
        "the two kept"
    );
    for since in [0, last - 3] {
        let (code, message) = client
            .err("run/replay", json!({"run": run, "since": since}))
            .await;
        assert_eq!(code, -32009, "{message}");
        assert_eq!(
            message,
            format!(
                "Notifications of run '{run}' since seq {since} are no longer kept; call getRun."
            )
        );
    }
}

#[actix_web::test]
async fn a_run_of_another_project_is_not_found_and_a_silent_one_has_nothing_to_replay() {
    let llm = FakeLlm::start(two_turns());
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut alpha, _) = app.client_in_project("alpha").await;
    let (run, sent) = ask(&mut alpha).await;
    let (mut beta, _) = app.client_in_project("beta").await;
    for since in [0, seq(&sent[0])] {
        let (code, message) = beta
            .err("run/replay", json!({"run": run, "since": since}))
            .await;
        assert_eq!((code, message), (-32002, format!("Run '{run}' not found.")));
    }
    let idle = beta.start_run("fake").await;
    assert_eq!(replayed(&mut beta, &idle, 0).await, [] as [Value; 0]);
}

#[actix_web::test]
async fn a_client_joining_mid_loop_misses_nothing_between_its_replay_and_the_live_ones() {
    let llm = FakeLlm::start([
        Step::reply("<update>one</update>"),
        Step::delayed(
            Duration::from_millis(200),
            Reply::new("<summarize>done</summarize>"),
        ),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, root) = app.client_in_project("joined").await;
    let ask = driver
        .send("ask", json!({"model": "fake", "prompt": "go"}))
        .await;
    llm.wait_for_requests(2).await;
    let mut joiner = app.client().await;
    joiner.init("joined", &root).await;
    let run = joiner.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    let early = replayed(&mut joiner, &run, 0).await;
    assert!(early.len() >= 4, "turn 1 and turn 2's thinking: {early:?}");

    let outcome = driver.reply(&ask).await;
    assert_eq!(outcome["result"]["status"], json!(200), "{outcome}");
    let sent = received_until_outcome(&mut driver).await;
    assert_eq!(sent.len(), 7, "{sent:?}");

    let mut seen: BTreeMap<u64, Value> = BTreeMap::new();
    let finished = |seen: &BTreeMap<u64, Value>| {
        seen.values()
            .any(|notification| notification["method"] == "run/outcome")
    };
    for notification in early {
        seen.insert(seq(&notification), notification);
    }
    while !finished(&seen) {
        let live = crate::event_log::next_numbered(&mut joiner).await;
        if let Some(twice) = seen.insert(seq(&live), live.clone()) {
            assert_eq!(twice, live, "a duplicate is the same notification");
        }
    }
    let union: Vec<Value> = seen.into_values().collect();
    assert_eq!(union, sent, "no gap, in seq order");
}

#[actix_web::test]
async fn discover_lists_run_replay_with_its_params() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let catalogue = client.ok("discover", json!({})).await;
    let method = &catalogue["methods"]["run/replay"];
    let params: Vec<&String> = method["params"].as_object().unwrap().keys().collect();
    assert_eq!(params, ["run", "since"]);
    assert!(
        method["description"].as_str().unwrap().contains("getRun"),
        "{method}"
    );
}
