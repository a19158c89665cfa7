//! End-to-end provider calls: the real reqwest client against scripted servers on 127.0.0.1.

use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

use super::testing::TestProviders;
use super::*;
use crate::llm::chat::{ChatMessage, Usage};
use crate::llm::fake::{FakeLlm, Step};
use crate::llm::retry::RetryPolicy;

/// Fails the test instead of hanging when a call never finishes.
async fn bounded<T>(call: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call never finished")
}

fn openai_settings(server: &FakeLlm) -> LlmOptions {
    LlmOptions {
        openai_base_url: Some(format!("{}/v1/", server.base_url())),
        ..LlmOptions::for_local_tests()
    }
}

fn request(actual: &str) -> ChatRequest {
    ChatRequest::new(
        actual,
        vec![ChatMessage::system("rules"), ChatMessage::user("task")],
    )
}

fn completion(content: &str) -> Value {
    json!({
        "model": "served",
        "choices": [{"message": {"content": content, "reasoning_content": "because"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49,
                  "prompt_tokens_details": {"cached_tokens": 16},
                  "completion_tokens_details": {"reasoning_tokens": 5}, "cost": 0.5}
    })
}

async fn complete(providers: &TestProviders, actual: &str) -> Result<ChatResponse, LlmError> {
    bounded(providers.complete(request(actual), &CancellationToken::new())).await
}

#[actix::test]
async fn openai_compatible_completion_with_usage_and_reasoning() {
    let server = FakeLlm::start([Step::Json(completion("<update/>"))]);
    let providers = TestProviders::start(LlmOptions {
        openai_api_key: Some("sk-test".into()),
        ..openai_settings(&server)
    });
    let warm = ChatRequest {
        temperature: Some(0.5),
        ..request("openai/local-model")
    };

    let response = bounded(providers.complete(warm, &CancellationToken::new()))
        .await
        .unwrap();

    assert_eq!(response.content, "<update/>");
    assert_eq!(response.reasoning_content.as_deref(), Some("because"));
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(response.model, "served");
    assert_eq!(
        response.usage,
        Usage {
            prompt_tokens: 40,
            cached_tokens: 16,
            completion_tokens: 9,
            reasoning_tokens: 5,
            total_tokens: 49,
            cost: 0.5
        }
    );
    let seen = &server.recorded()[0];
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(seen.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        seen.body,
        json!({"model": "local-model", "think": true, "temperature": 0.5,
               "messages": [{"role": "system", "content": "rules"},
                            {"role": "user", "content": "task"}]})
    );
}

#[actix::test]
async fn ollama_uses_its_openai_endpoint_without_auth() {
    let server = FakeLlm::start([Step::Json(completion("hi"))]);
    let providers = TestProviders::start(LlmOptions {
        ollama_base_url: Some(server.base_url().to_owned()),
        ..LlmOptions::for_local_tests()
    });

    let response = complete(&providers, "ollama/qwen3:8b").await.unwrap();

    assert_eq!(response.content, "hi");
    let seen = &server.recorded()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.header("authorization"), None);
    assert_eq!(seen.body["model"], "qwen3:8b");
    assert_eq!(seen.body["think"], true);
}

#[actix::test]
async fn openrouter_sends_the_whole_id_and_its_headers() {
    let body = json!({"choices": [{"message": {"content": "ok",
                       "reasoning_details": [{"type": "reasoning.text", "text": "step"}]}}]});
    let server = FakeLlm::start([Step::Json(body)]);
    let providers = TestProviders::start(LlmOptions {
        openrouter_base_url: format!("{}/api/v1", server.base_url()),
        openrouter_api_key: Some("sk-or".into()),
        http_referer: Some("https://example.org/rummy".into()),
        x_title: Some("RUMMY".into()),
        ..LlmOptions::for_local_tests()
    });

    let mut asked = request("openrouter/auto");
    asked.temperature = Some(0.1);
    let response = bounded(providers.complete(asked, &CancellationToken::new()))
        .await
        .unwrap();

    assert_eq!(response.content, "ok");
    assert_eq!(response.reasoning_content.as_deref(), Some("step"));
    assert_eq!(response.model, "openrouter/auto");
    let seen = &server.recorded()[0];
    assert_eq!(seen.path, "/api/v1/chat/completions");
    assert_eq!(seen.header("authorization"), Some("Bearer sk-or"));
    assert_eq!(
        seen.header("http-referer"),
        Some("https://example.org/rummy")
    );
    assert_eq!(seen.header("x-title"), Some("RUMMY"));
    assert_eq!(seen.body["model"], "openrouter/auto");
    assert_eq!(seen.body["include_reasoning"], true);
    assert_eq!(seen.body["temperature"], 0.1);
}

#[actix::test]
async fn xai_speaks_the_responses_api() {
    let body = json!({"model": "grok-4", "status": "completed",
                      "output": [{"type": "reasoning", "content": [{"type": "text", "text": "hmm"}]},
                                 {"type": "message", "content": [{"type": "output_text", "text": "done"}]}],
                      "usage": {"input_tokens": 7, "output_tokens": 3, "cost_in_usd_ticks": 1e8}});
    let server = FakeLlm::start([Step::Json(body)]);
    let providers = TestProviders::start(LlmOptions {
        xai_base_url: Some(format!("{}/v1/responses", server.base_url())),
        xai_api_key: Some("xai-key".into()),
        ..LlmOptions::for_local_tests()
    });

    let response = complete(&providers, "x.ai/grok-4").await.unwrap();

    assert_eq!(response.content, "done");
    assert_eq!(response.reasoning_content.as_deref(), Some("hmm"));
    assert_eq!(response.usage.total_tokens, 10);
    assert_eq!(response.usage.cost, 0.01);
    let seen = &server.recorded()[0];
    assert_eq!(seen.path, "/v1/responses");
    assert_eq!(seen.header("authorization"), Some("Bearer xai-key"));
    assert_eq!(seen.body["input"][1]["content"], "task");
}

#[actix::test]
async fn rate_limit_retry_after_overrides_a_long_backoff() {
    let server = FakeLlm::start([
        Step::error_retry_after(429, "0"),
        Step::Json(completion("after the wait")),
    ]);
    let providers = TestProviders::start(LlmOptions {
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(3600),
        },
        ..openai_settings(&server)
    });

    let response = complete(&providers, "openai/m").await.unwrap();

    assert_eq!(response.content, "after the wait");
    assert_eq!(server.recorded().len(), 2);
}

