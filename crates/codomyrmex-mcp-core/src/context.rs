//! [`ToolContext`]: what a running tool can see of its request and do towards its client.
//!
//! A context is cheap to clone. Outside a server (for example, through
//! [`McpToolRegistry::execute`](crate::McpToolRegistry::execute)), tools get a *detached* context:
//! progress and logs go nowhere, it is never cancelled, and asking the client for input fails
//! with [`ClientRequestError::Unavailable`].

use std::sync::Arc;

use crate::platform::BoxFuture;
use crate::round::RoundTrip;
use crate::sync::CancellationToken;
use serde_json::{Map, Value, json};

use crate::wire::{Era, LoggingLevel, OutgoingMessage, ProtocolVersion, RequestId};

pub(crate) use crate::outbound::{MessageSink, NullSink, Outbound};

/// The authenticated caller, when the transport authenticated one (HTTP only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The subject: a token's `sub` claim, or a static token's configured name.
    pub subject: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The access token's claims (empty for a static token), which authorization rules
    /// ([`crate::authz`]) may match.
    pub claims: Arc<Map<String, Value>>,
}

impl Principal {
    /// A principal with `subject` and `scopes`, and no claims.
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> Self {
        Self {
            subject: subject.into(),
            scopes,
            claims: Arc::default(),
        }
    }

    /// The same principal with the token's `claims`.
    #[must_use]
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = Arc::new(claims);
        self
    }

    /// The principal as an authorization rule sees it.
    pub fn caller(&self) -> crate::authz::Caller<'_> {
        crate::authz::Caller {
            subject: &self.subject,
            scopes: &self.scopes,
            claims: &self.claims,
        }
    }
}

/// Why a server-to-client request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientRequestError {
    /// There is no client to ask (a detached context, or a transport without a back channel).
    #[error("no client is connected that can answer this request")]
    Unavailable,
    /// The client did not declare the capability the request needs.
    #[error("the client did not declare the `{0}` capability")]
    MissingCapability(&'static str),
    /// The client answered with a JSON-RPC error.
    #[error("the client answered with error {code}: {message}")]
    Client {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The request was cancelled before the client answered.
    #[error("cancelled before the client answered")]
    Cancelled,
    /// (2026-07-28) The answer will come with the client's retry of the request: return
    /// early (for example with `?`); the server answers `InputRequiredResult`.
    #[error("input from the client is required; the request will be retried with it")]
    InputRequired,
}

impl From<ClientRequestError> for crate::McpErrorDetail {
    fn from(e: ClientRequestError) -> Self {
        let kind = match &e {
            ClientRequestError::Unavailable => "ClientUnavailable",
            ClientRequestError::MissingCapability(_) => "MissingClientCapability",
            ClientRequestError::Client { .. } => "ClientError",
            ClientRequestError::Cancelled => "Cancelled",
            ClientRequestError::InputRequired => "InputRequired",
        };
        crate::McpErrorDetail::new(kind, e.to_string())
    }
}

/// A request for input from the client: one of the three kinds MCP defines.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`: ask the user. `params` holds `mode`, `message`, `requestedSchema`
    /// (form mode) or `url` (URL mode).
    Elicit(Value),
    /// `sampling/createMessage`: ask the client's model.
    Sample(Value),
    /// `roots/list`: ask for the client's roots.
    ListRoots,
}

impl InputRequest {
    /// A form-mode elicitation.
    pub fn form(message: &str, requested_schema: Value) -> Self {
        Self::Elicit(
            json!({"mode": "form", "message": message, "requestedSchema": requested_schema}),
        )
    }

    /// The JSON-RPC method.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => "elicitation/create",
            Self::Sample(_) => "sampling/createMessage",
            Self::ListRoots => "roots/list",
        }
    }

    /// The client capability it needs.
    pub fn capability(&self) -> &'static str {
        match self {
            Self::Elicit(_) => "elicitation",
            Self::Sample(_) => "sampling",
            Self::ListRoots => "roots",
        }
    }

    pub(crate) fn params(&self) -> Value {
        match self {
            Self::Elicit(p) | Self::Sample(p) => p.clone(),
            Self::ListRoots => json!({}),
        }
    }
}

