//! The fake LLM checked with a plain reqwest client, then with rummy's own provider client.

use std::time::{Duration, Instant};

use crate::llm::{CancellationToken, ChatMessage, ChatRequest, LlmError, LlmOptions, RetryPolicy};
use serde_json::{json, Value};

use super::*;
use crate::llm::providers::testing::TestProviders;

fn packet(user: &str) -> Value {
    json!({
        "model": "scripted",
        "messages": [
            {"role": "system", "content": "Answer with XML tool tags."},
            {"role": "user", "content": user},
        ],
        "think": true,
    })
}

async fn post(fake: &FakeLlm, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", fake.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn post_json(fake: &FakeLlm, body: &Value) -> Value {
    let response = post(fake, body).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn get_json(fake: &FakeLlm, path: &str) -> Value {
    reqwest::get(format!("{}{path}", fake.base_url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn message(completion: &Value) -> &Value {
    &completion["choices"][0]["message"]
}

#[actix_web::test]
async fn replies_follow_the_script_and_requests_are_recorded() {
    let usage = Usage {
        prompt_tokens: 120,
        completion_tokens: 7,
        cached_tokens: 64,
        cost: 0.25,
    };
    let fake = FakeLlm::start([
        Reply::new("<sh>ls</sh>")
            .with_reasoning("list first")
            .with_usage(usage)
            .into(),
        Step::reply("<summarize>two files</summarize>"),
    ]);
    let first_request = packet("What is here?");
    let second_request = packet("And now?");

    let first = post_json(&fake, &first_request).await;
    let second = post_json(&fake, &second_request).await;

    assert_eq!(message(&first)["content"], "<sh>ls</sh>");
    assert_eq!(message(&first)["reasoning_content"], "list first");
    assert_eq!(first["model"], first_request["model"]);
    assert_eq!(first["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        first["usage"],
        json!({"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127,
               "prompt_tokens_details": {"cached_tokens": 64}, "cost": 0.25})
    );
    assert_eq!(
        message(&second)["content"],
        "<summarize>two files</summarize>"
    );
    assert!(message(&second).get("reasoning_content").is_none());
    assert_ne!(first["id"], second["id"]);
    assert_eq!(fake.requests(), vec![first_request, second_request]);
}

#[actix_web::test]
async fn unscripted_usage_is_estimated_from_the_texts() {
    let content = "<known path=\"known://a\">one</known>";
    let fake = FakeLlm::start([Step::reply(content)]);
    let request = packet("Remember one thing.");

    let completion = post_json(&fake, &request).await;

    let prompt_chars: usize = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap().len())
        .sum();
    let usage = &completion["usage"];
    assert_eq!(usage["prompt_tokens"], prompt_chars.div_ceil(4));
    assert_eq!(usage["completion_tokens"], content.len().div_ceil(4));
    assert_eq!(
        usage["total_tokens"],
        prompt_chars.div_ceil(4) + content.len().div_ceil(4)
    );
    assert_eq!(usage["cost"], 0.0);
}

#[actix_web::test]
async fn errors_carry_their_status_and_retry_after() {
    let fake = FakeLlm::start([Step::error_retry_after(429, "3"), Step::error(503)]);

    let limited = post(&fake, &packet("a")).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "3");
    let body: Value = limited.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("429"));

    let unavailable = post(&fake, &packet("b")).await;
    assert_eq!(unavailable.status(), 503);
    assert!(unavailable.headers().get("retry-after").is_none());
    assert_eq!(fake.requests().len(), 2);
}

#[actix_web::test]
async fn an_exhausted_script_answers_with_the_final_reply_by_default() {
    let fake = FakeLlm::start([]);
    let completion = post_json(&fake, &packet("anything")).await;
    assert_eq!(message(&completion)["content"], DEFAULT_FINAL_REPLY);
}

#[actix_web::test]
async fn an_exhausted_script_can_answer_with_an_error() {
    let fake = FakeLlm::builder([Step::reply("<update>working</update>")])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let first = post_json(&fake, &packet("one")).await;
    assert_eq!(message(&first)["content"], "<update>working</update>");
    assert_eq!(post(&fake, &packet("two")).await.status(), 500);
}

#[actix_web::test]
async fn invalid_json_is_refused_without_using_a_step() {
    let fake = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let refused = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", fake.base_url()))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    assert!(fake.requests().is_empty());

    let completion = post_json(&fake, &packet("valid")).await;
    assert_eq!(message(&completion)["content"], "<summarize>ok</summarize>");
}

#[actix_web::test]
async fn a_hang_lasts_until_the_client_gives_up_and_counts_as_dropped() {
    let fake = FakeLlm::start([Step::Hang, Step::reply("<summarize>after</summarize>")]);
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();

    let error = impatient
        .post(format!("{}/v1/chat/completions", fake.base_url()))
        .json(&packet("hang"))
        .send()
        .await
        .unwrap_err();

    assert!(error.is_timeout(), "{error}");
    fake.wait_for_dropped(1).await;
    assert_eq!(fake.dropped(), 1);
    let completion = post_json(&fake, &packet("again")).await;
    assert_eq!(
        message(&completion)["content"],
        "<summarize>after</summarize>"
    );
    assert_eq!(fake.requests().len(), 2);
}

#[actix_web::test]
async fn a_delayed_reply_arrives_after_its_delay_or_counts_as_dropped() {
    let delay = Duration::from_millis(100);
    let fake = FakeLlm::start([
        Step::delayed(delay, Reply::new("<summarize>late</summarize>")),
        Step::delayed(Duration::from_secs(600), Reply::new("never seen")),
    ]);

    let started = Instant::now();
    let completion = post_json(&fake, &packet("slow")).await;
    assert!(started.elapsed() >= delay);
    assert_eq!(
        message(&completion)["content"],
        "<summarize>late</summarize>"
    );
    assert_eq!(fake.dropped(), 0);

    let call = tokio::spawn({
        let url = format!("{}/v1/chat/completions", fake.base_url());
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&packet("slower"))
                .send()
                .await
        }
    });
    fake.wait_for_requests(2).await;
    call.abort();
    fake.wait_for_dropped(1).await;
    assert_eq!(fake.dropped(), 1);
}

