//! The recall's re-rank through the public protocol, with a scripted model whose first
//! request is the re-rank (before the loop's first turn) and the next the turn: candidates
//! that score alike where the recall budget cuts are ordered by the model's answer, so the
//! packet's `<memory>` shows the ones it put first; a garbage, failed or slow answer keeps
//! the lexical order and the loop completes; no request is made with the re-rank off, with
//! the project's memory off, without a recall budget, or when the candidates' scores differ.

use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Reply, Step};
use serde_json::{json, Value};

use crate::support::{system_message, user_message, Client, TestApp};

/// Five facts that share only `deploy` with [`PROMPT`], each recalled as a line of 10
/// tokens (37 characters): they score alike.
const TIED: [&str; 5] = ["amber", "brick", "cider", "dunes", "ember"];
const PROMPT: &str = "How do we deploy?";
/// Holds two of the tied lines, not three.
const TWO_LINES: (&str, &str) = ("RUMMY_MEMORY_RECALL_TOKENS", "25");
const RERANK_ON: (&str, &str) = ("RUMMY_MEMORY_RERANK_MODEL", "fake");

async fn remember_tied(client: &mut Client) {
    for word in TIED {
        let body = format!("Deploy step {word}.");
        client
            .ok("memory/set", json!({"topic": word, "body": body}))
            .await;
    }
}

/// Asks `prompt` in a new run; the run.
async fn ask(client: &mut Client, prompt: &str) -> String {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    result["run"].as_str().unwrap().to_owned()
}

/// `(purpose, calls)` of the run's usage.
async fn calls_by_purpose(client: &mut Client, run: &str) -> Vec<(Value, Value)> {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["telemetry"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| (line["purpose"].clone(), line["calls"].clone()))
        .collect()
}

fn is_rerank(request: &Value) -> bool {
    system_message(request).starts_with("You order remembered facts")
}

/// The `<memory>` section of a user message.
fn memory_section(user: &str) -> &str {
    let start = user
        .find("<memory>")
        .unwrap_or_else(|| panic!("no <memory> in {user}"));
    let end = user[start..].find("</memory>").unwrap();
    &user[start..start + end]
}

/// The topics of the tied facts in the order `text` shows them.
fn shown(text: &str) -> Vec<&'static str> {
    let mut found: Vec<(usize, &'static str)> = TIED
        .iter()
        .filter_map(|word| text.find(&format!("] {word}:")).map(|at| (at, *word)))
        .collect();
    found.sort();
    found.into_iter().map(|(_, word)| word).collect()
}

/// The topics as the re-rank request numbers them (1 first).
fn numbered(request: &Value) -> Vec<&'static str> {
    let user = user_message(request);
    assert!(user.contains(PROMPT), "{user}");
    for (index, word) in shown(&user).iter().enumerate() {
        assert!(
            user.contains(&format!(
                "{}. [project] {word}: Deploy step {word}.",
                index + 1
            )),
            "{user}"
        );
    }
    shown(&user)
}

