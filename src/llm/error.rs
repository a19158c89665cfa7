//! `LlmError`: everything that can go wrong talking to a provider. The variant decides
//! whether the call is worth retrying; the messages keep the reference wording.

use std::time::Duration;

use super::route::ProviderKind;

/// The longest slice of a provider's error body kept in an error message.
const BODY_EXCERPT_CHARS: usize = 1000;

/// An error from an LLM provider call or a context discovery.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// A setting the provider needs is missing (base URL, API key).
    #[error("{message}")]
    NotConfigured {
        /// The provider that cannot be reached.
        provider: ProviderKind,
        /// The reference message naming the missing variable.
        message: String,
    },
    /// HTTP 429; `retry_after` is the provider's Retry-After, when it sent one.
    #[error("{provider} API error: 429 - rate limited")]
    RateLimited {
        /// The provider that refused.
        provider: ProviderKind,
        /// How long the provider asked us to wait.
        retry_after: Option<Duration>,
    },
    /// HTTP 5xx or 408: the provider failed or is unavailable.
    #[error("{provider} API error: {status} - {body}")]
    Server {
        /// The provider that failed.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
        /// An excerpt of the response body.
        body: String,
        /// How long the provider asked us to wait, when it said.
        retry_after: Option<Duration>,
    },
    /// HTTP 401 or 403.
    #[error("{provider} Authentication Error: {status}. Please check your {}.", provider.credentials_hint())]
    Auth {
        /// The provider that refused.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
    },
    /// Any other non-2xx status: the request itself is wrong; retrying will not help.
    #[error("{provider} API error: {status} - {message}")]
    BadRequest {
        /// The provider that refused.
        provider: ProviderKind,
        /// The HTTP status.
        status: u16,
        /// An excerpt of the response body.
        message: String,
    },
    /// The connection could not be made or broke before the response was complete.
    #[error("{provider} connection failed: {message}")]
    Connect {
        /// The provider we could not reach.
        provider: ProviderKind,
        /// What the HTTP client reported.
        message: String,
    },
    /// A streamed reply broke after some of it arrived: the connection dropped, an event was
    /// not what the API sends, or the body ended before the provider's end marker. Not
    /// retried (the turn ends with this error, which keeps the text that had arrived).
    #[error("{provider} stream broke: {message}; the reply so far: {partial:?}")]
    StreamBroken {
        /// The provider that was streaming.
        provider: ProviderKind,
        /// What broke it.
        message: String,
        /// The reply's text that had arrived.
        partial: String,
    },
    /// No complete response within the configured timeout.
    #[error("{provider} request timeout after {timeout_ms} ms")]
    Timeout {
        /// The provider that did not answer.
        provider: ProviderKind,
        /// The timeout that expired.
        timeout_ms: u64,
    },
    /// A 2xx response that is not what the API promises.
    #[error("{provider} response could not be decoded: {message}")]
    Decode {
        /// The provider that answered.
        provider: ProviderKind,
        /// What was wrong with it.
        message: String,
    },
    /// The provider answered but did not say how large the model's context is.
    #[error("{message}")]
    ContextUnknown {
        provider: ProviderKind,
        /// The reference message saying what was missing.
        message: String,
    },
    /// The HTTP client itself could not be built (TLS initialisation failed).
    #[error("HTTP client could not start: {0}")]
    HttpClient(String),
    /// The provider actor is not running (the system is shutting down).
    #[error("LLM provider is not running")]
    Stopped,
    /// The caller cancelled the call; the in-flight request was dropped.
    #[error("operation was aborted")]
    Aborted,
    /// A spend cap the call counts against is reached; the call was not made.
    #[error("{}", .0.describe())]
    CapReached(Box<crate::usage::Standing>),
    /// The spending the caps are checked against could not be read; the call was not made.
    #[error("cannot check the spend caps: {0}")]
    Ledger(String),
}

impl LlmError {
    /// This error with `key` (a person's own, which the call carried) cut out of the
    /// provider's words it quotes: a provider may echo the key it refused.
    pub(crate) fn without(self, key: &str) -> LlmError {
        if key.is_empty() {
            return self;
        }
        let cut = |text: String| text.replace(key, "<the key>");
        match self {
            LlmError::Server {
                provider,
                status,
                body,
                retry_after,
            } => LlmError::Server {
                provider,
                status,
                body: cut(body),
                retry_after,
            },
            LlmError::BadRequest {
                provider,
                status,
                message,
            } => LlmError::BadRequest {
                provider,
                status,
                message: cut(message),
            },
            LlmError::Connect { provider, message } => LlmError::Connect {
                provider,
                message: cut(message),
            },
            LlmError::StreamBroken {
                provider,
                message,
                partial,
            } => LlmError::StreamBroken {
                provider,
                message: cut(message),
                partial: cut(partial),
            },
            LlmError::Decode { provider, message } => LlmError::Decode {
                provider,
                message: cut(message),
            },
            other => other,
        }
    }

