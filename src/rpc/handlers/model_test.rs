//! `model/test`: one call to a catalogue model, to see that its provider, URL and key work
//! before anyone's run depends on them.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::db::queries::models;
use crate::error::AppError;
use crate::llm::{ChatMessage, ChatRequest, Route};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::Required;

/// What the model is asked: short, so the call costs next to nothing.
const TEST_PROMPT: &str = "This is a connection test. Answer with one short sentence.";
/// The cap on the test's generated tokens.
const TEST_MAX_TOKENS: u32 = 64;

/// `model/test` params.
#[derive(Debug, Deserialize)]
pub(crate) struct TestParams {
    alias: Required,
}

/// What the call gave: the reply, how long it took and its tokens; or the provider's error.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TestResult {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    latency_ms: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// `model/test`: one attempt at the alias's model (no retry, outside any run's usage and
/// caps). A provider's refusal is an answer (`ok: false` and its words, any echo of the key
/// cut out), not an error.
pub(crate) async fn test(context: CallContext, params: TestParams) -> Result<Reply, AppError> {
    let alias = params.alias.0;
    let wanted = alias.clone();
    let model = context
        .agent
        .db
        .read(move |conn| models::find_model(conn, &wanted))
        .await?
        .ok_or_else(|| AppError::InvalidParam(format!("no model '{alias}' in the catalogue")))?;
    let provider = Route::from_actual(&model.actual).provider;
    let mut request = ChatRequest::new(model.actual, vec![ChatMessage::user(TEST_PROMPT)]);
    request.max_tokens = Some(TEST_MAX_TOKENS);
    let started = Instant::now();
    let answer = context.agent.llm.try_once(request).await;
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Reply::of(match answer {
        Ok(response) => TestResult {
            ok: true,
            reply: Some(response.content),
            error: None,
            latency_ms,
            prompt_tokens: response.usage.prompt_tokens,
            completion_tokens: response.usage.completion_tokens,
        },
        Err(error) => TestResult {
            ok: false,
            reply: None,
            error: Some(context.agent.llm.redact(provider, &error.to_string())),
            latency_ms,
            prompt_tokens: 0,
            completion_tokens: 0,
        },
    })
}
