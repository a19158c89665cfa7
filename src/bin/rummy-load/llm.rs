//! What the tool asks of the LLM server behind rummy (`--llm-url`): the model it serves, to
//! register it under the run's alias, and, from the built-in fake, how many completions it
//! has served.

use std::time::Duration;

use serde_json::{json, Value};

use crate::client::{Answer, RpcClient};

/// Context size registered when the LLM server reports none.
const FALLBACK_CONTEXT: u64 = 8192;

/// The model an OpenAI-compatible server lists first, and its context size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServedModel {
    pub id: String,
    /// Its context size in tokens.
    pub context: u64,
}

/// Why the LLM server could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LlmSetupError {
    /// The HTTP request failed.
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    /// `/v1/models` listed nothing usable.
    #[error("{0}/v1/models lists no model")]
    NoModel(String),
    /// rummy refused `addModel`.
    #[error("addModel failed: {0}")]
    AddModel(String),
}

/// `GET url` as JSON.
async fn get_json(url: &str, timeout: Duration) -> Result<Value, LlmSetupError> {
    let failure = |reason: String| LlmSetupError::Http {
        url: url.to_string(),
        reason,
    };
    let client = awc::Client::builder().timeout(timeout).finish();
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|error| failure(error.to_string()))?;
    if !response.status().is_success() {
        return Err(failure(format!("HTTP {}", response.status().as_u16())));
    }
    response
        .json::<Value>()
        .await
        .map_err(|error| failure(error.to_string()))
}

/// The server root without a trailing `/` or `/v1`.
pub(crate) fn root(llm_url: &str) -> &str {
    let trimmed = llm_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
}

/// The first model `/v1/models` lists.
pub(crate) async fn served_model(
    llm_url: &str,
    timeout: Duration,
) -> Result<ServedModel, LlmSetupError> {
    let root = root(llm_url);
    let listing = get_json(&format!("{root}/v1/models"), timeout).await?;
    first_model(&listing).ok_or_else(|| LlmSetupError::NoModel(root.to_string()))
}

/// The first entry of a `/v1/models` listing.
fn first_model(listing: &Value) -> Option<ServedModel> {
    let model = listing.get("data")?.as_array()?.first()?;
    let id = model.get("id")?.as_str()?.to_string();
    let context = ["context_length", "max_model_len"]
        .iter()
        .find_map(|field| model.get(*field).and_then(Value::as_u64))
        .or_else(|| model.pointer("/meta/n_ctx_train").and_then(Value::as_u64))
        .unwrap_or(FALLBACK_CONTEXT);
    Some(ServedModel { id, context })
}

/// Completions the built-in fake has served, or `None` from any other server.
pub(crate) async fn completions_served(llm_url: &str, timeout: Duration) -> Option<u64> {
    let stats = get_json(&format!("{}/stats", root(llm_url)), timeout)
        .await
        .ok()?;
    stats.get("completions")?.as_u64()
}

/// Registers `model` in rummy's catalogue under `alias` as an OpenAI-compatible model.
pub(crate) async fn register(
    client: &mut RpcClient,
    alias: &str,
    model: &ServedModel,
    timeout: Duration,
) -> Result<(), LlmSetupError> {
    let params = json!({
        "alias": alias,
        "actual": format!("openai/{}", model.id),
        "contextLength": model.context,
    });
    match client.call("addModel", params, timeout).await {
        Ok((Answer::Result(_), _)) => Ok(()),
        Ok((Answer::Error { code, message }, _)) => {
            Err(LlmSetupError::AddModel(format!("{code} {message}")))
        }
        Err(error) => Err(LlmSetupError::AddModel(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_drops_slashes_and_v1() {
        assert_eq!(root("http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080");
        assert_eq!(root("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }

    #[test]
    fn the_first_model_and_its_context_are_read() {
        let listing = json!({"data": [
            {"id": "smollm2", "meta": {"n_ctx_train": 8192}},
            {"id": "other", "context_length": 4096},
        ]});
        assert_eq!(
            first_model(&listing),
            Some(ServedModel {
                id: "smollm2".into(),
                context: 8192
            })
        );
        let listing = json!({"data": [{"id": "m", "context_length": 32768}]});
        assert_eq!(first_model(&listing).unwrap().context, 32768);
    }

    #[test]
    fn an_empty_listing_has_no_model() {
        assert_eq!(first_model(&json!({"data": []})), None);
        assert_eq!(first_model(&json!({"error": "nope"})), None);
    }
}
