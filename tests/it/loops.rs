//! Agent loops against a scripted OpenAI-compatible server: the real reqwest client, the
//! real run actors, the real store.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{system_message, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step};

async fn project(app: &TestApp) -> Client {
    app.client_in_project("loops").await.0
}

#[actix_web::test]
async fn one_turn_summarize_completes_with_notifications() {
    let llm = FakeLlm::start([Step::reply("<summarize>The answer is 4.</summarize>")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "What is 2 + 2?"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    assert_eq!(
        result["reason"],
        json!("done"),
        "the model said it was done"
    );
    let run = result["run"].as_str().unwrap().to_string();
    let thinking = client.notification("run/progress").await;
    assert_eq!(thinking["params"]["status"], json!("thinking"));
    assert_eq!(thinking["params"]["run"], json!(run));
    let processing = client.notification("run/progress").await;
    assert_eq!(processing["params"]["status"], json!("processing"));
    let state = client.notification("run/state").await;
    assert_eq!(state["params"]["summary"], json!("The answer is 4."));
    assert_eq!(state["params"]["status"], json!(102));
    let first = thinking["params"]["seq"].as_u64().unwrap();
    assert_eq!(
        state["params"]["seq"],
        json!(first + 2),
        "the run's third notification"
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert!(user_message(&requests[0]).contains("What is 2 + 2?"));
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["status"], json!(200));
    assert_eq!(runs[0]["summary"], json!("The answer is 4."));
    assert_eq!(runs[0]["turn"], json!(1));
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["last_summary"], json!("The answer is 4."));
    assert_eq!(detail["last_user_prompt"], json!("What is 2 + 2?"));
}

#[actix_web::test]
async fn knowledge_from_one_turn_is_in_the_next_packet() {
    let llm = FakeLlm::start([
        Step::reply(
            "<known path=\"known://deploy\" summary=\"deploy,target\">staging cluster</known>\
             <unknown>which region</unknown><update>noting</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "remember"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let system = system_message(&requests[1]);
    assert!(system.contains("known://deploy"), "{system}");
    assert!(system.contains("staging cluster"), "{system}");
    assert!(system.contains("which region"), "{system}");
    let run = result["run"].as_str().unwrap();
    let known = client
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    assert_eq!(known[0]["path"], json!("known://deploy"));
}

#[actix_web::test]
async fn an_act_loop_proposes_a_command_and_resumes_after_accept() {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo hello</sh><update>running it</update>"),
        Step::reply("<summarize>it printed hello</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "Run: echo hello"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let proposed = result["proposed"].as_array().unwrap();
    assert_eq!(proposed.len(), 1);
    let path = proposed[0]["path"].as_str().unwrap().to_string();
    assert!(path.starts_with("sh://"), "{path}");
    assert_eq!(proposed[0]["body"], json!("echo hello"));
    let announced = client.notification("run/proposal").await;
    assert_eq!(announced["params"]["proposed"][0]["path"], json!(path));
    assert_eq!(announced["params"]["proposed"][0]["type"], json!("sh"));
    assert_eq!(
        announced["params"]["proposed"][0]["attributes"]["command"],
        json!("echo hello")
    );
    let state = client.notification("run/state").await;
    assert_eq!(state["params"]["status"], json!(202), "{state}");
    assert_eq!(
        state["params"]["proposed"],
        json!([{"path": path, "type": "sh", "attributes": {"command": "echo hello"}}]),
        "{state}"
    );
    let run = result["run"].as_str().unwrap().to_string();
    let blocked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    assert_eq!(blocked["status"], json!(202));
    assert_eq!(blocked["remainingCount"], json!(1));
    let resumed = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "hello-from-the-shell\n"}}),
        )
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        user_message(&requests[1]).contains("hello-from-the-shell"),
        "the command output reaches the model"
    );
}

#[actix_web::test]
async fn rejecting_the_last_proposal_stops_the_run() {
    let llm = FakeLlm::start([Step::reply(
        "<sh>rm -rf build</sh><update>cleaning</update>",
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "clean"}))
        .await;
    let run = result["run"].as_str().unwrap().to_string();
    let path = result["proposed"][0]["path"].as_str().unwrap().to_string();
    let rejected = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "reject"}}),
        )
        .await;
    assert_eq!(rejected["status"], json!(200));
    assert_eq!(rejected["reason"], json!("rejected"));
    assert_eq!(
        llm.requests().len(),
        1,
        "a rejection does not resume the model"
    );
    let (code, _) = client
        .err(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(code, -32602, "a resolved proposal cannot be resolved again");
}

