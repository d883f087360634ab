//! Streamable HTTP: one endpoint (`/mcp` by default) serving both protocol eras.
//!
//! - **2026-07-28**: stateless POSTs. `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
//!   `Mcp-Param-*` headers must agree with the body (`400`, `-32020`). Unknown methods get
//!   `404`, GET and DELETE without a session `405`. A streamed response owns its work: closing
//!   it cancels the request.
//! - **2025-11-25 and earlier**: `initialize` mints an `Mcp-Session-Id`; sessions live in a
//!   bounded store with idle expiry. GET opens the session's standalone SSE stream (list
//!   changes, server-to-client requests); streams are resumable with `Last-Event-ID` from a
//!   replay log bounded in events and bytes (a resumption past evicted events gets `410`);
//!   DELETE ends the session. A session belongs to the principal that created it: to anyone
//!   else it does not exist (`404`).
//!
//! Legacy session records live in a [`SessionStore`] ([`HttpConfig::session_store`], in
//! memory by default), which decides the cap, the eviction of idle sessions and the idle
//! expiry; resumption goes through the replay logs' [`EventStore`].
//!
//! Each request's era follows the spec's backward-compatibility rules: modern `_meta` selects
//! the stateless path, `initialize` or an `Mcp-Session-Id` the legacy one.
//!
//! Policies are tower layers applied by [`HttpServer::router`], outermost first (before
//! them all, the metrics layer counts every request for `GET /metrics`):
//!
//! 1. [`HeaderLimitLayer`]: oversized request heads get `431`;
//!    then [`ForwardedLayer`], only with trusted proxies: names the client behind them;
//! 2. [`OriginLayer`]: DNS-rebinding protection, a foreign `Host` or `Origin` gets `403`;
//! 3. CORS ([`cors_layer`]), only when origins are configured;
//! 4. [`AuthLayer`]: bearer tokens and JWTs, `401`/`403` with `WWW-Authenticate`, only when
//!    authentication is configured; refusals draw from a per-client budget of their own
//!    (`429` once it is spent), so they never spend an authenticated client's;
//! 5. [`ClientRateLimitLayer`]: a per-client token bucket, `429` with `Retry-After`;
//! 6. [`InFlightLimitLayer`]: load shedding past the concurrent-request limit, `503`.
//!
//! Bodies larger than `max_body_bytes` get `413`, bodies slower than `request_timeout` `408`.
//! Every refusal carries a JSON-RPC error body with no id. The connection loop adds the rest:
//! `TCP_NODELAY`, the header-read timeout, the idle timeout, the connection cap, graceful
//! shutdown and, on Linux, the input spin after a response (`http_spin`, `conn_spin`).
//! Users can build their own stack from [`mcp_router`], [`protected_resource_router`] and the
//! layers.
//!
//! The transport is a thin adapter: every protocol rule lives in the engine.

mod auth;
mod cluster;
mod cluster_routing;
mod conn;
mod conn_spin;
mod conn_timer;
mod cors;
mod drain;
mod endpoint;
mod forwarded;
mod graceful;
mod guard;
mod handler;
pub(crate) mod headers;
mod limits;
mod metrics;
mod own_wakes;
mod refusals;
mod replay;
mod sessions;
mod sse;
mod sse_frame;
#[cfg(test)]
mod stack_tests;
mod trace;

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceBuilder};

use crate::RateLimit;
use crate::engine::{Engine, supported_versions};
use crate::wire::{ErrorObject, OutgoingMessage, RequestId};

pub use auth::{
    AuthConfig, AuthConfigError, AuthLayer, AuthService, Jwks, JwtConfig, PROTECTED_RESOURCE_PATH,
    StaticToken, protected_resource_router,
};
pub use cors::{CorsOriginError, check_origin, cors_layer};
use drain::Drain;
pub use forwarded::{ClientAddr, Forwarded, ForwardedLayer, ProxyNet, ProxyNetError};
pub use guard::{OriginLayer, OriginPolicy, OriginService};
pub use limits::{
    ClientRateLimit, ClientRateLimitLayer, HeaderLimit, HeaderLimitLayer, InFlightLimit,
    InFlightLimitLayer, PolicyFuture, SERVER_BUSY,
};
use sessions::SessionTable;
pub use trace::{TraceParentHook, set_trace_parent_hook};

use crate::store::{EventStore, MemorySessionStore, MessageBus, SessionStore};

