//! The `otel` feature: request spans exported over OTLP/HTTP (protobuf) to the collector that
//! the standard variables name (`OTEL_EXPORTER_OTLP_ENDPOINT`, or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; also `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_BSP_*`). Without either endpoint variable nothing is exported.
//!
//! Spans at `info` and above are exported whatever `CODOMYRMEX_MCP_LOG` says (that filter is
//! the stderr log's), through a batch exporter on its own thread, flushed when the process
//! ends. A request that carries a W3C `traceparent` (in `_meta` or the header) gets the
//! caller's span as its parent, through the HTTP transport's
//! [`set_trace_parent_hook`](codomyrmex_mcp::transport::http::set_trace_parent_hook), so
//! the server's spans join the caller's trace. Not exported: metrics (`/metrics` serves them)
//! and log events outside spans.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;

/// The variables that turn the exporter on.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// The running exporter: flushed and stopped on drop.
pub struct Exporter {
    provider: SdkTracerProvider,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("codomyrmex-mcp: exporting the last spans failed: {e}");
        }
    }
}

/// A boxed tracing layer over the subscriber `S`.
pub type BoxedLayer<S> = Box<dyn Layer<S> + Send + Sync>;

/// The tracing layer that exports spans, and its exporter; `None` when no endpoint is set.
pub fn layer<S>() -> Result<Option<(BoxedLayer<S>, Exporter)>, String>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    if !ENDPOINT_VARS
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
    {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("cannot export spans to the OTLP endpoint: {e}"))?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "codomyrmex-mcp".to_owned());
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build(),
        )
        .build();
    let tracer = provider.tracer("codomyrmex-mcp");
    codomyrmex_mcp::transport::http::set_trace_parent_hook(adopt_parent);
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(LevelFilter::INFO)
        .boxed();
    Ok(Some((layer, Exporter { provider })))
}

/// Makes the caller's `traceparent` the parent of a request's span.
fn adopt_parent(span: &tracing::Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    // Fails only when the span is disabled or already started: then it keeps its own trace.
    let _ = span.set_parent(context);
}

/// The W3C `traceparent` of the span the caller is in, when it is exported (a valid
/// OpenTelemetry context): what the gateway sends upstream as the parent of the upstream's
/// span.
pub fn current_traceparent() -> Option<String> {
    use opentelemetry::trace::TraceContextExt as _;
    let context = tracing::Span::current().context();
    let span = context.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}
