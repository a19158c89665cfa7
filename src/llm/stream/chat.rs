//! Folding Chat Completions chunks (OpenAI-compatible servers, Ollama's `/v1`, OpenRouter)
//! into one answer; also the lines of Ollama's own streaming API (`message`, `done`,
//! `prompt_eval_count`, `eval_count`), which carry the same facts under other names.

use serde_json::Value;

use crate::llm::chat::{ChatResponse, Usage};
use crate::llm::chat_completions::{count, embedded_error, refused_by, text_of, usage_of};
use crate::llm::error::LlmError;
use crate::llm::route::ProviderKind;

/// The answer as its chunks have built it so far.
pub(super) struct ChatFold {
    provider: ProviderKind,
    content: String,
    reasoning: String,
    refusal: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    model: String,
}

impl ChatFold {
    pub(super) fn new(provider: ProviderKind, requested_model: &str) -> ChatFold {
        ChatFold {
            provider,
            content: String::new(),
            reasoning: String::new(),
            refusal: String::new(),
            finish_reason: None,
            usage: None,
            model: requested_model.to_owned(),
        }
    }

    /// Takes one chunk; true when it is Ollama's last (`done`). An `error` in place of the
    /// chunk's fields (OpenRouter's way of failing mid-stream) is classified like a status.
    pub(super) fn take(&mut self, chunk: &Value) -> Result<bool, LlmError> {
        if chunk.get("error").is_some() && chunk.get("choices").is_none() {
            return Err(embedded_error(self.provider, chunk));
        }
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            model.clone_into(&mut self.model);
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(usage_of(usage));
        }
        let choice = chunk.get("choices").and_then(|choices| choices.get(0));
        if let Some(delta) = choice.and_then(|choice| choice.get("delta")) {
            self.add(delta);
        }
        if let Some(reason) = choice
            .and_then(|choice| choice.get("finish_reason"))
            .and_then(Value::as_str)
        {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(message) = chunk.get("message") {
            self.add(message);
        }
        let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
        if done {
            self.ollama_end(chunk);
        }
        Ok(done)
    }

    /// Appends a delta's (or an Ollama message's) pieces.
    fn add(&mut self, delta: &Value) {
        self.content.push_str(&text_of(delta.get("content")));
        for field in ["reasoning_content", "reasoning", "thinking"] {
            if let Some(text) = delta.get(field).and_then(Value::as_str) {
                self.reasoning.push_str(text);
            }
        }
        if let Some(text) = delta.get("refusal").and_then(Value::as_str) {
            self.refusal.push_str(text);
        }
    }

    /// Ollama's last line: why it stopped and its counts.
    fn ollama_end(&mut self, chunk: &Value) {
        if let Some(reason) = chunk.get("done_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let read = |field: &str| chunk.get(field).and_then(count);
        if let (Some(prompt), Some(completion)) = (read("prompt_eval_count"), read("eval_count")) {
            self.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: prompt.saturating_add(completion),
                ..Usage::default()
            });
        }
    }

    /// The reply's text so far.
    pub(super) fn text(&self) -> &str {
        &self.content
    }

    pub(super) fn finish(self) -> ChatResponse {
        let refusal = Some(self.refusal)
            .filter(|text| !text.trim().is_empty())
            .or_else(|| refused_by(self.finish_reason.as_deref()).then(String::new));
        ChatResponse {
            content: self.content,
            reasoning_content: Some(self.reasoning).filter(|text| !text.trim().is_empty()),
            usage: self.usage.unwrap_or_default(),
            finish_reason: self.finish_reason,
            refusal,
            model: self.model,
        }
    }
}
