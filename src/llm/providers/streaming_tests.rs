//! Streamed completions end to end: each provider's stream format from a scripted server on
//! 127.0.0.1, the usage it reports, a listener told the text as it grows, a cancelled stream
//! closing its connection, and streams that break.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;

use super::testing::TestProviders;
use super::*;
use crate::llm::chat::{ChatMessage, Usage};
use crate::llm::fake::{FakeLlm, Reply, Step, StreamEnd, Streamed, Usage as FakeUsage};
use crate::llm::retry::RetryPolicy;

async fn bounded<T>(call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("the call never finished")
}

fn request(actual: &str) -> ChatRequest {
    ChatRequest::new(actual, vec![ChatMessage::user("task")])
}

fn openai(server: &FakeLlm) -> TestProviders {
    TestProviders::start(LlmOptions {
        openai_base_url: Some(server.base_url().to_owned()),
        ..LlmOptions::for_local_tests()
    })
}

/// What a listener was told: each text, and whether the stream had ended.
#[derive(Default)]
struct Heard(Mutex<Vec<(String, bool)>>);

impl TextListener for Heard {
    fn grew(&self, text: &str, done: bool) {
        self.0.lock().unwrap().push((text.to_owned(), done));
    }
}

impl Heard {
    fn texts(&self) -> Vec<(String, bool)> {
        self.0.lock().unwrap().clone()
    }
}

async fn listened(
    providers: &TestProviders,
    actual: &str,
    heard: &Arc<Heard>,
) -> Result<ChatResponse, LlmError> {
    let listener: Arc<dyn TextListener> = heard.clone();
    bounded(providers.providers.complete_announcing(
        request(actual),
        providers.call,
        None,
        Some(listener),
        &CancellationToken::new(),
    ))
    .await
}

#[actix::test]
async fn an_openai_compatible_stream_gives_the_reply_as_it_grows_and_its_usage() {
    let usage = FakeUsage {
        prompt_tokens: 31,
        completion_tokens: 7,
        cached_tokens: 11,
        cost: 0.25,
    };
    let content = "<summarize>a reply of several pieces</summarize>";
    let server = FakeLlm::start([Step::Reply(
        Reply::new(content).with_reasoning("why").with_usage(usage),
    )]);
    let providers = openai(&server);
    let heard = Arc::new(Heard::default());

    let response = listened(&providers, "openai/m", &heard).await.unwrap();

    assert_eq!(response.content, content);
    assert_eq!(response.reasoning_content.as_deref(), Some("why"));
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        response.usage,
        Usage {
            prompt_tokens: 31,
            cached_tokens: 11,
            completion_tokens: 7,
            reasoning_tokens: 0,
            total_tokens: 38,
            cost: 0.25
        }
    );
    let texts = heard.texts();
    assert!(texts.len() > 2, "told piece by piece: {texts:?}");
    assert!(texts
        .windows(2)
        .all(|pair| pair[1].0.starts_with(&pair[0].0)));
    assert_eq!(texts.last(), Some(&(content.to_owned(), true)));
    let body = &server.requests()[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[actix::test]
async fn openrouter_streams_its_cost_and_a_mid_stream_error_is_classified() {
    let chunk = |content: &str| {
        json!({"model": "served/x",
        "choices": [{"delta": {"content": content}, "finish_reason": null}]})
    };
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                                "total_tokens": 7, "cost": 0.125}});
    let events = [chunk("he"), chunk("llo"), usage, json!("[DONE]")]
        .map(|event| event.as_str().map_or(event.to_string(), str::to_owned));
    let failing = [
        chunk("par"),
        json!({"error": {"code": 502, "message": "upstream died"}}),
    ]
    .map(|event| event.to_string());
    let server = FakeLlm::start([
        Step::Stream(Streamed::events(events)),
        Step::Stream(Streamed::events(failing)),
    ]);
    let providers = TestProviders::start(LlmOptions {
        openrouter_base_url: format!("{}/api/v1", server.base_url()),
        openrouter_api_key: Some("sk-or".into()),
        retry: RetryPolicy {
            max_attempts: 1,
            ..LlmOptions::for_local_tests().retry
        },
        ..LlmOptions::for_local_tests()
    });

    let heard = Arc::new(Heard::default());
    let response = listened(&providers, "meta/llama", &heard).await.unwrap();
    assert_eq!(response.content, "hello");
    assert_eq!(response.model, "served/x");
    assert_eq!(
        (response.usage.total_tokens, response.usage.cost),
        (7, 0.125)
    );

    let failed = listened(&providers, "meta/llama", &heard)
        .await
        .unwrap_err();
    assert!(
        matches!(failed, LlmError::Server { status: 502, .. }),
        "{failed:?}"
    );
}