/// The environment variable that overrides [`McpServerConfig::http_spin`] for
/// [`HttpServer::serve`], in whole microseconds (`0` turns the spin off).
///
/// [`McpServerConfig::http_spin`]: crate::McpServerConfig::http_spin
pub const SPIN_ENV: &str = "CODOMYRMEX_MCP_HTTP_SPIN_US";

/// Who may read `GET /health` and `GET /metrics` (the Prometheus text format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthAccess {
    /// No health endpoint.
    Off,
    /// Anyone who passes the Host/Origin check, even when authentication is configured.
    Public,
    /// The same callers as the MCP endpoint: anyone who passes the Host/Origin check when no
    /// authentication is configured, only authenticated callers when it is.
    Authenticated,
}

/// Fields a server adds to `GET /health`'s JSON, asked at each request (the gateway's live
/// configuration generation, for one). They never replace the transport's own fields.
#[derive(Clone)]
pub struct HealthDetails(Arc<dyn Fn() -> serde_json::Map<String, Value> + Send + Sync>);

impl HealthDetails {
    /// Details `f` gives at each `/health` request.
    pub fn new(f: impl Fn() -> serde_json::Map<String, Value> + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for HealthDetails {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HealthDetails(..)")
    }
}

/// Configuration of the Streamable HTTP transport.
///
/// | field | default |
/// |---|---|
/// | `bind` | `127.0.0.1:8080` |
/// | `path` | `/mcp` |
/// | `origin_policy` | loopback hosts and origins on the bound port (plus the bound IP) |
/// | `allowed_hosts`, `allowed_origins` | none added |
/// | `auth` | `None`: no authentication (then only loopback binds are allowed) |
/// | `cors_origins` | none: CORS off |
/// | `max_sessions` | 10 000 legacy sessions; when full, the least recently used idle one (no call in flight, no open SSE response) is evicted, and only when all are busy is `initialize` refused (`503`, `Retry-After`) |
/// | `session_idle_timeout` | 10 minutes |
/// | `replay_events` | 256 events per SSE stream for `Last-Event-ID` |
/// | `replay_event_bytes` | 17 MiB: the largest event kept (a 16 MiB result and its framing); a larger response is replaced by an error, a larger notification dropped |
/// | `replay_stream_bytes` | 17 MiB of history per SSE stream |
/// | `replay_session_bytes` | 34 MiB of history per legacy session, over its streams |
/// | `replay_total_bytes` | 256 MiB of history for the whole server |
/// | `always_sse` | `false`: SSE only when a call may stream (progress, logs, input requests) |
/// | `keep_alive` | 15 s SSE comment keep-alives |
/// | `max_body_bytes` | 4 MiB (`413`) |
/// | `max_header_bytes` | 16 KiB (`431`) |
/// | `header_read_timeout` | 10 s to receive a request head, counted from when the connection is ready for one, so also the keep-alive idle limit (slowloris) |
/// | `request_timeout` | 30 s to receive a body (`408`) |
/// | `idle_timeout` | 60 s with no byte moving and no handler running closes a connection (slow read) |
/// | `max_connections` | 1024; more wait in the listen backlog |
/// | `max_concurrent_requests` | 256; more are shed with `503` |
/// | `rate_limit` | 100 requests/s per client IP, burst 200 (`429`), counted after authentication |
/// | `auth_failure_rate_limit` | 10 refused authentications/s per client IP, burst 20 (`429`), a budget of their own |
/// | `session_store` | `None`: the records of legacy sessions in memory ([`MemorySessionStore`]) |
/// | `event_store` | `None`: SSE history in this process's replay logs; with one, every legacy stream is written and followed through it, so a stream resumes on any instance |
/// | `message_bus` | `None`: no routing; with one, a client's answer to a server-to-client request, or a cancellation, reaching the wrong instance is routed to the one whose call waits |
/// | `max_live_sessions` | 1024 legacy sessions live in this process, with a `session_store`; idle ones past it are rebuilt from their records when used |
/// | `trusted_proxies` | none: the client is the peer address, `X-Forwarded-For` and `Forwarded` are ignored |
/// | `shutdown_grace` | 10 s |
/// | `health` | `Authenticated` (public when no authentication is configured) |
/// | `health_details` | none: `/health` shows the transport's own fields only |
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The MCP endpoint's path.
    pub path: String,
    /// Allowed `Host` and `Origin` values; `None` derives the loopback policy from `bind`.
    pub origin_policy: Option<OriginPolicy>,
    /// `Host` values allowed on top of the policy, such as `mcp.example.com`.
    pub allowed_hosts: Vec<String>,
    /// `Origin` values allowed on top of the policy, such as `https://app.example.com`.
    pub allowed_origins: Vec<String>,
    /// Authentication; required to bind a non-loopback address.
    pub auth: Option<AuthConfig>,
    /// Origins allowed by CORS (and so by the Origin check); empty turns CORS off. Explicit
    /// origins only: a wildcard is refused.
    pub cors_origins: Vec<String>,
    /// The most legacy sessions alive at once. A new session past it evicts the least recently
    /// used idle one.
    pub max_sessions: usize,
    /// How long an unused legacy session lives.
    pub session_idle_timeout: Duration,
    /// Events kept per SSE stream for resumption.
    pub replay_events: usize,
    /// The largest SSE event kept for resumption, in bytes.
    pub replay_event_bytes: usize,
    /// Bytes of resumption history kept per SSE stream (oldest evicted first).
    pub replay_stream_bytes: usize,
    /// Bytes of resumption history kept per legacy session, over all its streams (oldest
    /// evicted first).
    pub replay_session_bytes: usize,
    /// Bytes of resumption history kept by the whole server (oldest evicted first).
    pub replay_total_bytes: usize,
    /// Answer every tool call with an SSE stream.
    pub always_sse: bool,
    /// Interval of SSE keep-alive comments; must be shorter than `idle_timeout`.
    pub keep_alive: Duration,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// The largest request head (request line and headers).
    pub max_header_bytes: usize,
    /// Time allowed to receive a request's headers, from when the connection is ready for a
    /// request.
    pub header_read_timeout: Duration,
    /// Time allowed to receive a request's body.
    pub request_timeout: Duration,
    /// Time a connection may see no traffic while no request is being handled.
    pub idle_timeout: Duration,
    /// The most open connections; more wait in the listen backlog.
    pub max_connections: usize,
    /// The most requests handled at once; more get `503`.
    pub max_concurrent_requests: usize,
    /// Per-client (peer IP) request rate limit, counted after authentication; `None` turns it
    /// off.
    pub rate_limit: Option<RateLimit>,
    /// Per-client (peer IP) limit of refused authentications (missing or bad credentials),
    /// which only those requests draw from; `None` turns it off. Only used with `auth`.
    pub auth_failure_rate_limit: Option<RateLimit>,
    /// Reverse proxies (addresses or CIDR networks) whose `Forwarded: for=` or
    /// `X-Forwarded-For` names the client that the per-client limits count (the rightmost hop
    /// that is not itself trusted). Those headers from any other peer are ignored.
    pub trusted_proxies: Vec<ProxyNet>,
    /// Where the records of legacy sessions live; `None` keeps them in memory. The store
    /// decides the cap (`max_sessions`), the eviction of idle sessions and the idle expiry.
    pub session_store: Option<Arc<dyn SessionStore>>,
    /// Where legacy SSE history lives; `None` keeps it in this process's replay logs (under
    /// the `replay_*` bounds). With a store shared by several instances, every event a
    /// legacy POST or GET stream sends is appended there and read back from there, so a
    /// stream cut off on one instance resumes with `Last-Event-ID` on any other. The store
    /// applies its own bounds; `replay_event_bytes` still replaces an oversized response.
    pub event_store: Option<Arc<dyn EventStore>>,
    /// Routing between instances (see [`MessageBus`]); only used with an `event_store`.
    pub message_bus: Option<Arc<dyn MessageBus>>,
    /// With a `session_store`: the most legacy sessions this process keeps live. Past it the
    /// least recently used idle ones (no call in flight, no open SSE response) drop their
    /// live state and are rebuilt from their records when used again, so memory stays flat
    /// however many sessions the store holds. Their SSE history goes with the live state.
    pub max_live_sessions: usize,
    /// Time in-flight requests get to finish after shutdown begins.
    pub shutdown_grace: Duration,
    /// Who may read `GET /health`.
    pub health: HealthAccess,
    /// Fields the server adds to `GET /health`.
    pub health_details: Option<HealthDetails>,
}

