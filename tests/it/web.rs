//! The model's web tools in a real loop, against a local server that plays SearXNG and a
//! web site (`web/servers.rs`): a `<search>` is answered by the server itself and its hits
//! are an entry the next turn reads; a `<get>` of a URL stores the page, when the address is
//! allowed; a refused address or `noWeb` is an entry that says so, and the loop goes on.

mod client;
mod servers;

use serde_json::{json, Value};

use crate::support::{system_message, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use servers::{WebServer, DROPPED_SLOW};

/// A scripted model that sends `first`, then summarizes.
fn model(first: String) -> FakeLlm {
    FakeLlm::builder([
        Step::reply(first),
        Step::reply("<summarize>done</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start()
}

/// The body of the entry at `path` in the run's history (`getRun`).
async fn history_body(client: &mut Client, run: &str, path: &str) -> String {
    let detail = client.ok("getRun", json!({"run": run})).await;
    let history = detail["context"]["history"].as_array().unwrap();
    let row = history
        .iter()
        .find(|row| row["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in the history: {history:?}"));
    row["body"].as_str().unwrap().to_string()
}

/// The entry at `path` of the run, as `getEntries` lists it (no body).
async fn entry(client: &mut Client, run: &str, path: &str) -> Value {
    let entries = client
        .ok("getEntries", json!({"run": run, "pattern": path}))
        .await;
    entries
        .as_array()
        .unwrap()
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("no entry {path}: {entries}"))
}

/// What the model got in its `n`th request.
fn packet(llm: &FakeLlm, n: usize) -> String {
    let request = &llm.requests()[n];
    format!("{}\n{}", system_message(request), user_message(request))
}

#[actix_web::test]
async fn a_search_is_answered_by_searxng_and_the_next_turn_reads_the_hits() {
    let server = WebServer::start().await;
    let llm =
        model("<search results=\"2\">rust sqlite wal</search><update>searching</update>".into());
    let searxng = server.url("/");
    let app = TestApp::with_llm(&llm, &[("RUMMY_SEARXNG_URL", searxng.as_str())]).await;
    let (mut client, _) = app.client_in_project("search").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert_eq!(server.requests(), ["/search?q=rust+sqlite+wal&format=json"]);
    let run = outcome["run"].as_str().unwrap();
    let hits = entry(&mut client, run, "search://turn_1/rust%20sqlite%20wal").await;
    assert_eq!(hits["status"], json!(200), "{hits}");
    let listing = "1. rust sqlite wal result 1\n   https://example.com/1\n   snippet 1 about rust sqlite wal\n\
                   2. rust sqlite wal result 2\n   https://example.com/2\n   snippet 2 about rust sqlite wal";
    let body = history_body(&mut client, run, "search://turn_1/rust%20sqlite%20wal").await;
    assert_eq!(body, listing);
    assert!(
        packet(&llm, 1).contains(listing),
        "the next turn reads the hits"
    );
}

#[actix_web::test]
async fn a_failing_search_backend_is_an_entry_and_the_loop_goes_on() {
    let server = WebServer::start().await;
    let llm = model("<search>broken</search><update>searching</update>".into());
    let searxng = server.url("/");
    let app = TestApp::with_llm(&llm, &[("RUMMY_SEARXNG_URL", searxng.as_str())]).await;
    let (mut client, _) = app.client_in_project("broken").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert_eq!(llm.requests().len(), 2, "the loop went on");
    let run = outcome["run"].as_str().unwrap();
    let failed = entry(&mut client, run, "search://turn_1/broken").await;
    assert_eq!(failed["status"], json!(502), "{failed}");
    let told = packet(&llm, 1);
    assert!(
        told.contains("The search for \"broken\" failed: the server answered HTTP 500"),
        "{told}"
    );
}

#[actix_web::test]
async fn a_get_of_an_allowed_url_stores_the_page_for_the_next_turn() {
    let server = WebServer::start().await;
    let url = server.url("/page");
    let llm = model(format!("<get path=\"{url}\"/><update>reading</update>"));
    let app = TestApp::with_llm(&llm, &[("RUMMY_WEB_ALLOW_NETS", "127.0.0.1/32")]).await;
    let (mut client, _) = app.client_in_project("fetch").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "read the docs"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap();
    let stored = format!("http://127.0.0.1%3A{}/page", server.port());
    let page = entry(&mut client, run, &stored).await;
    assert_eq!(page["status"], json!(200), "{page}");
    assert_eq!(page["fidelity"], json!("full"), "{page}");
    assert!(page["tokens"].as_i64().unwrap() > 10, "{page}");
    let told = packet(&llm, 1);
    assert!(
        told.contains("# Welcome to the docs\n\nThe answer is **forty-two**."),
        "{told}"
    );
    assert!(!told.contains("alert('tracking')"));
    let result = client.statuses(run, "get://*").await;
    assert_eq!(result.len(), 1, "{result:?}");
    assert_eq!(result[0].1, 200, "{result:?}");
}

#[actix_web::test]
async fn a_get_of_the_servers_own_network_is_refused_and_the_loop_goes_on() {
    let server = WebServer::start().await;
    let url = server.url("/page");
    let llm = model(format!("<get path=\"{url}\"/><update>reading</update>"));
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("refused").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "read the docs"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert_eq!(llm.requests().len(), 2, "the loop went on");
    let run = outcome["run"].as_str().unwrap();
    let refused = client.statuses(run, "get://*").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].1, 403, "{refused:?}");
    let told = packet(&llm, 1);
    assert!(
        told.contains("127.0.0.1 is a loopback address: fetching it is refused"),
        "{told}"
    );
    assert_eq!(server.requests(), [] as [String; 0]);
}

#[actix_web::test]
async fn no_web_refuses_a_get_of_a_url_and_a_search_without_a_request() {
    let server = WebServer::start().await;
    let url = server.url("/page");
    let llm = model(format!(
        "<search>rust</search><get path=\"{url}\"/><update>reading</update>"
    ));
    let searxng = server.url("/");
    let env = [
        ("RUMMY_WEB_ALLOW_NETS", "127.0.0.1/32"),
        ("RUMMY_SEARXNG_URL", searxng.as_str()),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("noweb").await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "read the docs", "noWeb": true}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap();
    let searched = client.statuses(run, "search://*").await;
    assert_eq!(searched[0].1, 403, "{searched:?}");
    let refused = client.statuses(run, "get://*").await;
    assert_eq!(refused[0].1, 403, "{refused:?}");
    assert!(packet(&llm, 1).contains("this loop may not use the web (noWeb)"));
    assert_eq!(server.requests(), [] as [String; 0]);
}

#[actix_web::test]
async fn an_abort_drops_the_fetch_in_flight() {
    let server = WebServer::start().await;
    let url = server.url("/slow");
    let llm = model(format!("<get path=\"{url}\"/><update>reading</update>"));
    let env = [
        ("RUMMY_WEB_ALLOW_NETS", "127.0.0.1/32"),
        ("RUMMY_WEB_TIMEOUT_MS", "600000"),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut driver, _) = app.client_in_project("abort").await;
    let (mut observer, _) = app.client_in_project("abort").await;
    let id = driver
        .send("ask", json!({"model": "fake", "prompt": "read it"}))
        .await;
    let progress = observer.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    server.wait_for("/slow").await;
    observer.ok("run/abort", json!({"run": run})).await;
    let aborted = driver.reply(&id).await;
    assert_eq!(aborted["result"]["status"], json!(499), "{aborted}");
    server.wait_for(DROPPED_SLOW).await;
    assert_eq!(llm.requests().len(), 1);
}