#[actix::test]
async fn a_retry_after_beyond_the_cap_gives_up_at_once() {
    let server = FakeLlm::start([Step::error_retry_after(429, "86400")]);
    let providers = TestProviders::start(openai_settings(&server));

    let error = complete(&providers, "openai/m").await.unwrap_err();

    assert_eq!(
        error,
        LlmError::RateLimited {
            provider: ProviderKind::OpenAi,
            retry_after: Some(Duration::from_secs(86400))
        }
    );
    assert_eq!(server.recorded().len(), 1);
}

#[actix::test]
async fn server_error_then_success() {
    let server = FakeLlm::start([Step::error(500), Step::Json(completion("second"))]);
    let providers = TestProviders::start(openai_settings(&server));

    let response = complete(&providers, "openai/m").await.unwrap();

    assert_eq!(response.content, "second");
    assert_eq!(server.recorded().len(), 2);
}

#[actix::test]
async fn persistent_server_errors_fail_after_max_attempts() {
    let server = FakeLlm::start((0..5).map(|_| Step::error(503)));
    let providers = TestProviders::start(openai_settings(&server));

    let error = complete(&providers, "openai/m").await.unwrap_err();

    assert!(
        matches!(error, LlmError::Server { status: 503, .. }),
        "{error:?}"
    );
    assert_eq!(server.recorded().len(), 3);
}

