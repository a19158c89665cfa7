//! tracing setup: structured logs to stderr, filtered by `RUMMY_LOG`, as text or, with
//! `RUMMY_LOG_FORMAT=json`, one JSON object per line. Either way a client-supplied string (a
//! model name, a path, a method) cannot forge a log line: the text format writes every field
//! with its control characters escaped, and the JSON encoder escapes them by construction.
//!
//! With `RUMMY_OTLP_ENDPOINT` set, spans are also exported as OpenTelemetry traces
//! (`otlp`): the spans of target [`TRACE`] (a request, a turn's stages, a sandboxed command)
//! exist for that alone and never reach the log; without it no such layer is installed and
//! those spans are disabled at their call sites, costing a turn nothing.

use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::filter::{filter_fn, Directive};
use tracing_subscriber::fmt::format::debug_fn;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::config::{LogFormat, LogSettings};

pub(crate) mod links;
mod otlp;

/// The target of the spans made only for traces, never logged.
pub const TRACE: &str = "rummy::trace";

/// While held, spans are exported (when configured); dropping it sends what is left.
#[must_use = "dropping it stops the export of traces"]
pub struct Tracing(Option<SdkTracerProvider>);

impl Tracing {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.0.is_some()
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the global subscriber once; later calls (tests) are no-ops. With an OTLP
/// endpoint configured, spans are exported too while the returned [`Tracing`] is held.
pub fn init(settings: &LogSettings) -> Tracing {
    let filter = log_filter(settings);
    let Some(url) = otlp::traces_url(settings) else {
        let _ = subscriber(filter, settings.format, std::io::stderr).try_init();
        return Tracing(None);
    };
    let provider = match otlp::provider(&url, &settings.otlp_service_name) {
        Ok(provider) => provider,
        Err(error) => {
            let _ = subscriber(filter, settings.format, std::io::stderr).try_init();
            tracing::error!(%error, "traces are not exported: the OTLP exporter cannot be made");
            return Tracing(None);
        }
    };
    let log = fmt_layer(settings.format, std::io::stderr).with_filter(filter);
    let traces = otlp::layer(&provider).with_filter(filter_fn(otlp::exported));
    let installed = tracing_subscriber::registry()
        .with(log)
        .with(traces)
        .try_init();
    if installed.is_err() {
        let _ = provider.shutdown();
        return Tracing(None);
    }
    links::exporting();
    tracing::info!(endpoint = %url, "exporting traces over OTLP");
    Tracing(Some(provider))
}

/// The log's filter: `RUMMY_LOG` (or `debug` with `RUMMY_DEBUG`), never the [`TRACE`] spans.
fn log_filter(settings: &LogSettings) -> EnvFilter {
    let filter = if settings.debug {
        EnvFilter::new("debug")
    } else {
        EnvFilter::try_new(&settings.filter).unwrap_or_else(|_| EnvFilter::new("info"))
    };
    match format!("{TRACE}=off").parse::<Directive>() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// The log's layer: events to `writer`, one line each, in `format`.
fn fmt_layer<W>(format: LogFormat, writer: W) -> Box<dyn Layer<Registry> + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer().with_writer(writer);
    match format {
        LogFormat::Text => Box::new(layer.fmt_fields(text_fields())),
        LogFormat::Json => Box::new(layer.json()),
    }
}

/// The text format's fields: `name=value`, the message bare, control characters escaped.
fn text_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + Send + Sync + 'static {
    debug_fn(|out, field, value| {
        let text = escape_controls(&format!("{value:?}"));
        if field.name() == "message" {
            write!(out, "{text}")
        } else {
            write!(out, "{field}={text}")
        }
    })
    .delimited(" ")
}

/// The subscriber: `filter`ed events to `writer`, one line each, in `format`.
fn subscriber<W>(
    filter: EnvFilter,
    format: LogFormat,
    writer: W,
) -> Box<dyn tracing::Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer);
    match format {
        LogFormat::Text => Box::new(builder.fmt_fields(text_fields()).finish()),
        LogFormat::Json => Box::new(builder.json().finish()),
    }
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
    use crate::config::Secret;

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

    /// What `format` writes for one event inside a connection's span; the event carries a
    /// model name that tries to forge a line, and a secret.
    fn log_forgery_attempt(format: LogFormat) -> String {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = subscriber(EnvFilter::new("info"), format, move || writer.clone());
        let token: Secret = serde_json::from_str("\"s3cret-token\"").unwrap();
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("connection", conn = 7, client.addr = %"198.51.100.4");
            let _entered = span.enter();
            tracing::warn!(model = %FORGING_MODEL, ?token, "unknown model {}", "x\ry");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.contains("s3cret-token"), "{text}");
        text
    }

    /// The settings of a server that configured nothing about traces.
    fn unconfigured() -> LogSettings {
        LogSettings {
            filter: "trace".into(),
            debug: false,
            format: LogFormat::Text,
            otlp_endpoint: None,
            otlp_service_name: "rummy".into(),
        }
    }

    #[test]
    fn with_no_endpoint_nothing_is_exported_and_trace_spans_are_off() {
        let mut settings = unconfigured();
        assert_eq!(otlp::traces_url(&settings), None);
        settings.otlp_endpoint = Some("  ".into());
        assert_eq!(
            otlp::traces_url(&settings),
            None,
            "an empty endpoint is none"
        );
        let subscriber = subscriber(log_filter(&settings), settings.format, io::sink);
        tracing::subscriber::with_default(subscriber, || {
            let traced = tracing::info_span!(target: TRACE, "measure");
            assert!(traced.is_disabled(), "a trace-only span costs nothing");
            let logged = tracing::info_span!("turn");
            assert!(!logged.is_disabled(), "the log's spans are as they were");
        });
    }

    #[test]
    fn traces_go_to_the_endpoints_traces_path() {
        let mut settings = unconfigured();
        settings.otlp_endpoint = Some("http://127.0.0.1:4318/".into());
        assert_eq!(
            otlp::traces_url(&settings).as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
    }

    const FORGING_MODEL: &str = "fake\n2026-11-24T00:00:00Z  INFO rummy: admin logged in\x1b[31m";

    #[test]
    fn a_client_string_cannot_forge_a_log_line() {
        let text = log_forgery_attempt(LogFormat::Text);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.contains(
                r"model=fake\n2026-11-24T00:00:00Z  INFO rummy: admin logged in\u{1b}[31m"
            ),
            "{text}"
        );
        assert!(text.contains(r"unknown model x\ry"), "{text}");
        assert!(text.contains("token=Secret(..)"), "{text}");
        assert!(text.contains("conn=7 client.addr=198.51.100.4"), "{text}");
    }

    #[test]
    fn a_json_line_is_one_object_with_the_event_and_its_span() {
        let text = log_forgery_attempt(LogFormat::Json);
        let line: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(line["level"], "WARN", "{line}");
        assert_eq!(line["target"], module_path!(), "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
        let fields = &line["fields"];
        assert_eq!(fields["message"], "unknown model x\ry", "{line}");
        assert_eq!(fields["model"], FORGING_MODEL, "{line}");
        assert_eq!(fields["token"], "Secret(..)", "{line}");
        assert_eq!(line["span"]["name"], "connection", "{line}");
        assert_eq!(line["span"]["client.addr"], "198.51.100.4", "{line}");
        assert_eq!(line["span"]["conn"], 7, "{line}");
    }
}
