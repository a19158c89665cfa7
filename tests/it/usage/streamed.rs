//! A streamed turn's usage is the provider's, exactly: an OpenAI-compatible stream whose
//! last chunk reports prompt, cached and completion tokens is recorded with those counts
//! and costed from them, as `getRun` and `usage/report` show.

use rummy::testing::fake_llm::{FakeLlm, Step, Streamed};
use serde_json::json;

use super::{rows, run_usage};
use crate::support::TestApp;

#[actix_web::test]
async fn a_streamed_turn_records_the_usage_its_last_chunk_reported() {
    let chunk = |choices: serde_json::Value| {
        json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": "fake",
               "choices": choices})
    };
    let content = |text: &str| chunk(json!([{"index": 0, "delta": {"content": text}}]));
    let mut last = chunk(json!([]));
    last["usage"] = json!({"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290,
                           "prompt_tokens_details": {"cached_tokens": 1000}});
    let events = [
        chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}}])).to_string(),
        content("<summarize>Counted ").to_string(),
        content("to the token.</summarize>").to_string(),
        chunk(json!([{"index": 0, "delta": {}, "finish_reason": "stop"}])).to_string(),
        last.to_string(),
        "[DONE]".to_owned(),
    ];
    let llm = FakeLlm::start([Step::Stream(Streamed::events(events))]);
    // $2 per million uncached prompt tokens, $1 cached, $10 completion.
    let app = TestApp::with_llm(&llm, &[("RUMMY_PRICE_fake", "2,1,10")]).await;
    let (mut driver, _) = app.client_in_project("team").await;
    let run = driver.start_run("fake").await;
    let (mut watcher, _) = app.client_in_project("team").await;
    watcher
        .ok("run/watch", json!({"run": run, "deltas": true}))
        .await;

    let answered = driver
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "count", "run": run}),
        )
        .await;

    assert_eq!(answered["status"], json!(200), "{answered}");
    assert_eq!(
        llm.requests()[0]["stream"],
        json!(true),
        "the call streamed"
    );
    // 234 × 2 + 1000 × 1 + 56 × 10 = 2028 micro-dollars.
    assert_eq!(run_usage(&mut driver, &run).await, (1234, 56, 1290, 2028));
    let telemetry = driver.ok("getRun", json!({"run": run})).await["context"]["telemetry"].clone();
    assert_eq!(telemetry["cached_tokens"], json!(1000), "{telemetry}");
    let report = driver.ok("usage/report", json!({"by": "purpose"})).await;
    assert_eq!(rows(&report), [(json!("turn"), 1, 1234, 2028)]);
}