#[actix_web::test]
async fn accepting_a_proposal_made_with_a_summary_ends_the_run_done() {
    let llm = FakeLlm::start([Step::reply(
        "<sh>echo hi</sh><summarize>Said hi.</summarize>",
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let (run, path) = client.act_until_proposal("greet").await;
    let accepted = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "hi\n"}}),
        )
        .await;
    assert_eq!(accepted["status"], json!(200), "{accepted}");
    assert_eq!(accepted["reason"], json!("done"));
    assert_eq!(llm.requests().len(), 1, "the model had already summarized");
}

#[actix_web::test]
async fn an_error_resolution_lets_the_model_retry() {
    let llm = FakeLlm::start([
        Step::reply("<env>node --version</env><update>checking</update>"),
        Step::reply("<summarize>node is missing</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "node version?"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let run = result["run"].as_str().unwrap().to_string();
    let path = result["proposed"][0]["path"].as_str().unwrap().to_string();
    let outcome = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "error", "output": "node: not found"}}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200));
    assert!(user_message(&llm.requests()[1]).contains("node: not found"));
}

#[actix_web::test]
async fn abort_from_another_connection_drops_the_llm_request() {
    let llm = FakeLlm::start([Step::Hang]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("abort").await;
    let (mut other, _) = app.client_in_project("abort").await;
    let id = driver
        .send("ask", json!({"model": "fake", "prompt": "think forever"}))
        .await;
    let progress = other.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    llm.wait_for_requests(1).await;
    other.ok("run/abort", json!({"run": run})).await;
    let reply = driver.reply(&id).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    assert_eq!(reply["result"]["reason"], json!("aborted"));
    llm.wait_for_dropped(1).await;
    let runs = other.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["status"], json!(499));
}

#[actix_web::test]
async fn inject_into_a_running_loop_reaches_the_next_turn() {
    let llm = FakeLlm::start([
        Step::delayed(
            Duration::from_secs(2),
            Reply::new("<update>still looking</update>"),
        ),
        Step::reply("<summarize>used the hint</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("inject").await;
    let (mut other, _) = app.client_in_project("inject").await;
    let id = driver
        .send("ask", json!({"model": "fake", "prompt": "find the bug"}))
        .await;
    let progress = other.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    let injected = other
        .ok(
            "run/inject",
            json!({"run": run, "message": "look in parser.rs"}),
        )
        .await;
    assert_eq!(injected["injected"], json!("next_turn"));
    let reply = driver.reply(&id).await;
    assert_eq!(reply["result"]["status"], json!(200));
    assert!(user_message(&llm.requests()[1]).contains("look in parser.rs"));
}

#[actix_web::test]
async fn inject_into_an_idle_run_runs_a_new_loop() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>first</summarize>"),
        Step::reply("<summarize>second</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "one"}))
        .await;
    let run = first["run"].as_str().unwrap();
    let second = client
        .ok("run/inject", json!({"run": run, "message": "two"}))
        .await;
    assert_eq!(second["status"], json!(200));
    assert!(user_message(&llm.requests()[1]).contains("two"));
}

#[actix_web::test]
async fn fork_continues_in_a_copy() {
    let llm = FakeLlm::start([
        Step::reply("<known path=\"known://fact\">sky is blue</known><summarize>noted</summarize>"),
        Step::reply("<summarize>forked</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "note"}))
        .await;
    let parent = first["run"].as_str().unwrap().to_string();
    let fork = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "recall", "run": parent, "fork": true}),
        )
        .await;
    let child = fork["run"].as_str().unwrap();
    assert_ne!(child, parent);
    assert!(system_message(&llm.requests()[1]).contains("sky is blue"));
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs.as_array().unwrap().len(), 2);
}

#[actix_web::test]
async fn garbage_output_is_healed_and_the_run_completes() {
    let llm = FakeLlm::start([Step::reply("I think the answer is probably 42, honestly.")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(200));
    let runs = client.ok("getRuns", json!({})).await;
    assert!(runs[0]["summary"].as_str().unwrap().contains("42"));
}

/// A reply of broken tags ends the run cleanly, with what could be recovered recorded:
/// the unclosed `<get …` is text (never run), the `<set>` with an unquoted path still files
/// its fact, and with no status tag the healer takes the reply as the answer.
#[actix_web::test]
async fn malformed_tags_never_crash_a_run() {
    let reply = "<get path=\"src/app.js\"<set path=known://x>unclosed <<<<<<< SEARCH\n<update>";
    let llm = FakeLlm::builder([Step::reply(reply)])
        .when_exhausted(rummy::testing::fake_llm::WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    assert_eq!(llm.requests().len(), 1);
    let run = result["run"].as_str().unwrap();
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(200), "not left running");
    let history: Vec<(&str, &Value, &Value)> = detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["scheme"].as_str().unwrap(),
                &row["status"],
                &row["body"],
            )
        })
        .collect();
    let schemes: Vec<&str> = history.iter().map(|(scheme, _, _)| *scheme).collect();
    assert_eq!(
        schemes,
        ["prompt", "set", "known", "summarize"],
        "{history:?}"
    );
    assert_eq!(
        history[2],
        ("known", &json!(200), &json!("unclosed <<<<<<< SEARCH"))
    );
    assert_eq!(history[3].2, &json!(reply), "the healed answer");
    let errors = client
        .ok("getEntries", json!({"run": run, "pattern": "error://*"}))
        .await;
    assert_eq!(errors, json!([]));
    assert_eq!(
        detail["context"]["content"][0]["body"],
        json!("<get path=\"src/app.js\""),
        "the broken tag is kept as text"
    );
}

