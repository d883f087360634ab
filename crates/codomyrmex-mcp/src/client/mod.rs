//! [`McpClient`]: an MCP client of either era, over a stdio child process
//! ([`McpClient::spawn`]), Streamable HTTP ([`McpClient::connect_http`], feature `http`), any
//! newline-delimited byte stream ([`McpClient::connect`]) or an in-process server
//! ([`McpClient::in_memory`]).
//!
//! The protocol logic (ids, negotiation, the multi round-trip loop, list caching) is in
//! [`proto`], which does no I/O; this module is the tokio driver around it, and the
//! transports only move messages. Server requests and `inputRequests` are answered by the
//! [`ClientHandlers`] the client was built with, which also decide the capabilities it
//! declares.

#[cfg(feature = "http")]
pub mod answer_spin;
mod dispatch;
#[cfg(feature = "http")]
mod dpop;
#[cfg(feature = "http")]
mod endpoint;
mod handlers;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod http_io;
mod inbound;
#[cfg(feature = "http")]
mod jws;
mod limits;
mod lists;
#[cfg(feature = "http")]
pub mod oauth;
#[cfg(feature = "http")]
mod oauth_fetch;
#[cfg(feature = "http")]
mod oauth_flow;
#[cfg(feature = "http")]
mod oauth_grants;
#[cfg(feature = "http")]
mod oauth_https;
#[cfg(feature = "http")]
pub mod oauth_loopback;
pub mod private_file;
pub mod skills;
pub use codomyrmex_mcp_core::client::{param_headers, proto, sending};
#[cfg(feature = "http")]
mod sse;
mod stdio;
mod tasks;
#[cfg(feature = "http")]
pub mod tls;
#[cfg(feature = "http")]
pub mod token_file;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};

pub use handlers::{ClientHandlers, InputHandler, NotificationHandler};
pub use limits::ClientLimits;
use proto::{ClientIdentity, DiscoverOutcome, InputRequest, ListCache, RequestTable};
pub use stdio::StdioCommand;
pub use tasks::TaskCall;

use crate::wire::{ErrorObject, RequestId};
use crate::{Era, ProtocolVersion};

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Server(ErrorObject),
    /// The connection closed before the answer arrived.
    #[error("the connection closed")]
    Closed,
    /// The answer was not what the protocol promises.
    #[error("unexpected answer: {0}")]
    Protocol(String),
    /// The transport failed: the server could not be reached, the connection broke, or (over
    /// HTTP) it answered with a status and no JSON-RPC message. Never a server's answer.
    #[error("transport failure: {message}")]
    Transport {
        /// The HTTP status, when there was one.
        status: Option<u16>,
        /// What happened.
        message: String,
    },
    /// No answer within the timeout; the request was cancelled on the server.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server does not speak the era asked for (`--era modern` against a 2025-only
    /// server, say), or the era spoken has no such request (`tasks/list` in 2026-07-28).
    #[error("{0}")]
    Era(String),
    /// The server sent more than one of the client's [`ClientLimits`] allows: a list with
    /// too many items, pages or bytes. Nothing past the bound was kept.
    #[error("over the client's limit: {0}")]
    Limit(String),
}

/// A typed result with the JSON it was read from.
#[derive(Debug, Clone, PartialEq)]
pub struct Typed<T> {
    /// The result, typed.
    pub value: T,
    /// The result as the server sent it (fields the type does not name included).
    pub raw: Value,
}

/// Progress notifications' params (`progress`, `total`, `message`) for one request.
pub type ProgressHandler = Arc<dyn Fn(Value) + Send + Sync>;

/// Which era to speak, or how to find out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraPreference {
    /// Probe with `server/discover`; fall back to `initialize` on a non-modern error.
    #[default]
    Auto,
    /// 2026-07-28 only: fail with a hint against a legacy server.
    Modern,
    /// The `initialize` handshake (2025-11-25 and earlier).
    Legacy,
}

/// How a client behaves: its handlers, name and timeouts.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Answers to server requests; their kinds are the declared capabilities.
    pub handlers: ClientHandlers,
    /// `clientInfo`.
    pub info: Value,
    /// The default timeout of each request (`None`: wait as long as the connection lives).
    pub request_timeout: Option<Duration>,
    /// What a server can make the client hold: list items, pages and bytes, its requests
    /// answered at once.
    pub limits: ClientLimits,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            handlers: ClientHandlers::default(),
            info: json!({"name": "codomyrmex-mcp-client", "version": env!("CARGO_PKG_VERSION")}),
            request_timeout: None,
            limits: ClientLimits::default(),
        }
    }
}

