//! LLM providers: OpenAI-compatible, Ollama, OpenRouter and xAI clients behind one front door.
//!
//! `LlmProviders::start` runs one `LlmProvider` actor per provider; calls are routed by the
//! prefix of the model's catalogue `actual` string (`route`). Each actor bounds its calls in
//! flight, holds all of them while the provider asks for a back-off (a 429, a 503 with
//! Retry-After: `gate`), retries rate limits, server errors, broken connections and timeouts
//! with backoff honouring Retry-After (`retry`), and drops the in-flight HTTP request when a
//! call is cancelled; it records every answered call once in the usage of the run the caller
//! names (`ledger`: turns and sidecar calls alike), after checking the spend caps the call
//! counts against (`spending`). Responses are normalised into one
//! `ChatResponse` (content, reasoning, usage).
//! Context lengths are discovered per provider and returned for the caller to store.
//! A provider's base URL and key may be set while the server runs (`endpoints`: an admin's
//! `addModel`). Only this module knows provider wire formats; API keys never reach a log. [`fake`] serves
//! those formats from a script, standing in for a model in the tests and in `rummy-load`.

mod actor;
mod chat;
mod chat_completions;
mod client;
mod discovery;
mod endpoints;
mod error;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
mod gate;
mod ledger;
mod paying;
mod personal_keys;
mod providers;
mod responses;
mod retry;
mod route;
mod settings;
mod spending;
mod stored_caps;
mod stream;

pub(crate) use chat::{ChatMessage, ChatRequest, ChatResponse, Usage};
pub(crate) use endpoints::ProviderEndpoint;
pub(crate) use error::LlmError;
pub(crate) use ledger::{CallFor, Ledger};
pub(crate) use providers::LlmProviders;
pub(crate) use retry::RetryPolicy;
pub(crate) use route::{ProviderKind, Route};
pub(crate) use settings::{ConcurrencyLimits, LlmOptions};
pub(crate) use spending::{spender, CapBook, CapNotice, RunCaps, Spender, Spending};
pub(crate) use stored_caps::{follow as follow_stored_caps, StoredCaps};
pub(crate) use stream::TextListener;
pub(crate) use tokio_util::sync::CancellationToken;