    /// Whether trying the same request again may succeed: rate limits, server errors,
    /// broken connections and timeouts.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Connect { .. }
                | LlmError::Timeout { .. }
        )
    }

    /// Whether the provider refused for load, asking every caller to slow down: a 429, or a
    /// 503 with Retry-After.
    pub fn holds_provider(&self) -> bool {
        match self {
            LlmError::RateLimited { .. } => true,
            LlmError::Server {
                status,
                retry_after,
                ..
            } => *status == 503 && retry_after.is_some(),
            _ => false,
        }
    }

    /// The wait the provider asked for, if it asked.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// Classifies a non-2xx HTTP status with its body and Retry-After.
    pub fn from_status(
        provider: ProviderKind,
        status: u16,
        body: &str,
        retry_after: Option<Duration>,
    ) -> LlmError {
        let excerpt = excerpt(body);
        match status {
            429 => LlmError::RateLimited {
                provider,
                retry_after,
            },
            401 | 403 => LlmError::Auth { provider, status },
            408 | 500..=599 => LlmError::Server {
                provider,
                status,
                body: excerpt,
                retry_after,
            },
            _ => LlmError::BadRequest {
                provider,
                status,
                message: excerpt,
            },
        }
    }
}

/// The first `BODY_EXCERPT_CHARS` characters of a body, trimmed.
fn excerpt(body: &str) -> String {
    body.trim().chars().take(BODY_EXCERPT_CHARS).collect()
}

impl LlmError {
    /// Maps a reqwest failure. The URL is left out of the message (a base URL may carry
    /// credentials); the causes are kept, as they say what actually went wrong.
    pub(super) fn transport(
        provider: ProviderKind,
        error: reqwest::Error,
        timeout: Duration,
    ) -> LlmError {
        if error.is_timeout() {
            return LlmError::Timeout {
                provider,
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            };
        }
        let is_builder = error.is_builder();
        let message = causes(&error.without_url());
        if is_builder {
            return LlmError::NotConfigured {
                provider,
                message: format!("{provider} request could not be built: {message}"),
            };
        }
        LlmError::Connect { provider, message }
    }
}

/// An error and its sources, joined by `": "`.
fn causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: ProviderKind = ProviderKind::OpenRouter;

    #[test]
    fn statuses_are_classified() {
        assert!(matches!(
            LlmError::from_status(P, 429, "", None),
            LlmError::RateLimited { .. }
        ));
        assert!(matches!(
            LlmError::from_status(P, 401, "", None),
            LlmError::Auth { status: 401, .. }
        ));
        assert!(matches!(
            LlmError::from_status(P, 403, "", None),
            LlmError::Auth { status: 403, .. }
        ));
        for status in [408, 500, 502, 503, 504] {
            assert!(matches!(
                LlmError::from_status(P, status, "", None),
                LlmError::Server { .. }
            ));
        }
        for status in [400, 404, 413, 422] {
            assert!(matches!(
                LlmError::from_status(P, status, "", None),
                LlmError::BadRequest { .. }
            ));
        }
    }

    #[test]
    fn retryable_variants() {
        let wait = Some(Duration::from_secs(2));
        assert!(LlmError::from_status(P, 429, "", wait).is_retryable());
        assert!(LlmError::from_status(P, 503, "", None).is_retryable());
        assert!(!LlmError::from_status(P, 400, "", None).is_retryable());
        assert!(!LlmError::from_status(P, 401, "", None).is_retryable());
        assert!(!LlmError::Aborted.is_retryable());
        assert_eq!(LlmError::from_status(P, 429, "", wait).retry_after(), wait);
        assert_eq!(LlmError::from_status(P, 503, "", wait).retry_after(), wait);
        assert_eq!(LlmError::from_status(P, 400, "", wait).retry_after(), None);
    }

    #[test]
    fn messages_keep_the_reference_wording() {
        assert_eq!(
            LlmError::from_status(P, 401, "", None).to_string(),
            "OpenRouter Authentication Error: 401. Please check your OPENROUTER_API_KEY."
        );
        assert_eq!(
            LlmError::from_status(ProviderKind::OpenAi, 400, " bad model \n", None).to_string(),
            "OpenAI-compatible API error: 400 - bad model"
        );
        assert_eq!(LlmError::Aborted.to_string(), "operation was aborted");
    }

    #[test]
    fn long_bodies_are_cut() {
        let body = "é".repeat(5000);
        let LlmError::BadRequest { message, .. } = LlmError::from_status(P, 400, &body, None)
        else {
            panic!("expected BadRequest");
        };
        assert_eq!(message.chars().count(), BODY_EXCERPT_CHARS);
    }
}