/// Per-call options.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Receives the call's progress notifications (a `progressToken` is sent when set).
    pub progress: Option<ProgressHandler>,
    /// Overrides the client's request timeout.
    pub timeout: Option<Duration>,
    /// Receives the `notifications/message` params the transport says belong to this call
    /// (over Streamable HTTP: those that arrive on its response stream) instead of
    /// [`ClientHandlers::logging`]; stdio cannot tell, so there they all go to that handler.
    pub log: Option<NotificationHandler>,
    /// Answer the server's requests (sampling, elicitation, roots, ping) the transport says
    /// belong to this call (over Streamable HTTP: those that arrive on its response stream)
    /// instead of the client's own handlers; stdio cannot tell, so there the client's
    /// handlers answer them all. The client's declared capabilities stay those of its own
    /// handlers.
    pub input: Option<ClientHandlers>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .field("log", &self.log.is_some())
            .field("input", &self.input)
            .finish()
    }
}

/// What a transport hands the client.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// One message's bytes.
    Message(Vec<u8>),
    /// One message that arrived on the stream of the request `request` (a POST's response
    /// stream): it belongs to that request.
    OnStream { bytes: Vec<u8>, request: RequestId },
    /// The request `id` (or, without an id, the connection) failed in the transport.
    Failed {
        id: Option<RequestId>,
        status: Option<u16>,
        message: String,
    },
}

/// One message for the transport: its bytes, and headers an HTTP transport adds to its POST
/// (`Mcp-Param-*`); other transports ignore them.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub(crate) bytes: Vec<u8>,
    pub(crate) headers: Vec<(String, String)>,
}

impl From<Vec<u8>> for Outgoing {
    fn from(bytes: Vec<u8>) -> Self {
        Self {
            bytes,
            headers: Vec::new(),
        }
    }
}

/// The client's ends of a transport: where its messages go (one JSON-RPC message each;
/// closing it ends the transport's output) and what arrives (its end closes the connection).
pub(crate) type ClientEnds = (mpsc::Sender<Outgoing>, inbound::InboundRx);

/// Closes the transport: a stdio child's shutdown, an HTTP session's DELETE.
pub(crate) type Closer =
    Box<dyn FnOnce(Duration) -> crate::platform::BoxFuture<'static, ()> + Send>;

type Waiter = oneshot::Sender<Result<Value, ClientError>>;

struct Shared {
    table: Mutex<RequestTable<Waiter>>,
    /// Set (under the `table` lock) once the connection's input has ended.
    closed: AtomicBool,
    /// Why it ended, when a transport said.
    close_reason: Mutex<Option<String>>,
    progress: Mutex<HashMap<String, ProgressHandler>>,
    /// The handlers of requests in flight that set their own ([`CallOptions::log`],
    /// [`CallOptions::input`]).
    own: Mutex<HashMap<RequestId, OwnHandlers>>,
    /// The server's requests being answered, by id: a `notifications/cancelled` for one
    /// stops its handler (and nothing is answered).
    answering: Mutex<HashMap<RequestId, tokio::task::AbortHandle>>,
    cache: Mutex<ListCache>,
    handlers: ClientHandlers,
    limits: ClientLimits,
    /// The bytes of the notifications waiting for [`McpClient::next_notification`].
    queued_bytes: std::sync::atomic::AtomicUsize,
}

