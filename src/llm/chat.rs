//! The provider-neutral request and response of one LLM call.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// The user (rummy's assembled context).
    User,
    /// The model.
    Assistant,
}

/// One message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }
}

/// One completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The messages, in order.
    pub messages: Vec<ChatMessage>,
    /// The catalogue `actual` string (`ollama/qwen3:8b`, `openai/x`, `x.ai/grok-4`, or an
    /// OpenRouter id). `LlmProviders` routes on it and hands the provider actor the request
    /// with the provider's own model name here.
    pub model: String,
    /// Sampling temperature; `None` leaves it out (the provider's default).
    pub temperature: Option<f64>,
    /// Cap on generated tokens; `None` leaves it to the provider.
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request with no temperature and no token cap.
    pub fn new(model: impl Into<String>, messages: Vec<ChatMessage>) -> ChatRequest {
        ChatRequest {
            messages,
            model: model.into(),
            temperature: None,
            max_tokens: None,
        }
    }
}

/// Token and cost accounting of one call. A field the provider did not report is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt, as the provider counted them.
    pub prompt_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_tokens: u64,
    pub completion_tokens: u64,
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
    /// Prompt plus completion.
    pub total_tokens: u64,
    /// Cost in US dollars.
    pub cost: f64,
}

/// The answer of one call, normalised across providers.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The model's text; empty when it produced none.
    pub content: String,
    /// Reasoning text the API returned beside the content, if any.
    pub reasoning_content: Option<String>,
    pub usage: Usage,
    /// Why generation stopped (`stop`, `length`, ...), as the provider said.
    pub finish_reason: Option<String>,
    /// The model refused the request: its explanation, empty when the provider said so only
    /// by its finish reason (`content_filter`, `refusal`).
    pub refusal: Option<String>,
    /// The model that answered, as the provider named it (else the model requested).
    pub model: String,
}
