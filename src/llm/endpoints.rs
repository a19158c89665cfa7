//! `LiveOptions`: the provider settings every call reads, which an admin's `addModel` may
//! change while the server runs (a provider's base URL, kept in the store's
//! `provider_endpoints`, and its API key, sealed in `secrets`; laid over the environment's
//! at start).

use std::sync::{Arc, PoisonError, RwLock};

use super::route::ProviderKind;
use super::settings::LlmOptions;
use crate::secrets::{Binding, Keyring, Sealed, SecretString, SecretsError, PROVIDER_KEY, SERVER};

/// A provider's base URL and key as an admin set them; `None` leaves the one in effect.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProviderEndpoint {
    pub(crate) provider: ProviderKind,
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<String>,
}

impl ProviderEndpoint {
    /// Its key sealed for the store (the server's, kind `provider`), when it names one.
    pub(crate) fn sealed_key(&self, keyring: &Keyring) -> Option<Result<Sealed, SecretsError>> {
        let key = self.api_key.as_ref()?;
        let binding = Binding {
            person: SERVER,
            kind: PROVIDER_KEY,
            name: self.provider.slug(),
        };
        Some(keyring.seal(binding, &SecretString::from(key.clone())))
    }

    /// `settings` with this endpoint laid over them.
    fn lay_over(&self, settings: &mut LlmOptions) {
        let url = self.base_url.clone();
        let key = self.api_key.clone();
        match self.provider {
            ProviderKind::OpenAi => {
                settings.openai_base_url = url.or(settings.openai_base_url.take());
                settings.openai_api_key = key.or(settings.openai_api_key.take());
            }
            ProviderKind::Ollama => {
                settings.ollama_base_url = url.or(settings.ollama_base_url.take());
            }
            ProviderKind::OpenRouter => {
                if let Some(url) = url {
                    settings.openrouter_base_url = url;
                }
                settings.openrouter_api_key = key.or(settings.openrouter_api_key.take());
            }
            ProviderKind::Xai => {
                settings.xai_base_url = url.or(settings.xai_base_url.take());
                settings.xai_api_key = key.or(settings.xai_api_key.take());
            }
        }
    }
}

/// The settings in effect, shared by every provider actor. Cheap to clone; a call reads
/// one snapshot of them ([`current`](Self::current)).
#[derive(Clone)]
pub(crate) struct LiveOptions(Arc<RwLock<Arc<LlmOptions>>>);

impl LiveOptions {
    pub(crate) fn new(settings: LlmOptions) -> LiveOptions {
        LiveOptions(Arc::new(RwLock::new(Arc::new(settings))))
    }

    /// The settings in effect now.
    pub(crate) fn current(&self) -> Arc<LlmOptions> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Lays `endpoint` over the settings in effect, for the calls started after it.
    pub(crate) fn set(&self, endpoint: &ProviderEndpoint) {
        let mut held = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let mut settings = LlmOptions::clone(&held);
        endpoint.lay_over(&mut settings);
        *held = Arc::new(settings);
    }

    /// `text` (a provider's error) with the key of `provider` in effect cut out: a provider
    /// may echo the key it refused.
    pub(crate) fn redact(&self, provider: ProviderKind, text: &str) -> String {
        let settings = self.current();
        let key = match provider {
            ProviderKind::OpenAi => settings.openai_api_key.as_deref(),
            ProviderKind::Ollama => None,
            ProviderKind::OpenRouter => settings.openrouter_api_key.as_deref(),
            ProviderKind::Xai => settings.xai_api_key.as_deref(),
        };
        match key.filter(|key| !key.is_empty()) {
            Some(key) => text.replace(key, "<the key>"),
            None => text.to_owned(),
        }
    }

    /// Whether calls to `provider` carry an API key.
    pub(crate) fn key_set(&self, provider: ProviderKind) -> bool {
        let settings = self.current();
        match provider {
            ProviderKind::OpenAi => settings.openai_api_key.is_some(),
            ProviderKind::Ollama => false,
            ProviderKind::OpenRouter => settings.openrouter_api_key.is_some(),
            ProviderKind::Xai => settings.xai_api_key.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_replaces_what_it_names_and_keeps_the_rest() {
        let live = LiveOptions::new(LlmOptions {
            openai_base_url: Some("http://env:1".into()),
            openai_api_key: Some("env-key".into()),
            xai_api_key: Some("xai-key".into()),
            ..LlmOptions::default()
        });
        live.set(&ProviderEndpoint {
            provider: ProviderKind::OpenAi,
            base_url: Some("http://page:2".into()),
            api_key: None,
        });
        let now = live.current();
        assert_eq!(now.openai_base_url.as_deref(), Some("http://page:2"));
        assert_eq!(now.openai_api_key.as_deref(), Some("env-key"));
        assert_eq!(now.xai_api_key.as_deref(), Some("xai-key"));
        live.set(&ProviderEndpoint {
            provider: ProviderKind::OpenRouter,
            base_url: None,
            api_key: Some("or-key".into()),
        });
        assert!(live.key_set(ProviderKind::OpenRouter));
        assert!(!live.key_set(ProviderKind::Ollama));
        assert_eq!(
            live.current().openrouter_base_url,
            super::super::settings::DEFAULT_OPENROUTER_BASE_URL
        );
    }
}