/// What one request in flight receives instead of the client's handlers.
#[derive(Clone)]
struct OwnHandlers {
    log: Option<NotificationHandler>,
    input: Option<ClientHandlers>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How [`McpClient::request_answering`]'s input loop ended without a final result.
#[derive(Debug)]
pub enum InputLoopError<E> {
    /// A round failed (transport, timeout, a malformed `InputRequiredResult`).
    Client(ClientError),
    /// The answerer stopped the loop with this.
    Answer(E),
    /// The server still asked for input after [`MAX_INPUT_ROUNDS`](proto::MAX_INPUT_ROUNDS)
    /// rounds.
    TooManyRounds,
}

/// A client connection, to a server over stdio (a child process, [`McpClient::spawn`]), over
/// Streamable HTTP ([`McpClient::connect_http`]), over any byte stream
/// ([`McpClient::connect`]) or in memory ([`McpClient::in_memory`]). It speaks the era it
/// is given, or finds the server's ([`McpClient::negotiate`]); the server's requests
/// (sampling, elicitation, roots) go to its handlers ([`ClientOptions`]).
///
/// ```
/// use std::sync::Arc;
/// use codomyrmex_mcp::client::McpClient;
/// use codomyrmex_mcp::{Era, McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry};
/// use serde_json::{Map, Value, json};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(McpToolRegistry::new());
/// registry.register(
///     "math.add",
///     json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
///     |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
///         Ok(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)))
///     },
/// )?;
/// let server = McpServer::new(McpServerConfig::new("calc", "1.0.0"), registry);
///
/// let client = McpClient::in_memory(&server, Era::Modern);
/// client.initialize().await?;
/// let tools = client.list_tools().await?;
/// assert_eq!(tools[0]["name"], "math.add");
/// let result = client.call_tool("math.add", json!({"a": 2, "b": 3})).await?;
/// assert_eq!(result["structuredContent"]["result"], 5);
///
/// // Arguments that break the schema come back as the tool's error result; an unknown tool
/// // is a protocol error (`-32602`), returned as an `Err`.
/// let refused = client.call_tool("math.add", json!({"a": "two"})).await?;
/// assert_eq!(refused["isError"], true);
/// assert!(client.call_tool("math.nope", json!({})).await.is_err());
/// # Ok(()) }
/// ```
pub struct McpClient {
    era: Mutex<Era>,
    version: Mutex<Option<ProtocolVersion>>,
    outbox: mpsc::Sender<Outgoing>,
    shared: Arc<Shared>,
    /// The `x-mcp-header` parameters of each listed tool.
    tool_headers: Mutex<HashMap<String, Vec<param_headers::ParamHeader>>>,
    notifications: tokio::sync::Mutex<mpsc::Receiver<(Value, usize)>>,
    identity: ClientIdentity,
    request_timeout: Option<Duration>,
    closer: Mutex<Option<Closer>>,
    next_progress: std::sync::atomic::AtomicU64,
    /// The authorization context: bumped by the transport when its credentials change.
    auth_context: Arc<AtomicU64>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("era", &self.era())
            .finish_non_exhaustive()
    }
}

/// The longest line accepted from a stdio server.
pub const MAX_LINE: usize = 64 * 1024 * 1024;

impl McpClient {
    /// Connects to `server` in memory, in the given era. A legacy client still has to call
    /// [`initialize`](Self::initialize).
    pub fn in_memory(server: &crate::McpServer, era: Era) -> Self {
        Self::in_memory_with(server, era, ClientOptions::default())
    }

