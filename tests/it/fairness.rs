//! Load and fairness over real sockets: the bounds on requests in flight (per connection,
//! per person) and on loops running or queued (per project, per person), refused or
//! queued as configured.

use serde_json::{json, Value};

use crate::support::{eventually, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Sends `ask` with `prompt` on `client` and waits until its loop is the `count`th call
/// the LLM holds; returns the request's id and the alias of its run, which `watcher` finds
/// as the one not in `seen` (which gets it).
pub(crate) async fn held_ask(
    client: &mut Client,
    watcher: &mut Client,
    llm: &FakeLlm,
    prompt: &str,
    count: usize,
    seen: &mut Vec<String>,
) -> (Value, String) {
    let id = client
        .send("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    llm.wait_for_requests(count).await;
    let runs = watcher.ok("getRuns", json!({})).await;
    let alias = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["run"].as_str().unwrap().to_string())
        .find(|alias| !seen.contains(alias))
        .unwrap();
    seen.push(alias.clone());
    (id, alias)
}

/// Aborts `run` and checks the ask `id` on `client` that drove it answers 499.
pub(crate) async fn abort(client: &mut Client, run: &str, id: &Value) {
    client.ok("run/abort", json!({"run": run})).await;
    let reply = client.reply(id).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
}

/// Two asks in flight on one connection, then one request more: answered `-32006` with
/// `message`, as is the whole of a batch; the asks still get their replies after.
async fn one_request_past_two_in_flight(env: &[(&str, &str)], message: &str) {
    let llm = FakeLlm::start([Step::Hang, Step::Hang]);
    let app = TestApp::with_llm(&llm, env).await;
    let (mut client, _) = app.client_in_project("busy").await;
    let (mut other, _) = app.client_in_project("busy").await;
    let mut seen = Vec::new();
    let (first, first_run) = held_ask(&mut client, &mut other, &llm, "one", 1, &mut seen).await;
    let (second, second_run) = held_ask(&mut client, &mut other, &llm, "two", 2, &mut seen).await;
    assert_eq!(
        client.err("ping", json!({})).await,
        (-32006, message.to_string())
    );
    client
        .send_text(
            r#"[{"jsonrpc":"2.0","id":"b","method":"ping"},{"jsonrpc":"2.0","method":"ping"}]"#,
        )
        .await;
    let batch = loop {
        let message = client.next_json().await.unwrap();
        if message.is_array() {
            break message;
        }
    };
    assert_eq!(batch.as_array().unwrap().len(), 1, "{batch}");
    assert_eq!(batch[0]["id"], json!("b"));
    assert_eq!(batch[0]["error"]["code"], json!(-32006));
    let (mut other, _) = app.client_in_project("busy").await;
    assert_eq!(
        other.ok("ping", json!({})).await,
        json!({}),
        "not its bound"
    );
    other.ok("run/abort", json!({"run": first_run})).await;
    other.ok("run/abort", json!({"run": second_run})).await;
    for id in [first, second] {
        let reply = client.reply(&id).await;
        assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    }
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn requests_past_the_connection_bound_are_answered_overloaded() {
    one_request_past_two_in_flight(
        &[("RUMMY_MAX_IN_FLIGHT", "2")],
        "Too many requests in flight (2); wait for replies before sending more.",
    )
    .await;
}

#[actix_web::test]
async fn requests_past_the_person_bound_are_answered_overloaded() {
    one_request_past_two_in_flight(
        &[
            ("RUMMY_MAX_IN_FLIGHT", "5"),
            ("RUMMY_MAX_IN_FLIGHT_PER_PERSON", "2"),
        ],
        "Too many requests in flight across your connections (2); wait for replies before \
         sending more.",
    )
    .await;
}

#[actix_web::test]
async fn an_ask_past_the_project_bound_is_refused_until_a_loop_ends() {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::Hang,
        Step::reply("<summarize>third</summarize>"),
    ]);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "2"),
            ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
        ],
    )
    .await;
    let (mut client, _) = app.client_in_project("limits").await;
    let (mut watcher, _) = app.client_in_project("limits").await;
    let mut seen = Vec::new();
    let (first, first_run) = held_ask(&mut client, &mut watcher, &llm, "one", 1, &mut seen).await;
    let (second, second_run) = held_ask(&mut client, &mut watcher, &llm, "two", 2, &mut seen).await;
    let (code, message) = client
        .err("ask", json!({"model": "fake", "prompt": "three"}))
        .await;
    assert_eq!(code, -32006);
    assert_eq!(
        message,
        "project 'limits' already has 2 loops running or queued; try again later."
    );
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(
        runs.as_array().unwrap().len(),
        2,
        "no run for the refused ask"
    );
    abort(&mut client, &first_run, &first).await;
    let third = client
        .ok("ask", json!({"model": "fake", "prompt": "three"}))
        .await;
    assert_eq!(third["status"], json!(200), "{third}");
    abort(&mut client, &second_run, &second).await;
}