#[actix_web::test]
async fn the_model_s_order_decides_which_tied_facts_the_packet_shows() {
    let llm = FakeLlm::start([
        Step::reply("```json\n{\"order\": [5, 3, 5, 9]}\n```"),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[TWO_LINES, RERANK_ON]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    remember_tied(&mut client).await;
    let run = ask(&mut client, PROMPT).await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the re-rank, then the turn");
    assert_eq!(
        calls_by_purpose(&mut client, &run).await,
        [(json!("turn"), json!(1)), (json!("rerank"), json!(1))],
        "the run's usage shows the re-rank"
    );
    assert!(is_rerank(&requests[0]) && !is_rerank(&requests[1]));
    let lexical = numbered(&requests[0]);
    assert_eq!(lexical.len(), 5, "all five tie: {lexical:?}");
    let memory = user_message(&requests[1]);
    assert_eq!(
        shown(memory_section(&memory)),
        [lexical[4], lexical[2]],
        "the fifth and the third, as the model ordered them"
    );
}

#[actix_web::test]
async fn a_garbage_failed_or_slow_answer_keeps_the_lexical_order_and_the_loop_completes() {
    let llm = FakeLlm::start([
        Step::reply("Put the fifth first, then the third."),
        Step::reply("<summarize>Done.</summarize>"),
        Step::error(500),
        Step::reply("<summarize>Done.</summarize>"),
        Step::delayed(Duration::from_secs(60), Reply::new("{\"order\": [5, 3]}")),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let timeout = ("RUMMY_MEMORY_RERANK_TIMEOUT_SECS", "1");
    let app = TestApp::with_llm(&llm, &[TWO_LINES, RERANK_ON, timeout]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    remember_tied(&mut client).await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(ask(&mut client, PROMPT).await);
    }

    let requests = llm.requests();
    let reranks: Vec<bool> = requests.iter().map(is_rerank).collect();
    assert_eq!(reranks, [true, false, true, false, true, false]);
    let garbage = runs.first().unwrap();
    assert_eq!(
        calls_by_purpose(&mut client, garbage).await,
        [(json!("turn"), json!(1)), (json!("rerank"), json!(1))],
        "an answered call is counted, whatever it said"
    );
    for unanswered in &runs[1..] {
        assert_eq!(
            calls_by_purpose(&mut client, unanswered).await,
            [(json!("turn"), json!(1))],
            "a failed or timed-out call reported no usage"
        );
    }
    for pair in requests.chunks(2) {
        let lexical = numbered(&pair[0]);
        let memory = user_message(&pair[1]);
        assert_eq!(shown(memory_section(&memory)), lexical[..2]);
    }
}

#[actix_web::test]
async fn no_request_is_made_with_the_re_rank_off() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let app = TestApp::with_llm(&llm, &[TWO_LINES]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    remember_tied(&mut client).await;
    ask(&mut client, PROMPT).await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the turn only");
    assert_eq!(shown(memory_section(&user_message(&requests[0]))).len(), 2);
}

#[actix_web::test]
async fn no_request_is_made_without_a_recall_budget() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let nothing = ("RUMMY_MEMORY_RECALL_TOKENS", "0");
    let app = TestApp::with_llm(&llm, &[nothing, RERANK_ON]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    remember_tied(&mut client).await;
    ask(&mut client, PROMPT).await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the turn only");
    assert!(!user_message(&requests[0]).contains("<memory>"));
}

#[actix_web::test]
async fn no_request_is_made_with_the_project_s_memory_off() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let app = TestApp::with_llm(&llm, &[TWO_LINES, RERANK_ON]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    remember_tied(&mut client).await;
    client.ok("memory/switch", json!({"enabled": false})).await;
    ask(&mut client, PROMPT).await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the turn only");
    assert!(!user_message(&requests[0]).contains("<memory>"));
}

#[actix_web::test]
async fn no_request_is_made_when_the_scores_differ_where_the_budget_cuts() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let ties = ("RUMMY_MEMORY_RERANK_TIES", "2");
    let one_line = ("RUMMY_MEMORY_RECALL_TOKENS", "12");
    let app = TestApp::with_llm(&llm, &[one_line, RERANK_ON, ties]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let facts = [
        ("plan", "deploy release rollback canary"),
        ("note", "deploy release rollback"),
        ("idea", "deploy release"),
        ("hint", "deploy"),
    ];
    for (topic, body) in facts {
        client
            .ok("memory/set", json!({"topic": topic, "body": body}))
            .await;
    }
    for filler in ["one", "two", "six", "ten", "red", "tan"] {
        client
            .ok(
                "memory/set",
                json!({"topic": filler, "body": "unrelated text"}),
            )
            .await;
    }
    ask(&mut client, "deploy release rollback canary").await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the turn only");
    let user = user_message(&requests[0]);
    assert!(
        memory_section(&user).contains("- [project] plan: deploy release rollback canary"),
        "{user}"
    );
}
