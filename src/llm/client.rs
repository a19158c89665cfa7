//! One HTTP attempt against a provider: endpoints, headers and bodies per provider (a
//! completion is streamed, `stream`), and the mapping of transport failures and HTTP statuses onto `LlmError`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::RequestBuilder;
use serde_json::Value;

use super::chat::{ChatRequest, ChatResponse};
use super::endpoints::LiveOptions;
use super::error::LlmError;
use super::retry::parse_retry_after;
use super::route::ProviderKind;
use super::settings::LlmOptions;
use super::stream::{self, TextListener};
use super::{chat_completions, responses};
use crate::secrets::{ExposeSecret, SecretString};

/// How long connecting to a provider may take, within the overall fetch timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The shared HTTP client and the settings in effect it reads endpoints and keys from.
#[derive(Clone)]
pub(super) struct ProviderClient {
    http: reqwest::Client,
    settings: LiveOptions,
}

impl ProviderClient {
    /// Builds the HTTP client (one connection pool shared by every provider).
    pub(super) fn new(settings: LiveOptions) -> Result<ProviderClient, LlmError> {
        let timeout = settings.current().fetch_timeout;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(timeout))
            .build()
            .map_err(|error| LlmError::HttpClient(error.to_string()))?;
        Ok(ProviderClient { http, settings })
    }

    /// The settings in effect now.
    pub(super) fn settings(&self) -> Arc<LlmOptions> {
        self.settings.current()
    }

    /// One completion attempt, streamed; `request.model` is the provider's own model name.
    /// `listener` is told the reply's text as it grows. `key`, a person's own, is sent
    /// instead of the server's key for the provider.
    pub(super) async fn complete(
        &self,
        provider: ProviderKind,
        request: &ChatRequest,
        listener: Option<&dyn TextListener>,
        key: Option<&SecretString>,
    ) -> Result<ChatResponse, LlmError> {
        let current = self.settings.current();
        let settings = &*match key {
            Some(key) => Arc::new(with_key(&current, provider, key)),
            None => current,
        };
        let post = match provider {
            ProviderKind::OpenAi => {
                let url = format!("{}/v1/chat/completions", openai_root(settings)?);
                let body = chat_completions::request_body(provider, request);
                with_bearer(
                    self.http.post(url).json(&body),
                    settings.openai_api_key.as_deref(),
                )
            }
            ProviderKind::Ollama => {
                let url = format!("{}/v1/chat/completions", ollama_root(settings)?);
                let body = chat_completions::request_body(provider, request);
                self.http.post(url).json(&body)
            }
            ProviderKind::OpenRouter => {
                let key = openrouter_key(settings)?;
                let url = format!("{}/chat/completions", openrouter_root(settings));
                let body = chat_completions::request_body(provider, request);
                let mut post = self.http.post(url).bearer_auth(key).json(&body);
                if let Some(referer) = &settings.http_referer {
                    post = post.header("HTTP-Referer", referer);
                }
                if let Some(title) = &settings.x_title {
                    post = post.header("X-Title", title);
                }
                post
            }
            ProviderKind::Xai => {
                let (url, key) = xai_endpoint(settings)?;
                let body = responses::request_body(request);
                self.http.post(url).bearer_auth(key).json(&body)
            }
        };
        let timeout = settings.fetch_timeout;
        let response = self.answered(provider, post, timeout).await?;
        stream::read(provider, &request.model, response, listener, timeout).await
    }

    /// GET a JSON document.
    pub(super) async fn get_json(
        &self,
        provider: ProviderKind,
        url: &str,
        bearer: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        let get = with_bearer(self.http.get(url), bearer);
        self.send(provider, get, timeout).await
    }

    /// POST a JSON body and read a JSON document back.
    pub(super) async fn post_json(
        &self,
        provider: ProviderKind,
        url: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        let post = self.http.post(url).json(body);
        self.send(provider, post, timeout).await
    }

    /// Sends `request`; a 2xx answer's response, whose body is still to be read.
    async fn answered(
        &self,
        provider: ProviderKind,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Result<reqwest::Response, LlmError> {
        let transport = |error: reqwest::Error| LlmError::transport(provider, error, timeout);
        let response = request.timeout(timeout).send().await.map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers());
            let body = response.text().await.unwrap_or_default();
            return Err(LlmError::from_status(
                provider,
                status.as_u16(),
                &body,
                retry_after,
            ));
        }
        Ok(response)
    }

    async fn send(
        &self,
        provider: ProviderKind,
        request: RequestBuilder,
        timeout: Duration,
    ) -> Result<Value, LlmError> {
        let transport = |error: reqwest::Error| LlmError::transport(provider, error, timeout);
        let response = self.answered(provider, request, timeout).await?;
        let bytes = response.bytes().await.map_err(transport)?;
        serde_json::from_slice(&bytes).map_err(|error| LlmError::Decode {
            provider,
            message: error.to_string(),
        })
    }
}

