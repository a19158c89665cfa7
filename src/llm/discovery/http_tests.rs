//! Context discovery against scripted servers on 127.0.0.1, through the provider actors.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::llm::discovery::OPENROUTER_FALLBACK_CONTEXT;
use crate::llm::error::LlmError;
use crate::llm::fake::{FakeLlm, Step};
use crate::llm::providers::testing::TestProviders;
use crate::llm::settings::LlmOptions;

/// A server whose every answer, the discovery paths' included, comes from `script`.
fn scripted(script: impl IntoIterator<Item = Step>) -> FakeLlm {
    FakeLlm::builder(script).script_every_request().start()
}

async fn discover(settings: LlmOptions, actual: &str) -> Result<u32, LlmError> {
    let providers = TestProviders::start(settings);
    let cancel = CancellationToken::new();
    let call = providers.discover_context(actual, &cancel);
    tokio::time::timeout(Duration::from_secs(20), call)
        .await
        .expect("discovery never finished")
}

#[actix::test]
async fn llama_cpp_props_give_the_runtime_context() {
    let props = json!({"default_generation_settings": {"n_ctx": 8192}});
    let server = scripted([Step::Json(props)]);
    let found = discover(
        LlmOptions {
            openai_base_url: Some(format!("{}/v1", server.base_url())),
            openai_api_key: Some("sk-local".into()),
            ..LlmOptions::for_local_tests()
        },
        "openai/any",
    )
    .await;

    assert_eq!(found, Ok(8192));
    let seen = &server.recorded()[0];
    assert_eq!(
        (seen.method.as_str(), seen.path.as_str()),
        ("GET", "/props")
    );
    assert_eq!(seen.header("authorization"), Some("Bearer sk-local"));
}

#[actix::test]
async fn openai_falls_back_to_the_models_list() {
    let models = json!({"data": [{"id": "other", "meta": {"n_ctx_train": 4096}},
                                 {"id": "mine", "meta": {"n_ctx_train": 32768}}]});
    let server = scripted([Step::error(404), Step::Json(models)]);
    let found = discover(
        LlmOptions {
            openai_base_url: Some(server.base_url().to_owned()),
            ..LlmOptions::for_local_tests()
        },
        "openai/mine",
    )
    .await;

    assert_eq!(found, Ok(32768));
    let paths: Vec<_> = server
        .recorded()
        .into_iter()
        .map(|seen| seen.path)
        .collect();
    assert_eq!(paths, ["/props", "/v1/models"]);
}

#[actix::test]
async fn openai_without_any_size_is_an_error() {
    let server = scripted([Step::error(404), Step::Json(json!({"data": []}))]);
    let found = discover(
        LlmOptions {
            openai_base_url: Some(server.base_url().to_owned()),
            ..LlmOptions::for_local_tests()
        },
        "openai/m",
    )
    .await;

    assert_eq!(
        found.unwrap_err().to_string(),
        "OpenAI-compatible /v1/models returned no context size."
    );
}

#[actix::test]
async fn ollama_show_after_a_transient_failure() {
    let show = json!({"model_info": {"general.architecture": "qwen3",
                                     "qwen3.context_length": 40960}});
    let server = scripted([Step::error(500), Step::Json(show)]);
    let found = discover(
        LlmOptions {
            ollama_base_url: Some(server.base_url().to_owned()),
            ..LlmOptions::for_local_tests()
        },
        "ollama/qwen3:8b",
    )
    .await;

    assert_eq!(found, Ok(40960));
    let seen: Vec<_> = server.recorded();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[1].method.as_str(), seen[1].path.as_str()),
        ("POST", "/api/show")
    );
    assert_eq!(seen[1].body, json!({"model": "qwen3:8b"}));
}

#[actix::test]
async fn ollama_unknown_model_is_an_error() {
    let server = scripted([Step::error(404)]);
    let found = discover(
        LlmOptions {
            ollama_base_url: Some(server.base_url().to_owned()),
            ..LlmOptions::for_local_tests()
        },
        "ollama/missing",
    )
    .await;

    assert_eq!(
        found.unwrap_err().to_string(),
        format!(
            "Ollama /api/show failed: 404. Is Ollama running at {}?",
            server.base_url()
        )
    );
}

#[actix::test]
async fn openrouter_catalogue_override_and_fallback() {
    let catalogue =
        json!({"data": [{"id": "anthropic/claude-sonnet-4", "context_length": 200000}]});
    let server = scripted([Step::Json(catalogue), Step::error(503)]);
    let routed = LlmOptions {
        openrouter_base_url: format!("{}/api/v1", server.base_url()),
        ..LlmOptions::for_local_tests()
    };

    let listed = discover(routed.clone(), "anthropic/claude-sonnet-4").await;
    let unavailable = discover(routed.clone(), "anthropic/claude-sonnet-4").await;
    let overridden = discover(
        LlmOptions {
            openrouter_context_size: Some(65536),
            ..routed
        },
        "anything",
    )
    .await;

    assert_eq!(listed, Ok(200000));
    assert_eq!(unavailable, Ok(OPENROUTER_FALLBACK_CONTEXT));
    assert_eq!(overridden, Ok(65536));
    let paths: Vec<_> = server
        .recorded()
        .into_iter()
        .map(|seen| seen.path)
        .collect();
    assert_eq!(paths, ["/api/v1/models", "/api/v1/models"]);
}

#[actix::test]
async fn xai_models_then_language_models() {
    let models = json!({"data": [{"id": "grok-3"}]});
    let described = json!({"id": "grok-4", "context_length": 256000});
    let server = scripted([Step::Json(models), Step::Json(described)]);
    let found = discover(
        LlmOptions {
            xai_base_url: Some(format!("{}/v1/responses", server.base_url())),
            xai_api_key: Some("xai-key".into()),
            ..LlmOptions::for_local_tests()
        },
        "x.ai/grok-4",
    )
    .await;

    assert_eq!(found, Ok(256000));
    let paths: Vec<_> = server
        .recorded()
        .into_iter()
        .map(|seen| seen.path)
        .collect();
    assert_eq!(paths, ["/v1/models", "/v1/language-models/grok-4"]);
}