/// Asks the client with a server-to-client request, as a value: the request is queued on
/// `outbound` (the driver writes it to the request's stream), and the answer, resolved by
/// `Engine::handle_response(now, ..)`, is awaited until `cancel` fires. Refused at once
/// (`Unavailable`) when it cannot go: the session ended, its table of waiting requests is
/// full, or the queue is at its bound.
pub(crate) async fn ask_client(
    calls: &dyn crate::outbound::AskClient,
    method: &'static str,
    params: Value,
    outbound: &Outbound,
    cancel: &CancellationToken,
) -> Result<Value, ClientRequestError> {
    use crate::outbound::Answered;
    let call = calls
        .ask(method, params, outbound)
        .ok_or(ClientRequestError::Unavailable)?;
    match call.answer(cancel).await {
        Answered::Result(v) => Ok(v),
        Answered::Error(e) => Err(ClientRequestError::Client {
            code: e.code,
            message: e.message,
        }),
        Answered::Gone => Err(ClientRequestError::Unavailable),
        Answered::Cancelled => Err(ClientRequestError::Cancelled),
    }
}

/// An empty capabilities object, shared: most requests' scopes and every new session start
/// with one, and sharing it spares an allocation each.
pub(crate) fn no_capabilities() -> Arc<Value> {
    static EMPTY: std::sync::LazyLock<Arc<Value>> =
        std::sync::LazyLock::new(|| Arc::new(Value::Object(Map::new())));
    EMPTY.clone()
}

/// The task side of a tool's input, for a call that is (or may become) a task. The engine's
/// task link implements it; the context only calls it, so it names no engine type.
pub(crate) trait TaskInput: Send + Sync + 'static {
    /// Turns the call into a task now; `false` if it already is one.
    fn start(&self) -> bool;
    /// Whether input parks the task (it is a task, answered by `tasks/update`).
    fn parks(&self) -> bool;
    /// The task's id.
    fn task_id(&self) -> &str;
    /// The multi round-trip round the call runs in before it becomes a task.
    fn round(&self) -> Option<&Arc<RoundTrip>>;
    /// [`ToolContext::input`] of a task.
    fn input<'a>(
        &'a self,
        key: &'a str,
        request: &'a InputRequest,
        declared: bool,
        outbound: &'a Outbound,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>>;
    /// [`ToolContext::input_all`] of a parked task.
    fn input_all<'a>(
        &'a self,
        requests: Vec<(String, InputRequest)>,
        capabilities: &'a Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Value>, ClientRequestError>>;
}

/// What a tool sees of the request that invoked it.
#[derive(Clone)]
pub struct ToolContext {
    inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    pub(crate) request_id: Option<RequestId>,
    pub(crate) tool_name: String,
    pub(crate) meta: Map<String, Value>,
    pub(crate) progress_token: Option<Value>,
    pub(crate) cancel: CancellationToken,
    /// Where server-to-client requests go (the request's stream).
    pub(crate) sink: Arc<dyn MessageSink>,
    /// Where progress and log notifications are queued, for the driver to drain.
    pub(crate) outbound: Outbound,
    pub(crate) log_level: Option<LoggingLevel>,
    pub(crate) era: Era,
    pub(crate) protocol_version: ProtocolVersion,
    pub(crate) client_capabilities: Arc<Value>,
    pub(crate) principal: Option<Principal>,
    pub(crate) input: InputMode,
}

/// How a tool's requests for client input are carried.
#[derive(Clone, Default)]
pub(crate) enum InputMode {
    /// Nobody to ask.
    #[default]
    Unavailable,
    /// Legacy era: server-to-client JSON-RPC requests, entered in the session's table of
    /// requests awaiting answers, through its state's lock (held here instead of the session).
    Requests(Arc<dyn crate::outbound::AskClient>),
    /// Modern era: multi round-trip requests.
    RoundTrip(Arc<RoundTrip>),
    /// A call that is (or may become) a task: input parks the task until the client answers.
    Task(Arc<dyn TaskInput>),
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("request_id", &self.inner.request_id)
            .field("tool_name", &self.inner.tool_name)
            .field("era", &self.inner.era)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context that is connected to nothing, for calling tools outside a server.
    pub fn detached() -> Self {
        Self::from_inner(ContextInner {
            request_id: None,
            tool_name: String::new(),
            meta: Map::new(),
            progress_token: None,
            cancel: CancellationToken::new(),
            sink: NullSink::shared(),
            outbound: Outbound::closed(),
            log_level: None,
            era: Era::Modern,
            protocol_version: ProtocolVersion::LATEST_MODERN,
            client_capabilities: no_capabilities(),
            principal: None,
            input: InputMode::Unavailable,
        })
    }

