//! The fixed part of the prompt is small: a fresh run's first request is no larger than the
//! original 0.3.1's, and a window too small for the optional tools' docs goes without
//! them (not offered, refused when emitted) and still completes.

use serde_json::{json, Value};

use super::{history_of, told_about, PromptTag};
use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Characters of the messages of the original 0.3.1's first request for the prompt "Hi."
/// (its instructions, the docs of its twelve tools, `<progress>` and `<prompt>`).
const ORIGINAL_FIRST_REQUEST_CHARS: usize = 7_071;

/// The tools a window too small for their docs goes without (with a search backend).
const OPTIONAL: [&str; 4] = ["remember", "recall", "delegate", "search"];

/// Characters of the message contents of one request to the LLM.
fn request_chars(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap().chars().count())
        .sum()
}

/// The first request the scripted LLM received for a fresh run of `prompt` in `mode`, with
/// the environment `env`, and the run's outcome.
async fn first_request(mode: &str, params: Value, env: &[(&str, &str)]) -> (Value, Value) {
    let llm = FakeLlm::start([Step::reply("<summarize>Hello.</summarize>")]);
    let app = TestApp::with_llm(&llm, env).await;
    let (mut client, _) = app.client_in_project("hello").await;
    let outcome = client.ok(mode, params).await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "one question, one model call: {outcome}");
    (requests[0].clone(), outcome)
}

#[actix_web::test]
async fn a_fresh_runs_first_request_is_no_larger_than_the_originals() {
    for mode in ["ask", "act"] {
        let (request, outcome) =
            first_request(mode, json!({"model": "fake", "prompt": "Hi."}), &[]).await;
        assert_eq!(outcome["status"], json!(200), "{mode}: {outcome}");
        let chars = request_chars(&request);
        assert!(
            chars <= ORIGINAL_FIRST_REQUEST_CHARS,
            "{mode}: the first request has {chars} characters, the original's {}",
            ORIGINAL_FIRST_REQUEST_CHARS
        );
        for tool in ["remember", "recall", "delegate"] {
            assert!(
                told_about(&request, tool),
                "{mode}: a roomy window offers <{tool}>"
            );
        }
    }
}

/// With the original's token divisor (2 characters a token), a 4,500-token window: the
/// optional tools are neither listed nor documented, the packet fits, and the question is
/// answered in one call.
#[actix_web::test]
async fn a_4500_token_window_goes_without_the_optional_tools_and_completes() {
    let env = [
        ("RUMMY_TOKEN_DIVISOR", "2"),
        ("RUMMY_SEARXNG_URL", "http://127.0.0.1:9"),
    ];
    let params = json!({"model": "fake", "prompt": "Hi.", "contextLimit": 4500});
    let (request, outcome) = first_request("ask", params, &env).await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    for tool in OPTIONAL {
        assert!(
            !told_about(&request, tool),
            "<{tool}> offered to a 4,500-token window"
        );
    }
    for tool in ["get", "set", "known", "unknown", "summarize", "update"] {
        assert!(
            PromptTag::of(&request).offers(tool),
            "<{tool}> is never left out"
        );
    }
    assert!(request_chars(&request).div_ceil(2) <= 4500);
    let roomy = json!({"model": "fake", "prompt": "Hi.", "contextLimit": 32768});
    let (request, _) = first_request("ask", roomy, &env).await;
    for tool in OPTIONAL {
        assert!(
            told_about(&request, tool),
            "<{tool}> fits a 32,768-token window"
        );
    }
}

#[actix_web::test]
async fn an_optional_tool_emitted_in_a_small_window_is_refused_with_the_reason() {
    let llm = FakeLlm::start([
        Step::reply("<remember topic=\"tests\">make check</remember><update>noted</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_TOKEN_DIVISOR", "2")]).await;
    let (mut client, _) = app.client_in_project("small").await;
    let outcome = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "note it", "contextLimit": 4500}),
        )
        .await;
    let run = outcome["run"].as_str().unwrap().to_string();
    let rows = history_of(&mut client, &run, "remember").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["status"], json!(403), "{rows:?}");
    let body = rows[0]["body"].as_str().unwrap();
    assert!(body.contains("<remember> is not available here"), "{body}");
    assert!(body.contains("context window too small"), "{body}");
}
