//! tracing setup: structured logs to stderr, filtered by `RUMMY_LOG`. Every field is written
//! with its control characters escaped, so a client-supplied string (a model name, a path,
//! a method) cannot forge a log line.

use tracing_subscriber::field::MakeExt;
use tracing_subscriber::fmt::format::debug_fn;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

use crate::config::LogSettings;

/// Installs the global subscriber once; later calls (tests) are no-ops.
pub fn init(settings: &LogSettings) {
    let filter = if settings.debug {
        EnvFilter::new("debug")
    } else {
        EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"))
    };
    let _ = subscriber(filter, std::io::stderr).try_init();
}

/// The subscriber: `filter`ed events to `writer`, one line each.
fn subscriber<W>(filter: EnvFilter, writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let fields = debug_fn(|out, field, value| {
        let text = escape_controls(&format!("{value:?}"));
        if field.name() == "message" {
            write!(out, "{text}")
        } else {
            write!(out, "{field}={text}")
        }
    })
    .delimited(" ");
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .fmt_fields(fields)
        .finish()
}

/// `text` with every control character (newline, carriage return, escape…) written as its
/// Rust escape, so that one event stays one line.
fn escape_controls(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            escaped.extend(c.escape_default());
        } else {
            escaped.push(c);
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_client_string_cannot_forge_a_log_line() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = subscriber(EnvFilter::new("info"), move || writer.clone());
        tracing::subscriber::with_default(subscriber, || {
            let model = "fake\n2026-11-24T00:00:00Z  INFO rummy: admin logged in\x1b[31m";
            tracing::warn!(model = %model, "unknown model {}", "x\ry");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains(
                r"model=fake\n2026-11-24T00:00:00Z  INFO rummy: admin logged in\u{1b}[31m"
            ),
            "{text}"
        );
        assert!(text.contains(r"unknown model x\ry"), "{text}");
    }
}
