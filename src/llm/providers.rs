//! `LlmProviders`: the front door. It starts one `LlmProvider` actor per provider and routes
//! each call by the model's catalogue `actual` string.

use std::sync::Arc;

use actix::{Actor, Addr};
use tokio_util::sync::CancellationToken;

use super::actor::{Complete, DiscoverContext, LlmProvider};
use super::chat::{ChatRequest, ChatResponse};
use super::client::ProviderClient;
use super::error::LlmError;
use super::route::{ProviderKind, Route};
use super::settings::LlmOptions;

/// Handles to the four provider actors. Cheap to clone.
#[derive(Clone)]
pub struct LlmProviders {
    openai: Addr<LlmProvider>,
    ollama: Addr<LlmProvider>,
    openrouter: Addr<LlmProvider>,
    xai: Addr<LlmProvider>,
}

impl LlmProviders {
    /// Starts the provider actors on the current actix system.
    pub fn start(settings: LlmOptions) -> Result<LlmProviders, LlmError> {
        let limits = settings.concurrency;
        let client = ProviderClient::new(Arc::new(settings))?;
        let start = |provider: ProviderKind| {
            LlmProvider::new(provider, client.clone(), limits.for_provider(provider)).start()
        };
        Ok(LlmProviders {
            openai: start(ProviderKind::OpenAi),
            ollama: start(ProviderKind::Ollama),
            openrouter: start(ProviderKind::OpenRouter),
            xai: start(ProviderKind::Xai),
        })
    }

    /// The actor serving one provider.
    pub fn provider(&self, provider: ProviderKind) -> &Addr<LlmProvider> {
        match provider {
            ProviderKind::OpenAi => &self.openai,
            ProviderKind::Ollama => &self.ollama,
            ProviderKind::OpenRouter => &self.openrouter,
            ProviderKind::Xai => &self.xai,
        }
    }

    /// Completes `request` (whose `model` is the catalogue `actual` string), retrying
    /// transient failures. Cancelling `cancel`, or dropping the returned future, drops the
    /// in-flight HTTP request; the former answers `LlmError::Aborted`.
    pub async fn complete(
        &self,
        mut request: ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let route = Route::from_actual(&request.model);
        request.model = route.model;
        let call = cancel.child_token();
        let _cancel_on_drop = call.clone().drop_guard();
        self.provider(route.provider)
            .send(Complete {
                request,
                cancel: call,
            })
            .await
            .map_err(|_| LlmError::Stopped)?
    }

    /// Discovers the context length of the model named by a catalogue `actual` string.
    /// The caller stores it (the `models` table), so this runs once per model.
    pub async fn discover_context(
        &self,
        actual: &str,
        cancel: &CancellationToken,
    ) -> Result<u32, LlmError> {
        let route = Route::from_actual(actual);
        let call = cancel.child_token();
        let _cancel_on_drop = call.clone().drop_guard();
        self.provider(route.provider)
            .send(DiscoverContext {
                model: route.model,
                cancel: call,
            })
            .await
            .map_err(|_| LlmError::Stopped)?
    }
}

#[cfg(test)]
mod tests;
