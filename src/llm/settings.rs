//! `LlmOptions`: base URLs, keys, timeouts, retries and concurrency for every provider,
//! filled by the caller from the server's typed settings (`app::provider_settings`).

use std::fmt;
use std::time::Duration;

use super::retry::RetryPolicy;
use super::route::ProviderKind;

/// OpenRouter's public API root, in [`LlmOptions::default`].
pub(super) const DEFAULT_OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
/// The provider HTTP timeout of [`LlmOptions::default`].
pub(super) const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// How many calls each provider may have in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyLimits {
    /// OpenAI-compatible servers (often one local GPU).
    pub openai: usize,
    /// Ollama (usually one local GPU).
    pub ollama: usize,
    pub openrouter: usize,
    pub xai: usize,
}

impl Default for ConcurrencyLimits {
    fn default() -> Self {
        ConcurrencyLimits {
            openai: 4,
            ollama: 2,
            openrouter: 16,
            xai: 16,
        }
    }
}

impl ConcurrencyLimits {
    /// The limit for one provider; never below 1.
    pub fn for_provider(&self, provider: ProviderKind) -> usize {
        let limit = match provider {
            ProviderKind::OpenAi => self.openai,
            ProviderKind::Ollama => self.ollama,
            ProviderKind::OpenRouter => self.openrouter,
            ProviderKind::Xai => self.xai,
        };
        limit.max(1)
    }
}

/// Everything the providers need to know. `Debug` never prints the keys.
#[derive(Clone, PartialEq)]
pub struct LlmOptions {
    /// `OPENAI_BASE_URL`.
    pub openai_base_url: Option<String>,
    /// `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// `OLLAMA_BASE_URL`.
    pub ollama_base_url: Option<String>,
    /// `OPENROUTER_BASE_URL`.
    pub openrouter_base_url: String,
    /// `OPENROUTER_API_KEY`.
    pub openrouter_api_key: Option<String>,
    /// `RUMMY_HTTP_REFERER`.
    pub http_referer: Option<String>,
    /// `RUMMY_X_TITLE`.
    pub x_title: Option<String>,
    /// `XAI_BASE_URL`.
    pub xai_base_url: Option<String>,
    /// `XAI_API_KEY`.
    pub xai_api_key: Option<String>,
    /// `RUMMY_CONTEXT_SIZE`.
    pub openrouter_context_size: Option<u32>,
    /// `RUMMY_FETCH_TIMEOUT`: the limit on one HTTP call (not on all retries together).
    pub fetch_timeout: Duration,
    /// Retries of transient failures.
    pub retry: RetryPolicy,
    /// Calls in flight per provider.
    pub concurrency: ConcurrencyLimits,
}

impl Default for LlmOptions {
    fn default() -> Self {
        LlmOptions {
            openai_base_url: None,
            openai_api_key: None,
            ollama_base_url: None,
            openrouter_base_url: DEFAULT_OPENROUTER_BASE_URL.to_owned(),
            openrouter_api_key: None,
            http_referer: None,
            x_title: None,
            xai_base_url: None,
            xai_api_key: None,
            openrouter_context_size: None,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            retry: RetryPolicy::default(),
            concurrency: ConcurrencyLimits::default(),
        }
    }
}

#[cfg(test)]
impl LlmOptions {
    /// No provider configured, a 10 s limit per call and three attempts 1 to 20 ms apart: for
    /// tests against a scripted server on loopback, which retry at once.
    pub(crate) fn for_local_tests() -> LlmOptions {
        LlmOptions {
            fetch_timeout: Duration::from_secs(10),
            retry: RetryPolicy {
                max_attempts: 3,
                base_delay: Duration::from_millis(1),
                max_delay: Duration::from_millis(20),
            },
            ..LlmOptions::default()
        }
    }
}

/// Shows whether a secret is set, never its value.
fn redacted(secret: &Option<String>) -> &'static str {
    match secret {
        Some(_) => "<set>",
        None => "<unset>",
    }
}

impl fmt::Debug for LlmOptions {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LlmOptions")
            .field("openai_base_url", &self.openai_base_url)
            .field("openai_api_key", &redacted(&self.openai_api_key))
            .field("ollama_base_url", &self.ollama_base_url)
            .field("openrouter_base_url", &self.openrouter_base_url)
            .field("openrouter_api_key", &redacted(&self.openrouter_api_key))
            .field("http_referer", &self.http_referer)
            .field("x_title", &self.x_title)
            .field("xai_base_url", &self.xai_base_url)
            .field("xai_api_key", &redacted(&self.xai_api_key))
            .field("openrouter_context_size", &self.openrouter_context_size)
            .field("fetch_timeout", &self.fetch_timeout)
            .field("retry", &self.retry)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_keys() {
        let keyed = LlmOptions {
            openrouter_api_key: Some("sk-secret-1".into()),
            xai_api_key: Some("xai-secret-2".into()),
            ..LlmOptions::default()
        };
        let printed = format!("{keyed:?}");
        assert!(!printed.contains("secret"), "{printed}");
        assert!(printed.contains("<set>"));
    }

    #[test]
    fn concurrency_is_at_least_one() {
        let limits = ConcurrencyLimits {
            openai: 0,
            ..ConcurrencyLimits::default()
        };
        assert_eq!(limits.for_provider(ProviderKind::OpenAi), 1);
        assert_eq!(limits.for_provider(ProviderKind::OpenRouter), 16);
    }
}
