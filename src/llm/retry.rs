//! When to try a failed provider call again, and after how long: exponential backoff with a
//! cap, overridden by the provider's own Retry-After; and how long a refusal for load holds
//! every call to the provider (`hold_after`).

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
        self.wait_after(failed_attempts, error)
    }

    /// How long every call to the provider waits after `error` ended the `failed_attempts`-th
    /// attempt of one of them: the wait that call takes, when the provider refused it for
    /// load (429, or 503 with Retry-After), whether or not that call tries again; `None`
    /// otherwise, or when the provider asked for longer than `max_delay` (then no call waits:
    /// each gives up as this one does).
    pub fn hold_after(&self, failed_attempts: u32, error: &LlmError) -> Option<Duration> {
        if !error.holds_provider() {
            return None;
        }
        self.wait_after(failed_attempts, error)
    }

    /// The provider's Retry-After when it is within `max_delay` (`None` beyond), else the
    /// backoff after `failed_attempts` failures.
    fn wait_after(&self, failed_attempts: u32, error: &LlmError) -> Option<Duration> {
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
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
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
    fn a_refusal_for_load_holds_the_provider_as_long_as_its_call_waits() {
        let asked = Some(Duration::from_millis(300));
        let holds = |status, retry_after| {
            policy().hold_after(5, &LlmError::from_status(P, status, "", retry_after))
        };
        assert_eq!(holds(429, asked), asked, "even on the last attempt");
        assert_eq!(holds(429, None), Some(Duration::from_millis(350)));
        assert_eq!(holds(503, asked), asked);
        assert_eq!(
            holds(503, None),
            None,
            "a 503 without Retry-After is one call's"
        );
        assert_eq!(holds(500, asked), None);
        assert_eq!(holds(400, asked), None);
        assert_eq!(holds(429, Some(Duration::from_secs(3600))), None);
        let timeout = LlmError::Timeout {
            provider: P,
            timeout_ms: 1,
        };
        assert_eq!(policy().hold_after(1, &timeout), None);
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
