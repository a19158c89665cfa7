//! The guardrail hooks, for in-process plugins and plugin processes alike: `run.config`
//! clamps or refuses an `ask`/`act`'s settings, `budget.enforce` lowers the window a
//! turn's packet must fit, `turn.proposing` rewrites what clients are offered,
//! `entry.recording` refuses a command with a status of its own, and `llm.request` sees
//! every model call, memory's sidecar calls too.

use std::path::PathBuf;

use futures_util::FutureExt;
use rummy::plugins::filters::{EntryRecording, LlmMessages, Refusal, RunConfig};
use rummy::plugins::{EntryStatus, LoopMode, Plugin, Registrar};
use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::session_notes::{learning, notes, NOTES_ON};
use crate::stored::entry_named;
use crate::support::{eventually, system_message, TestApp};

/// `python3 tests/plugins/clamp.py` with `args`, as a `RUMMY_PLUGIN_<NAME>` line.
fn clamp(args: &str) -> String {
    let program = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/clamp.py");
    format!("python3 {} {args}", program.display())
}

#[actix_web::test]
async fn a_plugin_process_clamps_a_runs_settings_and_refuses_a_model() {
    let llm = FakeLlm::start([Step::reply("<summarize>done</summarize>")]);
    let line = clamp("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_CLAMP", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("clamped").await;
    let (code, message) = client
        .err("ask", json!({"model": "forbidden", "prompt": "hi"}))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32602,
            "A plugin refused the run: the model forbidden is not allowed here"
        )
    );
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "hi", "temperature": 0.9}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the refused ask made no call");
    assert_eq!(requests[0]["temperature"], json!(0.5));
}

#[actix_web::test]
async fn every_call_that_sets_a_runs_settings_passes_the_run_config_filters() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>started</summarize>"),
        Step::reply("<summarize>configured</summarize>"),
    ]);
    let line = clamp("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_CLAMP", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("doors").await;
    let started = client
        .ok("startRun", json!({"model": "fake", "temperature": 1.9}))
        .await;
    let run = started["run"].as_str().unwrap().to_owned();
    let asked = client
        .ok("ask", json!({"model": "fake", "run": run, "prompt": "hi"}))
        .await;
    assert_eq!(asked["status"], json!(200), "{asked}");
    client
        .ok("run/config", json!({"run": run, "temperature": 1.9}))
        .await;
    client
        .ok(
            "ask",
            json!({"model": "fake", "run": run, "prompt": "again"}),
        )
        .await;
    let temperatures: Vec<Value> = llm
        .requests()
        .iter()
        .map(|request| request["temperature"].clone())
        .collect();
    assert_eq!(
        temperatures,
        [json!(0.5), json!(0.5)],
        "startRun's and run/config's settings are clamped as an ask's are"
    );
    let refused = "A plugin refused the run: the model forbidden is not allowed here";
    let (code, message) = client
        .err("run/config", json!({"run": run, "model": "forbidden"}))
        .await;
    assert_eq!((code, message.as_str()), (-32602, refused));
    let (code, message) = client.err("startRun", json!({"model": "forbidden"})).await;
    assert_eq!((code, message.as_str()), (-32602, refused));
    let (code, message) = client
        .err("persona/set", json!({"run": run, "text": "be reckless"}))
        .await;
    assert_eq!(
        (code, message.as_str()),
        (-32602, "A plugin refused the run: no reckless persona here")
    );
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["persona"], Value::Null, "{stored}");
}

#[actix_web::test]
async fn a_plugin_process_lowers_the_window_and_the_turn_ends_before_the_model_call() {
    let llm = FakeLlm::start([Step::reply("<summarize>done</summarize>")]);
    let line = clamp("--window 10");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_CLAMP", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("tight").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "hi"}))
        .await;
    assert_eq!(result["status"], json!(413), "{result}");
    assert!(llm.requests().is_empty(), "no model call over the window");
}