#[actix::test]
async fn client_errors_are_not_retried() {
    let server = FakeLlm::start([Step::error(400), Step::error(401)]);
    let providers = TestProviders::start(openai_settings(&server));

    let bad = complete(&providers, "openai/m").await.unwrap_err();
    let auth = complete(&providers, "openai/m").await.unwrap_err();

    assert!(
        matches!(bad, LlmError::BadRequest { status: 400, .. }),
        "{bad:?}"
    );
    assert!(
        matches!(auth, LlmError::Auth { status: 401, .. }),
        "{auth:?}"
    );
    assert_eq!(server.recorded().len(), 2);
}

#[actix::test]
async fn a_silent_server_times_out() {
    let server = FakeLlm::start([Step::Hang]);
    let providers = TestProviders::start(LlmOptions {
        fetch_timeout: Duration::from_millis(100),
        retry: RetryPolicy {
            max_attempts: 1,
            ..LlmOptions::for_local_tests().retry
        },
        ..openai_settings(&server)
    });

    let error = complete(&providers, "openai/m").await.unwrap_err();

    assert_eq!(
        error,
        LlmError::Timeout {
            provider: ProviderKind::OpenAi,
            timeout_ms: 100
        }
    );
    bounded(server.wait_for_dropped(1)).await;
}

#[actix::test]
async fn cancelling_drops_the_in_flight_request() {
    let server = FakeLlm::start([Step::Hang]);
    let providers = TestProviders::start(openai_settings(&server));
    let cancel = CancellationToken::new();

    let call = {
        let providers = providers.clone();
        let cancel = cancel.clone();
        actix::spawn(async move { providers.complete(request("openai/m"), &cancel).await })
    };
    bounded(server.wait_for_requests(1)).await;
    cancel.cancel();

    assert_eq!(bounded(call).await.unwrap(), Err(LlmError::Aborted));
    bounded(server.wait_for_dropped(1)).await;
}

#[actix::test]
async fn dropping_the_call_drops_the_in_flight_request() {
    let server = FakeLlm::start([Step::Hang]);
    let providers = TestProviders::start(openai_settings(&server));
    let cancel = CancellationToken::new();

    let request_arrived = bounded(async {
        tokio::select! {
            _ = providers.complete(request("openai/m"), &cancel) => false,
            _ = server.wait_for_requests(1) => true,
        }
    })
    .await;

    assert!(request_arrived);
    bounded(server.wait_for_dropped(1)).await;
    assert!(!cancel.is_cancelled(), "only the dropped call is cancelled");
}

#[actix::test]
async fn missing_settings_fail_without_a_request() {
    let providers = TestProviders::start(LlmOptions::for_local_tests());

    let openrouter = complete(&providers, "meta/llama").await.unwrap_err();
    let ollama = complete(&providers, "ollama/x").await.unwrap_err();

    assert_eq!(
        openrouter.to_string(),
        "OpenRouter API key is missing. Please set OPENROUTER_API_KEY in your environment."
    );
    assert!(matches!(
        ollama,
        LlmError::NotConfigured {
            provider: ProviderKind::Ollama,
            ..
        }
    ));
}

#[actix::test]
async fn an_unreachable_server_is_a_connect_error_after_retries() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let providers = TestProviders::start(LlmOptions {
        ollama_base_url: Some(format!("http://{address}")),
        ..LlmOptions::for_local_tests()
    });

    let error = complete(&providers, "ollama/x").await.unwrap_err();

    let LlmError::Connect { message, .. } = &error else {
        panic!("expected a connect error, got {error:?}");
    };
    assert!(!message.contains("http://"), "{message}");
    assert!(message.to_lowercase().contains("connect"), "{message}");
}

/// The server has not seen its `count`th request 200 ms from now.
async fn not_sent_within_200_ms(server: &FakeLlm, count: usize) {
    let sent = tokio::time::timeout(Duration::from_millis(200), server.wait_for_requests(count));
    assert!(sent.await.is_err(), "request {count} waits for a free slot");
}