#[actix_web::test]
async fn repeating_the_same_call_is_a_cycle_that_stops() {
    let llm = FakeLlm::builder([])
        .when_exhausted(rummy::testing::fake_llm::WhenExhausted::Reply(Reply::new(
            "<get path=\"known://nothing\"/><update>looking</update>",
        )))
        .start();
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_TURNS", "12")]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(200));
    assert_eq!(result["reason"], json!("stalled"));
    assert!(llm.requests().len() < 12, "stopped by the cycle check");
}

#[actix_web::test]
async fn turns_without_a_status_stall_and_stop() {
    let llm = FakeLlm::builder([])
        .when_exhausted(rummy::testing::fake_llm::WhenExhausted::Reply(Reply::new(
            "<think>hmm</think>",
        )))
        .start();
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_TURNS", "10")]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(200));
    assert!(llm.requests().len() < 10);
}

#[actix_web::test]
async fn the_turn_limit_ends_the_loop() {
    let mut count = 0;
    let steps = std::iter::from_fn(|| {
        count += 1;
        Some(Step::reply(format!(
            "<known path=\"known://step{count}\">fact {count}</known><update>step {count}</update>"
        )))
    })
    .take(5);
    let llm = FakeLlm::start(steps);
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_TURNS", "3")]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(200));
    assert_eq!(result["reason"], json!("turn_limit"));
    assert_eq!(llm.requests().len(), 3);
}

/// A chat completion whose message refuses, as OpenAI sends one.
fn refusal(text: &str, finish_reason: &str) -> Step {
    Step::Json(json!({
        "id": "chatcmpl-refused",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": null, "refusal": text}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
}

#[actix_web::test]
async fn a_refusal_ends_the_loop_refused_and_its_text_is_the_answer() {
    let llm = FakeLlm::start([
        refusal("I cannot help with that.", "stop"),
        Step::reply("<summarize>never asked</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "something bad"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    assert_eq!(result["reason"], json!("refused"));
    assert_eq!(llm.requests().len(), 1, "a refusal is not asked again");
    let run = result["run"].as_str().unwrap();
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["last_summary"], json!("I cannot help with that."));
}

#[actix_web::test]
async fn a_filtered_reply_ends_the_loop_refused() {
    let llm = FakeLlm::start([Step::Json(json!({
        "choices": [{"index": 0, "finish_reason": "content_filter",
                     "message": {"role": "assistant", "content": "<update>going on</update>"}}],
    }))]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["reason"], json!("refused"), "{result}");
    assert_eq!(llm.requests().len(), 1);
}

#[actix_web::test]
async fn a_provider_error_fails_the_run_with_an_error_entry() {
    let llm = FakeLlm::start([Step::error(500)]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(500));
    assert_eq!(result["reason"], json!("failed"));
    let run = result["run"].as_str().unwrap();
    let errors = client
        .ok("getEntries", json!({"run": run, "pattern": "error://*"}))
        .await;
    assert_eq!(errors.as_array().unwrap().len(), 1, "{errors}");
    assert_eq!(errors[0]["status"], json!(500), "the error entry says so");
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["status"], json!(500));
}

#[actix_web::test]
async fn a_provider_timeout_fails_the_run_not_leaving_it_running() {
    let llm = FakeLlm::start([Step::Hang]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_FETCH_TIMEOUT", "300")]).await;
    let mut client = project(&app).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "?"}))
        .await;
    assert_eq!(result["status"], json!(500));
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["status"], json!(500));
}

#[actix_web::test]
async fn an_unknown_model_is_refused_before_any_run_exists() {
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let (code, message) = client
        .err("ask", json!({"model": "nosuch", "prompt": "x"}))
        .await;
    assert_eq!(code, -32003);
    assert!(message.starts_with("Unknown model alias 'nosuch'."));
    assert_eq!(client.ok("getRuns", json!({})).await, json!([]));
}

#[actix_web::test]
async fn an_accepted_edit_is_applied_by_the_server_when_configured() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"app.js\">s/3000/8080/</set><update>changing the port</update>"),
        Step::reply("<summarize>port changed</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_APPLY_EDITS", "server")]).await;
    let (mut client, root) = app.client_in_project("apply").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let proposed = client
        .ok("act", json!({"model": "fake", "prompt": "use port 8080"}))
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let path = proposed["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let attributes: Value =
        serde_json::from_str(proposed["proposed"][0]["attributes"].as_str().unwrap()).unwrap();
    assert!(
        attributes["patch"]
            .as_str()
            .unwrap()
            .contains("+const port = 8080;"),
        "{attributes}"
    );
    let run = proposed["run"].as_str().unwrap().to_string();
    let done = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(done["status"], json!(200), "{done}");
    assert_eq!(
        std::fs::read_to_string(root.join("app.js")).unwrap(),
        "const port = 8080;\n"
    );
}