#[actix_web::test]
async fn an_ask_past_the_person_bound_is_refused_while_others_of_the_project_run() {
    let llm = FakeLlm::start([Step::Hang, Step::reply("<summarize>other</summarize>")]);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_MAX_ACTIVE_LOOPS_PER_PERSON", "1"),
            ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
        ],
    )
    .await;
    let (mut client, _) = app.client_in_project("people").await;
    let (mut other, _) = app.client_in_project("people").await;
    let (first, first_run) =
        held_ask(&mut client, &mut other, &llm, "one", 1, &mut Vec::new()).await;
    let (code, message) = client
        .err("ask", json!({"model": "fake", "prompt": "two"}))
        .await;
    assert_eq!(code, -32006);
    assert_eq!(
        message,
        "connection 1 already has 1 loop running or queued; try again later."
    );
    let theirs = other
        .ok("ask", json!({"model": "fake", "prompt": "theirs"}))
        .await;
    assert_eq!(theirs["status"], json!(200), "{theirs}");
    abort(&mut client, &first_run, &first).await;
}

#[actix_web::test]
async fn an_ask_past_the_project_bound_waits_its_turn_then_runs() {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::Hang,
        Step::reply("<summarize>third</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "2")]).await;
    let (mut client, _) = app.client_in_project("turns").await;
    let (mut later, _) = app.client_in_project("turns").await;
    let mut seen = Vec::new();
    let (first, first_run) = held_ask(&mut client, &mut later, &llm, "one", 1, &mut seen).await;
    let (second, second_run) = held_ask(&mut client, &mut later, &llm, "two", 2, &mut seen).await;
    let third = later
        .send("ask", json!({"model": "fake", "prompt": "three"}))
        .await;
    eventually("the third ask waiting", async || {
        (app.server.loops_waiting_for_place() == 1).then_some(())
    })
    .await;
    assert_eq!(llm.requests().len(), 2, "it waits without calling the LLM");
    abort(&mut client, &first_run, &first).await;
    let reply = later.reply(&third).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    assert!(user_message(&llm.requests()[2]).contains("three"));
    abort(&mut client, &second_run, &second).await;
}

#[actix_web::test]
async fn a_loop_whose_client_left_keeps_its_place_until_it_ends() {
    let llm = FakeLlm::start([Step::Hang, Step::reply("<summarize>next</summarize>")]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "1")]).await;
    let (mut driver, _) = app.client_in_project("left").await;
    let (mut other, _) = app.client_in_project("left").await;
    let (_, run) = held_ask(&mut driver, &mut other, &llm, "one", 1, &mut Vec::new()).await;
    drop(driver);
    eventually("the driver's connection closing", async || {
        (app.server.connections_open() == 1).then_some(())
    })
    .await;
    let next = other
        .send("ask", json!({"model": "fake", "prompt": "next"}))
        .await;
    eventually("the next ask waiting", async || {
        (app.server.loops_waiting_for_place() == 1).then_some(())
    })
    .await;
    other.ok("run/abort", json!({"run": run})).await;
    let reply = other.reply(&next).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
}
