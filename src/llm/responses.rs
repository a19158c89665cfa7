//! xAI's Responses API wire format: the request body, and flattening the `output` items
//! of a response into one `ChatResponse`.

use serde_json::{json, Map, Value};

use super::chat::{ChatRequest, ChatResponse, Usage};
use super::chat_completions::{at, count, refused_by, text_of};
use super::error::LlmError;
use super::route::ProviderKind;

/// xAI reports cost in ticks of 1e-10 US dollars.
const USD_TICKS_PER_DOLLAR: f64 = 1e10;

/// The request body (asking for a stream when `streamed`): the messages go in `input`.
pub(super) fn request_body(request: &ChatRequest, streamed: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("input".into(), json!(request.messages));
    if streamed {
        body.insert("stream".into(), json!(true));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max_tokens) = request.max_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    Value::Object(body)
}

/// Decodes a 2xx response: `message` items make the content, `reasoning` items the
/// reasoning; several items of a kind are joined by newlines.
pub(super) fn parse_response(
    requested_model: &str,
    body: &Value,
) -> Result<ChatResponse, LlmError> {
    let Some(output) = body.get("output").and_then(Value::as_array) else {
        return Err(LlmError::Decode {
            provider: ProviderKind::Xai,
            message: "the response has no output".into(),
        });
    };
    let mut content = Vec::new();
    let mut reasoning = Vec::new();
    let mut refusals = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                content.push(item_text(item));
                refusals.extend(refusals_of(item));
            }
            Some("reasoning") => reasoning.push(item_text(item)),
            _ => {}
        }
    }
    let filtered = at(body, &["incomplete_details", "reason"]).and_then(Value::as_str);
    let refusal = (!refusals.is_empty())
        .then(|| refusals.join("\n"))
        .or_else(|| refused_by(filtered).then(String::new));
    content.retain(|text| !text.is_empty());
    reasoning.retain(|text| !text.trim().is_empty());
    Ok(ChatResponse {
        content: content.join("\n"),
        reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
        usage: body.get("usage").map(usage_of).unwrap_or_default(),
        finish_reason: body
            .get("status")
            .and_then(Value::as_str)
            .map(str::to_owned),
        refusal,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(requested_model)
            .to_owned(),
    })
}

/// The texts of a message item's `refusal` parts.
fn refusals_of(item: &Value) -> impl Iterator<Item = String> + '_ {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("refusal"))
        .filter_map(|part| part.get("refusal").and_then(Value::as_str))
        .map(str::to_owned)
}

/// An item's text: its `content` (a string or parts), else its `summary` parts.
fn item_text(item: &Value) -> String {
    let text = text_of(item.get("content"));
    if !text.is_empty() {
        return text;
    }
    text_of(item.get("summary"))
}

fn usage_of(usage: &Value) -> Usage {
    let read = |path: &[&str]| at(usage, path).and_then(count).unwrap_or(0);
    let prompt_tokens = read(&["input_tokens"]);
    let completion_tokens = read(&["output_tokens"]);
    let ticks = usage
        .get("cost_in_usd_ticks")
        .and_then(Value::as_f64)
        .filter(|ticks| ticks.is_finite() && *ticks >= 0.0)
        .unwrap_or(0.0);
    Usage {
        prompt_tokens,
        cached_tokens: read(&["input_tokens_details", "cached_tokens"]),
        completion_tokens,
        reasoning_tokens: read(&["output_tokens_details", "reasoning_tokens"]),
        total_tokens: prompt_tokens.saturating_add(completion_tokens),
        cost: ticks / USD_TICKS_PER_DOLLAR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::chat::ChatMessage;

    #[test]
    fn body_puts_messages_in_input() {
        let mut request = ChatRequest::new("grok-4", vec![ChatMessage::system("be brief")]);
        request.max_tokens = Some(10);
        request.temperature = Some(0.2);
        assert_eq!(
            request_body(&request, true),
            json!({"model": "grok-4", "input": [{"role": "system", "content": "be brief"}],
                   "stream": true, "temperature": 0.2, "max_output_tokens": 10})
        );
        assert_eq!(
            request_body(&request, false),
            json!({"model": "grok-4", "input": [{"role": "system", "content": "be brief"}],
                   "temperature": 0.2, "max_output_tokens": 10})
        );
    }

    #[test]
    fn output_items_are_flattened() {
        let body = json!({
            "model": "grok-4-latest",
            "status": "completed",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}]},
                {"type": "message", "content": [{"type": "output_text", "text": "one"}]},
                {"type": "function_call", "name": "x"},
                {"type": "message", "content": "two"}
            ],
            "usage": {"input_tokens": 50, "output_tokens": 8,
                      "input_tokens_details": {"cached_tokens": 20},
                      "output_tokens_details": {"reasoning_tokens": 3},
                      "cost_in_usd_ticks": 25_000_000}
        });
        let response = parse_response("grok-4", &body).unwrap();
        assert_eq!(response.content, "one\ntwo");
        assert_eq!(response.reasoning_content.as_deref(), Some("plan"));
        assert_eq!(response.finish_reason.as_deref(), Some("completed"));
        assert_eq!(response.model, "grok-4-latest");
        assert_eq!(
            response.usage,
            Usage {
                prompt_tokens: 50,
                cached_tokens: 20,
                completion_tokens: 8,
                reasoning_tokens: 3,
                total_tokens: 58,
                cost: 0.0025
            }
        );
    }

    #[test]
    fn a_refusal_part_or_a_filtered_reply_is_a_refusal() {
        let body = json!({"output": [{"type": "message", "content": [
            {"type": "refusal", "refusal": "I can't."}]}]});
        let response = parse_response("m", &body).unwrap();
        assert_eq!(response.refusal.as_deref(), Some("I can't."));
        assert_eq!(response.content, "");
        let filtered = json!({"status": "incomplete", "output": [],
                              "incomplete_details": {"reason": "content_filter"}});
        assert_eq!(
            parse_response("m", &filtered).unwrap().refusal.as_deref(),
            Some("")
        );
        let cut = json!({"status": "incomplete", "output": [],
                         "incomplete_details": {"reason": "max_output_tokens"}});
        assert_eq!(parse_response("m", &cut).unwrap().refusal, None);
    }

    #[test]
    fn missing_output_is_a_decode_error() {
        assert!(matches!(
            parse_response("m", &json!({"id": "x"})),
            Err(LlmError::Decode { .. })
        ));
        let empty = parse_response("m", &json!({"output": []})).unwrap();
        assert_eq!(empty.content, "");
        assert_eq!(empty.reasoning_content, None);
    }
}
