//! Folding the events of xAI's streamed Responses: the text deltas show the reply as it
//! grows; the answer is the whole response `response.completed` (or `.incomplete`) carries,
//! decoded as an unstreamed one, so its usage is exactly the provider's.

use serde_json::Value;

use crate::llm::chat::ChatResponse;
use crate::llm::error::LlmError;
use crate::llm::responses::parse_response;
use crate::llm::route::ProviderKind;

/// The text so far, and the final response once it came.
pub(super) struct ResponsesFold {
    requested_model: String,
    text: String,
    completed: Option<Value>,
}

impl ResponsesFold {
    pub(super) fn new(requested_model: &str) -> ResponsesFold {
        ResponsesFold {
            requested_model: requested_model.to_owned(),
            text: String::new(),
            completed: None,
        }
    }

    /// Takes one event; true once the response is complete.
    pub(super) fn take(&mut self, event: &Value) -> Result<bool, LlmError> {
        match event.get("type").and_then(Value::as_str) {
            Some("response.output_text.delta") => {
                if let Some(delta) = event.get("delta").and_then(Value::as_str) {
                    self.text.push_str(delta);
                }
                Ok(false)
            }
            Some("response.completed" | "response.incomplete") => {
                self.completed = event.get("response").cloned();
                Ok(true)
            }
            Some("response.failed" | "error") => {
                let message = event
                    .pointer("/response/error/message")
                    .or_else(|| event.get("message"))
                    .and_then(Value::as_str)
                    .unwrap_or("the response failed");
                Err(LlmError::Decode {
                    provider: ProviderKind::Xai,
                    message: message.to_owned(),
                })
            }
            _ => Ok(false),
        }
    }

    pub(super) fn text(&self) -> &str {
        &self.text
    }

    pub(super) fn finish(self) -> Result<ChatResponse, LlmError> {
        let Some(response) = self.completed else {
            return Err(LlmError::Decode {
                provider: ProviderKind::Xai,
                message: "the stream ended without its response".into(),
            });
        };
        parse_response(&self.requested_model, &response)
    }
}