/// `settings` with `key` as `provider`'s key, for one call.
fn with_key(settings: &LlmOptions, provider: ProviderKind, key: &SecretString) -> LlmOptions {
    let mut settings = settings.clone();
    let key = Some(key.expose_secret().to_owned());
    match provider {
        ProviderKind::OpenAi => settings.openai_api_key = key,
        ProviderKind::OpenRouter => settings.openrouter_api_key = key,
        ProviderKind::Xai => settings.xai_api_key = key,
        ProviderKind::Ollama => {}
    }
    settings
}

fn with_bearer(request: RequestBuilder, bearer: Option<&str>) -> RequestBuilder {
    match bearer {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// `retry-after-ms` (sent by some OpenAI-compatible servers) or `Retry-After`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let millis = headers
        .get("retry-after-ms")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map(Duration::from_millis);
    millis.or_else(|| {
        headers
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| parse_retry_after(value, SystemTime::now()))
    })
}

fn not_configured(provider: ProviderKind, message: &str) -> LlmError {
    LlmError::NotConfigured {
        provider,
        message: message.to_owned(),
    }
}

/// The OpenAI-compatible server root: trailing `/` and `/v1` removed.
pub(super) fn openai_root(settings: &LlmOptions) -> Result<String, LlmError> {
    let base = settings.openai_base_url.as_deref().ok_or_else(|| {
        not_configured(
            ProviderKind::OpenAi,
            "openai/ model requested but OPENAI_BASE_URL is not set.",
        )
    })?;
    let base = base.trim().trim_end_matches('/');
    Ok(base.strip_suffix("/v1").unwrap_or(base).to_owned())
}

/// The Ollama server root.
pub(super) fn ollama_root(settings: &LlmOptions) -> Result<String, LlmError> {
    let base = settings.ollama_base_url.as_deref().ok_or_else(|| {
        not_configured(
            ProviderKind::Ollama,
            "ollama/ model requested but OLLAMA_BASE_URL is not set.",
        )
    })?;
    Ok(base.trim().trim_end_matches('/').to_owned())
}

/// OpenRouter's API root.
pub(super) fn openrouter_root(settings: &LlmOptions) -> String {
    settings
        .openrouter_base_url
        .trim()
        .trim_end_matches('/')
        .to_owned()
}

/// OpenRouter's key, required for completions.
pub(super) fn openrouter_key(settings: &LlmOptions) -> Result<&str, LlmError> {
    settings.openrouter_api_key.as_deref().ok_or_else(|| {
        not_configured(
            ProviderKind::OpenRouter,
            "OpenRouter API key is missing. Please set OPENROUTER_API_KEY in your environment.",
        )
    })
}

/// xAI's Responses URL and key, both required.
pub(super) fn xai_endpoint(settings: &LlmOptions) -> Result<(String, &str), LlmError> {
    let url = settings.xai_base_url.as_deref().ok_or_else(|| {
        not_configured(
            ProviderKind::Xai,
            "x.ai/ model requested but XAI_BASE_URL is not set.",
        )
    })?;
    let key = settings.xai_api_key.as_deref().ok_or_else(|| {
        not_configured(
            ProviderKind::Xai,
            "x.ai/ model requested but XAI_API_KEY is not set.",
        )
    })?;
    Ok((url.trim().to_owned(), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_root_strips_v1() {
        for base in [
            "http://h:8080",
            "http://h:8080/",
            "http://h:8080/v1",
            "http://h:8080/v1/",
        ] {
            let settings = LlmOptions {
                openai_base_url: Some(base.into()),
                ..LlmOptions::default()
            };
            assert_eq!(openai_root(&settings).unwrap(), "http://h:8080", "{base}");
        }
    }

    #[test]
    fn missing_settings_use_the_reference_messages() {
        let empty = LlmOptions::default();
        let messages = [
            openai_root(&empty).unwrap_err().to_string(),
            openrouter_key(&empty).unwrap_err().to_string(),
            xai_endpoint(&empty).unwrap_err().to_string(),
        ];
        assert_eq!(
            messages,
            [
                "openai/ model requested but OPENAI_BASE_URL is not set.",
                "OpenRouter API key is missing. Please set OPENROUTER_API_KEY in your environment.",
                "x.ai/ model requested but XAI_BASE_URL is not set.",
            ]
        );
        let url_only = LlmOptions {
            xai_base_url: Some("http://x/v1/responses".into()),
            ..LlmOptions::default()
        };
        let key_missing = xai_endpoint(&url_only).unwrap_err().to_string();
        assert_eq!(
            key_missing,
            "x.ai/ model requested but XAI_API_KEY is not set."
        );
        for message in messages.iter().chain([&key_missing]) {
            for variable in message
                .split(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .filter(|word| word.contains('_'))
            {
                assert!(
                    crate::config::ENV_KEYS
                        .iter()
                        .any(|(name, _)| *name == variable),
                    "{message:?} names {variable}, which rummy does not read"
                );
            }
        }
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
    }
}