    pub(crate) fn from_inner(inner: ContextInner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    pub(crate) fn with_tool_name(self, name: &str) -> Self {
        if self.inner.tool_name == name {
            return self;
        }
        let inner = &self.inner;
        Self::from_inner(ContextInner {
            request_id: inner.request_id.clone(),
            tool_name: name.to_owned(),
            meta: inner.meta.clone(),
            progress_token: inner.progress_token.clone(),
            cancel: inner.cancel.clone(),
            sink: inner.sink.clone(),
            outbound: inner.outbound.clone(),
            log_level: inner.log_level,
            era: inner.era,
            protocol_version: inner.protocol_version,
            client_capabilities: inner.client_capabilities.clone(),
            principal: inner.principal.clone(),
            input: inner.input.clone(),
        })
    }

    /// The queue this context's progress and log notifications go to (the driver drains it).
    pub(crate) fn outbound(&self) -> Outbound {
        self.inner.outbound.clone()
    }

    /// The same context with the cancellation, input and (if given) queue of a task; given a
    /// queue (a 2025-11-25 task's relay), what it emits is queued there (when it emits any).
    pub(crate) fn rebind(
        &self,
        cancel: CancellationToken,
        relay: Option<Outbound>,
        input: InputMode,
    ) -> Self {
        let inner = &self.inner;
        Self::from_inner(ContextInner {
            request_id: inner.request_id.clone(),
            tool_name: inner.tool_name.clone(),
            meta: inner.meta.clone(),
            progress_token: inner.progress_token.clone(),
            cancel,
            // A task's context lets go of the request's stream (whose end the transport may
            // await): what the task emits goes to its relay.
            sink: match &relay {
                Some(_) => NullSink::shared(),
                None => inner.sink.clone(),
            },
            outbound: match relay {
                Some(relay) if inner.outbound.is_open() => relay,
                _ => inner.outbound.clone(),
            },
            log_level: inner.log_level,
            era: inner.era,
            protocol_version: inner.protocol_version,
            client_capabilities: inner.client_capabilities.clone(),
            principal: inner.principal.clone(),
            input,
        })
    }

    /// Runs the rest of this call as a task, if the tool supports tasks and the client can
    /// take one: from now on [`input`](Self::input) parks the task (`input_required`) until
    /// the client answers, instead of ending a multi round-trip round. Without this, a call
    /// that may become a task does so when the tool first waits. Returns whether the call is
    /// (or will be) a task.
    pub fn start_task(&self) -> bool {
        match &self.inner.input {
            InputMode::Task(link) => link.start(),
            _ => false,
        }
    }

    /// The id of the task this call runs as (or will run as), if any.
    pub fn task_id(&self) -> Option<&str> {
        match &self.inner.input {
            InputMode::Task(link) => Some(link.task_id()),
            _ => None,
        }
    }

    /// The JSON-RPC id of the request, when there is one.
    pub fn request_id(&self) -> Option<&RequestId> {
        self.inner.request_id.as_ref()
    }

    /// The invocation name of the running tool.
    pub fn tool_name(&self) -> &str {
        &self.inner.tool_name
    }

    /// The request's `_meta` object (empty when absent).
    pub fn meta(&self) -> &Map<String, Value> {
        &self.inner.meta
    }

    /// The protocol era the request arrived in.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// The protocol version the request is served under.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.protocol_version
    }

    /// The capabilities the client declared (for this request in the modern era, at
    /// `initialize` in the legacy era).
    pub fn client_capabilities(&self) -> &Value {
        &self.inner.client_capabilities
    }