#[actix::test]
async fn ollama_json_lines_give_the_reply_and_its_counts() {
    let lines = [
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "ca"}, "done": false}),
        json!({"model": "qwen3", "message": {"role": "assistant", "content": "fé"}, "done": false}),
        json!({"model": "qwen3", "message": {"content": ""}, "done": true,
               "done_reason": "stop", "prompt_eval_count": 26, "eval_count": 3}),
    ];
    let body: Vec<u8> = lines
        .iter()
        .flat_map(|line| format!("{line}\n").into_bytes())
        .collect();
    let split = body.iter().position(|byte| *byte == 0xC3).unwrap() + 1;
    let server = FakeLlm::start([Step::Stream(Streamed {
        content_type: "application/x-ndjson".into(),
        pieces: vec![
            (Duration::ZERO, body[..split].to_vec()),
            (Duration::from_millis(5), body[split..].to_vec()),
        ],
        end: StreamEnd::Complete,
    })]);
    let providers = TestProviders::start(LlmOptions {
        ollama_base_url: Some(server.base_url().to_owned()),
        ..LlmOptions::for_local_tests()
    });

    let heard = Arc::new(Heard::default());
    let response = listened(&providers, "ollama/qwen3", &heard).await.unwrap();

    assert_eq!(response.content, "café");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.completion_tokens
        ),
        (26, 3)
    );
}

#[actix::test]
async fn xai_response_events_give_the_text_as_it_comes_and_the_completed_usage() {
    let events = [
        json!({"type": "response.created", "response": {"status": "in_progress"}}),
        json!({"type": "response.output_text.delta", "delta": "gro"}),
        json!({"type": "response.output_text.delta", "delta": "k"}),
        json!({"type": "response.completed", "response": {
            "model": "grok-4", "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "grok"}]}],
            "usage": {"input_tokens": 12, "output_tokens": 2, "cost_in_usd_ticks": 50_000_000}}}),
    ]
    .map(|event| event.to_string());
    let server = FakeLlm::start([Step::Stream(Streamed::events(events))]);
    let providers = TestProviders::start(LlmOptions {
        xai_base_url: Some(format!("{}/v1/responses", server.base_url())),
        xai_api_key: Some("xai-key".into()),
        ..LlmOptions::for_local_tests()
    });

    let heard = Arc::new(Heard::default());
    let response = listened(&providers, "x.ai/grok-4", &heard).await.unwrap();

    assert_eq!(response.content, "grok");
    assert_eq!(
        (response.usage.total_tokens, response.usage.cost),
        (14, 0.005)
    );
    let texts: Vec<String> = heard.texts().into_iter().map(|(text, _)| text).collect();
    assert_eq!(texts, ["gro", "grok", "grok"]);
    assert_eq!(server.requests()[0]["stream"], true);
}

#[actix::test]
async fn a_stream_without_usage_answers_with_none_for_the_ledger_to_count() {
    let events = [
        json!({"choices": [{"delta": {"content": "ok"}, "finish_reason": "stop"}]}).to_string(),
        "[DONE]".to_owned(),
    ];
    let server = FakeLlm::start([Step::Stream(Streamed::events(events))]);
    let providers = openai(&server);

    let response = listened(&providers, "openai/m", &Arc::default())
        .await
        .unwrap();

    assert_eq!(response.content, "ok");
    assert_eq!(response.usage, Usage::default());
}

