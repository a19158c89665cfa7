//! The OTLP export of traces: when `RUMMY_OTLP_ENDPOINT` names a collector, the spans of
//! rummy (the JSON-RPC requests, loops, turns and their stages, model calls and sandboxed
//! commands; never the connection's, never an event) go to `<endpoint>/v1/traces` as OTLP
//! over HTTP with protobuf bodies, in batches from the SDK's own thread. Unset, nothing
//! here exists.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Metadata;

use crate::config::LogSettings;

/// The path OTLP/HTTP receivers take traces at, under the configured endpoint.
const TRACES_PATH: &str = "/v1/traces";

/// The collector's traces URL, when one is configured (an empty setting is none).
pub(super) fn traces_url(settings: &LogSettings) -> Option<String> {
    let endpoint = settings.otlp_endpoint.as_deref()?.trim();
    if endpoint.is_empty() {
        return None;
    }
    Some(format!("{}{TRACES_PATH}", endpoint.trim_end_matches('/')))
}

/// The tracer provider exporting to `url` as `service_name`, batching on its own thread.
pub(super) fn provider(
    url: &str,
    service_name: &str,
) -> Result<SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build())
}

/// The layer turning spans into OTLP spans with `provider`'s tracer.
pub(super) fn layer<S>(
    provider: &SdkTracerProvider,
) -> tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("rummy"))
        .with_threads(false)
}

/// What is exported: rummy's spans, but not a connection's (it lasts as long as the
/// socket: each request is a trace of its own) and no event (a log line may quote what a
/// span must not carry).
pub(super) fn exported(metadata: &Metadata<'_>) -> bool {
    metadata.is_span() && metadata.target().starts_with("rummy") && metadata.name() != "connection"
}
