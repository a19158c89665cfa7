//! End to end against a real model: SmolLM2-135M behind an OpenAI-compatible server on
//! loopback (`tests/llm/serve-smollm.sh`, started by `tests/run.sh`, which exports
//! `RUMMY_TEST_LLM_URL`). The model is tiny and its output messy: these tests check that
//! rummy turns whatever it says into a finished loop, never a server error or a stuck run —
//! memory's recall, session notes by a sidecar call and their consolidation included —
//! and that an editor's session through `rummy acp` (the ACP TypeScript SDK, as in
//! `acp.rs`) ends its turn, whatever the model says.
//!
//! Each test is `#[ignore]`d so that a plain `cargo test` never reports one as passed when
//! it did not run; `tests/run.sh` runs them (`--ignored`) once the model is up.

use serde_json::{json, Value};

use crate::acp::{Drive, Sdk};
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
    app_with_real_llm_and(url, &[]).await
}

/// [`app_with_real_llm`] with `extra` settings besides.
async fn app_with_real_llm_and(url: &str, extra: &[(&str, &str)]) -> TestApp {
    let context = std::env::var("RUMMY_TEST_LLM_CONTEXT").unwrap_or_else(|_| "8192".into());
    let mut env = vec![
        ("OPENAI_BASE_URL", url),
        ("RUMMY_MODEL_smol", "openai/smollm2"),
        ("RUMMY_CONTEXT_smol", context.as_str()),
        ("RUMMY_MAX_TURNS", "3"),
        ("RUMMY_TEMPERATURE", "0"),
        ("RUMMY_MAX_COMPLETION_TOKENS", "400"),
    ];
    env.extend_from_slice(extra);
    TestApp::start_with(&env).await
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
    let app = app_with_real_llm_and(&url, &[("RUMMY_PRICE_smol", "0.15,0.075,0.6")]).await;
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
    usage_is_accounted(&mut client, &detail).await;
}

/// The run's calls are in `usage/report` with the model's tokens and their cost at the
/// price set; the report is kept in `target/e2e-usage-report.json` for people to read.
async fn usage_is_accounted(client: &mut Client, detail: &Value) {
    let telemetry = &detail["context"]["telemetry"];
    let calls: u64 = telemetry["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|purpose| purpose["calls"].as_u64().unwrap())
        .sum();
    let report = client.ok("usage/report", json!({"by": "purpose"})).await;
    assert_eq!(report["total"]["calls"], json!(calls), "{report}");
    assert_eq!(report["total"]["prompt_tokens"], telemetry["prompt_tokens"]);
    assert!(
        report["total"]["prompt_tokens"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert!(
        report["total"]["cost_micros"].as_u64().unwrap() > 0,
        "{report}"
    );
    let by_model = client.ok("usage/report", json!({"by": "model"})).await;
    let kept = json!({"by_purpose": report, "by_model": by_model, "run": detail["run"]});
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/e2e-usage-report.json");
    std::fs::write(path, serde_json::to_string_pretty(&kept).unwrap()).unwrap();
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

/// The body of `path` in the first `run/state`'s history.
async fn first_state_body(client: &mut Client, path: &str) -> String {
    let state = client.notification("run/state").await;
    state["params"]["history"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|row| row["path"] == json!(path))
        .and_then(|row| row["body"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[actix_web::test]
#[ignore = "needs the real LLM: tests/run.sh runs it when RUMMY_TEST_LLM_URL is set"]
async fn the_memory_pipeline_runs_on_a_real_model_and_never_breaks_a_loop() {
    let url = llm_url();
    let app = app_with_real_llm_and(
        &url,
        &[
            ("RUMMY_MEMORY_SESSION_TOKENS", "600"),
            ("RUMMY_MEMORY_SESSION_EVERY_TURNS", "1"),
            ("RUMMY_MEMORY_SESSION_TIMEOUT_SECS", "120"),
        ],
    )
    .await;
    let mut client = small_project(&app).await;
    client
        .ok(
            "memory/set",
            json!({"topic": "server port", "body": "The app listens on port 3000, set in app.js."}),
        )
        .await;
    let first = client
        .ok(
            "ask",
            json!({"model": "smol", "prompt": "Which port does the server listen on?"}),
        )
        .await;
    assert_finished(&mut client, &first).await;
    let packet = first_state_body(&mut client, "user://1").await;
    let memory = packet
        .find("<memory>")
        .and_then(|start| {
            packet[start..]
                .find("</memory>")
                .map(|end| &packet[start..start + end + "</memory>".len()])
        })
        .unwrap_or_else(|| panic!("no <memory> in the first packet: {packet}"));
    eprintln!("----- the recall the model saw -----\n{memory}");
    assert!(
        memory.contains("- [project] server port: The app listens on port 3000, set in app.js."),
        "{memory}"
    );

    let run = first["run"].as_str().unwrap();
    let second = client
        .ok(
            "ask",
            json!({"model": "smol", "prompt": "And which file sets it?", "run": run}),
        )
        .await;
    assert_finished(&mut client, &second).await;
    let session = client.ok("memory/session", json!({"run": run})).await;
    eprintln!("----- the run's session notes -----\n{session:#}");
    match &session["notes"] {
        Value::Null => eprintln!(
            "the small model's notes were refused or failed (logged as 'session notes: ...'); the loops completed"
        ),
        notes => {
            let title = notes["title"].as_str().unwrap_or_default();
            assert!(
                !title.trim().is_empty() && title.chars().count() <= 120,
                "{notes}"
            );
            assert!(
                session["rendered"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with(&format!("# {title}")),
                "{session}"
            );
        }
    }
    let facts = client.ok("memory/list", json!({})).await;
    let history = client.ok("memory/list", json!({"history": true})).await;
    let kept = [&facts, &history].iter().any(|list| {
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|item| item["body"] == json!("The app listens on port 3000, set in app.js."))
    });
    assert!(
        kept,
        "consolidation replaces facts, never loses one: {facts} {history}"
    );
    for outcome in [&first, &second] {
        let detail = client.ok("getRun", json!({"run": outcome["run"]})).await;
        assert_ne!(detail["status"], json!(500), "no server error: {detail}");
    }
}

#[actix_web::test]
#[ignore = "needs the real model (tests/run.sh starts it) and node with `npm ci` in tests/acp"]
async fn an_editor_session_on_a_real_model_ends_its_turn() {
    let url = llm_url();
    let context = std::env::var("RUMMY_TEST_LLM_CONTEXT").unwrap_or_else(|_| "8192".into());
    let model = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("RUMMY_MODEL_smol", "openai/smollm2"),
        ("RUMMY_CONTEXT_smol", context.as_str()),
        ("RUMMY_MAX_TURNS", "3"),
        ("RUMMY_TEMPERATURE", "0"),
        ("RUMMY_MAX_COMPLETION_TOKENS", "400"),
    ];
    let home = tempfile::tempdir().unwrap();
    let drive = Drive::spawn(Sdk::TypeScript, "edit-allow", home, "demo", None, &model).await;
    drive.assert_clean_session();
    let ended = drive.seen["stopReasons"].as_array().unwrap();
    assert_eq!(ended.len(), 1, "{}", drive.seen);
    assert!(
        ["end_turn", "max_turn_requests", "refusal"].contains(&ended[0].as_str().unwrap()),
        "the turn ends whatever the model says: {}",
        drive.seen
    );
    assert!(
        drive.seen["errors"]
            .as_array()
            .unwrap()
            .iter()
            .all(|error| error["what"] == "unknown session"),
        "no error but the unknown session's: {}",
        drive.seen
    );
}