#[actix_web::test]
async fn ask_user_proposes_a_question_and_the_answer_reaches_the_model() {
    let llm = FakeLlm::start([
        Step::reply(
            "<ask_user question=\"Which database?\" options=\"postgres; sqlite\"/><update>asking</update>",
        ),
        Step::reply("<summarize>using sqlite</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let asked = client
        .ok("ask", json!({"model": "fake", "prompt": "set up storage"}))
        .await;
    assert_eq!(asked["status"], json!(202), "{asked}");
    let proposal = &asked["proposed"][0];
    assert!(proposal["path"]
        .as_str()
        .unwrap()
        .starts_with("ask_user://"));
    let attributes: Value = serde_json::from_str(proposal["attributes"].as_str().unwrap()).unwrap();
    assert_eq!(attributes["options"], json!(["postgres", "sqlite"]));
    let run = asked["run"].as_str().unwrap().to_string();
    let answered = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": proposal["path"], "action": "accept", "output": "sqlite-please"}}),
        )
        .await;
    assert_eq!(answered["status"], json!(200));
    assert!(llm.requests()[1].to_string().contains("sqlite-please"));
}

#[actix_web::test]
async fn entry_tools_copy_move_and_remove_knowledge() {
    let llm = FakeLlm::start([
        Step::reply(
            "<known path=\"known://draft\">plan A</known>\
             <cp path=\"known://draft\" to=\"known://backup\"/>\
             <mv path=\"known://draft\" to=\"known://final\"/>\
             <rm path=\"known://backup\"/><update>organised</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let mut client = project(&app).await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "organise"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap();
    let knowns = client
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    let paths: Vec<&str> = knowns
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["known://final"], "{knowns}");
}

#[actix_web::test]
async fn an_error_stops_the_actions_after_it() {
    let llm = FakeLlm::start([
        Step::reply(
            "<get path=\"known://missing\"/><set path=\"known://note\">later</set><update>looking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("stops").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "look", "noRepo": true}),
        )
        .await;
    let run = result["run"].as_str().unwrap().to_string();
    let sets = client.statuses(&run, "set://**").await;
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert_eq!(sets[0].1, 409, "not run after the failed get: {sets:?}");
    let note = client.statuses(&run, "known://note").await;
    assert!(note.is_empty(), "the set did not run: {note:?}");
}

#[actix_web::test]
async fn two_edits_of_one_file_in_one_reply_make_one_proposal() {
    let llm = FakeLlm::start([Step::reply(
        "<set path=\"app.js\">s/3000/8080/</set><set path=\"app.js\">s/const/let/</set><update>editing</update>",
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("amend").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let proposed = client
        .ok("act", json!({"model": "fake", "prompt": "edit"}))
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let proposals = proposed["proposed"].as_array().unwrap();
    assert_eq!(proposals.len(), 1, "{proposed}");
    let attributes: Value =
        serde_json::from_str(proposals[0]["attributes"].as_str().unwrap()).unwrap();
    let patch = attributes["patch"].as_str().unwrap();
    assert!(patch.contains("+let port = 8080;"), "both edits: {patch}");
}

#[actix_web::test]
async fn an_empty_run_alias_starts_a_new_run() {
    let llm = FakeLlm::start([Step::reply("<summarize>hello</summarize>")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("empty_alias").await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "hi", "run": "", "noRepo": true}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert!(!outcome["run"].as_str().unwrap().is_empty(), "{outcome}");
}

#[actix_web::test]
async fn a_proposal_stops_the_actions_after_it() {
    let llm = FakeLlm::start([Step::reply(
        "<sh>make</sh><set path=\"known://note\">later</set><update>building</update>",
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("proposal_stops").await;
    let proposed = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "build", "noRepo": true}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = proposed["run"].as_str().unwrap().to_string();
    assert!(
        client.statuses(&run, "known://note").await.is_empty(),
        "the set after the proposal did not run"
    );
}