#[actix::test]
async fn a_provider_has_at_most_its_limit_of_calls_in_flight() {
    let server = FakeLlm::start([
        Step::Hang,
        Step::reply("from ollama"),
        Step::reply("after the first"),
    ]);
    let providers = TestProviders::start(LlmOptions {
        ollama_base_url: Some(server.base_url().to_owned()),
        concurrency: crate::llm::ConcurrencyLimits {
            openai: 1,
            ..crate::llm::ConcurrencyLimits::default()
        },
        ..openai_settings(&server)
    });
    let call = |cancel: &CancellationToken| {
        let (providers, cancel) = (providers.clone(), cancel.clone());
        actix::spawn(async move { providers.complete(request("openai/m"), &cancel).await })
    };
    let first = CancellationToken::new();
    let holding = call(&first);
    bounded(server.wait_for_requests(1)).await;

    let given_up = CancellationToken::new();
    let waiting = call(&given_up);
    not_sent_within_200_ms(&server, 2).await;
    given_up.cancel();
    assert_eq!(bounded(waiting).await.unwrap(), Err(LlmError::Aborted));

    let other_provider = complete(&providers, "ollama/m").await.unwrap();
    assert_eq!(
        other_provider.content, "from ollama",
        "limits are per provider"
    );

    let next = call(&CancellationToken::new());
    not_sent_within_200_ms(&server, 3).await;
    first.cancel();
    assert_eq!(bounded(holding).await.unwrap(), Err(LlmError::Aborted));
    let next = bounded(next).await.unwrap().unwrap();
    assert_eq!(next.content, "after the first");
    assert_eq!(
        server.requests().len(),
        3,
        "the cancelled waiter never sent"
    );
}

/// Settings whose retries wait as long as a provider asks, up to 5 s, with one OpenAI slot.
fn patient_single_slot(server: &FakeLlm) -> LlmOptions {
    LlmOptions {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_secs(5),
        },
        concurrency: crate::llm::ConcurrencyLimits {
            openai: 1,
            ..crate::llm::ConcurrencyLimits::default()
        },
        ..openai_settings(server)
    }
}

fn asking(task: &str) -> ChatRequest {
    ChatRequest::new(
        "openai/m",
        vec![ChatMessage::system("rules"), ChatMessage::user(task)],
    )
}

#[actix::test]
async fn a_rate_limit_holds_every_call_to_the_provider_until_its_retry_after_passed() {
    let server = FakeLlm::start([
        Step::error_retry_after(429, "1"),
        Step::Json(completion("one")),
        Step::Json(completion("two")),
    ]);
    let providers = TestProviders::start(patient_single_slot(&server));
    let call = |task: &'static str| {
        let providers = providers.clone();
        actix::spawn(async move {
            providers
                .complete(asking(task), &CancellationToken::new())
                .await
        })
    };
    let refused = call("first run");
    bounded(server.wait_for_requests(1)).await;
    // In flight or refused already: either way the other call waits.
    let other = call("second run");
    assert!(bounded(refused).await.unwrap().is_ok());
    assert!(bounded(other).await.unwrap().is_ok());

    let seen = server.recorded();
    let tasks: Vec<_> = seen
        .iter()
        .map(|r| r.body["messages"][1]["content"].clone())
        .collect();
    assert_eq!(tasks[0], "first run");
    assert!(tasks[1..].contains(&json!("second run")), "{tasks:?}");
    for later in &seen[1..] {
        assert!(
            later.at >= seen[0].at + Duration::from_secs(1),
            "a call reached the provider before its Retry-After passed"
        );
    }
}