    /// [`in_memory`](Self::in_memory) with `options` (handlers, limits).
    pub fn in_memory_with(server: &crate::McpServer, era: Era, options: ClientOptions) -> Self {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server_io);
        let server = server.clone();
        tokio::spawn(async move {
            let _ = server.serve_stream(sr, sw).await;
        });
        let (cr, cw) = tokio::io::split(client_io);
        Self::connect_with(cr, cw, era, options)
    }

    /// Connects over a reader and writer (newline-delimited JSON-RPC), without handlers.
    pub fn connect<R, W>(reader: R, writer: W, era: Era) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::connect_with(reader, writer, era, ClientOptions::default())
    }

    /// Connects over a reader and writer with `options`.
    pub fn connect_with<R, W>(reader: R, writer: W, era: Era, options: ClientOptions) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let link = stdio::line_link(reader, writer);
        Self::start(link, era, options, None, Arc::default())
    }

    /// Starts `command` and speaks MCP over its stdin and stdout. The era is decided by
    /// [`negotiate`](Self::negotiate); until then requests are sent in the legacy form.
    pub fn spawn(command: &StdioCommand, options: ClientOptions) -> Result<Self, ClientError> {
        let (link, closer) = stdio::spawn(command)?;
        Ok(Self::start(
            link,
            Era::Legacy,
            options,
            Some(closer),
            Arc::default(),
        ))
    }

    /// Connects to a Streamable HTTP endpoint.
    #[cfg(feature = "http")]
    pub fn connect_http(
        target: http::HttpTarget,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let context = Arc::new(AtomicU64::new(0));
        let (link, closer) = http::connect(target, None, context.clone())?;
        Ok(Self::start(
            link,
            Era::Legacy,
            options,
            Some(closer),
            context,
        ))
    }

    /// Connects to a Streamable HTTP endpoint that may ask for OAuth: on a `401` (or a
    /// `403 insufficient_scope`) the transport authorizes with `oauth` and sends again.
    #[cfg(feature = "http")]
    pub fn connect_http_oauth(
        target: http::HttpTarget,
        oauth: oauth::OAuthConfig,
        options: ClientOptions,
    ) -> Result<Self, ClientError> {
        let flow = oauth_flow::Flow::new(oauth, http::fetcher(&target)?);
        let context = Arc::new(AtomicU64::new(0));
        let (link, closer) = http::connect(target, Some(Arc::new(flow)), context.clone())?;
        Ok(Self::start(
            link,
            Era::Legacy,
            options,
            Some(closer),
            context,
        ))
    }

    fn start(
        (outbox, link): ClientEnds,
        era: Era,
        options: ClientOptions,
        closer: Option<Closer>,
        auth_context: Arc<AtomicU64>,
    ) -> Self {
        let identity = ClientIdentity {
            info: options.info,
            capabilities: proto::capabilities(options.handlers.kinds()),
        };
        let shared = Arc::new(Shared {
            table: Mutex::new(RequestTable::default()),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
            progress: Mutex::new(HashMap::new()),
            own: Mutex::new(HashMap::new()),
            answering: Mutex::new(HashMap::new()),
            cache: Mutex::new(ListCache::default()),
            handlers: options.handlers,
            limits: options.limits,
            queued_bytes: std::sync::atomic::AtomicUsize::new(0),
        });
        let (note_tx, note_rx) = mpsc::channel(options.limits.notifications.max(1));
        tokio::spawn(dispatch::dispatch(
            link,
            shared.clone(),
            outbox.downgrade(),
            note_tx,
        ));
        Self {
            era: Mutex::new(era),
            version: Mutex::new(None),
            outbox,
            shared,
            notifications: tokio::sync::Mutex::new(note_rx),
            identity,
            request_timeout: options.request_timeout,
            closer: Mutex::new(closer),
            tool_headers: Mutex::new(HashMap::new()),
            next_progress: std::sync::atomic::AtomicU64::new(1),
            auth_context,
        }
    }

    /// The era this client speaks.
    pub fn era(&self) -> Era {
        *lock(&self.era)
    }

    /// The negotiated protocol version, once [`initialize`](Self::initialize) or
    /// [`negotiate`](Self::negotiate) succeeded.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        *lock(&self.version)
    }

    /// The capabilities this client declares.
    pub fn capabilities(&self) -> &Value {
        &self.identity.capabilities
    }

    fn modern_version(&self) -> &'static str {
        lock(&self.version)
            .filter(|v| v.era() == Era::Modern)
            .unwrap_or(ProtocolVersion::LATEST_MODERN)
            .as_str()
    }

    /// Sends a raw request and returns its result; in the modern era, adds the required
    /// `_meta` fields and answers `InputRequiredResult`s with the handlers.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.request_with(method, params, &CallOptions::default())
            .await
    }

    /// [`request`](Self::request) with progress and timeout options.
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let work = self.multi_round(method, params, options);
        self.within_timeout(options, work).await
    }

    /// One round of a request, with no input loop: the result as the server sent it, an
    /// `InputRequiredResult` included, for a caller that carries the input itself (a
    /// gateway relaying it to its own client). `params` is borrowed, so a caller that sends
    /// it again (with the input's answers) keeps it without a copy. Progress and timeout as
    /// in [`request_with`](Self::request_with).
    pub async fn request_round(
        &self,
        method: &str,
        params: &Value,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let work = self.round(method, params, options);
        self.within_timeout(options, work).await
    }

    /// `work`, given up as [`ClientError::Timeout`] after the call's timeout, else the
    /// client's, if either is set.
    async fn within_timeout(
        &self,
        options: &CallOptions,
        work: impl Future<Output = Result<Value, ClientError>>,
    ) -> Result<Value, ClientError> {
        match options.timeout.or(self.request_timeout) {
            Some(t) => tokio::time::timeout(t, work)
                .await
                .map_err(|_| ClientError::Timeout(t))?,
            None => work.await,
        }
    }

    /// The 2026-07-28 multi-round input loop (the one copy of it): sends `method`, and while
    /// the server answers with an `InputRequiredResult`, has `answer` answer the round's
    /// requests and sends the request again with those answers and the server's
    /// `requestState`, at most [`MAX_INPUT_ROUNDS`](proto::MAX_INPUT_ROUNDS) rounds. Each round
    /// is bounded by the call's timeout, else the client's.
    ///
    /// `answer` gets each round's requests and returns the answers by key, or stops the loop
    /// with its own value ([`InputLoopError::Answer`]): [`request_with`](Self::request_with)
    /// answers with the client's handlers; a gateway relays the requests to its own client.
    pub async fn request_answering<E, F, Fut>(
        &self,
        method: &str,
        params: Value,
        options: &CallOptions,
        mut answer: F,
    ) -> Result<Value, InputLoopError<E>>
    where
        F: FnMut(proto::InputRequired) -> Fut,
        Fut: Future<Output = Result<Map<String, Value>, E>>,
    {
        let mut params = params;
        for _ in 0..proto::MAX_INPUT_ROUNDS {
            let result = self
                .within_timeout(options, self.round(method, &params, options))
                .await
                .map_err(InputLoopError::Client)?;
            let Some(required) = proto::input_required(&result) else {
                return Ok(result);
            };
            let required =
                required.map_err(|why| InputLoopError::Client(ClientError::Protocol(why)))?;
            let state = required.request_state.clone();
            let responses = answer(required).await.map_err(InputLoopError::Answer)?;
            params = proto::retry_params(&params, responses, state.as_deref());
        }
        Err(InputLoopError::TooManyRounds)
    }

    /// [`request_answering`](Self::request_answering) with the client's own handlers.
    async fn multi_round(
        &self,
        method: &str,
        params: Value,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let answered = self
            .request_answering(method, params, options, |required| async move {
                let mut responses = Map::new();
                for (key, input_method, input_params) in required.requests {
                    let answer = self
                        .shared
                        .handlers
                        .answer(InputRequest::classify(&input_method, input_params))
                        .await
                        .map_err(|e| {
                            ClientError::Protocol(format!(
                                "the server asked for {input_method}, which this client cannot \
                                 answer: {}",
                                e.message
                            ))
                        })?;
                    responses.insert(key, answer);
                }
                Ok(responses)
            })
            .await;
        answered.map_err(|e| match e {
            InputLoopError::Client(e) | InputLoopError::Answer(e) => e,
            InputLoopError::TooManyRounds => ClientError::Protocol(format!(
                "the server still asked for input after {} rounds",
                proto::MAX_INPUT_ROUNDS
            )),
        })
    }

    /// One request and its answer. Dropping the future cancels the request on the server.
    /// `params` is copied only to add a progress token.
    async fn round(
        &self,
        method: &str,
        params: &Value,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let modern = self.era() == Era::Modern;
        let token = options.progress.as_ref().map(|p| {
            let n = self.next_progress.fetch_add(1, Ordering::Relaxed);
            let token = format!("p{n}");
            lock(&self.shared.progress).insert(token.clone(), p.clone());
            token
        });
        let with_token;
        let params = match &token {
            Some(t) => {
                with_token = proto::with_progress_token(params.clone(), &json!(t));
                &with_token
            }
            None => params,
        };
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut table = lock(&self.shared.table);
            if self.shared.closed.load(Ordering::Acquire) {
                return Err(self.closed_error());
            }
            table.insert(tx)
        };
        let own = options.log.is_some() || options.input.is_some();
        if own {
            let handlers = OwnHandlers {
                log: options.log.clone(),
                input: options.input.clone(),
            };
            lock(&self.shared.own).insert(id.clone(), handlers);
        }
        let mut guard = InFlight {
            client: self,
            id: id.clone(),
            token,
            own,
            done: false,
        };
        let headers = self.param_headers(method, params);
        let message = Outgoing {
            // A modern request's constant `_meta` is written from the identity as it is
            // encoded, not copied into `params`.
            bytes: if modern {
                proto::modern_request_bytes(
                    &id,
                    method,
                    params,
                    self.modern_version(),
                    &self.identity,
                )
            } else {
                proto::request_bytes(&id, method, params)
            },
            headers,
        };
        if self.outbox.send(message).await.is_err() {
            guard.done = true;
            return Err(self.closed_error());
        }
        let outcome = rx.await;
        guard.done = true;
        match outcome {
            Ok(r) => r,
            Err(_) => Err(self.closed_error()),
        }
    }

    /// The `Mcp-Param-*` headers of a modern `tools/call` of a listed tool.
    fn param_headers(&self, method: &str, params: &Value) -> Vec<(String, String)> {
        if method != "tools/call" || self.era() != Era::Modern {
            return Vec::new();
        }
        let (Some(name), Some(args)) = (
            params.get("name").and_then(Value::as_str),
            params.get("arguments").and_then(Value::as_object),
        ) else {
            return Vec::new();
        };
        lock(&self.tool_headers)
            .get(name)
            .map(|p| param_headers::param_headers(p, args))
            .unwrap_or_default()
    }

    fn closed_error(&self) -> ClientError {
        match lock(&self.shared.close_reason).clone() {
            Some(message) => ClientError::Transport {
                status: None,
                message,
            },
            None => ClientError::Closed,
        }
    }

    /// The id the next request will use (for cancelling it).
    pub fn next_request_id(&self) -> RequestId {
        lock(&self.shared.table).peek_next()
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        self.outbox
            .send(proto::notification_bytes(method, &params).into())
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// Sends raw bytes as one message (for testing servers with malformed input).
    pub async fn send_raw(&self, bytes: &[u8]) -> Result<(), ClientError> {
        self.outbox
            .send(bytes.to_vec().into())
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// The next notification (`{"method", "params"}`) or id-less error (`{"error", "code"}`)
    /// from the server; `None` once the connection has closed. Those not taken yet are kept
    /// up to [`ClientLimits::notifications`] and [`ClientLimits::notification_bytes`]; past
    /// either, new ones are not kept.
    pub async fn next_notification(&self) -> Option<Value> {
        let (note, len) = self.notifications.lock().await.recv().await?;
        self.shared.queued_bytes.fetch_sub(len, Ordering::AcqRel);
        Some(note)
    }

    /// Legacy handshake: `initialize` then `notifications/initialized`. Returns the
    /// `initialize` result. In the modern era, calls `server/discover` instead.
    pub async fn initialize(&self) -> Result<Value, ClientError> {
        if self.era() == Era::Modern {
            return self.discover().await;
        }
        let result = self
            .request("initialize", proto::initialize_params(&self.identity))
            .await?;
        let version = proto::negotiated_legacy_version(&result).map_err(ClientError::Protocol)?;
        *lock(&self.version) = Some(version);
        self.notify("notifications/initialized", json!({})).await?;
        Ok(result)
    }

    /// `server/discover` (modern era).
    async fn discover(&self) -> Result<Value, ClientError> {
        let result = self.request("server/discover", json!({})).await?;
        match proto::judge_discover(Ok(&result)) {
            DiscoverOutcome::Modern(v) => {
                *lock(&self.version) = Some(v);
                Ok(result)
            }
            other => Err(ClientError::Era(format!(
                "the server's discover result names no version this client speaks ({other:?})"
            ))),
        }
    }

    /// Finds the era to speak and opens the connection: `server/discover` first (unless
    /// `Legacy`), `initialize` when the server answers with anything but a modern error (a
    /// probe with no answer within `probe_timeout` counts as legacy too). Returns the
    /// discover or `initialize` result.
    pub async fn negotiate(
        &self,
        preference: EraPreference,
        probe_timeout: Duration,
    ) -> Result<Value, ClientError> {
        if preference == EraPreference::Legacy {
            *lock(&self.era) = Era::Legacy;
            return self.initialize().await;
        }
        *lock(&self.era) = Era::Modern;
        let probe = self
            .request_with(
                "server/discover",
                json!({}),
                &CallOptions {
                    progress: None,
                    timeout: Some(probe_timeout),
                    ..CallOptions::default()
                },
            )
            .await;
        let outcome = match &probe {
            Ok(result) => proto::judge_discover(Ok(result)),
            Err(ClientError::Server(e)) => proto::judge_discover(Err(e)),
            // Over HTTP a legacy server answers the modern request with a 4xx.
            Err(ClientError::Transport {
                status: Some(status),
                message,
            }) if (400..500).contains(status) && *status != 401 && *status != 403 => {
                DiscoverOutcome::Legacy(format!("HTTP {status}: {message}"))
            }
            Err(ClientError::Timeout(_)) => DiscoverOutcome::Legacy("no answer".into()),
            Err(e) => return Err(e.clone()),
        };
        match outcome {
            DiscoverOutcome::Modern(v) => {
                *lock(&self.version) = Some(v);
                match probe {
                    Ok(result) => Ok(result),
                    // A modern error named a version we speak: ask again with it.
                    Err(_) => self.discover().await,
                }
            }
            DiscoverOutcome::ModernUnsupported(versions) => Err(ClientError::Era(format!(
                "the server speaks only protocol versions {versions:?}, none of which this client speaks"
            ))),
            DiscoverOutcome::Legacy(why) if preference == EraPreference::Modern => {
                *lock(&self.era) = Era::Legacy;
                Err(ClientError::Era(format!(
                    "the server does not speak 2026-07-28 (server/discover: {why}); it looks like a \
                     2025-11-25 (or older) server: use --era auto or --era legacy"
                )))
            }
            DiscoverOutcome::Legacy(_) => {
                *lock(&self.era) = Era::Legacy;
                self.initialize().await
            }
        }
    }

    /// Checks the server answers: `ping` in the legacy era; 2026-07-28 has no `ping`, so a
    /// modern client asks `server/discover`.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let method = match self.era() {
            Era::Legacy => "ping",
            Era::Modern => "server/discover",
        };
        self.request(method, json!({})).await.map(|_| ())
    }

    /// Calls a tool and returns the `CallToolResult`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// A request whose result is read as `T` (the raw JSON kept beside it).
    pub async fn request_typed<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Typed<T>, ClientError> {
        let raw = self.request(method, params).await?;
        let value = serde_json::from_value(raw.clone())
            .map_err(|e| ClientError::Protocol(format!("{method} result: {e}")))?;
        Ok(Typed { value, raw })
    }

    /// Calls a tool; the result typed as a `CallToolResult`.
    pub async fn call_tool_typed(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Typed<crate::wire::CallToolResult>, ClientError> {
        self.request_typed("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// Calls a tool with progress and timeout options.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        self.request_with(
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            options,
        )
        .await
    }

    /// `prompts/get`.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request("prompts/get", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, ClientError> {
        self.request("resources/read", json!({"uri": uri})).await
    }

    /// `resources/subscribe` (legacy era; modern servers use `subscriptions/listen`).
    pub async fn subscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/subscribe", json!({"uri": uri}))
            .await
            .map(|_| ())
    }

    /// `resources/unsubscribe` (legacy era).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ClientError> {
        self.request("resources/unsubscribe", json!({"uri": uri}))
            .await
            .map(|_| ())
    }

    /// `completion/complete`: `reference` is `{"type": "ref/prompt", "name"}` or
    /// `{"type": "ref/resource", "uri"}`.
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
        context: Option<Value>,
    ) -> Result<Value, ClientError> {
        let mut params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        if let (Some(c), Value::Object(p)) = (context, &mut params) {
            p.insert("context".into(), json!({"arguments": c}));
        }
        self.request("completion/complete", params).await
    }

    /// `logging/setLevel` (legacy era).
    pub async fn set_log_level(&self, level: crate::LoggingLevel) -> Result<(), ClientError> {
        self.request("logging/setLevel", json!({"level": level}))
            .await
            .map(|_| ())
    }

    /// Ends the connection: a stdio child gets its stdin closed and `grace` to exit before
    /// it is killed; an HTTP session is ended with DELETE (bounded by `grace`).
    pub async fn close(self, grace: Duration) {
        let closer = lock(&self.closer).take();
        drop(self.outbox);
        if let Some(closer) = closer {
            closer(grace).await;
        }
    }
}

/// A request in flight: removed from the table however it ends; a request dropped before its
/// answer is cancelled on the server.
struct InFlight<'a> {
    client: &'a McpClient,
    id: RequestId,
    token: Option<String>,
    /// Own handlers are registered under `id`.
    own: bool,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(t) = &self.token {
            lock(&self.client.shared.progress).remove(t);
        }
        if self.own {
            lock(&self.client.shared.own).remove(&self.id);
        }
        if self.done {
            return;
        }
        let waiting = lock(&self.client.shared.table).take(&self.id).is_some();
        if waiting {
            let cancel = proto::cancel_bytes(&self.id, "the client cancelled the request");
            let _ = self.client.outbox.try_send(cancel.into());
        }
    }
}
