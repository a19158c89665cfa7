//! End to end against a real model: SmolLM2-135M behind an OpenAI-compatible server on
//! loopback (`tests/llm/serve-smollm.sh`, started by `tests/run.sh`, which exports
//! `RUMMY_TEST_LLM_URL`). The model is tiny and its output messy: these tests check that
//! rummy turns whatever it says into a finished loop, never a server error or a stuck run.
//!
//! Each test is `#[ignore]`d so that a plain `cargo test` never reports one as passed when
//! it did not run; `tests/run.sh` runs them (`--ignored`) once the model is up.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};

/// The real model's server. These tests run only when asked for (`--ignored`), so a
/// missing URL is a failure, not a skip.
fn llm_url() -> String {
    match std::env::var("RUMMY_TEST_LLM_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!("RUMMY_TEST_LLM_URL is not set: run the end-to-end tests with tests/run.sh"),
    }
}

async fn app_with_real_llm(url: &str) -> TestApp {
    let context = std::env::var("RUMMY_TEST_LLM_CONTEXT").unwrap_or_else(|_| "8192".into());
    TestApp::start_with(&[
        ("OPENAI_BASE_URL", url),
        ("RUMMY_MODEL_smol", "openai/smollm2"),
        ("RUMMY_CONTEXT_smol", context.as_str()),
        ("RUMMY_MAX_TURNS", "3"),
        ("RUMMY_TEMPERATURE", "0"),
        ("RUMMY_MAX_COMPLETION_TOKENS", "400"),
    ])
    .await
}

/// A small project: two source files and a README.
async fn small_project(app: &TestApp) -> Client {
    let (client, root) = app.client_in_project("smol").await;
    std::fs::write(root.join("README.md"), "# demo\nA tiny demo project.\n").unwrap();
    std::fs::write(
        root.join("app.js"),
        "const port = 3000;\nconsole.log(`listening on ${port}`);\n",
    )
    .unwrap();
    std::fs::write(
        root.join("util.js"),
        "export const add = (a, b) => a + b;\n",
    )
    .unwrap();
    client
}

/// The loop ended with 200 or 202; otherwise the failure names the run's error entries.
async fn assert_finished(client: &mut Client, outcome: &Value) {
    let status = outcome["status"].as_i64().unwrap_or_default();
    if [200, 202].contains(&status) {
        return;
    }
    let run = outcome["run"].as_str().unwrap_or_default();
    let errors = client
        .ok("getEntries", json!({"run": run, "pattern": "error://*"}))
        .await;
    let mut bodies = Vec::new();
    for error in errors.as_array().into_iter().flatten() {
        let path = error["path"].as_str().unwrap_or_default();
        let entry = client
            .ok(
                "getEntries",
                json!({"run": run, "pattern": path, "limit": 1}),
            )
            .await;
        bodies.push(format!("{path}: {entry}"));
    }
    panic!("a real-model loop ends with 200 or 202, not {outcome}; errors: {bodies:?}");
}

/// Prints the packet the model saw on the first turn and what it answered (from the first
/// `run/state`), so a run of the suite shows one real exchange.
async fn show_first_exchange(client: &mut Client) {
    let state = client.notification("run/state").await;
    for row in state["params"]["history"].as_array().into_iter().flatten() {
        let path = row["path"].as_str().unwrap_or_default();
        if ["system://1", "user://1", "assistant://1"].contains(&path) {
            eprintln!(
                "----- {path} -----\n{}",
                row["body"].as_str().unwrap_or_default()
            );
        }
    }
}

#[actix_web::test]
#[ignore = "needs the real LLM: tests/run.sh runs it when RUMMY_TEST_LLM_URL is set"]
async fn an_ask_loop_on_a_real_model_finishes() {
    let url = llm_url();
    let app = app_with_real_llm(&url).await;
    let mut client = small_project(&app).await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "smol", "prompt": "What port does app.js listen on?"}),
        )
        .await;
    assert_finished(&mut client, &outcome).await;
    show_first_exchange(&mut client).await;
    let run = outcome["run"].as_str().unwrap();
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_ne!(detail["status"], json!(102), "never left running: {detail}");
    assert_ne!(detail["status"], json!(500), "no server error: {detail}");
    let files = client
        .ok("getEntries", json!({"run": run, "pattern": "*.js"}))
        .await;
    assert_eq!(
        files.as_array().unwrap().len(),
        2,
        "the project was scanned: {files}"
    );
}

#[actix_web::test]
#[ignore = "needs the real LLM: tests/run.sh runs it when RUMMY_TEST_LLM_URL is set"]
async fn an_act_loop_on_a_real_model_finishes_after_resolving_its_proposals() {
    let url = llm_url();
    let app = app_with_real_llm(&url).await;
    let mut client = small_project(&app).await;
    let mut outcome = client
        .ok(
            "act",
            json!({"model": "smol", "prompt": "Change the port in app.js to 8080."}),
        )
        .await;
    for _ in 0..5 {
        assert_finished(&mut client, &outcome).await;
        if outcome["status"] != json!(202) {
            break;
        }
        let run = outcome["run"].as_str().unwrap().to_string();
        let path = outcome["proposed"][0]["path"].as_str().unwrap().to_string();
        outcome = client
            .ok(
                "run/resolve",
                json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "ok"}}),
            )
            .await;
    }
    assert_finished(&mut client, &outcome).await;
    let runs = client.ok("getRuns", json!({})).await;
    assert_ne!(runs[0]["status"], json!(500), "no server error: {runs}");
}
