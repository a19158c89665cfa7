//! `LlmProviders`: the front door. It starts one `LlmProvider` actor per provider and routes
//! each call by the model's catalogue `actual` string.

use std::sync::Arc;

use actix::{Actor, Addr};
use tokio_util::sync::CancellationToken;

use super::actor::{Complete, DiscoverContext, LlmProvider};
use super::chat::{ChatRequest, ChatResponse};
use super::client::ProviderClient;
use super::endpoints::{LiveOptions, ProviderEndpoint};
use super::error::LlmError;
use super::ledger::{CallFor, Ledger};
use super::route::{ProviderKind, Route};
use super::settings::LlmOptions;
use super::spending::Spending;
use super::stream::TextListener;
use crate::db::events::Publication;
use crate::metrics::ProviderMetrics;

/// Handles to the four provider actors, and what each counts of its calls. Cheap to clone.
#[derive(Clone)]
pub struct LlmProviders {
    openai: Addr<LlmProvider>,
    ollama: Addr<LlmProvider>,
    openrouter: Addr<LlmProvider>,
    xai: Addr<LlmProvider>,
    metrics: Arc<[(ProviderKind, Arc<ProviderMetrics>)]>,
    spending: Spending,
    /// The settings in effect, which `addModel` may change.
    live: LiveOptions,
    /// The HTTP client the actors share, for [`try_once`](Self::try_once).
    client: ProviderClient,
}

impl LlmProviders {
    /// Starts the provider actors on the current actix system; they record answered calls
    /// in `ledger`.
    pub fn start(settings: LlmOptions, ledger: Ledger) -> Result<LlmProviders, LlmError> {
        let limits = settings.concurrency;
        let spending = ledger.spending().clone();
        let live = LiveOptions::new(settings);
        let client = ProviderClient::new(live.clone())?;
        let mut metrics = Vec::new();
        let mut start = |provider: ProviderKind| {
            let counted = Arc::new(ProviderMetrics::default());
            metrics.push((provider, Arc::clone(&counted)));
            LlmProvider::new(
                provider,
                client.clone(),
                limits.for_provider(provider),
                counted,
                ledger.clone(),
            )
            .start()
        };
        let openai = start(ProviderKind::OpenAi);
        let ollama = start(ProviderKind::Ollama);
        let openrouter = start(ProviderKind::OpenRouter);
        let xai = start(ProviderKind::Xai);
        Ok(LlmProviders {
            openai,
            ollama,
            openrouter,
            xai,
            metrics: metrics.into(),
            spending,
            live,
            client,
        })
    }

    /// Lays a provider's base URL and key, as an admin set them, over the settings the
    /// calls started after it read.
    pub(crate) fn set_endpoint(&self, endpoint: &ProviderEndpoint) {
        self.live.set(endpoint);
    }

    /// Whether calls to `provider` carry an API key (never the key).
    pub(crate) fn key_set(&self, provider: ProviderKind) -> bool {
        self.live.key_set(provider)
    }

    /// `text` with the API key in effect for `provider` cut out.
    pub(crate) fn redact(&self, provider: ProviderKind, text: &str) -> String {
        self.live.redact(provider, text)
    }

    /// One attempt at `request` (whose `model` is a catalogue `actual` string), straight to
    /// its provider: no retry, no cap, not recorded in any run's usage (`model/test`).
    pub(crate) async fn try_once(
        &self,
        mut request: ChatRequest,
    ) -> Result<ChatResponse, LlmError> {
        let route = Route::from_actual(&request.model);
        request.model = route.model;
        self.client
            .complete(route.provider, &request, None, None)
            .await
    }

    /// The spend caps every call is checked against, and the clock of their periods.
    pub(crate) fn spending(&self) -> &Spending {
        &self.spending
    }

    /// What each provider's actor counts of its calls, by provider slug.
    pub fn metrics(&self) -> Vec<(&'static str, &ProviderMetrics)> {
        self.metrics
            .iter()
            .map(|(provider, metrics)| (provider.slug(), metrics.as_ref()))
            .collect()
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
    /// transient failures, and records the answer in the usage of the run `call` names.
    /// Cancelling `cancel`, or dropping the returned future, drops the in-flight HTTP
    /// request; the former answers `LlmError::Aborted`.
    pub async fn complete(
        &self,
        request: ChatRequest,
        call: CallFor,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        self.complete_announcing(request, call, None, None, cancel)
            .await
    }

    /// [`complete`](Self::complete), writing `announce` to the event log in the unit of work
    /// that records the answer (a turn's `run/progress processing`: sent once the answer is
    /// recorded, at no unit of its own), and telling `listener` the reply's text as it
    /// streams in.
    pub(crate) async fn complete_announcing(
        &self,
        mut request: ChatRequest,
        call: CallFor,
        announce: Option<Publication>,
        listener: Option<Arc<dyn TextListener>>,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let route = Route::from_actual(&request.model);
        let actual = std::mem::replace(&mut request.model, route.model);
        let call_cancel = cancel.child_token();
        let _cancel_on_drop = call_cancel.clone().drop_guard();
        self.provider(route.provider)
            .send(Complete {
                request,
                actual,
                call,
                announce,
                listener,
                cancel: call_cancel,
                parent: tracing::Span::current(),
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
mod streaming_tests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
