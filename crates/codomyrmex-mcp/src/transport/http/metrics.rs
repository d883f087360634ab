//! `GET /metrics`: the HTTP transport's counters in the Prometheus text format, and the
//! layer that counts.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `mcp_http_requests_total` | counter | `method` (the JSON-RPC method of a POST, from a fixed list, else `other`; `GET`, `DELETE`; `none` when a policy layer refused the request first), `outcome` (`ok`, `client_error`, `unauthorized`, `rate_limited`, `unavailable`, `server_error`) |
//! | `mcp_http_request_duration_seconds` | histogram | until the response head is ready (an SSE stream's head comes first) |
//! | `mcp_http_calls_in_flight` | gauge | calls running now |
//! | `mcp_http_sessions` | gauge | 2025-11-25 sessions alive in this process |
//! | `mcp_http_refusals_total` | counter | `reason` (why a request was turned away: [`refusals`](super::refusals)); each refusal is also logged at WARN, at most once a second |
//! | `mcp_store_errors_total` | counter | failed session or event store operations |
//! | `mcp_store_round_trips_total` | counter | round trips to a remote store (Redis), as the store counts them; 0 in memory |
//! | `mcp_authz_denials_total` | counter | `principal` (the name of the first `[[policy]]` rule that matched the caller, `""` when none did): requests the authorization policy refused; only with a policy |
//!
//! After these, the families of every part the server's configuration names as observed
//! ([`observe`](crate::observe): the authorization policy's denials above, an application's
//! own, such as the gateway's per-upstream families), each as the part writes it. `/status`
//! (JSON: name, version, tools, sessions, calls in flight, and each part's fields) follows
//! the same access rule.
//!
//! Label values are bounded: a method a client makes up counts as `other`. It follows the
//! authentication rule of `/health` ([`HealthAccess`](super::HealthAccess)), and does not
//! exist when `/health` is off. Not an OpenTelemetry exporter.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use tower::{Layer, Service};

use super::refusals::{RefusalLog, Refused};

/// The `method` label values that are not a JSON-RPC method of the core's table, in the
/// order of [`Label`]'s constants after the table.
const EXTRA: [&str; 7] = [
    "other", "none", "response", "invalid", "batch", "GET", "DELETE",
];

/// How many `method` label values there are.
const LABELS: usize = crate::wire::METHODS.len() + EXTRA.len();
const _: () = assert!(LABELS <= 256, "a label is one byte");

/// A request's `method` label: the methods of the core's table
/// ([`METHODS`](crate::wire::METHODS)) under their own name, then [`EXTRA`]'s. An index, so
/// that counting a request finds its counter without hashing the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(u8);

impl Label {
    /// A method not in the core's table.
    pub(crate) const OTHER: Self = Self::extra(0);
    /// No endpoint handled the request (a policy layer refused it first).
    pub(crate) const NONE: Self = Self::extra(1);
    /// A POST carrying an answer.
    pub(crate) const RESPONSE: Self = Self::extra(2);
    /// A POST carrying no valid message.
    pub(crate) const INVALID: Self = Self::extra(3);
    /// A POST carrying a batch.
    pub(crate) const BATCH: Self = Self::extra(4);
    /// A session's GET stream.
    pub(crate) const GET: Self = Self::extra(5);
    /// A session's end.
    pub(crate) const DELETE: Self = Self::extra(6);

    #[allow(clippy::cast_possible_truncation)] // LABELS <= 256, checked above
    const fn extra(i: usize) -> Self {
        Self((crate::wire::METHODS.len() + i) as u8)
    }

    /// The label of a JSON-RPC method name: its own if the core's table has it, else
    /// [`OTHER`](Self::OTHER).
    #[allow(clippy::cast_possible_truncation)] // LABELS <= 256, checked above
    pub(crate) fn of_method(method: &str) -> Self {
        crate::wire::METHODS
            .iter()
            .position(|m| *m == method)
            .map_or(Self::OTHER, |i| Self(i as u8))
    }

    /// The label's value.
    pub(crate) fn name(self) -> &'static str {
        let i = usize::from(self.0);
        match crate::wire::METHODS.get(i) {
            Some(m) => m,
            None => EXTRA
                .get(i - crate::wire::METHODS.len())
                .copied()
                .unwrap_or("other"),
        }
    }
}

/// What the endpoint handled, as a response extension the [`MetricsLayer`] reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served(pub(crate) Label);

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    outcome: &'static str,
}

/// The `outcome` label values, indexed by [`outcome`].
const OUTCOMES: [&str; 6] = [
    "ok",
    "client_error",
    "unauthorized",
    "rate_limited",
    "unavailable",
    "server_error",
];