#[actix_web::test]
async fn held_replies_wait_until_released_in_arrival_order() {
    let fake = FakeLlm::start([
        Step::held("<summarize>first held</summarize>"),
        Step::held("<summarize>second held</summarize>"),
    ]);
    let call = |user: &'static str| {
        let url = format!("{}/v1/chat/completions", fake.base_url());
        tokio::spawn(async move {
            let response = reqwest::Client::new()
                .post(url)
                .json(&packet(user))
                .send()
                .await
                .unwrap();
            let completion: Value = response.json().await.unwrap();
            message(&completion)["content"].clone()
        })
    };
    let first = call("one");
    fake.wait_for_requests(1).await;
    let second = call("two");
    fake.wait_for_requests(2).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !first.is_finished() && !second.is_finished(),
        "nothing answered before a release"
    );

    fake.release();
    assert_eq!(first.await.unwrap(), "<summarize>first held</summarize>");
    assert!(!second.is_finished(), "one release lets one request go");
    fake.release();
    assert_eq!(second.await.unwrap(), "<summarize>second held</summarize>");
    assert_eq!(fake.dropped(), 0);
}

#[actix_web::test]
async fn props_and_models_report_the_context_size() {
    let fake = FakeLlm::builder([]).n_ctx(4096).start();
    let props = get_json(&fake, "/props").await;
    assert_eq!(props["default_generation_settings"]["n_ctx"], 4096);
    let models = get_json(&fake, "/v1/models").await;
    assert_eq!(models["data"][0]["id"], FAKE_MODEL_ID);
    assert_eq!(models["data"][0]["context_length"], 4096);
    assert_eq!(models["data"][0]["meta"]["n_ctx_train"], 4096);

    let default_size = FakeLlm::start([]);
    let props = get_json(&default_size, "/props").await;
    assert_eq!(props["default_generation_settings"]["n_ctx"], DEFAULT_N_CTX);
}

