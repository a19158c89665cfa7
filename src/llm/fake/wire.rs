//! The JSON bodies the fake LLM builds: OpenAI-compatible completions, model listings and
//! errors, llama.cpp's props, and its own stats.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use super::{Reply, Streamed, Usage, FAKE_MODEL_ID};

/// Characters per token of the usage estimate for replies that script no usage.
const CHARS_PER_TOKEN: usize = 4;

/// llama.cpp's `GET /props`.
pub(super) fn props(n_ctx: u32) -> Value {
    json!({
        "default_generation_settings": {"n_ctx": n_ctx},
        "total_slots": 1,
        "model_path": FAKE_MODEL_ID,
    })
}

/// `GET /v1/models`: one model, with its context size in the fields llama.cpp and
/// OpenRouter use.
pub(super) fn models(n_ctx: u32) -> Value {
    json!({
        "object": "list",
        "data": [{
            "id": FAKE_MODEL_ID,
            "object": "model",
            "owned_by": "rummy",
            "context_length": n_ctx,
            "meta": {"n_ctx_train": n_ctx},
        }],
    })
}

/// `GET /stats`: how many requests took a step.
pub(super) fn stats(completions: usize) -> Value {
    json!({"completions": completions})
}

/// An OpenAI-style error body.
pub(super) fn error(status: u16, message: &str) -> Value {
    json!({"error": {"message": message, "type": "fake_llm_error", "code": status}})
}

/// The chat completion answering `request` (the `number`th request) with `reply`.
pub(super) fn completion(request: &Value, reply: &Reply, number: usize) -> Value {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(FAKE_MODEL_ID);
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert("content".into(), json!(reply.content));
    if let Some(reasoning) = &reply.reasoning_content {
        message.insert("reasoning_content".into(), json!(reasoning));
    }
    let usage = reply
        .usage
        .unwrap_or_else(|| estimated_usage(request, &reply.content));
    json!({
        "id": format!("chatcmpl-fake-{number}"),
        "object": "chat.completion",
        "created": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens.saturating_add(usage.completion_tokens),
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
            "cost": usage.cost,
        },
    })
}

/// The characters of the reply's content per streamed event, at the least.
const CHARS_PER_EVENT: usize = 8;

/// The most events a reply's content is streamed in: a longer reply (the hostile model's
/// megabyte) comes in longer pieces.
const MOST_CONTENT_EVENTS: usize = 256;

/// The chat completion answering `request` streamed as server-sent events, each `pause`
/// after the one before: the reasoning, the content in pieces, the finish reason, the usage
/// when the request asked for it (`stream_options.include_usage`), then `[DONE]`.
pub(super) fn completion_events(
    request: &Value,
    reply: &Reply,
    number: usize,
    pause: Duration,
) -> Streamed {
    let whole = completion(request, reply, number);
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut chunk = json!({
            "id": whole["id"],
            "object": "chat.completion.chunk",
            "created": whole["created"],
            "model": whole["model"],
            "choices": choices,
        });
        if let Some(usage) = usage {
            chunk["usage"] = usage.clone();
        }
        chunk.to_string()
    };
    let delta = |delta: Value| json!([{"index": 0, "delta": delta, "finish_reason": null}]);
    let mut events = vec![chunk(
        delta(json!({"role": "assistant", "content": ""})),
        None,
    )];
    if let Some(reasoning) = &reply.reasoning_content {
        events.push(chunk(delta(json!({"reasoning_content": reasoning})), None));
    }
    let characters: Vec<char> = reply.content.chars().collect();
    let per_event = characters
        .len()
        .div_ceil(MOST_CONTENT_EVENTS)
        .max(CHARS_PER_EVENT);
    for piece in characters.chunks(per_event) {
        let piece: String = piece.iter().collect();
        events.push(chunk(delta(json!({"content": piece})), None));
    }
    let finished = json!([{"index": 0, "delta": {}, "finish_reason": "stop"}]);
    events.push(chunk(finished, None));
    let asked_usage = request.pointer("/stream_options/include_usage") == Some(&json!(true));
    if asked_usage {
        events.push(chunk(json!([]), Some(&whole["usage"])));
    }
    events.push("[DONE]".into());
    let mut streamed = Streamed::events(events);
    for (index, piece) in streamed.pieces.iter_mut().enumerate() {
        if index > 0 {
            piece.0 = pause;
        }
    }
    streamed
}

/// One token per `CHARS_PER_TOKEN` characters, rounded up, of the request's message contents
/// and of the reply.
fn estimated_usage(request: &Value, content: &str) -> Usage {
    let prompt_chars: usize = request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|message| message.get("content").and_then(Value::as_str))
        .map(|text| text.chars().count())
        .sum();
    Usage {
        prompt_tokens: tokens(prompt_chars),
        completion_tokens: tokens(content.chars().count()),
        ..Usage::default()
    }
}

fn tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(CHARS_PER_TOKEN)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_carries_the_reply_and_estimates_usage() {
        let request = json!({
            "model": "fake",
            "messages": [
                {"role": "system", "content": "12345678"},
                {"role": "user", "content": "abc"},
            ],
        });
        let content = "<summarize>ok</summarize>";
        let reply = completion(&request, &Reply::new(content), 3);
        assert_eq!(reply["choices"][0]["message"]["content"], content);
        assert_eq!(reply["model"], "fake");
        assert_eq!(reply["id"], "chatcmpl-fake-3");
        assert_eq!(reply["usage"]["prompt_tokens"], 3);
        assert_eq!(
            reply["usage"]["completion_tokens"],
            content.len().div_ceil(CHARS_PER_TOKEN)
        );
    }

    #[test]
    fn a_request_without_model_gets_the_fake_id() {
        let reply = completion(&json!({"messages": []}), &Reply::new("ok"), 1);
        assert_eq!(reply["model"], FAKE_MODEL_ID);
        assert_eq!(reply["usage"]["prompt_tokens"], 0);
    }
}
