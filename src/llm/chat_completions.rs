//! The OpenAI Chat Completions wire format, spoken by OpenAI-compatible servers, Ollama and
//! OpenRouter: request bodies, and healing decoding of responses into `ChatResponse`.

use serde_json::{json, Map, Value};

use super::chat::{ChatRequest, ChatResponse, Usage};
use super::error::LlmError;
use super::route::ProviderKind;

/// The request body; `streamed`, it asks for a stream that ends with the call's usage
/// (`stream_options.include_usage`), else for the whole answer at once (which carries its
/// usage). OpenAI-compatible servers and Ollama get `think: true`, OpenRouter
/// `include_reasoning: true`, so reasoning models return their reasoning separately.
pub(super) fn request_body(provider: ProviderKind, request: &ChatRequest, streamed: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("messages".into(), json!(request.messages));
    if streamed {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    match provider {
        ProviderKind::OpenRouter => body.insert("include_reasoning".into(), json!(true)),
        _ => body.insert("think".into(), json!(true)),
    };
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    Value::Object(body)
}

/// Decodes a 2xx response. An `error` object in place of `choices` (OpenRouter does this
/// when an upstream fails) is classified like an HTTP status.
pub(super) fn parse_response(
    provider: ProviderKind,
    requested_model: &str,
    body: &Value,
) -> Result<ChatResponse, LlmError> {
    let Some(choice) = body.get("choices").and_then(|choices| choices.get(0)) else {
        return Err(embedded_error(provider, body));
    };
    let message = choice.get("message").unwrap_or(&Value::Null);
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let refusal = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|text| !text.trim().is_empty())
        .map(str::to_owned)
        .or_else(|| refused_by(finish_reason.as_deref()).then(String::new));
    Ok(ChatResponse {
        content: text_of(message.get("content")),
        reasoning_content: reasoning_of(message),
        usage: body.get("usage").map(usage_of).unwrap_or_default(),
        finish_reason,
        refusal,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(requested_model)
            .to_owned(),
    })
}

/// Whether a finish reason says the model refused or its reply was filtered.
pub(super) fn refused_by(finish_reason: Option<&str>) -> bool {
    matches!(finish_reason, Some("content_filter" | "refusal"))
}

pub(super) fn embedded_error(provider: ProviderKind, body: &Value) -> LlmError {
    let Some(error) = body.get("error") else {
        return LlmError::Decode {
            provider,
            message: "the response has no choices".into(),
        };
    };
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    let status = error
        .get("code")
        .and_then(count)
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    match status {
        Some(status) => LlmError::from_status(provider, status, &message, None),
        None => LlmError::Decode { provider, message },
    }
}

