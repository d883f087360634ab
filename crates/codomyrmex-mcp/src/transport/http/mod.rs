//! Streamable HTTP: one endpoint (`/mcp` by default) serving both protocol eras.
//!
//! - **2026-07-28**: stateless POSTs. `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
//!   `Mcp-Param-*` headers must agree with the body (`400`, `-32020`). Unknown methods get
//!   `404`, GET and DELETE without a session `405`. A streamed response owns its work: closing
//!   it cancels the request.
//! - **2025-11-25 and earlier**: `initialize` mints an `Mcp-Session-Id`; sessions live in a
//!   bounded store with idle expiry. GET opens the session's standalone SSE stream (list
//!   changes, server-to-client requests); streams are resumable with `Last-Event-ID` from a
//!   bounded replay log; DELETE ends the session.
//!
//! Each request's era follows the spec's backward-compatibility rules: modern `_meta` selects
//! the stateless path, `initialize` or an `Mcp-Session-Id` the legacy one.
//!
//! Policies are tower layers ([`OriginLayer`], ...) applied by [`HttpServer::router`]; users can
//! build their own stack from [`mcp_router`] and the layers.
//!
//! The transport is a thin adapter: every protocol rule lives in the engine.

mod guard;
mod handler;
mod headers;
mod sessions;
mod sse;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::routing::{get, post};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::net::TcpListener;

use crate::engine::{Engine, supported_versions};
use crate::wire::{ErrorObject, OutgoingMessage, RequestId};

pub use guard::{OriginLayer, OriginPolicy, OriginService};
use sessions::SessionStore;

/// Who may read `GET /health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthAccess {
    /// No health endpoint.
    Off,
    /// Anyone who passes the Host/Origin check.
    Public,
    /// Only authenticated callers (the same as the MCP endpoint).
    Authenticated,
}

/// Configuration of the Streamable HTTP transport.
///
/// | field | default |
/// |---|---|
/// | `bind` | `127.0.0.1:8080` |
/// | `path` | `/mcp` |
/// | `origin_policy` | loopback hosts and origins on the bound port |
/// | `max_sessions` | 10 000 legacy sessions |
/// | `session_idle_timeout` | 10 minutes |
/// | `replay_events` | 256 events per SSE stream for `Last-Event-ID` |
/// | `always_sse` | `false`: SSE only when a call may stream (progress, logs, input requests) |
/// | `keep_alive` | 15 s SSE comment keep-alives |
/// | `max_body_bytes` | 4 MiB |
/// | `max_header_bytes` | 16 KiB |
/// | `header_read_timeout` | 10 s (slowloris) |
/// | `request_timeout` | 30 s to receive a body |
/// | `max_connections` | 1024 |
/// | `shutdown_grace` | 10 s |
/// | `health` | `Public` |
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The address to listen on.
    pub bind: SocketAddr,
    /// The MCP endpoint's path.
    pub path: String,
    /// Allowed `Host` and `Origin` values; `None` derives the loopback policy from `bind`.
    pub origin_policy: Option<OriginPolicy>,
    /// The most legacy sessions alive at once.
    pub max_sessions: usize,
    /// How long an unused legacy session lives.
    pub session_idle_timeout: Duration,
    /// Events kept per SSE stream for resumption.
    pub replay_events: usize,
    /// Answer every tool call with an SSE stream.
    pub always_sse: bool,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// The largest request body.
    pub max_body_bytes: usize,
    /// The largest request head (request line and headers).
    pub max_header_bytes: usize,
    /// Time allowed to receive a request's headers.
    pub header_read_timeout: Duration,
    /// Time allowed to receive a request's body.
    pub request_timeout: Duration,
    /// The most open connections; more wait in the listen backlog.
    pub max_connections: usize,
    /// Time in-flight requests get to finish after shutdown begins.
    pub shutdown_grace: Duration,
    /// Who may read `GET /health`.
    pub health: HealthAccess,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".into(),
            origin_policy: None,
            max_sessions: 10_000,
            session_idle_timeout: Duration::from_secs(600),
            replay_events: 256,
            always_sse: false,
            keep_alive: Duration::from_secs(15),
            max_body_bytes: 4 * 1024 * 1024,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_connections: 1024,
            shutdown_grace: Duration::from_secs(10),
            health: HealthAccess::Public,
        }
    }
}

