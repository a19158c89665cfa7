//! When to try a failed provider call again, and after how long: exponential backoff with a
//! cap, overridden by the provider's own Retry-After.

use std::time::{Duration, SystemTime};

use super::error::LlmError;

/// Retry settings for provider calls. Pure: it only computes delays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included; 1 means never retry.
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles after each further one.
    pub base_delay: Duration,
    /// The longest wait. A Retry-After longer than this gives up instead of waiting.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Four attempts, waiting 1 s, 2 s, 4 s in between (the reference's schedule), at most 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before the next attempt, after `failed_attempts` attempts (≥ 1) have
    /// failed and the last one with `error`; `None` means give up and return the error.
    pub fn delay_after(&self, failed_attempts: u32, error: &LlmError) -> Option<Duration> {
        if !error.is_retryable() || failed_attempts >= self.max_attempts {
            return None;
        }
        if let Some(requested) = error.retry_after() {
            return (requested <= self.max_delay).then_some(requested);
        }
        let doublings = failed_attempts.saturating_sub(1).min(31);
        let backoff = self.base_delay.saturating_mul(1u32 << doublings);
        Some(backoff.min(self.max_delay))
    }
}

/// Reads a Retry-After header value: delay-seconds or an HTTP date (RFC 9110 §10.2.3).
/// A date in the past means "now"; anything unreadable is ignored.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::route::ProviderKind;

    const P: ProviderKind = ProviderKind::OpenAi;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
        }
    }

    fn server_error() -> LlmError {
        LlmError::from_status(P, 500, "", None)
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let delays: Vec<_> = (1..5)
            .map(|failed| policy().delay_after(failed, &server_error()))
            .collect();
        assert_eq!(
            delays,
            [100, 200, 350, 350].map(|ms| Some(Duration::from_millis(ms)))
        );
    }

    #[test]
    fn gives_up_after_max_attempts() {
        assert_eq!(policy().delay_after(5, &server_error()), None);
        assert_eq!(policy().delay_after(9, &server_error()), None);
        let once = RetryPolicy {
            max_attempts: 1,
            ..policy()
        };
        assert_eq!(once.delay_after(1, &server_error()), None);
    }

    #[test]
    fn never_retries_what_cannot_succeed() {
        for error in [
            LlmError::from_status(P, 400, "", None),
            LlmError::from_status(P, 401, "", None),
            LlmError::Aborted,
        ] {
            assert_eq!(policy().delay_after(1, &error), None, "{error}");
        }
    }

    #[test]
    fn retry_after_overrides_backoff_within_the_cap() {
        let asked = LlmError::from_status(P, 429, "", Some(Duration::from_millis(300)));
        assert_eq!(
            policy().delay_after(1, &asked),
            Some(Duration::from_millis(300))
        );
        let too_long = LlmError::from_status(P, 429, "", Some(Duration::from_secs(3600)));
        assert_eq!(policy().delay_after(1, &too_long), None);
        let unspecified = LlmError::from_status(P, 429, "", None);
        assert_eq!(
            policy().delay_after(2, &unspecified),
            Some(Duration::from_millis(200))
        );
    }

    #[test]
    fn huge_attempt_numbers_do_not_overflow() {
        let many = RetryPolicy {
            max_attempts: u32::MAX,
            base_delay: Duration::from_secs(u64::MAX / 2),
            max_delay: Duration::from_secs(10),
        };
        assert_eq!(
            many.delay_after(200, &server_error()),
            Some(Duration::from_secs(10))
        );
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(parse_retry_after(" 7 ", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