/// Message content as text: a string, or the text of an array of content parts.
pub(super) fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| match part {
                Value::String(text) => Some(text.as_str()),
                _ => part.get("text").and_then(Value::as_str),
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The distinct non-empty reasoning texts (`reasoning_content`, `reasoning`, `thinking`,
/// then each `reasoning_details[].text`) joined by newlines.
pub(super) fn reasoning_of(message: &Value) -> Option<String> {
    let fields = ["reasoning_content", "reasoning", "thinking"]
        .into_iter()
        .filter_map(|field| message.get(field).and_then(Value::as_str));
    let details = message
        .get("reasoning_details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|detail| detail.get("text").and_then(Value::as_str));
    let mut texts: Vec<&str> = Vec::new();
    for text in fields.chain(details) {
        if !text.trim().is_empty() && !texts.contains(&text) {
            texts.push(text);
        }
    }
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// Normalises the many shapes of `usage` (AGENT.md §2.3): cached and reasoning counts are
/// read from the first place that has them; a missing total is prompt + completion.
pub(super) fn usage_of(usage: &Value) -> Usage {
    let first = |paths: &[&[&str]]| {
        paths
            .iter()
            .find_map(|path| at(usage, path).and_then(count))
    };
    let prompt_tokens = first(&[&["prompt_tokens"]]).unwrap_or(0);
    let completion_tokens = first(&[&["completion_tokens"]]).unwrap_or(0);
    Usage {
        prompt_tokens,
        cached_tokens: first(&[
            &["cached_tokens"],
            &["prompt_tokens_details", "cached_tokens"],
            &["input_tokens_details", "cached_tokens"],
            &["cache_read_input_tokens"],
        ])
        .unwrap_or(0),
        completion_tokens,
        reasoning_tokens: first(&[
            &["reasoning_tokens"],
            &["completion_tokens_details", "reasoning_tokens"],
            &["output_tokens_details", "reasoning_tokens"],
        ])
        .unwrap_or(0),
        total_tokens: first(&[&["total_tokens"]])
            .unwrap_or_else(|| prompt_tokens.saturating_add(completion_tokens)),
        cost: usage
            .get("cost")
            .and_then(Value::as_f64)
            .filter(|cost| cost.is_finite() && *cost >= 0.0)
            .unwrap_or(0.0),
    }
}

/// The value at a path of object keys.
pub(super) fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |value, key| value.get(key))
}

/// A token count: a non-negative integer, or a whole non-negative float.
pub(super) fn count(value: &Value) -> Option<u64> {
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|number| number.is_finite() && *number >= 0.0 && number.fract() == 0.0)
            .map(|number| number as u64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::chat::ChatMessage;

    const P: ProviderKind = ProviderKind::OpenAi;

    #[test]
    fn bodies_per_provider() {
        let mut request = ChatRequest::new("qwen3", vec![ChatMessage::user("hi")]);
        request.max_tokens = Some(64);
        request.temperature = Some(0.5);
        let body = request_body(ProviderKind::Ollama, &request, true);
        assert_eq!(
            body,
            json!({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}],
                   "stream": true, "stream_options": {"include_usage": true},
                   "think": true, "temperature": 0.5, "max_tokens": 64})
        );
        request.max_tokens = None;
        request.temperature = None;
        let body = request_body(ProviderKind::OpenRouter, &request, true);
        assert_eq!(
            body,
            json!({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}],
                   "stream": true, "stream_options": {"include_usage": true},
                   "include_reasoning": true})
        );
        let whole = request_body(ProviderKind::OpenAi, &request, false);
        assert_eq!(
            whole,
            json!({"model": "qwen3", "messages": [{"role": "user", "content": "hi"}],
                   "think": true})
        );
    }

    #[test]
    fn a_full_response() {
        let body = json!({
            "model": "served-model",
            "choices": [{"message": {"role": "assistant", "content": "<update/>",
                                     "reasoning_content": "thinking hard"},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
                      "prompt_tokens_details": {"cached_tokens": 30},
                      "completion_tokens_details": {"reasoning_tokens": 12}, "cost": 0.0025}
        });
        let response = parse_response(P, "asked", &body).unwrap();
        assert_eq!(response.content, "<update/>");
        assert_eq!(response.reasoning_content.as_deref(), Some("thinking hard"));
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
        assert_eq!(response.model, "served-model");
        assert_eq!(
            response.usage,
            Usage {
                prompt_tokens: 100,
                cached_tokens: 30,
                completion_tokens: 20,
                reasoning_tokens: 12,
                total_tokens: 120,
                cost: 0.0025
            }
        );
    }

    #[test]
    fn a_refusal_is_its_text_or_the_finish_reason() {
        let said = json!({"choices": [{"message": {"content": null, "refusal": "I can't."},
                                       "finish_reason": "stop"}]});
        let response = parse_response(P, "asked", &said).unwrap();
        assert_eq!(response.refusal.as_deref(), Some("I can't."));
        for reason in ["content_filter", "refusal"] {
            let filtered =
                json!({"choices": [{"message": {"content": ""}, "finish_reason": reason}]});
            let response = parse_response(P, "asked", &filtered).unwrap();
            assert_eq!(response.refusal.as_deref(), Some(""), "{reason}");
        }
        let answered = json!({"choices": [{"message": {"content": "ok", "refusal": null},
                                           "finish_reason": "length"}]});
        assert_eq!(parse_response(P, "asked", &answered).unwrap().refusal, None);
    }

    #[test]
    fn a_bare_response_heals() {
        let body = json!({"choices": [{"message": {"content": null}}]});
        let response = parse_response(P, "asked", &body).unwrap();
        assert_eq!(response.content, "");
        assert_eq!(response.reasoning_content, None);
        assert_eq!(response.usage, Usage::default());
        assert_eq!(response.model, "asked");
    }

    #[test]
    fn content_parts_are_joined() {
        let parts = json!([{"type": "text", "text": "a"}, "b", {"type": "image"}]);
        assert_eq!(text_of(Some(&parts)), "ab");
        assert_eq!(text_of(Some(&json!(42))), "");
    }

    #[test]
    fn reasoning_is_merged_without_duplicates() {
        let message = json!({"reasoning_content": "same", "reasoning": "same", "thinking": " ",
                             "reasoning_details": [{"text": "detail"}, {"type": "encrypted"}]});
        assert_eq!(reasoning_of(&message).as_deref(), Some("same\ndetail"));
        assert_eq!(reasoning_of(&json!({"reasoning": ""})), None);
    }

    #[test]
    fn usage_shapes() {
        let anthropic_like = json!({"prompt_tokens": 10.0, "completion_tokens": 5,
                                    "cache_read_input_tokens": 4,
                                    "output_tokens_details": {"reasoning_tokens": 2}});
        let usage = usage_of(&anthropic_like);
        assert_eq!(usage.prompt_tokens, 10);
        assert_eq!(usage.cached_tokens, 4);
        assert_eq!(usage.reasoning_tokens, 2);
        assert_eq!(usage.total_tokens, 15);
        let hostile = json!({"prompt_tokens": -3, "completion_tokens": "7", "cost": -1});
        assert_eq!(usage_of(&hostile), Usage::default());
    }

    #[test]
    fn embedded_errors_are_classified() {
        let limited = json!({"error": {"code": 429, "message": "slow down"}});
        assert!(matches!(
            parse_response(P, "m", &limited),
            Err(LlmError::RateLimited { .. })
        ));
        let upstream = json!({"error": {"code": 502, "message": "upstream died"}});
        assert!(matches!(
            parse_response(P, "m", &upstream),
            Err(LlmError::Server { status: 502, .. })
        ));
        let odd = json!({"error": {"code": "weird", "message": "no"}});
        assert!(matches!(
            parse_response(P, "m", &odd),
            Err(LlmError::Decode { .. })
        ));
        assert!(matches!(
            parse_response(P, "m", &json!({"choices": []})),
            Err(LlmError::Decode { .. })
        ));
    }
}
