//! LLM providers: OpenAI-compatible, Ollama, OpenRouter and xAI clients behind one front door.
//!
//! `LlmProviders::start` runs one `LlmProvider` actor per provider; calls are routed by the
//! prefix of the model's catalogue `actual` string (`route`). Each actor bounds its calls in
//! flight, holds all of them while the provider asks for a back-off (a 429, a 503 with
//! Retry-After: `gate`), retries rate limits, server errors, broken connections and timeouts
//! with backoff honouring Retry-After (`retry`), and drops the in-flight HTTP request when a
//! call is cancelled; it records every answered call once in the usage of the run the caller
//! names (`ledger`: turns and sidecar calls alike). Responses are normalised into one
//! `ChatResponse` (content, reasoning, usage).
//! Context lengths are discovered per provider and returned for the caller to store.
//! Only this module knows provider wire formats; API keys never reach a log. [`fake`] serves
//! those formats from a script, standing in for a model in the tests and in `rummy-load`.

mod actor;
mod chat;
mod chat_completions;
mod client;
mod discovery;
mod error;
pub mod fake;
mod gate;
mod ledger;
mod providers;
mod responses;
mod retry;
mod route;
mod settings;

pub use actor::{Complete, DiscoverContext, LlmProvider};
pub use chat::{ChatMessage, ChatRequest, ChatResponse, Role, Usage};
pub use discovery::OPENROUTER_FALLBACK_CONTEXT;
pub use error::LlmError;
pub use ledger::{CallFor, Ledger};
pub use providers::LlmProviders;
pub use retry::{parse_retry_after, RetryPolicy};
pub use route::{ProviderKind, Route};
pub use settings::{ConcurrencyLimits, LlmOptions};
pub use tokio_util::sync::CancellationToken;