/// The index in [`OUTCOMES`] of a response's status.
fn outcome(status: StatusCode) -> usize {
    match status.as_u16() {
        401 | 403 => 2,
        429 => 3,
        503 => 4,
        s if s < 400 => 0,
        s if s < 500 => 1,
        _ => 5,
    }
}

/// The transport's metrics.
pub(crate) struct HttpMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    /// The family's counters by `(method, outcome)` index ([`Label`], [`outcome`]), each
    /// taken from the family the first time its pair is counted: a counter is shared, so an
    /// increment here is one the family shows.
    counters: Box<[std::sync::OnceLock<Counter>]>,
    latency: Histogram,
    in_flight: Gauge<i64, std::sync::atomic::AtomicI64>,
    sessions: Gauge<i64, std::sync::atomic::AtomicI64>,
    store_errors: Counter<u64, AtomicU64>,
    store_round_trips: Counter<u64, AtomicU64>,
    refusals: Family<RefusalLabels, Counter>,
    refusal_log: RefusalLog,
    /// Serializes scrapes' updates of `store_round_trips` from the store's own count.
    round_trips_sync: std::sync::Mutex<()>,
}

impl std::fmt::Debug for HttpMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpMetrics").finish_non_exhaustive()
    }
}

impl HttpMetrics {
    pub(crate) fn new() -> Arc<Self> {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "mcp_http_requests",
            "HTTP requests by JSON-RPC method and outcome",
            requests.clone(),
        );
        // 100 µs to about 26 s.
        let latency = Histogram::new(exponential_buckets(0.0001, 2.0, 19));
        registry.register(
            "mcp_http_request_duration_seconds",
            "Time until the response head is ready",
            latency.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "mcp_http_calls_in_flight",
            "Calls running now",
            in_flight.clone(),
        );
        let sessions = Gauge::default();
        registry.register(
            "mcp_http_sessions",
            "2025-11-25 sessions alive in this process",
            sessions.clone(),
        );
        let store_errors = Counter::default();
        registry.register(
            "mcp_store_errors",
            "Failed session or event store operations",
            store_errors.clone(),
        );
        let store_round_trips = Counter::default();
        registry.register(
            "mcp_store_round_trips",
            "Round trips to a remote session or event store",
            store_round_trips.clone(),
        );
        let refusals = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "mcp_http_refusals",
            "Requests turned away, by reason",
            refusals.clone(),
        );
        Arc::new(Self {
            registry,
            refusals,
            refusal_log: RefusalLog::new(),
            requests,
            counters: (0..LABELS * OUTCOMES.len())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            latency,
            in_flight,
            sessions,
            store_errors,
            store_round_trips,
            round_trips_sync: std::sync::Mutex::new(()),
        })
    }

    fn record(&self, method: Label, status: StatusCode, started: Instant) {
        let outcome = outcome(status);
        let labels = || RequestLabels {
            method: method.name(),
            outcome: OUTCOMES[outcome],
        };
        match self
            .counters
            .get(usize::from(method.0) * OUTCOMES.len() + outcome)
        {
            Some(slot) => slot
                .get_or_init(|| self.requests.get_or_create(&labels()).clone())
                .inc(),
            None => self.requests.get_or_create(&labels()).inc(),
        };
        self.latency.observe(started.elapsed().as_secs_f64());
    }

    /// Counts a refused request by its reason and logs it (rate-limited).
    fn refused(&self, refused: &Refused) {
        self.refusals
            .get_or_create(&RefusalLabels {
                reason: refused.reason.as_str(),
            })
            .inc();
        self.refusal_log.note(refused);
    }

    /// Counts a failed store operation.
    pub(crate) fn store_error(&self) {
        self.store_errors.inc();
    }

    /// The text exposition, with the gauges and the store's round-trip count read now.
    pub(crate) fn render(
        &self,
        in_flight: usize,
        sessions: usize,
        store_round_trips: Option<u64>,
        observed: &[Arc<dyn crate::observe::Observed>],
    ) -> Response<Body> {
        if let Some(trips) = store_round_trips {
            // A counter only goes up: add what the store counted since the last scrape.
            let _serial = self
                .round_trips_sync
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let seen = self.store_round_trips.get();
            if trips > seen {
                self.store_round_trips.inc_by(trips - seen);
            }
        }
        self.in_flight
            .set(i64::try_from(in_flight).unwrap_or(i64::MAX));
        self.sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        let mut text = String::new();
        let mut resp = match prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            Ok(()) => {
                // Families the server's other parts count (the one hook, `observe`: the
                // authorization policy's denials, the gateway's upstreams) go before the
                // closing `# EOF`.
                let mut parts = String::new();
                for part in observed {
                    part.metrics(&mut parts);
                }
                let at = text.rfind("# EOF").unwrap_or(text.len());
                text.insert_str(at, &parts);
                Response::new(Body::from(text))
            }
            Err(_) => {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                r
            }
        };
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        resp
    }
}