const MIB: usize = 1024 * 1024;

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            origin_policy: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            auth: None,
            cors_origins: Vec::new(),
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(600),
            replay_events: 256,
            replay_event_bytes: 17 * MIB,
            replay_stream_bytes: 17 * MIB,
            replay_session_bytes: 34 * MIB,
            replay_total_bytes: 256 * MIB,
            always_sse: false,
            keep_alive: Duration::from_secs(15),
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
            max_concurrent_requests: 256,
            rate_limit: Some(RateLimit {
                per_second: 100.0,
                burst: 200,
            }),
            auth_failure_rate_limit: Some(RateLimit {
                per_second: 10.0,
                burst: 20,
            }),
            trusted_proxies: Vec::new(),
            session_store: None,
            event_store: None,
            message_bus: None,
            max_live_sessions: 1024,
            shutdown_grace: Duration::from_secs(10),
            health: HealthAccess::Authenticated,
            health_details: None,
        }
    }
}

impl HttpConfig {
    /// Trusts the forwarded headers of these proxies (see
    /// [`trusted_proxies`](Self::trusted_proxies)).
    pub fn with_trusted_proxies(mut self, proxies: impl IntoIterator<Item = ProxyNet>) -> Self {
        self.trusted_proxies = proxies.into_iter().collect();
        self
    }