/// Why the HTTP server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Binding a non-loopback address without authentication is refused.
    #[error(
        "refusing to listen on {0} without authentication: bind a loopback address (127.0.0.1) or configure authentication"
    )]
    UnauthenticatedPublicBind(SocketAddr),
    /// The path is not an absolute path.
    #[error("the endpoint path must start with '/': {0:?}")]
    InvalidPath(String),
    /// An I/O error (binding, accepting).
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

#[derive(Clone)]
pub(crate) struct AppState {
    engine: Engine,
    sessions: Arc<SessionStore>,
    config: Arc<HttpConfig>,
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
    let state = AppState {
        engine,
        sessions: Arc::new(SessionStore::new(
            config.max_sessions,
            config.session_idle_timeout,
            config.replay_events,
        )),
        config: Arc::new(config.clone()),
    };
    spawn_housekeeping(&state);
    let mut router = Router::new().route(
        &config.path,
        post(handler::post)
            .get(handler::get)
            .delete(handler::delete)
            .fallback(|| async { handler::method_not_allowed() }),
    );
    if config.health != HealthAccess::Off {
        router = router.route("/health", get(health));
    }
    router.with_state(state)
}

/// Sweeps idle sessions and tells legacy sessions when the tool list changes. Stops when the
/// router's state is dropped.
fn spawn_housekeeping(state: &AppState) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let sessions = Arc::downgrade(&state.sessions);
    let period = (state.config.session_idle_timeout / 4)
        .clamp(Duration::from_millis(50), Duration::from_secs(30));
    let mut changes = state.engine.registry().subscribe();
    changes.mark_unchanged();
    let engine = state.engine.clone();
    handle.spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let Some(s) = sessions.upgrade() else { return };
                    s.sweep();
                }
                changed = changes.changed() => {
                    if changed.is_err() { return; }
                    let Some(s) = sessions.upgrade() else { return };
                    for http in s.all() {
                        if let Some(n) = engine.tools_list_changed(&http.session) {
                            http.standalone.append(&n);
                        }
                    }
                }
            }
        }
    });
}

async fn health(axum::extract::State(state): axum::extract::State<AppState>) -> Response<Body> {
    let cfg = state.engine.config();
    let body = json!({
        "status": "ok",
        "name": cfg.name,
        "version": cfg.version,
        "protocolVersions": supported_versions(),
        "tools": state.engine.registry().len(),
        "sessions": state.sessions.len(),
    });
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

impl HttpServer {
    /// A server for `engine` under `config`.
    pub fn new(engine: Engine, config: HttpConfig) -> Self {
        Self { engine, config }
    }

    /// Checks the configuration: the path, and no public bind without authentication.
    pub fn validate(&self) -> Result<(), HttpError> {
        if !self.config.path.starts_with('/') {
            return Err(HttpError::InvalidPath(self.config.path.clone()));
        }
        if !self.config.bind.ip().is_loopback() {
            return Err(HttpError::UnauthenticatedPublicBind(self.config.bind));
        }
        Ok(())
    }

    /// The router with the default layers, for a server listening on `port`.
    pub fn router(&self, port: u16) -> Router {
        let policy = self
            .config
            .origin_policy
            .clone()
            .unwrap_or_else(|| OriginPolicy::loopback(port));
        mcp_router(self.engine.clone(), &self.config).layer(OriginLayer::new(policy))
    }

    /// Binds the configured address.
    pub async fn bind(&self) -> Result<TcpListener, HttpError> {
        self.validate()?;
        Ok(TcpListener::bind(self.config.bind).await?)
    }

    /// Serves on `listener` until `shutdown` resolves, then lets in-flight requests finish
    /// within the grace period.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> Result<(), HttpError> {
        self.validate()?;
        let port = listener.local_addr()?.port();
        let app = self.router(port);
        let connections = Arc::new(tokio::sync::Semaphore::new(
            self.config.max_connections.max(1),
        ));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.config.header_read_timeout)
            .max_buf_size(self.config.max_header_bytes.max(8192))
            .keep_alive(true);
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
            let svc = app
                .clone()
                .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
            let conn =
                builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc));
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                drop(permit);
            });
        }
        drop(listener);
        if tokio::time::timeout(self.config.shutdown_grace, graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!("shutdown grace period elapsed with requests still running");
        }
        let _ = TokioExecutor::new();
        Ok(())
    }
}

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