#[actix_web::test]
async fn every_request_is_recorded_with_method_path_and_headers() {
    let fake = FakeLlm::builder([Step::Json(json!({"data": []})), Step::reply("<update/>")])
        .script_every_request()
        .start();

    let listing = get_json(&fake, "/v1/models").await;
    let completion = post_json(&fake, &packet("hello")).await;

    assert_eq!(listing, json!({"data": []}));
    assert_eq!(message(&completion)["content"], "<update/>");
    let recorded = fake.recorded();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        (recorded[0].method.as_str(), recorded[0].path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(recorded[0].body, Value::Null);
    assert_eq!(
        (recorded[1].method.as_str(), recorded[1].path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(recorded[1].header("content-type"), Some("application/json"));
    assert_eq!(recorded[1].body, packet("hello"));
}

#[actix_web::test]
async fn a_forgetful_server_only_counts_and_stats_report_the_count() {
    let fake = FakeLlm::builder([]).forget_requests().start();

    post_json(&fake, &packet("one")).await;
    post_json(&fake, &packet("two")).await;

    assert!(fake.requests().is_empty());
    assert!(fake.recorded().is_empty());
    assert_eq!(get_json(&fake, "/stats").await, json!({"completions": 2}));
}

fn rummy_providers(fake: &FakeLlm) -> TestProviders {
    TestProviders::start(LlmOptions {
        openai_base_url: Some(format!("{}/v1", fake.base_url())),
        fetch_timeout: Duration::from_secs(20),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(5),
        },
        ..LlmOptions::default()
    })
}

fn rummy_request(user: &str) -> ChatRequest {
    ChatRequest::new(
        "openai/scripted",
        vec![
            ChatMessage::system("Answer with XML tool tags."),
            ChatMessage::user(user),
        ],
    )
}

#[actix_web::test]
async fn rummys_client_completes_retries_and_discovers_against_the_fake() {
    let fake = FakeLlm::builder([
        Step::error_retry_after(503, "0"),
        Reply::new("<summarize>42</summarize>")
            .with_reasoning("counted")
            .into(),
    ])
    .n_ctx(2048)
    .start();
    let providers = rummy_providers(&fake);
    let never = CancellationToken::new();

    let response = providers
        .complete(rummy_request("What is the answer?"), &never)
        .await
        .unwrap();
    let context = providers
        .discover_context("openai/scripted", &never)
        .await
        .unwrap();

    assert_eq!(response.content, "<summarize>42</summarize>");
    assert_eq!(response.reasoning_content.as_deref(), Some("counted"));
    assert_eq!(response.model, "scripted");
    assert_eq!(
        response.usage.total_tokens,
        response.usage.prompt_tokens + response.usage.completion_tokens
    );
    assert_eq!(context, 2048);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "one retry after the 503");
    assert_eq!(requests[1]["model"], "scripted");
    assert_eq!(requests[1]["messages"][1]["content"], "What is the answer?");
    assert_eq!(requests[1]["think"], true);
}

#[actix_web::test]
async fn rummys_client_abort_drops_the_hanging_request() {
    let fake = FakeLlm::start([Step::Hang]);
    let providers = rummy_providers(&fake);
    let cancel = CancellationToken::new();

    let call = {
        let cancel = cancel.clone();
        actix_web::rt::spawn(async move {
            providers
                .complete(rummy_request("Think forever."), &cancel)
                .await
        })
    };
    fake.wait_for_requests(1).await;
    cancel.cancel();

    assert!(matches!(call.await.unwrap(), Err(LlmError::Aborted)));
    fake.wait_for_dropped(1).await;
    assert_eq!(fake.requests().len(), 1);
}