    /// The authenticated caller, if the transport authenticated one.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.principal.as_ref()
    }

    /// Whether the client cancelled the request, or it timed out.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Resolves when the request is cancelled. Tools doing long work should `select!` on it.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await;
    }

    /// A token that is cancelled with the request, for handing to spawned work.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.cancel.clone()
    }

    /// Reports progress, if the client asked for it with a `progressToken`. Returns whether a
    /// notification was queued.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = &self.inner.progress_token else {
            return false;
        };
        if self.is_cancelled() {
            return false;
        }
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(total) = total {
            params.insert("total".into(), json!(total));
        }
        if let Some(message) = message {
            params.insert("message".into(), json!(message));
        }
        self.inner.outbound.push(OutgoingMessage::Notification {
            method: "notifications/progress",
            params: Value::Object(params),
        })
    }

    /// Sends a log message to the client, if the client asked for messages at `level` or
    /// above. Returns whether a notification was queued.
    pub fn log(&self, level: LoggingLevel, data: impl Into<Value>) -> bool {
        match self.inner.log_level {
            Some(min) if level >= min => {}
            _ => return false,
        }
        let params = json!({
            "level": level.as_str(),
            "logger": self.inner.tool_name,
            "data": data.into(),
        });
        self.inner.outbound.push(OutgoingMessage::Notification {
            method: "notifications/message",
            params,
        })
    }

    /// Asks the client for input and returns its answer (an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult`). One API for both eras:
    ///
    /// - **2025-11-25 and earlier**: a server-to-client request, awaited.
    /// - **2026-07-28**: a multi round-trip request. If the client's retry already carries the
    ///   answer under `key`, it is returned; otherwise this returns
    ///   [`ClientRequestError::InputRequired`] and the tool should return early (with `?`):
    ///   the server answers `InputRequiredResult`, and the tool runs again on the retry.
    ///   Tools must therefore be deterministic up to their input requests.
    /// - **a task** (a call that became a task, or called [`start_task`](Self::start_task)):
    ///   the task waits in `input_required` until the client answers with `tasks/update`
    ///   (2026-07-28), or sends a server-to-client request tagged with the task (2025-11-25).
    ///
    /// The request is refused without asking if the client did not declare the capability.
    pub async fn input(
        &self,
        key: &str,
        request: InputRequest,
    ) -> Result<Value, ClientRequestError> {
        let capability = request.capability();
        let declared = self.inner.client_capabilities.get(capability).is_some();
        match &self.inner.input {
            InputMode::Unavailable => Err(ClientRequestError::Unavailable),
            InputMode::RoundTrip(round) => {
                if !declared {
                    round.note_missing(capability);
                    return Err(ClientRequestError::MissingCapability(capability));
                }
                if let Some(answer) = round.responses.get(key) {
                    return Ok(answer.clone());
                }
                round.request(
                    key,
                    json!({"method": request.method(), "params": request.params()}),
                );
                Err(ClientRequestError::InputRequired)
            }
            InputMode::Requests(calls) => {
                if !declared {
                    return Err(ClientRequestError::MissingCapability(capability));
                }
                let (outbound, cancel) = (&self.inner.outbound, &self.inner.cancel);
                let method = request.method();
                ask_client(&**calls, method, request.params(), outbound, cancel).await
            }
            InputMode::Task(link) => {
                let outbound = &self.inner.outbound;
                link.input(key, &request, declared, outbound, &self.inner.cancel)
                    .await
            }
        }
    }

    /// Asks for several inputs at once. In the 2026-07-28 era all missing ones go out in one
    /// `InputRequiredResult`; in earlier eras they are asked in turn.
    pub async fn input_all(
        &self,
        requests: Vec<(String, InputRequest)>,
    ) -> Result<Vec<Value>, ClientRequestError> {
        if let InputMode::Task(link) = &self.inner.input
            && link.parks()
        {
            // A task asks for everything at once and waits for every answer.
            let caps = &self.inner.client_capabilities;
            return link.input_all(requests, caps, &self.inner.cancel).await;
        }
        let mut answers = Vec::with_capacity(requests.len());
        let mut pending = false;
        for (key, request) in requests {
            match self.input(&key, request).await {
                Ok(v) => answers.push(v),
                Err(ClientRequestError::InputRequired) => pending = true,
                Err(e) => return Err(e),
            }
        }
        if pending {
            Err(ClientRequestError::InputRequired)
        } else {
            Ok(answers)
        }
    }

    /// State saved by this tool in an earlier round of a multi round-trip request.
    pub fn request_state(&self) -> Option<&Value> {
        match &self.inner.input {
            InputMode::RoundTrip(round) => round.state.as_ref(),
            InputMode::Task(link) => link.round().and_then(|r| r.state.as_ref()),
            _ => None,
        }
    }

    /// Saves state for the next round of a multi round-trip request. It travels sealed in
    /// `requestState`: the client cannot read it usefully or change it undetected.
    pub fn set_request_state(&self, state: Value) {
        match &self.inner.input {
            InputMode::RoundTrip(round) => round.set_next_state(state),
            InputMode::Task(link) => {
                if let Some(round) = link.round() {
                    round.set_next_state(state);
                }
            }
            _ => {}
        }
    }

    /// Asks the user for structured input (`elicitation/create`, form mode).
    pub async fn elicit(
        &self,
        message: &str,
        requested_schema: Value,
    ) -> Result<Value, ClientRequestError> {
        self.input("elicitation", InputRequest::form(message, requested_schema))
            .await
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn create_message(&self, params: Value) -> Result<Value, ClientRequestError> {
        self.input("sampling", InputRequest::Sample(params)).await
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn list_roots(&self) -> Result<Value, ClientRequestError> {
        self.input("roots", InputRequest::ListRoots).await
    }
}
