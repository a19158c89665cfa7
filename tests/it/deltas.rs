//! The model's words as they come (issue 42, streaming): a connection that watches a run
//! with `deltas: true` is sent `run/delta` pieces of each turn's reply, in order, whose
//! concatenation is the reply; a connection that did not ask gets none; one that reads
//! nothing meanwhile, even while a long reply fills its socket and its mailbox, does not
//! hold the run; leaving the run or watching it without deltas stops them, leaving another
//! run does not; pieces that come together are sent together; a stream that breaks ends the
//! turn with an error that keeps the words that had come; a one-turn question is still one
//! model call; a turn whose words no connection watches when its call starts is not
//! streamed at all.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, StreamEnd, Streamed};

/// The `run/delta` texts `client` received for `run`, in order, up to the run's outcome.
async fn deltas_until_outcome(client: &mut Client, run: &str) -> Vec<Value> {
    let mut deltas = Vec::new();
    loop {
        let notification = client.next_notification().await;
        match notification["method"].as_str() {
            Some("run/delta") => deltas.push(notification["params"].clone()),
            Some("run/outcome") if notification["params"]["run"] == run => return deltas,
            _ => {}
        }
    }
}

fn joined(deltas: &[Value]) -> String {
    deltas
        .iter()
        .map(|delta| delta["text"].as_str().unwrap())
        .collect()
}

