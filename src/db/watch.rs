//! The database thread's watchdog: when its current unit of work started, so `/readyz` can
//! say "not ready" while one unit holds the thread, without sending it a message that
//! would only wait in line behind that unit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Shared between the DB actor (which marks units) and the readiness probe (which reads).
#[derive(Debug, Clone)]
pub(crate) struct DbWatch {
    origin: Instant,
    /// Milliseconds since `origin` plus one when the current unit started; 0 when idle.
    busy_since: Arc<AtomicU64>,
}

impl Default for DbWatch {
    fn default() -> Self {
        DbWatch {
            origin: Instant::now(),
            busy_since: Arc::new(AtomicU64::new(0)),
        }
    }
}

impl DbWatch {
    /// A unit of work starts.
    pub(crate) fn begin(&self) {
        let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.busy_since
            .store(now.saturating_add(1), Ordering::Relaxed);
    }

    /// The unit of work ended.
    pub(crate) fn end(&self) {
        self.busy_since.store(0, Ordering::Relaxed);
    }

    /// How long the current unit has run; `None` when the thread is idle.
    pub(crate) fn busy_for(&self) -> Option<Duration> {
        let since = self.busy_since.load(Ordering::Relaxed).checked_sub(1)?;
        let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        Some(Duration::from_millis(now.saturating_sub(since)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_until_a_unit_begins() {
        let watch = DbWatch::default();
        assert_eq!(watch.busy_for(), None);
        watch.begin();
        assert!(watch.busy_for().is_some());
        watch.end();
        assert_eq!(watch.busy_for(), None);
    }
}
