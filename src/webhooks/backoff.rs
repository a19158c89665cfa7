//! How long a failed delivery waits before its next attempt: exponential backoff with
//! jitter, so receivers that fail together are not all retried at once.

use crate::config::WebhookSettings;

/// The wait after the `failed`-th failed attempt (from 1): `retry_base_ms` doubled
/// `failed - 1` times, at most `retry_max_ms`, of which a share drawn by `draw` between half
/// and all of it.
pub(crate) fn wait_ms(settings: &WebhookSettings, failed: u32, draw: u64) -> u64 {
    let doublings = failed.saturating_sub(1).min(40);
    let full = settings
        .retry_base_ms
        .saturating_mul(1_u64 << doublings)
        .min(settings.retry_max_ms);
    let half = full / 2;
    half + draw % (full - half + 1)
}

/// A random draw for [`wait_ms`]; 0 when the system has no randomness to give.
pub(crate) fn draw() -> u64 {
    let mut bytes = [0_u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> WebhookSettings {
        WebhookSettings {
            attempts: 8,
            retry_base_ms: 1000,
            retry_max_ms: 10_000,
            timeout_ms: 1000,
            poll_ms: 1000,
            concurrency: 1,
            keep_days: 1,
        }
    }

    #[test]
    fn a_wait_doubles_with_each_failure_up_to_the_bound_between_half_and_all_of_it() {
        let settings = settings();
        assert_eq!(wait_ms(&settings, 1, 0), 500);
        assert_eq!(wait_ms(&settings, 1, 500), 1000);
        assert_eq!(wait_ms(&settings, 2, 0), 1000);
        assert_eq!(wait_ms(&settings, 3, 2000), 4000);
        assert_eq!(
            wait_ms(&settings, 5, 0),
            5000,
            "16 s bounded at 10 s, halved"
        );
        assert_eq!(wait_ms(&settings, 60, 5000), 10_000);
        for draw in [1, 77, 12_345, u64::MAX] {
            let wait = wait_ms(&settings, 2, draw);
            assert!((1000..=2000).contains(&wait), "{wait}");
        }
    }
}