#[actix::test]
async fn a_call_waiting_out_a_back_off_leaves_at_once_when_cancelled() {
    let server = FakeLlm::start([Step::error_retry_after(429, "4")]);
    let providers = TestProviders::start(patient_single_slot(&server));
    let refused = CancellationToken::new();
    let first = {
        let (providers, cancel) = (providers.clone(), refused.clone());
        actix::spawn(async move { providers.complete(asking("first"), &cancel).await })
    };
    bounded(server.wait_for_requests(1)).await;
    let waiting = CancellationToken::new();
    let second = {
        let (providers, cancel) = (providers.clone(), waiting.clone());
        actix::spawn(async move { providers.complete(asking("second"), &cancel).await })
    };
    waiting.cancel();
    let left = tokio::time::timeout(Duration::from_secs(2), second).await;
    assert_eq!(
        left.expect("left before the hold passed").unwrap(),
        Err(LlmError::Aborted)
    );
    refused.cancel();
    assert_eq!(bounded(first).await.unwrap(), Err(LlmError::Aborted));
    assert_eq!(
        server.recorded().len(),
        1,
        "neither reached the provider again"
    );
}

/// What the store recorded of the test run's calls: purpose, prompt tokens, cost
/// (micro-dollars) and model each.
async fn recorded_calls(providers: &TestProviders) -> Vec<(String, i64, i64, String)> {
    use crate::db::statement::statement;
    use diesel::sql_types::{BigInt, Text};
    use diesel::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Recorded {
        #[diesel(sql_type = Text)]
        purpose: String,
        #[diesel(sql_type = BigInt)]
        prompt_tokens: i64,
        #[diesel(sql_type = BigInt)]
        cost_micros: i64,
        #[diesel(sql_type = Text)]
        model: String,
    }
    let run = providers.call.run;
    let rows: Vec<Recorded> = providers
        .db
        .read(move |conn| {
            Ok(statement(
                "SELECT purpose, CAST(prompt_tokens AS BIGINT) AS prompt_tokens, cost_micros, \
                        model \
                 FROM model_calls WHERE run_id = ? ORDER BY id",
            )
            .bind::<BigInt, _>(run)
            .load(conn)?)
        })
        .await
        .unwrap();
    rows.into_iter()
        .map(|row| (row.purpose, row.prompt_tokens, row.cost_micros, row.model))
        .collect()
}

#[actix::test]
async fn each_answered_call_is_recorded_once_for_its_run_and_purpose() {
    let server = FakeLlm::start([
        Step::error(503),
        Step::Json(completion("a turn")),
        Step::Json(completion("a note")),
        Step::error(400),
    ]);
    let providers = TestProviders::start(openai_settings(&server));
    complete(&providers, "openai/m").await.unwrap();
    let notes = CallFor {
        purpose: crate::db::enums::CallPurpose::SessionNotes,
        ..providers.call
    };
    let cancel = CancellationToken::new();
    bounded(
        providers
            .providers
            .complete(request("openai/m"), notes, &cancel),
    )
    .await
    .unwrap();
    assert!(complete(&providers, "openai/m").await.is_err());

    assert_eq!(
        recorded_calls(&providers).await,
        [
            ("turn".to_owned(), 40, 500_000, "openai/m".to_owned()),
            (
                "session_notes".to_owned(),
                40,
                500_000,
                "openai/m".to_owned()
            )
        ],
        "the retried call once, the refused one not at all"
    );
}

#[actix::test]
async fn a_call_cancelled_before_its_answer_records_nothing() {
    let server = FakeLlm::start([Step::Hang]);
    let providers = TestProviders::start(openai_settings(&server));
    let cancel = CancellationToken::new();
    let call = {
        let (providers, cancel) = (providers.clone(), cancel.clone());
        actix::spawn(async move { providers.complete(request("openai/m"), &cancel).await })
    };
    bounded(server.wait_for_requests(1)).await;
    cancel.cancel();
    assert_eq!(bounded(call).await.unwrap(), Err(LlmError::Aborted));
    assert_eq!(recorded_calls(&providers).await, []);
}