/// Counts every request (refusals by the other layers included) and times it until its
/// response head.
#[derive(Debug, Clone)]
pub(crate) struct MetricsLayer {
    metrics: Arc<HttpMetrics>,
}

impl MetricsLayer {
    pub(crate) fn new(metrics: Arc<HttpMetrics>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Metered {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service [`MetricsLayer`] produces.
#[derive(Debug, Clone)]
pub(crate) struct Metered<S> {
    inner: S,
    metrics: Arc<HttpMetrics>,
}

impl<S, B> Service<Request<B>> for Metered<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = MeteredFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let counted = req.uri().path() != "/metrics";
        MeteredFuture {
            future: self.inner.call(req),
            metrics: Some(self.metrics.clone()),
            counted,
            started: Instant::now(),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Metered`].
    pub(crate) struct MeteredFuture<F> {
        #[pin]
        future: F,
        metrics: Option<Arc<HttpMetrics>>,
        // Whether the request is counted (a scrape of `/metrics` is not; its refusal is).
        counted: bool,
        started: Instant,
    }
}

impl<F, E> Future for MeteredFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = std::task::ready!(this.future.poll(cx));
        if let (Some(metrics), Ok(resp)) = (this.metrics.take(), &out) {
            if let Some(refused) = resp.extensions().get::<Refused>() {
                metrics.refused(refused);
            }
            if *this.counted {
                let method = resp
                    .extensions()
                    .get::<Served>()
                    .map_or(Label::NONE, |h| h.0);
                metrics.record(method, resp.status(), *this.started);
            }
        }
        Poll::Ready(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_bounded() {
        assert_eq!(Label::of_method("tools/call").name(), "tools/call");
        assert_eq!(Label::of_method("x".repeat(1000).as_str()), Label::OTHER);
        assert_eq!(Label::OTHER.name(), "other");
        assert_eq!(
            OUTCOMES[outcome(StatusCode::TOO_MANY_REQUESTS)],
            "rate_limited"
        );
        assert_eq!(OUTCOMES[outcome(StatusCode::ACCEPTED)], "ok");
        assert_eq!(OUTCOMES[outcome(StatusCode::NOT_FOUND)], "client_error");
        assert_eq!(OUTCOMES[outcome(StatusCode::FORBIDDEN)], "unauthorized");
        assert_eq!(
            OUTCOMES[outcome(StatusCode::SERVICE_UNAVAILABLE)],
            "unavailable"
        );
        assert_eq!(OUTCOMES[outcome(StatusCode::BAD_GATEWAY)], "server_error");
    }

    #[test]
    fn every_label_names_itself_once() {
        let mut names: Vec<&str> = (0..LABELS)
            .map(|i| Label(u8::try_from(i).unwrap()).name())
            .collect();
        for m in crate::wire::METHODS {
            assert_eq!(Label::of_method(m).name(), *m);
        }
        let (get, delete) = (Label::GET.name(), Label::DELETE.name());
        assert_eq!((get, delete, Label::NONE.name()), ("GET", "DELETE", "none"));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LABELS, "no two labels share a value");
    }

    /// The registry's text exposition.
    fn exposition(m: &HttpMetrics) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &m.registry).unwrap();
        text
    }

    #[test]
    fn counted_requests_show_in_the_family_by_method_and_outcome() {
        let m = HttpMetrics::new();
        let now = Instant::now();
        for _ in 0..3 {
            m.record(Label::of_method("tools/call"), StatusCode::OK, now);
        }
        m.record(Label::of_method("tools/call"), StatusCode::NOT_FOUND, now);
        m.record(Label::GET, StatusCode::OK, now);
        m.record(Label(u8::MAX), StatusCode::OK, now);
        let text = exposition(&m);
        for line in [
            r#"mcp_http_requests_total{method="tools/call",outcome="ok"} 3"#,
            r#"mcp_http_requests_total{method="tools/call",outcome="client_error"} 1"#,
            r#"mcp_http_requests_total{method="GET",outcome="ok"} 1"#,
            // A label out of the table (none is made) still counts, as `other`.
            r#"mcp_http_requests_total{method="other",outcome="ok"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(
            text.contains("mcp_http_request_duration_seconds_count 6"),
            "{text}"
        );
    }
}
