//! Now in unix seconds: the clock console sessions, OpenID Connect sign-ins and personal
//! access tokens are kept by.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in unix seconds.
pub(crate) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
        })
}
