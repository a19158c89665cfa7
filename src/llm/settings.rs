//! `ProviderSettings`: base URLs, keys, timeouts, retries and concurrency for every provider,
//! filled by the caller (usually from the environment names of PROTOCOL.md Part B §1.2).

use std::fmt;
use std::time::Duration;

use super::retry::RetryPolicy;
use super::route::ProviderKind;

/// `OPENAI_BASE_URL`: the OpenAI-compatible server (a trailing `/v1` is tolerated).
const OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// `OPENAI_API_BASE`: the older name of `OPENAI_BASE_URL`, read when that is unset.
const OPENAI_API_BASE: &str = "OPENAI_API_BASE";
/// `OPENAI_API_KEY`: optional bearer token for the OpenAI-compatible server.
const OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// `OLLAMA_BASE_URL`: the Ollama server.
const OLLAMA_BASE_URL: &str = "OLLAMA_BASE_URL";
/// `OPENROUTER_BASE_URL`: OpenRouter's API root.
const OPENROUTER_BASE_URL: &str = "OPENROUTER_BASE_URL";
/// `OPENROUTER_API_KEY`: OpenRouter's bearer token.
const OPENROUTER_API_KEY: &str = "OPENROUTER_API_KEY";
/// `RUMMY_HTTP_REFERER`: sent to OpenRouter as `HTTP-Referer`.
const RUMMY_HTTP_REFERER: &str = "RUMMY_HTTP_REFERER";
/// `RUMMY_X_TITLE`: sent to OpenRouter as `X-Title`.
const RUMMY_X_TITLE: &str = "RUMMY_X_TITLE";
/// `XAI_BASE_URL`: the full URL of xAI's Responses endpoint.
const XAI_BASE_URL: &str = "XAI_BASE_URL";
/// `XAI_API_KEY`: xAI's bearer token.
const XAI_API_KEY: &str = "XAI_API_KEY";
/// `RUMMY_CONTEXT_SIZE`: context length for OpenRouter models with none stored.
const RUMMY_CONTEXT_SIZE: &str = "RUMMY_CONTEXT_SIZE";
/// `RUMMY_FETCH_TIMEOUT`: milliseconds one provider HTTP call may take.
const RUMMY_FETCH_TIMEOUT: &str = "RUMMY_FETCH_TIMEOUT";

/// OpenRouter's public API root, used when `OPENROUTER_BASE_URL` is unset.
pub const DEFAULT_OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";
/// The provider HTTP timeout when `RUMMY_FETCH_TIMEOUT` is unset (the shipped `.env.example`).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(300);

/// How many calls each provider may have in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencyLimits {
    /// OpenAI-compatible servers (often one local GPU).
    pub openai: usize,
    /// Ollama (usually one local GPU).
    pub ollama: usize,
    /// OpenRouter.
    pub openrouter: usize,
    /// xAI.
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
pub struct ProviderSettings {
    /// `OPENAI_BASE_URL` (else `OPENAI_API_BASE`).
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

impl Default for ProviderSettings {
    fn default() -> Self {
        ProviderSettings {
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

impl ProviderSettings {
    /// Reads the provider variables through `lookup` (e.g. `|name| std::env::var(name).ok()`).
    /// Empty values count as unset; unparsable numbers fall back to the defaults.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> ProviderSettings {
        let read = |name: &str| lookup(name).filter(|value| !value.trim().is_empty());
        let defaults = ProviderSettings::default();
        ProviderSettings {
            openai_base_url: read(OPENAI_BASE_URL).or_else(|| read(OPENAI_API_BASE)),
            openai_api_key: read(OPENAI_API_KEY),
            ollama_base_url: read(OLLAMA_BASE_URL),
            openrouter_base_url: read(OPENROUTER_BASE_URL).unwrap_or(defaults.openrouter_base_url),
            openrouter_api_key: read(OPENROUTER_API_KEY),
            http_referer: read(RUMMY_HTTP_REFERER),
            x_title: read(RUMMY_X_TITLE),
            xai_base_url: read(XAI_BASE_URL),
            xai_api_key: read(XAI_API_KEY),
            openrouter_context_size: read(RUMMY_CONTEXT_SIZE)
                .and_then(|value| value.trim().parse().ok())
                .filter(|size| *size > 0),
            fetch_timeout: read(RUMMY_FETCH_TIMEOUT)
                .and_then(|value| value.trim().parse().ok())
                .filter(|millis| *millis > 0)
                .map(Duration::from_millis)
                .unwrap_or(defaults.fetch_timeout),
            retry: defaults.retry,
            concurrency: defaults.concurrency,
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

impl fmt::Debug for ProviderSettings {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ProviderSettings")
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
    use std::collections::HashMap;

    fn settings(pairs: &[(&str, &str)]) -> ProviderSettings {
        let vars: HashMap<String, String> = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        ProviderSettings::from_lookup(|name| vars.get(name).cloned())
    }

    #[test]
    fn reads_every_variable() {
        let read = settings(&[
            (OPENAI_BASE_URL, "http://gpu:8080/v1"),
            (OPENAI_API_KEY, "sk-openai"),
            (OLLAMA_BASE_URL, "http://localhost:11434"),
            (OPENROUTER_BASE_URL, "http://router/api/v1"),
            (OPENROUTER_API_KEY, "sk-or"),
            (RUMMY_HTTP_REFERER, "https://example.org"),
            (RUMMY_X_TITLE, "RUMMY"),
            (XAI_BASE_URL, "https://api.x.ai/v1/responses"),
            (XAI_API_KEY, "xai-key"),
            (RUMMY_CONTEXT_SIZE, "65536"),
            (RUMMY_FETCH_TIMEOUT, "1500"),
        ]);
        assert_eq!(read.openai_base_url.as_deref(), Some("http://gpu:8080/v1"));
        assert_eq!(read.openai_api_key.as_deref(), Some("sk-openai"));
        assert_eq!(
            read.ollama_base_url.as_deref(),
            Some("http://localhost:11434")
        );
        assert_eq!(read.openrouter_base_url, "http://router/api/v1");
        assert_eq!(read.openrouter_api_key.as_deref(), Some("sk-or"));
        assert_eq!(read.http_referer.as_deref(), Some("https://example.org"));
        assert_eq!(read.x_title.as_deref(), Some("RUMMY"));
        assert_eq!(
            read.xai_base_url.as_deref(),
            Some("https://api.x.ai/v1/responses")
        );
        assert_eq!(read.xai_api_key.as_deref(), Some("xai-key"));
        assert_eq!(read.openrouter_context_size, Some(65536));
        assert_eq!(read.fetch_timeout, Duration::from_millis(1500));
    }

    #[test]
    fn defaults_and_fallbacks() {
        let read = settings(&[
            (OPENAI_API_BASE, "http://old-name"),
            (OPENROUTER_API_KEY, "  "),
            (RUMMY_FETCH_TIMEOUT, "soon"),
            (RUMMY_CONTEXT_SIZE, "0"),
        ]);
        assert_eq!(read.openai_base_url.as_deref(), Some("http://old-name"));
        assert_eq!(read.openrouter_api_key, None);
        assert_eq!(read.openrouter_base_url, DEFAULT_OPENROUTER_BASE_URL);
        assert_eq!(read.fetch_timeout, DEFAULT_FETCH_TIMEOUT);
        assert_eq!(read.openrouter_context_size, None);
    }

    #[test]
    fn debug_never_shows_keys() {
        let read = settings(&[
            (OPENROUTER_API_KEY, "sk-secret-1"),
            (XAI_API_KEY, "xai-secret-2"),
        ]);
        let printed = format!("{read:?}");
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