#[actix_web::test]
async fn a_plugin_process_annotates_what_clients_are_offered() {
    let llm = FakeLlm::start([Step::reply("<sh>ls</sh><update>listing</update>")]);
    let line = clamp("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_CLAMP", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("offered").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "list"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let offered = client.notification("run/proposal").await;
    let proposal = &offered["params"]["proposed"][0];
    assert_eq!(proposal["type"], json!("sh"));
    assert_eq!(proposal["attributes"]["note"], json!("reviewed by clamp"));
    let state = client.notification("run/state").await;
    let kept = client
        .ok("run/replay", json!({"run": result["run"], "since": 0}))
        .await;
    let methods: Vec<&Value> = kept["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|notification| &notification["method"])
        .collect();
    assert_eq!(
        methods,
        ["run/progress", "run/progress", "run/proposal", "run/state"],
        "offered, then written and kept, in order"
    );
    assert_eq!(kept["notifications"][2]["params"], offered["params"]);
    assert_eq!(kept["notifications"][3]["params"], state["params"]);
}

#[actix_web::test]
async fn a_changing_plugin_tool_is_proposed_and_called_only_when_accepted() {
    let llm = FakeLlm::start([
        Step::reply("<deploy>v2</deploy>"),
        Step::reply("<summarize>deployed</summarize>"),
    ]);
    let line = clamp("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_CLAMP", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("deploys").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "deploy v2"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let path = result["proposed"][0]["path"].as_str().unwrap().to_owned();
    assert_eq!(path, "deploy://turn_1/v2");
    let run = result["run"].as_str().unwrap().to_owned();
    let resolved = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(resolved["status"], json!(200), "{resolved}");
    let (alias, named) = (run.clone(), path.clone());
    let stored = app
        .read(move |conn| entry_named(conn, &alias, &named))
        .await;
    assert_eq!(
        stored,
        Some((200, "deployed v2 (accepted, call 1)".to_owned())),
        "called once, when accepted"
    );
}

/// In process: every act becomes an ask without the web, and reading a secret is refused
/// with 422.
struct Strict;

impl Plugin for Strict {
    fn name(&self) -> &'static str {
        "strict"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.filter::<RunConfig>(100, |request, _| {
            request.mode = Some(LoopMode::Ask);
            request.no_web = true;
        });
        registrar.filter_async::<EntryRecording>(100, |mut recordable, _| {
            async move {
                let path = recordable.command.to_json()["path"].clone();
                if recordable.command.name() == "get" && path == json!("secret.txt") {
                    let refusal = Refusal::new(EntryStatus::Unprocessable, "not that file");
                    recordable.refusal = Some(refusal);
                }
                recordable
            }
            .boxed()
        });
    }
}

#[actix_web::test]
async fn an_in_process_plugin_makes_an_act_an_ask_and_refuses_a_command_with_its_status() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"secret.txt\"/><update>looking</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.plugin(Strict)).await;
    let (mut client, root) = app.client_in_project("strict").await;
    std::fs::write(root.join("secret.txt"), "hunter2").unwrap();
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "look"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let system = system_message(&llm.requests()[0]);
    assert!(!system.contains("## <sh>"), "an ask offers no sh: {system}");
    let run = result["run"].as_str().unwrap();
    let refused = client.statuses(run, "get://*").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].1, 422, "{refused:?}");
    assert_eq!(llm.requests().len(), 2, "the loop went on");
}

/// Marks each model call's system message with what the call is for.
struct Marker;

impl Plugin for Marker {
    fn name(&self) -> &'static str {
        "marker"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.filter::<LlmMessages>(100, |messages, call| {
            if let Some(system) = messages.first_mut() {
                let purpose = call.purpose.as_str();
                system.content.push_str(&format!("\n<!-- {purpose} -->"));
            }
        });
    }
}

#[actix_web::test]
async fn llm_request_filters_see_every_model_call_the_sidecars_too() {
    let llm = FakeLlm::start([
        learning("auth"),
        notes("Fix login", "auth tokens", "Use JWT bearer tokens."),
        Step::reply("<summarize>Done.</summarize>"),
        notes("Fix login, done", "auth tokens", "Use JWT bearer tokens."),
    ]);
    let app = TestApp::with_llm_and_tools(&llm, &NOTES_ON, |plugins| plugins.plugin(Marker)).await;
    let (mut client, _) = app.client_in_project("marked").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "Fix the login."}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let requests = eventually("the loop end's refresh", async || {
        let requests = llm.requests();
        (requests.len() == 4).then_some(requests)
    })
    .await;
    let marks: Vec<String> = requests
        .iter()
        .map(|request| {
            let system = system_message(request);
            system.rsplit('\n').next().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(
        marks,
        [
            "<!-- turn -->",
            "<!-- session_notes -->",
            "<!-- turn -->",
            "<!-- session_notes -->"
        ]
    );
}