#[actix_web::test]
async fn a_watcher_asking_for_deltas_gets_the_words_in_order_and_no_one_else_does() {
    let reply = format!(
        "<summarize>{}</summarize>",
        "the words come one after the other, ".repeat(6)
    );
    let llm = FakeLlm::start([Step::Paced(
        Reply::new(reply.clone()),
        Duration::from_millis(15),
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;
    let (mut watcher, _) = app.client_in_project("team").await;
    let (mut idle, _) = app.client_in_project("team").await;
    watcher
        .ok("run/watch", json!({"run": run, "deltas": true}))
        .await;
    idle.ok("run/watch", json!({"run": run, "deltas": true}))
        .await;

    // `idle` reads nothing until the run has ended: it does not hold the run.
    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    let deltas = deltas_until_outcome(&mut watcher, &run).await;

    assert!(deltas.len() > 1, "the words came in pieces: {deltas:?}");
    assert_eq!(joined(&deltas), reply);
    assert!(deltas
        .iter()
        .all(|delta| delta["run"] == json!(run) && delta["turn"] == deltas[0]["turn"]));
    assert_eq!(joined(&deltas_until_outcome(&mut idle, &run).await), reply);
    assert_eq!(llm.requests().len(), 1, "one question, one model call");
    let driver_told: Vec<&Value> = driver
        .pending_notifications()
        .iter()
        .filter(|notification| notification["method"] == "run/delta")
        .collect();
    assert!(
        driver_told.is_empty(),
        "not asked, not sent: {driver_told:?}"
    );
    let replayed = driver
        .ok("run/replay", json!({"run": run, "since": 0}))
        .await;
    assert!(
        !replayed.to_string().contains("run/delta"),
        "deltas are not kept: {replayed}"
    );
}

#[actix_web::test]
async fn a_stream_that_breaks_ends_the_turn_with_an_error_keeping_what_came() {
    let piece = |text: &str| json!({"choices": [{"delta": {"content": text}}]}).to_string();
    let llm = FakeLlm::start([Step::Stream(
        Streamed::events([piece("<summarize>half "), piece("of the answer")])
            .ending(StreamEnd::Broken),
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;

    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    let outcome = driver
        .until_notified("run/outcome", |params| params["run"] == json!(run))
        .await;

    assert_eq!(outcome["params"]["status"], json!(500), "{outcome}");
    let detail = driver
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "error://*",
                   "body": "*stream broke*half of the answer*"}),
        )
        .await
        .to_string();
    assert!(
        detail.contains("error://1"),
        "the error keeps the words: {detail}"
    );
    assert_eq!(
        llm.requests().len(),
        1,
        "a broken stream is not asked again"
    );
}

#[actix_web::test]
async fn leaving_the_run_or_watching_it_without_deltas_stops_them_and_leaving_another_does_not() {
    let reply = format!("<summarize>{}</summarize>", "still watched, ".repeat(4));
    let llm = FakeLlm::start([Step::Paced(
        Reply::new(reply.clone()),
        Duration::from_millis(10),
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;
    let other = driver.start_run("fake").await;
    let (mut stays, _) = app.client_in_project("team").await;
    let (mut leaves, _) = app.client_in_project("team").await;
    let (mut declines, _) = app.client_in_project("team").await;
    for client in [&mut stays, &mut leaves, &mut declines] {
        client
            .ok("run/watch", json!({"run": run, "deltas": true}))
            .await;
    }
    stays.ok("run/unwatch", json!({"run": other})).await;
    leaves.ok("run/unwatch", json!({"run": run})).await;
    declines.ok("run/watch", json!({"run": run})).await;

    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;

    assert_eq!(joined(&deltas_until_outcome(&mut stays, &run).await), reply);
    for client in [&mut leaves, &mut declines] {
        let deltas = deltas_until_outcome(client, &run).await;
        assert!(deltas.is_empty(), "no longer asked, not sent: {deltas:?}");
    }
}

#[actix_web::test]
async fn pieces_that_come_together_are_sent_together() {
    // 8 characters an event: about 60 events, all at once.
    let reply = format!("<summarize>{}</summarize>", "all at once, ".repeat(36));
    let llm = FakeLlm::start([Step::reply(reply.clone())]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;
    let (mut watcher, _) = app.client_in_project("team").await;
    watcher
        .ok("run/watch", json!({"run": run, "deltas": true}))
        .await;

    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    let deltas = deltas_until_outcome(&mut watcher, &run).await;

    assert_eq!(joined(&deltas), reply);
    assert!(
        deltas.len() < 15,
        "{} frames for {} events: they coalesce",
        deltas.len(),
        reply.len() / 8
    );
}

#[actix_web::test]
async fn a_call_is_streamed_only_when_a_connection_watches_the_words_of_its_run() {
    let first = "<summarize>no one is watching</summarize>";
    let second = format!(
        "<summarize>{}</summarize>",
        "someone is watching, ".repeat(4)
    );
    let llm = FakeLlm::start([Step::reply(first), Step::reply(second.clone())]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;

    driver
        .ok("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    driver
        .until_notified("run/outcome", |params| params["run"] == json!(run))
        .await;
    let unwatched = &llm.requests()[0];
    assert_eq!(
        (unwatched.get("stream"), unwatched.get("stream_options")),
        (None, None),
        "asked whole: {unwatched}"
    );

    let (mut watcher, _) = app.client_in_project("team").await;
    watcher
        .ok("run/watch", json!({"run": run, "deltas": true}))
        .await;
    driver
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    let deltas = deltas_until_outcome(&mut watcher, &run).await;

    let watched = &llm.requests()[1];
    assert_eq!(watched["stream"], json!(true), "{watched}");
    assert_eq!(watched["stream_options"], json!({"include_usage": true}));
    assert_eq!(joined(&deltas), second);
    assert_eq!(llm.requests().len(), 2, "one model call a question");
}

#[actix_web::test]
async fn a_watcher_that_stops_reading_a_long_reply_does_not_hold_the_run() {
    // Far more than a socket's buffers take: what the deaf watcher is sent piles up for it.
    let reply = format!(
        "<summarize>{}</summarize>",
        "a long answer nobody reads whole. ".repeat(270_000)
    );
    // 256 events 20 ms apart: more frames than the socket and a mailbox of 16 hold.
    let llm = FakeLlm::start([Step::Paced(
        Reply::new(reply.clone()),
        Duration::from_millis(20),
    )]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CLIENT_BUFFER", "16")]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;
    let (mut reader, _) = app.client_in_project("team").await;
    let (mut deaf, _) = app.client_in_project("team").await;
    deaf.ok("run/watch", json!({"run": run, "deltas": true}))
        .await;
    reader
        .ok("run/watch", json!({"run": run, "deltas": true}))
        .await;

    // From here on `deaf` never reads its socket.
    let asked = driver
        .send("ask", json!({"model": "fake", "prompt": "go", "run": run}))
        .await;
    let deltas = tokio::time::timeout(
        Duration::from_secs(60),
        deltas_until_outcome(&mut reader, &run),
    )
    .await
    .expect("the run ended though a watcher stopped reading");

    assert_eq!(joined(&deltas).len(), reply.len());
    assert!(joined(&deltas) == reply, "the whole reply, in order");
    assert!(
        deltas.len() > 1 && deltas.len() < 200,
        "{} frames for 256 events: they coalesce",
        deltas.len()
    );
    let answered = driver.reply(&asked).await;
    assert_eq!(answered["result"]["status"], json!(200), "{answered}");
    drop(deaf);
}
