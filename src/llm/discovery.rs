//! Context length discovery per provider (PROTOCOL.md Part B §5.3). The caller stores the
//! result in the `models` table, so each model is asked about once.

use std::time::Duration;

use serde_json::{json, Value};

use super::chat_completions::{at, count};
use super::client::{ollama_root, openai_root, openrouter_root, xai_endpoint, ProviderClient};
use super::error::LlmError;
use super::route::ProviderKind;

/// OpenRouter's context length when neither the override nor the catalogue gives one.
pub(crate) const OPENROUTER_FALLBACK_CONTEXT: u32 = 131_072;
/// How long the OpenRouter catalogue may take before the fallback is used.
const OPENROUTER_CATALOGUE_TIMEOUT: Duration = Duration::from_secs(5);

/// One discovery attempt for `model` (the provider's own model name).
pub(super) async fn discover_context(
    client: &ProviderClient,
    provider: ProviderKind,
    model: &str,
) -> Result<u32, LlmError> {
    match provider {
        ProviderKind::OpenAi => openai_context(client, model).await,
        ProviderKind::Ollama => ollama_context(client, model).await,
        ProviderKind::OpenRouter => Ok(openrouter_context(client, model).await),
        ProviderKind::Xai => xai_context(client, model).await,
    }
}

/// llama.cpp's `/props` (the runtime context), else the first matching `/v1/models` entry.
async fn openai_context(client: &ProviderClient, model: &str) -> Result<u32, LlmError> {
    let provider = ProviderKind::OpenAi;
    let current = client.settings();
    let settings = &*current;
    let root = openai_root(settings)?;
    let bearer = settings.openai_api_key.as_deref();
    let timeout = settings.fetch_timeout;
    let props = client
        .get_json(provider, &format!("{root}/props"), bearer, timeout)
        .await;
    if let Some(size) = props.as_ref().ok().and_then(llama_cpp_context) {
        return Ok(size);
    }
    let url = format!("{root}/v1/models");
    let models = client
        .get_json(provider, &url, bearer, timeout)
        .await
        .map_err(|error| match error {
            LlmError::BadRequest { status, .. } | LlmError::Auth { status, .. } => {
                LlmError::ContextUnknown {
                    provider,
                    message: format!(
                        "OpenAI-compatible /v1/models failed: {status}. Is the server running at {root}?"
                    ),
                }
            }
            other => other,
        })?;
    listed_model_context(&models, model).ok_or_else(|| LlmError::ContextUnknown {
        provider,
        message: "OpenAI-compatible /v1/models returned no context size.".into(),
    })
}

/// Ollama's `/api/show`: the `model_info` key ending in `.context_length`.
async fn ollama_context(client: &ProviderClient, model: &str) -> Result<u32, LlmError> {
    let provider = ProviderKind::Ollama;
    let current = client.settings();
    let settings = &*current;
    let root = ollama_root(settings)?;
    let body = json!({ "model": model });
    let show = client
        .post_json(
            provider,
            &format!("{root}/api/show"),
            &body,
            settings.fetch_timeout,
        )
        .await
        .map_err(|error| match error {
            LlmError::BadRequest { status, .. } => LlmError::ContextUnknown {
                provider,
                message: format!("Ollama /api/show failed: {status}. Is Ollama running at {root}?"),
            },
            other => other,
        })?;
    ollama_show_context(&show).ok_or_else(|| LlmError::ContextUnknown {
        provider,
        message: format!("Ollama /api/show returned no context_length for model '{model}'."),
    })
}

/// `RUMMY_CONTEXT_SIZE`, else the catalogue entry, else the fallback: never fails.
async fn openrouter_context(client: &ProviderClient, model: &str) -> u32 {
    let current = client.settings();
    let settings = &*current;
    if let Some(size) = settings.openrouter_context_size {
        return size;
    }
    let url = format!("{}/models", openrouter_root(settings));
    let bearer = settings.openrouter_api_key.as_deref();
    let timeout = OPENROUTER_CATALOGUE_TIMEOUT.min(settings.fetch_timeout);
    match client
        .get_json(ProviderKind::OpenRouter, &url, bearer, timeout)
        .await
    {
        Ok(catalogue) => catalogue_context(&catalogue, model).unwrap_or_else(|| {
            tracing::warn!(llm.model = model, "model not in the OpenRouter catalogue");
            OPENROUTER_FALLBACK_CONTEXT
        }),
        Err(error) => {
            tracing::warn!(llm.model = model, error = %error, "OpenRouter catalogue unavailable");
            OPENROUTER_FALLBACK_CONTEXT
        }
    }
}