#[actix::test]
async fn cancelling_a_stream_closes_the_provider_connection() {
    let first = json!({"choices": [{"delta": {"content": "partly"}}]}).to_string();
    let server = FakeLlm::start([Step::Stream(
        Streamed::events([first]).ending(StreamEnd::Hang),
    )]);
    let providers = openai(&server);
    let cancel = CancellationToken::new();
    let heard = Arc::new(Heard::default());
    let (arrived, mut first_text) = tokio::sync::watch::channel(false);

    struct Told(tokio::sync::watch::Sender<bool>);
    impl TextListener for Told {
        fn grew(&self, _: &str, _: bool) {
            self.0.send_replace(true);
        }
    }
    let call = {
        let providers = providers.clone();
        let cancel = cancel.clone();
        let listener: Arc<dyn TextListener> = Arc::new(Told(arrived));
        actix::spawn(async move {
            providers
                .providers
                .complete_announcing(
                    request("openai/m"),
                    providers.call,
                    None,
                    Some(listener),
                    &cancel,
                )
                .await
        })
    };
    bounded(first_text.wait_for(|arrived| *arrived))
        .await
        .unwrap();
    assert_eq!(server.dropped(), 0, "streaming, not dropped yet");
    cancel.cancel();

    assert_eq!(bounded(call).await.unwrap(), Err(LlmError::Aborted));
    bounded(server.wait_for_dropped(1)).await;
    drop(heard);
}

/// The call's error for a stream of these events ending as `end`, and how many requests
/// the server saw.
async fn broken(events: Vec<String>, end: StreamEnd) -> (LlmError, usize) {
    let server = FakeLlm::start([Step::Stream(Streamed::events(events).ending(end))]);
    let providers = openai(&server);
    let error = listened(&providers, "openai/m", &Arc::default())
        .await
        .unwrap_err();
    (error, server.requests().len())
}

fn piece(text: &str) -> String {
    json!({"choices": [{"delta": {"content": text}}]}).to_string()
}

#[actix::test]
async fn a_stream_that_breaks_keeps_what_arrived_and_is_not_retried() {
    let dropped = broken(vec![piece("half "), piece("a reply")], StreamEnd::Broken).await;
    let invalid = broken(
        vec![piece("half "), "{not json".into()],
        StreamEnd::Complete,
    )
    .await;
    let unfinished = broken(vec![piece("half "), piece("a reply")], StreamEnd::Complete).await;

    for (case, (error, requests)) in [
        ("dropped", dropped),
        ("invalid", invalid),
        ("no [DONE]", unfinished),
    ] {
        let LlmError::StreamBroken { partial, .. } = &error else {
            panic!("{case}: {error:?}");
        };
        assert!(partial.starts_with("half "), "{case}: {partial:?}");
        assert!(error.to_string().contains("half "), "{case}: {error}");
        assert_eq!(requests, 1, "{case}: one call, no retry");
    }
}

#[actix::test]
async fn a_chunk_split_inside_a_character_is_read_whole() {
    let events = format!("data: {}\n\ndata: [DONE]\n\n", piece("naïve café"));
    let bytes = events.into_bytes();
    let split = bytes.iter().position(|byte| *byte == 0xC3).unwrap() + 1;
    let server = FakeLlm::start([Step::Stream(Streamed {
        content_type: "text/event-stream".into(),
        pieces: vec![
            (Duration::ZERO, bytes[..split].to_vec()),
            (Duration::from_millis(5), bytes[split..].to_vec()),
        ],
        end: StreamEnd::Complete,
    })]);
    let providers = openai(&server);

    let response = listened(&providers, "openai/m", &Arc::default())
        .await
        .unwrap();

    assert_eq!(response.content, "naïve café");
}