    /// Keeps the records of legacy sessions in `store` (see
    /// [`session_store`](Self::session_store)).
    pub fn with_session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }

    /// Keeps legacy SSE history in `store` (see [`event_store`](Self::event_store)).
    pub fn with_event_store(mut self, store: Arc<dyn EventStore>) -> Self {
        self.event_store = Some(store);
        self
    }

    /// Routes client answers between instances through `bus` (see
    /// [`message_bus`](Self::message_bus)).
    pub fn with_message_bus(mut self, bus: Arc<dyn MessageBus>) -> Self {
        self.message_bus = Some(bus);
        self
    }

    /// Turns off every per-client rate limit: requests' and refused authentications'.
    pub fn without_rate_limits(mut self) -> Self {
        self.rate_limit = None;
        self.auth_failure_rate_limit = None;
        self
    }
}

/// Why the HTTP server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Binding a non-loopback address without authentication is refused.
    #[error(
        "refusing to listen on {0} without authentication: bind a loopback address (127.0.0.1) or configure authentication (a bearer token or JWT validation)"
    )]
    UnauthenticatedPublicBind(SocketAddr),
    /// The path is not an absolute path.
    #[error("the endpoint path must start with '/': {0:?}")]
    InvalidPath(String),
    /// The authentication configuration is unusable.
    #[error("{0}")]
    Auth(#[from] AuthConfigError),
    /// A CORS origin is a wildcard or not an origin.
    #[error("{0}")]
    Cors(#[from] CorsOriginError),
    /// Another setting is out of range.
    #[error("invalid HTTP configuration: {0}")]
    Config(String),
    /// An I/O error (binding, accepting).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

#[derive(Clone)]
pub(crate) struct AppState {
    engine: Engine,
    sessions: Arc<SessionTable>,
    config: Arc<HttpConfig>,
    /// Cancelled when the server shuts down: ends the streams that never end on their own.
    shutdown: CancellationToken,
    /// The calls in flight, answered with an error when the shutdown grace period ends.
    drain: Arc<Drain>,
    /// What `/metrics` shows.
    metrics: Arc<metrics::HttpMetrics>,
}

/// A JSON-RPC error response with an HTTP status.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<RequestId>,
    error: ErrorObject,
) -> Response<Body> {
    let mut resp = Response::new(Body::from(OutgoingMessage::Error { id, error }.to_bytes()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The MCP endpoint and `/health`, with no policy layers. Use it to build your own stack;
/// [`HttpServer`] applies the default one.
pub fn mcp_router(engine: Engine, config: &HttpConfig) -> Router {
    mcp_router_with_shutdown(engine, config, CancellationToken::new())
}

/// [`mcp_router`] whose never-ending SSE streams (legacy GET streams, modern
/// `subscriptions/listen`) end when `shutdown` is cancelled, so a graceful shutdown need not
/// wait for them.
pub fn mcp_router_with_shutdown(
    engine: Engine,
    config: &HttpConfig,
    shutdown: CancellationToken,
) -> Router {
    router_with_drain(
        engine,
        config,
        shutdown,
        Arc::default(),
        metrics::HttpMetrics::new(),
    )
}

fn router_with_drain(
    engine: Engine,
    config: &HttpConfig,
    shutdown: CancellationToken,
    drain: Arc<Drain>,
    metrics: Arc<metrics::HttpMetrics>,
) -> Router {
    router_of(app_state(engine, config, shutdown, drain, metrics), config)
}

/// The endpoint's state, with its housekeeping and message bus subscription started.
fn app_state(
    engine: Engine,
    config: &HttpConfig,
    shutdown: CancellationToken,
    drain: Arc<Drain>,
    metrics: Arc<metrics::HttpMetrics>,
) -> AppState {
    let restorer = engine.clone();
    let shared = config.event_store.clone().map(|events| {
        Arc::new(cluster::Shared::new(
            events,
            config.message_bus.clone(),
            config.replay_event_bytes,
            config.session_idle_timeout,
            metrics.clone(),
        ))
    });
    let state = AppState {
        shutdown,
        drain,
        metrics,
        engine,
        sessions: Arc::new(
            SessionTable::new(
                config
                    .session_store
                    .clone()
                    .unwrap_or_else(|| Arc::new(MemorySessionStore::new())),
                config.max_sessions,
                config.session_idle_timeout,
                replay::ReplayLimits::of(config),
            )
            .restoring_with(restorer)
            .with_live_cap(
                config
                    .session_store
                    .as_ref()
                    .map(|_| config.max_live_sessions),
            )
            .with_shared(shared),
        ),
        config: Arc::new(config.clone()),
    };
    spawn_housekeeping(&state);
    subscribe_bus(&state);
    state
}

/// The endpoint's routes and `/health`'s on `state`.
fn router_of(state: AppState, config: &HttpConfig) -> Router {
    let mut router = Router::new().route(
        &config.path,
        post(handler::post)
            .get(handler::get)
            .delete(handler::delete)
            .fallback(|| async { handler::method_not_allowed() }),
    );
    if config.health != HealthAccess::Off {
        router = router
            .route("/health", get(health))
            .route("/metrics", get(metrics_text))
            .route("/status", get(status));
    }
    router.with_state(state)
}

/// Sweeps idle sessions and relays server events (list changes, resource updates) to legacy
/// sessions' standalone streams. Stops when the router's state is dropped.
fn spawn_housekeeping(state: &AppState) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let sessions = Arc::downgrade(&state.sessions);
    let period = (state.config.session_idle_timeout / 4)
        .clamp(Duration::from_millis(50), Duration::from_secs(30));
    let mut events = state.engine.listeners().events();
    let engine = state.engine.clone();
    let metrics = state.metrics.clone();
    handle.spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let Some(s) = sessions.upgrade() else { return };
                    if let Err(e) = s.sweep().await {
                        metrics.store_error();
                        tracing::warn!(error = %e, "could not expire idle sessions");
                    }
                }
                event = events.next() => {
                    let Some(event) = event else { return };
                    let Some(s) = sessions.upgrade() else { return };
                    // A session live on other instances too gets them from one of them.
                    // The engine queues the notice in each session's own queue; its GET
                    // stream gets what `poll_transmit` gives.
                    let now = engine.now();
                    for http in s.all().into_iter().filter(|h| h.notifies()) {
                        engine.listeners().handle_event(now, &http.session, &event);
                        while let Some(n) = http.session.poll_transmit() {
                            http.standalone_sink.send(n);
                        }
                    }
                }
            }
        }
    });
}