/// The models list beside the Responses URL, else `/language-models/<model>`.
async fn xai_context(client: &ProviderClient, model: &str) -> Result<u32, LlmError> {
    let provider = ProviderKind::Xai;
    let current = client.settings();
    let settings = &*current;
    let (responses_url, key) = xai_endpoint(settings)?;
    let models_url = responses_url.replace("/responses", "/models");
    let timeout = settings.fetch_timeout;
    let listed = client
        .get_json(provider, &models_url, Some(key), timeout)
        .await;
    if let Some(size) = listed
        .as_ref()
        .ok()
        .and_then(|list| catalogue_context(list, model))
    {
        return Ok(size);
    }
    let language_model_url =
        responses_url.replace("/responses", &format!("/language-models/{model}"));
    let described = client
        .get_json(provider, &language_model_url, Some(key), timeout)
        .await;
    described
        .ok()
        .and_then(|entry| entry.get("context_length").and_then(positive))
        .ok_or_else(|| LlmError::ContextUnknown {
            provider,
            message: format!(
                "xAI reports no context length for model '{model}'; register it with a context length."
            ),
        })
}

/// A context length: a positive integer that fits `u32`.
fn positive(value: &Value) -> Option<u32> {
    count(value)
        .and_then(|size| u32::try_from(size).ok())
        .filter(|size| *size > 0)
}

/// llama.cpp `/props`: `default_generation_settings.n_ctx` (older builds: top-level `n_ctx`).
fn llama_cpp_context(props: &Value) -> Option<u32> {
    at(props, &["default_generation_settings", "n_ctx"])
        .or_else(|| props.get("n_ctx"))
        .and_then(positive)
}

/// `/v1/models`: the entry whose id is `model`, else the first; `meta.n_ctx_train` or
/// `context_length`.
fn listed_model_context(models: &Value, model: &str) -> Option<u32> {
    let entries = models.get("data").and_then(Value::as_array)?;
    let entry = entries
        .iter()
        .find(|entry| entry.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| entries.first())?;
    at(entry, &["meta", "n_ctx_train"])
        .and_then(positive)
        .or_else(|| entry.get("context_length").and_then(positive))
}

/// Ollama `/api/show`: the first `model_info` key ending in `.context_length`.
fn ollama_show_context(show: &Value) -> Option<u32> {
    show.get("model_info")
        .and_then(Value::as_object)?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, value)| positive(value))
}

/// A `data` or `models` list: the entry whose `id` (or `id-latest`) is `model`.
fn catalogue_context(catalogue: &Value, model: &str) -> Option<u32> {
    let entries = catalogue
        .get("data")
        .or_else(|| catalogue.get("models"))
        .and_then(Value::as_array)?;
    entries
        .iter()
        .find(|entry| {
            entry
                .get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| id == model || model.strip_suffix("-latest") == Some(id))
        })
        .and_then(|entry| entry.get("context_length"))
        .and_then(positive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_props() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192}, "n_ctx": 4});
        assert_eq!(llama_cpp_context(&props), Some(8192));
        assert_eq!(llama_cpp_context(&json!({"n_ctx": 4096})), Some(4096));
        assert_eq!(
            llama_cpp_context(&json!({"default_generation_settings": {}})),
            None
        );
        assert_eq!(llama_cpp_context(&json!({"n_ctx": 0})), None);
    }

    #[test]
    fn models_list_prefers_the_named_model() {
        let models = json!({"data": [
            {"id": "first", "meta": {"n_ctx_train": 2048}},
            {"id": "wanted", "context_length": 32768}
        ]});
        assert_eq!(listed_model_context(&models, "wanted"), Some(32768));
        assert_eq!(listed_model_context(&models, "other"), Some(2048));
        assert_eq!(listed_model_context(&json!({"data": []}), "x"), None);
    }

    #[test]
    fn ollama_model_info() {
        let show = json!({"model_info": {"general.architecture": "qwen3",
                                         "qwen3.context_length": 40960}});
        assert_eq!(ollama_show_context(&show), Some(40960));
        assert_eq!(ollama_show_context(&json!({"model_info": {}})), None);
        assert_eq!(
            ollama_show_context(&json!({"model_info": {"x.context_length": "big"}})),
            None
        );
    }

    #[test]
    fn catalogue_matches_id_or_latest() {
        let catalogue = json!({"data": [{"id": "a/b", "context_length": 200000},
                                        {"id": "grok-4", "context_length": 256000}]});
        assert_eq!(catalogue_context(&catalogue, "a/b"), Some(200000));
        assert_eq!(catalogue_context(&catalogue, "grok-4-latest"), Some(256000));
        assert_eq!(catalogue_context(&catalogue, "c/d"), None);
        let models = json!({"models": [{"id": "m", "context_length": 1000}]});
        assert_eq!(catalogue_context(&models, "m"), Some(1000));
    }
}

#[cfg(test)]
mod http_tests;
