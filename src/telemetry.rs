//! tracing setup: structured logs to stderr, filtered by `RUMMY_LOG`.

use tracing_subscriber::EnvFilter;

use crate::config::LogSettings;

/// Installs the global subscriber once; later calls (tests) are no-ops.
pub fn init(settings: &LogSettings) {
    let filter = if settings.debug {
        EnvFilter::new("debug")
    } else {
        EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"))
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