/// Starts delivering what other instances route here to this router's sessions.
fn subscribe_bus(state: &AppState) {
    let Some(bus) = state.sessions.shared().and_then(|s| s.bus.clone()) else {
        return;
    };
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let delivery = Arc::new(cluster_routing::Delivery {
        sessions: Arc::downgrade(&state.sessions),
        engine: state.engine.clone(),
    });
    let metrics = state.metrics.clone();
    handle.spawn(async move {
        if let Err(e) = bus.subscribe(delivery).await {
            metrics.store_error();
            tracing::warn!(error = %e, "could not subscribe to the message bus");
        }
    });
}

async fn metrics_text(
    axum::extract::State(state): axum::extract::State<AppState>,
) -> Response<Body> {
    state.metrics.render(
        state.drain.in_flight(),
        state.sessions.len(),
        state.sessions.store_round_trips(),
        &state.engine.observed(),
    )
}

/// `GET /status`: the server's state as JSON, with the fields of every observed part
/// ([`crate::observe`]; the gateway's upstreams, for one). Behind `/metrics`'s access rule.
async fn status(axum::extract::State(state): axum::extract::State<AppState>) -> Response<Body> {
    let cfg = state.engine.config();
    let mut doc = serde_json::Map::new();
    doc.insert("name".into(), json!(cfg.name));
    doc.insert("version".into(), json!(cfg.version));
    doc.insert("tools".into(), json!(state.engine.registry().len()));
    doc.insert("sessions".into(), json!(state.sessions.len()));
    doc.insert("callsInFlight".into(), json!(state.drain.in_flight()));
    for part in state.engine.observed() {
        part.status(&mut doc);
    }
    let mut resp = Response::new(Body::from(serde_json::Value::Object(doc).to_string()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn health(axum::extract::State(state): axum::extract::State<AppState>) -> Response<Body> {
    let cfg = state.engine.config();
    let mut body = json!({
        "status": "ok",
        "name": cfg.name,
        "version": cfg.version,
        "protocolVersions": supported_versions(),
        "tools": state.engine.registry().len(),
        "sessions": state.sessions.len(),
    });
    if let (Some(details), Some(fields)) = (&state.config.health_details, body.as_object_mut()) {
        for (k, v) in (details.0)() {
            fields.entry(k).or_insert(v);
        }
    }
    let mut resp = Response::new(Body::from(body.to_string()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// An HTTP server for an engine, with the default policy stack.
#[derive(Debug, Clone)]
pub struct HttpServer {
    engine: Engine,
    config: HttpConfig,
}

fn has_wildcard(values: &[String]) -> bool {
    values.iter().any(|v| v.contains('*'))
}

impl HttpServer {
    /// A server for `engine` under `config`.
    pub fn new(engine: Engine, config: HttpConfig) -> Self {
        Self { engine, config }
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// Checks the configuration: the path, the authentication and CORS settings, no wildcard
    /// host or origin, sane limits, and no non-loopback bind without authentication.
    pub fn validate(&self) -> Result<(), HttpError> {
        let c = &self.config;
        if !c.path.starts_with('/') {
            return Err(HttpError::InvalidPath(c.path.clone()));
        }
        if let Some(auth) = &c.auth {
            auth.validate()?;
        }
        for o in &c.cors_origins {
            check_origin(o)?;
        }
        let policy_wild = c
            .origin_policy
            .as_ref()
            .is_some_and(|p| has_wildcard(&p.hosts) || has_wildcard(&p.origins));
        if policy_wild || has_wildcard(&c.allowed_hosts) || has_wildcard(&c.allowed_origins) {
            return Err(HttpError::Config(
                "allowed hosts and origins must be explicit: a wildcard is refused".into(),
            ));
        }
        if c.max_header_bytes == 0 || c.max_body_bytes == 0 {
            return Err(HttpError::Config("size limits must be positive".into()));
        }
        if c.idle_timeout.is_zero() || c.header_read_timeout.is_zero() {
            return Err(HttpError::Config("timeouts must be positive".into()));
        }
        if c.keep_alive >= c.idle_timeout {
            return Err(HttpError::Config(format!(
                "the SSE keep-alive interval ({:?}) must be shorter than the idle timeout ({:?})",
                c.keep_alive, c.idle_timeout
            )));
        }
        for r in [&c.rate_limit, &c.auth_failure_rate_limit]
            .into_iter()
            .flatten()
        {
            if r.per_second.is_nan() || r.per_second <= 0.0 || r.burst == 0 {
                return Err(HttpError::Config(
                    "a rate limit needs a positive rate and burst (or None to turn it off)".into(),
                ));
            }
        }
        if c.replay_events == 0
            || c.replay_event_bytes == 0
            || c.replay_event_bytes > c.replay_stream_bytes
            || c.replay_stream_bytes > c.replay_session_bytes
            || c.replay_session_bytes > c.replay_total_bytes
        {
            return Err(HttpError::Config(
                "replay bounds must be positive, with replay_event_bytes <= replay_stream_bytes \
                 <= replay_session_bytes <= replay_total_bytes"
                    .into(),
            ));
        }
        if !c.bind.ip().is_loopback() && c.auth.is_none() {
            return Err(HttpError::UnauthenticatedPublicBind(c.bind));
        }
        Ok(())
    }

    /// The effective Host/Origin policy for a server listening on `port`: the configured
    /// policy or the loopback one (plus the bound IP address when it is a specific
    /// non-loopback one), with the extra hosts, origins and CORS origins added.
    pub fn origin_policy(&self, port: u16) -> OriginPolicy {
        let c = &self.config;
        let mut policy = c.origin_policy.clone().unwrap_or_else(|| {
            let mut p = OriginPolicy::loopback(port);
            let ip = c.bind.ip();
            if !ip.is_loopback() && !ip.is_unspecified() {
                let host = match ip {
                    IpAddr::V4(v4) => v4.to_string(),
                    IpAddr::V6(v6) => format!("[{v6}]"),
                };
                p.hosts.push(host.clone());
                p.hosts.push(format!("{host}:{port}"));
            }
            p
        });
        policy.hosts.extend(c.allowed_hosts.iter().cloned());
        policy.origins.extend(c.allowed_origins.iter().cloned());
        policy.origins.extend(c.cors_origins.iter().cloned());
        policy
    }

    /// The router with the default layers (see the [module docs](self)), for a server
    /// listening on `port`.
    pub fn router(&self, port: u16) -> Result<Router, HttpError> {
        let service = self.build::<Body>(port, CancellationToken::new(), Arc::default())?;
        Ok(Router::new().fallback_service(service))
    }

    /// The endpoint wrapped in the default layers. The layers wrap the whole router rather
    /// than each route (`Router::layer`), so a request passes through them without a boxed,
    /// cloned service per layer.
    fn build<B>(
        &self,
        port: u16,
        shutdown: CancellationToken,
        drain: Arc<Drain>,
    ) -> Result<
        impl Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + 'static,
        HttpError,
    >
    where
        B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
        B::Error: Into<axum::BoxError>,
    {
        self.validate()?;
        let c = &self.config;
        let metrics = metrics::HttpMetrics::new();
        let state = app_state(self.engine.clone(), c, shutdown, drain, metrics.clone());
        let mut app = router_of(state.clone(), c);
        let auth = match &c.auth {
            None => None,
            Some(auth) => {
                app = app.merge(protected_resource_router(auth, &c.path));
                let mut layer = AuthLayer::new(auth.clone())?;
                if let Some(limit) = c.auth_failure_rate_limit {
                    layer = layer.with_failure_limit(limit);
                }
                if c.health == HealthAccess::Public {
                    layer = layer.allow_path("/health").allow_path("/metrics");
                }
                Some(layer)
            }
        };
        let forwarded =
            (!c.trusted_proxies.is_empty()).then(|| ForwardedLayer::new(c.trusted_proxies.clone()));
        let cors = if c.cors_origins.is_empty() {
            None
        } else {
            // Its future boxed: CORS's keeps the request's origin and a header map, and
            // every layer above holds the future of the one below, configured or not.
            Some(
                ServiceBuilder::new()
                    .map_future(Box::pin)
                    .layer(cors_layer(&c.cors_origins)?),
            )
        };
        Ok(ServiceBuilder::new()
            // Outermost: it counts the other layers' refusals too.
            .layer(metrics::MetricsLayer::new(metrics))
            .layer(HeaderLimitLayer::new(c.max_header_bytes))
            // Before the per-client limits: it names the client they count.
            .option_layer(forwarded)
            .layer(OriginLayer::new(self.origin_policy(port)))
            .option_layer(cors)
            // Authentication first, so that refused requests (which have their own budget)
            // never spend an authenticated client's.
            .option_layer(auth)
            .option_layer(c.rate_limit.map(ClientRateLimitLayer::new))
            .layer(InFlightLimitLayer::new(c.max_concurrent_requests))
            // The endpoint's POSTs skip the router (see `endpoint`).
            .service(endpoint::Endpoint::new(state, c.path.clone(), app)))
    }

    /// Binds the configured address.
    pub async fn bind(&self) -> Result<TcpListener, HttpError> {
        self.validate()?;
        Ok(TcpListener::bind(self.config.bind).await?)
    }

    /// Serves on `listener` until `shutdown` resolves, then lets in-flight requests finish
    /// within the grace period.
    ///
    /// Shutting down stops accepting connections, ends the never-ending SSE streams and logs
    /// (at `warn`) how many calls are in flight. Calls still running when the grace period
    /// ends are cancelled and answered with a JSON-RPC error (`-32000`, "Server is shutting
    /// down") on their own response, so clients see an answer rather than a cut connection.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), HttpError> {
        let env = std::env::var(SPIN_ENV).ok();
        let spin = spin_of(self.engine.config().http_spin, env.as_deref())
            .map(|s| Arc::new(conn_spin::ServerSpin::new(s)));
        self.serve_spinning(listener, shutdown, spin).await
    }

    /// [`Self::serve`] with its connections on `spin` (none: no input spin).
    async fn serve_spinning(
        &self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
        spin: Option<Arc<conn_spin::ServerSpin>>,
    ) -> Result<(), HttpError> {
        let port = listener.local_addr()?.port();
        let streams_end = CancellationToken::new();
        let drain = Arc::new(Drain::default());
        let app = self.build::<hyper::body::Incoming>(port, streams_end.clone(), drain.clone())?;
        let connections = Arc::new(tokio::sync::Semaphore::new(
            self.config.max_connections.max(1),
        ));
        let graceful = graceful::Graceful::default();
        let mut builder = hyper::server::conn::http1::Builder::new();
        // The header-limit layer answers oversized heads with a JSON-RPC body; the parser's
        // hard cap, twice that, answers a bare 431 and closes the connection.
        let hard_cap = self.config.max_header_bytes.saturating_mul(2).max(8192);
        builder
            .header_read_timeout(self.config.header_read_timeout)
            .max_header_size(hard_cap)
            .keep_alive(true);
        let idle_timeout = self.config.idle_timeout;
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                () = &mut shutdown => break,
                p = connections.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            };
            let (stream, peer) = tokio::select! {
                () = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            // Small request/response exchanges must not wait for Nagle + delayed ACK.
            let _ = stream.set_nodelay(true);
            let activity = Arc::new(conn::Activity::new(spin.as_ref()));
            let io = TokioIo::new(conn::TrackedIo::new(stream, activity.clone()));
            // One timer per connection for its header and body deadlines: tokio's timer
            // wheel is not re-programmed per request (see `conn_timer`).
            let timer = conn_timer::ConnTimer::default();
            let svc = conn::Tracked::new(app.clone(), activity.clone(), peer, timer.clone());
            let conn = builder
                .clone()
                .timer(timer)
                .serve_connection(io, conn::InPlace::new(svc));
            // Its wake-ups of itself (the body's hand-over) are polled again on this thread
            // rather than sent through tokio's queue to the other worker (see `own_wakes`).
            let conn = own_wakes::OwnWakes::new(graceful.watch(conn));
            tokio::spawn(async move {
                tokio::select! {
                    r = conn => if let Err(e) = r {
                        tracing::debug!(error = %e, "connection ended with an error");
                    },
                    () = activity.idle(idle_timeout) => {
                        tracing::debug!(%peer, "closed an idle connection");
                    }
                }
                drop(permit);
            });
        }
        drop(listener);
        streams_end.cancel();
        let grace = self.config.shutdown_grace;
        tracing::warn!(
            in_flight = drain.in_flight(),
            grace_secs = grace.as_secs_f64(),
            "shutting down: no new connections; draining {} in-flight call(s) for up to {:?}",
            drain.in_flight(),
            grace
        );
        let closed = graceful.shutdown();
        tokio::pin!(closed);
        if tokio::time::timeout(grace, &mut closed).await.is_err() {
            tracing::warn!(
                in_flight = drain.in_flight(),
                "shutdown grace period elapsed: answering the calls still running with an error"
            );
            drain.end_calls();
            // The answers are written as the handlers return; a connection that cannot take
            // them (a client that stopped reading) is not waited for long.
            if tokio::time::timeout(ANSWER_GRACE, &mut closed)
                .await
                .is_err()
            {
                tracing::warn!("connections still open after the shutdown answers; closing them");
            }
        }
        Ok(())
    }
}

/// The connections' spin: `configured`, or what [`SPIN_ENV`] (`env`) says; none when zero.
fn spin_of(configured: Duration, env: Option<&str>) -> Option<crate::transport::spin::Spin> {
    let spin = crate::transport::spin::from_env(SPIN_ENV, env).unwrap_or(configured);
    crate::transport::spin::Spin::new(spin)
}

/// How long, after the grace period, connections get to carry the shutting-down answers.
const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
