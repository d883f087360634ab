//! The protocol engine: MCP semantics with no I/O.
//!
//! The engine takes decoded [`IncomingMessage`]s and a [`Session`], and returns what to send
//! back ([`Handled`]). Work that must wait (a tool call) comes back as a future for the
//! transport to drive; dropping that future cancels the work. Notifications produced while a
//! request runs go to the [`MessageSink`] the transport passed in with the request.
//!
//! The engine never touches sockets, pipes, HTTP, the clock or a runtime: spawning, timers
//! and time come from its [`Platform`](crate::platform::Platform). Both
//! protocol eras share it: a request carrying modern `_meta` is served statelessly under
//! `2026-07-28`; an `initialize` request opens a legacy session on the [`Session`] it arrived on.

mod builder;
mod events;
mod invoke;
mod limits;
pub(crate) mod mrtr;
pub(crate) mod policy;
mod session;
pub(crate) mod tasks;

use std::sync::Arc;
use std::time::Duration;

use crate::sync::CancellationToken;
use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use crate::config::McpServerConfig;
use crate::context::{ContextInner, InputMode, MessageSink, ToolContext};
use crate::prompts::McpPromptRegistry;
use crate::registry::{BoxFuture, McpToolRegistry, RegisteredTool, ToolOutput};
use crate::resources::{McpResourceRegistry, ResourceError};
use crate::schema::McpErrorDetail;
use crate::wire::jsonrpc::Decoded;
use crate::wire::{
    ContentBlock, Era, ErrorCode, ErrorObject, Implementation, IncomingMessage, LoggingLevel,
    OutgoingMessage, ProtocolVersion, RequestId,
};

pub use builder::EngineBuilder;
pub use events::{EventStream, ServerEvent};
use mrtr::{Binding, RoundTrip, Sealer};
use policy::{ExecutionPolicy, Gate, HandlerKind};
pub use session::Session;

pub use tasks::{META_RELATED_TASK, TASKS_EXTENSION, TaskConfig};

/// `_meta` key: the request's protocol version (modern era).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for the request (modern era).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's identity (modern era).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the request's minimum log level (modern era).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the server's identity on results (modern era).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: the subscription a notification belongs to (modern era).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What the engine made of a message.
pub enum Handled {
    /// Nothing to send (a notification, or a response to one of our requests).
    Nothing,
    /// Send this now.
    Reply(OutgoingMessage),
    /// Drive this future; send what it yields, if anything. Dropping it cancels the work.
    Pending(BoxFuture<'static, Option<OutgoingMessage>>),
}

impl std::fmt::Debug for Handled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => f.write_str("Nothing"),
            Self::Reply(m) => f.debug_tuple("Reply").field(m).finish(),
            Self::Pending(_) => f.write_str("Pending(..)"),
        }
    }
}

impl Handled {
    /// Resolves to the message to send, awaiting pending work.
    pub async fn into_message(self) -> Option<OutgoingMessage> {
        match self {
            Self::Nothing => None,
            Self::Reply(m) => Some(m),
            Self::Pending(f) => f.await,
        }
    }
}

/// How a request is being served: its era, version and the client's declarations.
#[derive(Debug, Clone)]
struct RequestScope {
    era: Era,
    version: ProtocolVersion,
    /// Shared, not copied, with the session and the tool context.
    client_capabilities: Arc<Value>,
    log_level: Option<LoggingLevel>,
}

/// The protocol engine. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

struct Shared {
    config: McpServerConfig,
    registry: Arc<McpToolRegistry>,
    resources: Option<Arc<McpResourceRegistry>>,
    prompts: Option<Arc<McpPromptRegistry>>,
    server_info: Implementation,
    /// `{"name", "version"}` of the server, as every modern result's `_meta` carries it.
    server_info_meta: Value,
    /// The admission bound that stateless sessions share.
    stateless_gate: Arc<Gate>,
    /// Admission, rate limit, timeout and unwind guard of every handler invocation.
    policy: ExecutionPolicy,
    /// Created once per engine: every `requestState` it hands out stays verifiable.
    sealer: Arc<Sealer>,
    tasks: Arc<tasks::TaskStore>,
    /// Spawning, timers, the clock and entropy: the core's only way to them.
    platform: crate::platform::Platform,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("server_info", &self.shared.server_info)
            .finish_non_exhaustive()
    }
}

fn error(id: &RequestId, e: ErrorObject) -> Handled {
    Handled::Reply(OutgoingMessage::Error {
        id: Some(id.clone()),
        error: e,
    })
}

impl Engine {
    /// An engine serving `registry` under `config`.
    pub fn new(config: McpServerConfig, registry: Arc<McpToolRegistry>) -> Self {
        Self::builder(config, registry).build()
    }

    /// A builder for an engine serving `registry` under `config`: add resources, prompts
    /// and a task configuration, then [`build`](EngineBuilder::build) once.
    pub fn builder(config: McpServerConfig, registry: Arc<McpToolRegistry>) -> EngineBuilder {
        EngineBuilder {
            config,
            registry,
            resources: None,
            prompts: None,
            tasks: TaskConfig::default(),
            sealer: None,
            runtime: None,
            time: None,
            entropy: None,
        }
    }

    /// A builder holding what this engine was built from, sharing its `requestState` key
    /// and its task store (so tasks and states already handed out stay valid).
    fn rebuild(&self) -> EngineBuilder {
        let s = &self.shared;
        EngineBuilder {
            config: s.config.clone(),
            registry: s.registry.clone(),
            resources: s.resources.clone(),
            prompts: s.prompts.clone(),
            tasks: s.tasks.config().clone(),
            sealer: Some(s.sealer.clone()),
            runtime: Some(s.platform.runtime.clone()),
            time: Some(s.platform.time.clone()),
            entropy: Some(s.platform.entropy.clone()),
        }
    }

    /// This engine, also serving `resources` (and advertising the `resources` capability).
    /// Call it while setting up, before serving. A thin wrapper of [`EngineBuilder`]: the
    /// new engine keeps this one's `requestState` key and task store.
    pub fn with_resources(&self, resources: Arc<McpResourceRegistry>) -> Self {
        self.rebuild()
            .resources(resources)
            .build_sharing_tasks(self.shared.tasks.clone())
    }

    /// This engine, also serving `prompts` (and advertising the `prompts` capability).
    /// Call it while setting up, before serving. A thin wrapper of [`EngineBuilder`]: the
    /// new engine keeps this one's `requestState` key and task store.
    pub fn with_prompts(&self, prompts: Arc<McpPromptRegistry>) -> Self {
        self.rebuild()
            .prompts(prompts)
            .build_sharing_tasks(self.shared.tasks.clone())
    }

    /// The resources being served, if any.
    pub fn resources(&self) -> Option<&Arc<McpResourceRegistry>> {
        self.shared.resources.as_ref()
    }

    /// The prompts being served, if any.
    pub fn prompts(&self) -> Option<&Arc<McpPromptRegistry>> {
        self.shared.prompts.as_ref()
    }

    /// A stream of list changes and resource updates, for transports to relay.
    pub fn events(&self) -> EventStream {
        let mut tools = self.shared.registry.subscribe();
        tools.mark_unchanged();
        EventStream {
            tools,
            prompts: self.shared.prompts.as_ref().map(|p| {
                let mut r = p.subscribe();
                r.mark_unchanged();
                r
            }),
            resources: self.shared.resources.as_ref().map(|r| {
                let mut w = r.subscribe_list();
                w.mark_unchanged();
                w
            }),
            updates: self
                .shared
                .resources
                .as_ref()
                .map(|r| r.subscribe_updates()),
        }
    }

    /// The notification a legacy session should receive for `event`, if any. Modern clients
    /// hear about changes only on `subscriptions/listen` streams.
    pub fn legacy_notification(
        &self,
        session: &Session,
        event: &ServerEvent,
    ) -> Option<OutgoingMessage> {
        session.negotiated()?;
        let (method, params) = match event {
            ServerEvent::ToolsListChanged => ("notifications/tools/list_changed", json!({})),
            ServerEvent::PromptsListChanged => ("notifications/prompts/list_changed", json!({})),
            ServerEvent::ResourcesListChanged => {
                ("notifications/resources/list_changed", json!({}))
            }
            ServerEvent::ResourceUpdated(uri) => {
                if !session.is_subscribed(uri) {
                    return None;
                }
                ("notifications/resources/updated", json!({"uri": uri}))
            }
        };
        Some(OutgoingMessage::Notification { method, params })
    }

    /// The configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.shared.config
    }

    /// The registry being served.
    pub fn registry(&self) -> &Arc<McpToolRegistry> {
        &self.shared.registry
    }

    /// A fresh session bounded by the configured concurrency.
    pub fn new_session(&self) -> Arc<Session> {
        let c = &self.shared.config;
        Arc::new(Session::with_gate(Arc::new(Gate::new(
            c.max_concurrent_requests,
            c.max_queued_requests,
        ))))
    }

    /// A session for one stateless (`2026-07-28`) request, as Streamable HTTP makes for each
    /// POST. Unlike [`new_session`](Self::new_session)'s, these sessions share one
    /// concurrency bound: `max_concurrent_requests` applies across all of them.
    pub fn new_stateless_session(&self) -> Arc<Session> {
        Arc::new(Session::one_shot(self.shared.stateless_gate.clone()))
    }

    /// `notifications/tools/list_changed`, if `session` is a legacy session that should hear
    /// about it (modern clients hear through `subscriptions/listen`).
    pub fn tools_list_changed(&self, session: &Session) -> Option<OutgoingMessage> {
        session.negotiated()?;
        Some(OutgoingMessage::Notification {
            method: "notifications/tools/list_changed",
            params: json!({}),
        })
    }

    /// Handles a decoded line or body: one message or a batch.
    pub fn handle_decoded(
        &self,
        session: &Arc<Session>,
        decoded: Decoded,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        match decoded {
            Decoded::Single(Ok(m)) => self.handle(session, m, sink),
            Decoded::Single(Err(e)) => Handled::Reply(e.to_response()),
            Decoded::Batch(items) => self.handle_batch(session, items, sink),
        }
    }

    fn handle_batch(
        &self,
        session: &Arc<Session>,
        items: Vec<Result<IncomingMessage, crate::wire::DecodeError>>,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let allowed = session
            .negotiated()
            .is_some_and(ProtocolVersion::allows_batches);
        if !allowed {
            return Handled::Reply(OutgoingMessage::Error {
                id: None,
                error: ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request: JSON-RPC batches are not supported by the negotiated protocol version",
                ),
            });
        }
        let handled: Vec<Handled> = items
            .into_iter()
            .map(|item| match item {
                Ok(IncomingMessage::Request {
                    ref method, ref id, ..
                }) if method == "initialize" => error(
                    id,
                    ErrorObject::new(
                        ErrorCode::INVALID_REQUEST,
                        "Invalid request: initialize must not be part of a batch",
                    ),
                ),
                Ok(m) => self.handle(session, m, sink),
                Err(e) => Handled::Reply(e.to_response()),
            })
            .collect();
        Handled::Pending(Box::pin(async move {
            let mut out = Vec::new();
            for h in handled {
                if let Some(m) = h.into_message().await {
                    out.push(m);
                }
            }
            (!out.is_empty()).then_some(OutgoingMessage::Batch(out))
        }))
    }

    /// Handles one message.
    pub fn handle(
        &self,
        session: &Arc<Session>,
        message: IncomingMessage,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        match message {
            IncomingMessage::Request { id, method, params } => {
                self.handle_request(session, id, &method, params.unwrap_or_default(), sink)
            }
            IncomingMessage::Notification { method, params } => {
                self.handle_notification(session, &method, params.unwrap_or_default());
                Handled::Nothing
            }
            IncomingMessage::Response { id, result } => {
                session.resolve_client_request(&id, Ok(result));
                Handled::Nothing
            }
            IncomingMessage::Error { id, error } => {
                if let Some(id) = id {
                    session.resolve_client_request(&id, Err(error));
                } else {
                    tracing::debug!(
                        code = error.code,
                        "the client reported an error without an id"
                    );
                }
                Handled::Nothing
            }
        }
    }

    fn handle_notification(&self, session: &Session, method: &str, params: Map<String, Value>) {
        match method {
            "notifications/initialized" => session.mark_initialized(),
            "notifications/cancelled" => {
                if let Some(id) = params
                    .get("requestId")
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
                {
                    session.cancel(&id);
                }
            }
            _ => tracing::trace!(method, "ignoring notification"),
        }
    }

    /// Works out the era and version a request is served under, or the error it deserves.
    fn scope(
        &self,
        session: &Session,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<RequestScope, ErrorObject> {
        let meta = params.get("_meta").and_then(Value::as_object);
        let requested = meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
        if let Some(requested) = requested {
            let Some(text) = requested.as_str() else {
                return Err(ErrorObject::invalid_params(format!(
                    "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
                )));
            };
            let version = ProtocolVersion::parse(text);
            match version {
                Some(v) if v.era() == Era::Modern => {
                    let caps = meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES));
                    let Some(caps @ Value::Object(_)) = caps else {
                        return Err(ErrorObject::invalid_params(format!(
                            "Missing required _meta field \"{META_CLIENT_CAPABILITIES}\" (an object)"
                        )));
                    };
                    let log_level = match meta.and_then(|m| m.get(META_LOG_LEVEL)) {
                        None => None,
                        Some(l) => Some(serde_json::from_value(l.clone()).map_err(|_| {
                            ErrorObject::invalid_params(format!(
                                "_meta[\"{META_LOG_LEVEL}\"] is not a log level"
                            ))
                        })?),
                    };
                    return Ok(RequestScope {
                        era: Era::Modern,
                        version: v,
                        client_capabilities: match caps.as_object() {
                            Some(c) if c.is_empty() => crate::context::no_capabilities(),
                            _ => Arc::new(caps.clone()),
                        },
                        log_level,
                    });
                }
                Some(v) if session.negotiated() == Some(v) => {}
                _ => return Err(self.unsupported_version(text)),
            }
        }
        if let Some((version, client_capabilities, log_level)) = session.negotiated_scope() {
            return Ok(RequestScope {
                era: Era::Legacy,
                version,
                client_capabilities,
                log_level,
            });
        }
        if method == "ping" {
            // Legacy clients may ping before initialising.
            return Ok(RequestScope {
                era: Era::Legacy,
                version: ProtocolVersion::LATEST_LEGACY,
                client_capabilities: crate::context::no_capabilities(),
                log_level: None,
            });
        }
        Err(ErrorObject::invalid_params(format!(
            "Missing required _meta field \"{META_PROTOCOL_VERSION}\". Clients of protocol 2025-11-25 and earlier must send initialize first."
        )))
    }

    fn unsupported_version(&self, requested: &str) -> ErrorObject {
        let shown: String = requested.chars().take(64).collect();
        ErrorObject::new(
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({
            "supported": supported_versions(),
            "requested": shown,
        }))
    }

    fn handle_request(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Map<String, Value>,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        // `initialize` exists only in the legacy era: a request carrying modern `_meta` is
        // scoped like any other and so answered "method not found" (2026-07-28 removed it).
        if method == "initialize" && !carries_meta_version(&params) {
            return self.initialize(session, &id, &params);
        }
        let scope = match self.scope(session, method, &params) {
            Ok(s) => s,
            Err(e) => return error(&id, e),
        };
        let has_resources = self.shared.resources.is_some();
        let has_prompts = self.shared.prompts.is_some();
        let result = match (scope.era, method) {
            (_, "tools/call") => return self.call_tool(session, id, params, scope, sink),
            (_, "tools/list") => self.list_tools(&params, &scope),
            (_, "resources/read") if has_resources => {
                return self.read_resource(session, id, params, scope, sink);
            }
            (_, "resources/list") if has_resources => {
                return self.list_resources(id, &params, scope);
            }
            (_, "resources/templates/list") if has_resources => {
                self.list_templates(&params, &scope)
            }
            (Era::Legacy, "resources/subscribe") if has_resources => {
                self.subscribe(session, &params, true)
            }
            (Era::Legacy, "resources/unsubscribe") if has_resources => {
                self.subscribe(session, &params, false)
            }
            (_, "prompts/get") if has_prompts => {
                return self.get_prompt(session, id, params, scope, sink);
            }
            (_, "prompts/list") if has_prompts => self.list_prompts(&params, &scope),
            (_, "completion/complete") if has_prompts || has_resources => {
                return self.complete(session, id, &params, scope);
            }
            (Era::Modern, "subscriptions/listen") => {
                return self.listen(session, id, params, scope, sink);
            }
            (Era::Legacy, "ping") => Ok(json!({})),
            (Era::Legacy, "logging/setLevel") => self.set_level(session, &params),
            (Era::Modern, "server/discover") => Ok(self.discover()),
            (_, m) if m.starts_with("tasks/") => {
                return self.handle_tasks(session, id, m, &params, &scope, sink);
            }
            _ => Err(ErrorObject::method_not_found(method)),
        };
        Handled::Reply(self.respond(id, result, &scope))
    }

    /// The response to request `id`: its result, finished for the era, or its error.
    fn respond(
        &self,
        id: RequestId,
        result: Result<Value, ErrorObject>,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        match result {
            Ok(result) => OutgoingMessage::Response {
                id,
                result: self.finish_result(result, scope),
            },
            Err(error) => OutgoingMessage::Error {
                id: Some(id),
                error,
            },
        }
    }

    /// Adds what every result of the request's era carries.
    fn finish_result(&self, result: Value, scope: &RequestScope) -> Value {
        let Value::Object(mut obj) = result else {
            return result;
        };
        if scope.era == Era::Modern {
            obj.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = obj
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(
                    META_SERVER_INFO.into(),
                    self.shared.server_info_meta.clone(),
                );
            }
        }
        Value::Object(obj)
    }

    fn cacheable(&self, mut obj: Map<String, Value>, scope: &RequestScope) -> Value {
        if scope.era == Era::Modern {
            let ttl = u64::try_from(self.shared.config.list_ttl.as_millis()).unwrap_or(u64::MAX);
            obj.insert("ttlMs".into(), json!(ttl));
            obj.insert(
                "cacheScope".into(),
                json!(self.shared.config.cache_scope.as_str()),
            );
        }
        Value::Object(obj)
    }

    /// The server's capabilities, reflecting what is registered.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        caps.insert("tools".into(), json!({"listChanged": true}));
        caps.insert("logging".into(), json!({}));
        if self.shared.resources.is_some() {
            caps.insert(
                "resources".into(),
                json!({"subscribe": true, "listChanged": true}),
            );
        }
        if self.shared.prompts.is_some() {
            caps.insert("prompts".into(), json!({"listChanged": true}));
        }
        if self.shared.resources.is_some() || self.shared.prompts.is_some() {
            caps.insert("completions".into(), json!({}));
        }
        Value::Object(caps)
    }

    fn discover(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("supportedVersions".into(), json!(supported_versions()));
        let caps = self.with_task_capabilities(self.capabilities(), ProtocolVersion::LATEST_MODERN);
        obj.insert("capabilities".into(), caps);
        if let Some(i) = &self.shared.config.instructions {
            obj.insert("instructions".into(), json!(i));
        }
        self.cacheable(
            obj,
            &RequestScope {
                era: Era::Modern,
                version: ProtocolVersion::LATEST_MODERN,
                client_capabilities: crate::context::no_capabilities(),
                log_level: None,
            },
        )
    }

    fn initialize(
        &self,
        session: &Session,
        id: &RequestId,
        params: &Map<String, Value>,
    ) -> Handled {
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return error(
                id,
                ErrorObject::invalid_params("initialize: protocolVersion must be a string"),
            );
        };
        let capabilities = match params.get("capabilities") {
            None => json!({}),
            Some(c @ Value::Object(_)) => c.clone(),
            Some(_) => {
                return error(
                    id,
                    ErrorObject::invalid_params("initialize: capabilities must be an object"),
                );
            }
        };
        let version = match ProtocolVersion::parse(requested) {
            Some(v) if v.era() == Era::Legacy => v,
            _ => ProtocolVersion::LATEST_LEGACY,
        };
        if !session.initialize(version, capabilities, params.get("clientInfo").cloned()) {
            return error(
                id,
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request: this session is already initialized",
                ),
            );
        }
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version.as_str()));
        let caps = self.with_task_capabilities(self.capabilities(), version);
        result.insert("capabilities".into(), caps);
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.shared.server_info).unwrap_or_else(|_| json!({})),
        );
        if let Some(i) = &self.shared.config.instructions {
            result.insert("instructions".into(), json!(i));
        }
        Handled::Reply(OutgoingMessage::Response {
            id: id.clone(),
            result: Value::Object(result),
        })
    }

    fn set_level(
        &self,
        session: &Session,
        params: &Map<String, Value>,
    ) -> Result<Value, ErrorObject> {
        let level: LoggingLevel = params
            .get("level")
            .cloned()
            .and_then(|l| serde_json::from_value(l).ok())
            .ok_or_else(|| {
                ErrorObject::invalid_params("logging/setLevel: level is not a log level")
            })?;
        session.set_log_level(level);
        Ok(json!({}))
    }

    fn list_tools(
        &self,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Result<Value, ErrorObject> {
        let after = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(
                decode_cursor(c).ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
            ),
            Some(_) => return Err(ErrorObject::invalid_params("Invalid cursor")),
        };
        let (tools, next) = self
            .shared
            .registry
            .page(after.as_deref(), self.shared.config.page_size);
        let tools = self.with_task_support(tools, scope);
        let mut obj = Map::new();
        obj.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        Ok(self.cacheable(obj, scope))
    }

    /// Sets up an MRTR-capable request (`tools/call`, `prompts/get`, `resources/read`): its
    /// in-flight guard, round state and context.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        session: &Arc<Session>,
        id: &RequestId,
        method: &'static str,
        target: &str,
        params: &mut Map<String, Value>,
        scope: &RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Result<Prepared, ErrorObject> {
        let round = if scope.era == Era::Modern {
            let principal = session.principal().map(|p| p.subject);
            let binding = Binding {
                method,
                target,
                principal: principal.as_deref(),
            };
            let (mut responses, state) = match params.remove("requestState") {
                None | Some(Value::Null) => (Map::new(), None),
                Some(Value::String(sealed)) => self.shared.sealer.open(&sealed, &binding)?,
                Some(_) => {
                    return Err(ErrorObject::invalid_params("requestState must be a string"));
                }
            };
            match params.remove("inputResponses") {
                None | Some(Value::Null) => {}
                Some(Value::Object(fresh)) => {
                    // Each response is the result of an input request: always an object.
                    if let Some((key, _)) = fresh.iter().find(|(_, v)| !v.is_object()) {
                        let key: String = key.chars().take(64).collect();
                        return Err(ErrorObject::invalid_params(format!(
                            "inputResponses[{key:?}] must be the result object of its request"
                        )));
                    }
                    responses.extend(fresh)
                }
                Some(_) => {
                    return Err(ErrorObject::invalid_params(
                        "inputResponses must be an object",
                    ));
                }
            }
            Some(Arc::new(RoundTrip {
                responses,
                state,
                ..RoundTrip::default()
            }))
        } else {
            None
        };
        let guard = session
            .begin_request(id.clone())
            .map_err(|refused| refused.error())?;
        let meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let progress_token = meta
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let input = match &round {
            Some(r) => InputMode::RoundTrip(r.clone()),
            None => InputMode::Requests(Arc::new(session::SessionRequester(session.clone()))),
        };
        let cancel = guard.token();
        let context = ToolContext::from_inner(ContextInner {
            request_id: Some(id.clone()),
            tool_name: target.to_owned(),
            meta,
            progress_token,
            cancel: cancel.clone(),
            sink: sink.clone(),
            log_level: scope.log_level,
            era: scope.era,
            protocol_version: scope.version,
            client_capabilities: scope.client_capabilities.clone(),
            principal: session.principal(),
            input,
        });
        Ok(Prepared {
            guard,
            context,
            round,
            cancel,
        })
    }

    /// After an MRTR-capable request ran: the `InputRequiredResult` (or missing-capability
    /// error) its round calls for, if any.
    fn round_outcome(
        &self,
        session: &Session,
        method: &'static str,
        target: &str,
        round: Option<&RoundTrip>,
    ) -> Option<Result<Value, ErrorObject>> {
        let round = round?;
        if let Some(capability) = round.missing() {
            let mut required = Map::new();
            required.insert(capability.to_owned(), json!({}));
            return Some(Err(ErrorObject::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!("This request needs the client capability `{capability}`"),
            )
            .with_data(json!({"requiredCapabilities": required}))));
        }
        let requested = round.take_requested();
        if requested.is_empty() {
            return None;
        }
        let state = round.take_next_state().or_else(|| round.state.clone());
        let principal = session.principal().map(|p| p.subject);
        let binding = Binding {
            method,
            target,
            principal: principal.as_deref(),
        };
        let sealed = match self
            .shared
            .sealer
            .seal(&binding, &round.responses, state.as_ref())
        {
            Ok(sealed) => sealed,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(json!({
            "resultType": "input_required",
            "inputRequests": requested,
            "requestState": sealed,
        })))
    }

    fn call_tool(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let mut params = params;
        let Some(Value::String(name)) = params.remove("name") else {
            return error(
                &id,
                ErrorObject::invalid_params("tools/call: name must be a string"),
            );
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a,
            Some(_) => {
                return error(
                    &id,
                    ErrorObject::invalid_params("tools/call: arguments must be an object"),
                );
            }
        };
        let Some(tool) = self.shared.registry.lookup(&name) else {
            let shown: String = name.chars().take(128).collect();
            return error(
                &id,
                ErrorObject::invalid_params(format!("Unknown tool: {shown}")),
            );
        };
        let task = match self.task_plan(&tool, &name, &scope, &mut params) {
            Ok(t) => t,
            Err(e) => return error(&id, e),
        };
        let prepared =
            match self.prepare(session, &id, "tools/call", &name, &mut params, &scope, sink) {
                Ok(p) => p,
                Err(e) => return error(&id, e),
            };
        let kind = if task.is_some() {
            HandlerKind::Task
        } else {
            HandlerKind::Tool
        };
        let ticket = match self.shared.policy.admit(session.gate(), kind, &name) {
            Ok(t) => t,
            Err(refusal) => {
                let output = ToolOutput::failure(invoke::tool_refusal(&name, refusal));
                let result = self.call_tool_result(&tool, output, &scope);
                return Handled::Reply(self.respond(id, Ok(result), &scope));
            }
        };
        if let Some(plan) = task {
            return self.call_tool_as_task(
                session, id, tool, name, arguments, prepared, scope, plan, ticket,
            );
        }
        let engine = self.clone();
        let session = session.clone();
        Handled::Pending(Box::pin(async move {
            let Prepared {
                guard,
                context,
                round,
                cancel,
            } = prepared;
            let _guard = guard;
            let timeout = engine.tool_timeout(&tool, &name);
            let run = tool.invoke(arguments, context);
            let output = match ExecutionPolicy::run(
                engine.shared.platform.runtime.as_ref(),
                engine.shared.platform.time.as_ref(),
                ticket,
                Some(timeout),
                &cancel,
                run,
            )
            .await?
            {
                Ok(output) => output,
                Err(failure) => ToolOutput::failure(invoke::tool_failure(&name, failure)),
            };
            let result = match engine.round_outcome(&session, "tools/call", &name, round.as_deref())
            {
                Some(Err(e)) => {
                    return Some(OutgoingMessage::Error {
                        id: Some(id),
                        error: e,
                    });
                }
                Some(Ok(input_required)) => input_required,
                None => {
                    let result = engine.call_tool_result(&tool, output, &scope);
                    engine.cap_tool_result(&tool, &name, result, &scope)
                }
            };
            Some(OutgoingMessage::Response {
                id,
                result: engine.finish_result(result, &scope),
            })
        }))
    }

    fn read_resource(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        mut params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let Some(Value::String(uri)) = params.remove("uri") else {
            return error(
                &id,
                ErrorObject::invalid_params("resources/read: uri must be a string"),
            );
        };
        let Some(resources) = self.shared.resources.clone() else {
            return error(&id, ErrorObject::method_not_found("resources/read"));
        };
        let prepared = match self.prepare(
            session,
            &id,
            "resources/read",
            &uri,
            &mut params,
            &scope,
            sink,
        ) {
            Ok(p) => p,
            Err(e) => return error(&id, e),
        };
        let ticket = match self
            .shared
            .policy
            .admit(session.gate(), HandlerKind::Resource, &uri)
        {
            Ok(t) => t,
            Err(refusal) => return error(&id, invoke::refusal_error(refusal)),
        };
        let engine = self.clone();
        let session = session.clone();
        Handled::Pending(Box::pin(async move {
            let Prepared {
                guard,
                context,
                round,
                cancel,
            } = prepared;
            let _guard = guard;
            let timeout = engine.shared.config.tool_timeout;
            let read = ExecutionPolicy::run(
                engine.shared.platform.runtime.as_ref(),
                engine.shared.platform.time.as_ref(),
                ticket,
                Some(timeout),
                &cancel,
                resources.read(&uri, context),
            )
            .await?;
            let outcome = engine.round_outcome(&session, "resources/read", &uri, round.as_deref());
            let result = match (outcome, read) {
                (Some(Err(e)), _) => Err(e),
                (Some(Ok(input_required)), _) => Ok(input_required),
                (None, Err(failure)) => Err(invoke::failure_error(
                    HandlerKind::Resource,
                    "Reading the resource",
                    failure,
                )),
                (None, Ok(Ok(contents))) => {
                    let mut obj = Map::new();
                    obj.insert(
                        "contents".into(),
                        serde_json::to_value(contents).unwrap_or_else(|_| json!([])),
                    );
                    engine.cap_result(engine.cacheable(obj, &scope))
                }
                (None, Ok(Err(e))) => Err(engine.resource_error(&uri, e, &scope)),
            };
            Some(engine.respond(id, result, &scope))
        }))
    }

    fn resource_error(&self, uri: &str, e: ResourceError, scope: &RequestScope) -> ErrorObject {
        let shown: String = uri.chars().take(512).collect();
        match e {
            ResourceError::NotFound(_) => {
                let code = if scope.era == Era::Modern {
                    ErrorCode::INVALID_PARAMS
                } else {
                    ErrorCode::LEGACY_RESOURCE_NOT_FOUND
                };
                ErrorObject::new(code, "Resource not found").with_data(json!({"uri": shown}))
            }
            ResourceError::AccessDenied(reason) => {
                ErrorObject::invalid_params(format!("Access denied: {reason}"))
                    .with_data(json!({"uri": shown}))
            }
            ResourceError::Failed(reason) => ErrorObject::internal(reason),
        }
    }

    /// `resources/list`: answered at once, or, when the registry has listers (which may walk
    /// a directory), in a future.
    fn list_resources(
        &self,
        id: RequestId,
        params: &Map<String, Value>,
        scope: RequestScope,
    ) -> Handled {
        let Some(resources) = &self.shared.resources else {
            return error(&id, ErrorObject::method_not_found("resources/list"));
        };
        let after = match cursor(params) {
            Ok(after) => after,
            Err(e) => return error(&id, e),
        };
        let size = self.shared.config.page_size;
        if !resources.has_listers() {
            let (items, next) = resources.page(after.as_deref(), size);
            let result = Ok(self.page_result("resources", items, next, &scope));
            return Handled::Reply(self.respond(id, result, &scope));
        }
        let page = resources.page_listed(after, size);
        let engine = self.clone();
        Handled::Pending(Box::pin(async move {
            let (items, next) = page.await;
            let result = Ok(engine.page_result("resources", items, next, &scope));
            Some(engine.respond(id, result, &scope))
        }))
    }

    fn list_templates(
        &self,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Result<Value, ErrorObject> {
        let Some(resources) = &self.shared.resources else {
            return Err(ErrorObject::method_not_found("resources/templates/list"));
        };
        let after = match cursor(params)? {
            None => None,
            Some(c) => Some(
                c.parse::<usize>()
                    .map_err(|_| ErrorObject::invalid_params("Invalid cursor"))?,
            ),
        };
        let (items, next) = resources.template_page(after, self.shared.config.page_size);
        Ok(self.page_result(
            "resourceTemplates",
            items,
            next.map(|n| n.to_string()),
            scope,
        ))
    }

    fn page_result(
        &self,
        key: &str,
        items: Vec<Value>,
        next: Option<String>,
        scope: &RequestScope,
    ) -> Value {
        let mut obj = Map::new();
        obj.insert(key.into(), Value::Array(items));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        self.cacheable(obj, scope)
    }

    fn subscribe(
        &self,
        session: &Session,
        params: &Map<String, Value>,
        on: bool,
    ) -> Result<Value, ErrorObject> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(ErrorObject::invalid_params("uri must be a string"));
        };
        if on {
            if !session.subscribe(uri) {
                return Err(ErrorObject::invalid_params(
                    "Too many resource subscriptions",
                ));
            }
        } else {
            session.unsubscribe(uri);
        }
        Ok(json!({}))
    }

    fn list_prompts(
        &self,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Result<Value, ErrorObject> {
        let Some(prompts) = &self.shared.prompts else {
            return Err(ErrorObject::method_not_found("prompts/list"));
        };
        let after = cursor(params)?;
        let (items, next) = prompts.page(after.as_deref(), self.shared.config.page_size);
        Ok(self.page_result("prompts", items, next, scope))
    }

    fn get_prompt(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        mut params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let Some(Value::String(name)) = params.remove("name") else {
            return error(
                &id,
                ErrorObject::invalid_params("prompts/get: name must be a string"),
            );
        };
        let Some(prompt) = self.shared.prompts.as_ref().and_then(|p| p.lookup(&name)) else {
            let shown: String = name.chars().take(128).collect();
            return error(
                &id,
                ErrorObject::invalid_params(format!("Unknown prompt: {shown}")),
            );
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => std::collections::BTreeMap::new(),
            Some(Value::Object(a)) => {
                let mut out = std::collections::BTreeMap::new();
                for (k, v) in a {
                    match v {
                        Value::String(s) => {
                            out.insert(k, s);
                        }
                        _ => {
                            return error(
                                &id,
                                ErrorObject::invalid_params(format!(
                                    "prompts/get: argument {k:?} must be a string"
                                )),
                            );
                        }
                    }
                }
                out
            }
            Some(_) => {
                return error(
                    &id,
                    ErrorObject::invalid_params("prompts/get: arguments must be an object"),
                );
            }
        };
        if let Err(message) = prompt.check_arguments(&arguments) {
            return error(&id, ErrorObject::invalid_params(message));
        }
        let prepared = match self.prepare(
            session,
            &id,
            "prompts/get",
            &name,
            &mut params,
            &scope,
            sink,
        ) {
            Ok(p) => p,
            Err(e) => return error(&id, e),
        };
        let ticket = match self
            .shared
            .policy
            .admit(session.gate(), HandlerKind::Prompt, &name)
        {
            Ok(t) => t,
            Err(refusal) => return error(&id, invoke::refusal_error(refusal)),
        };
        let engine = self.clone();
        let session = session.clone();
        Handled::Pending(Box::pin(async move {
            let Prepared {
                guard,
                context,
                round,
                cancel,
            } = prepared;
            let _guard = guard;
            let request = crate::prompts::PromptRequest { arguments, context };
            // The handler is called inside the guarded future, so a panic while it builds its
            // future is caught too.
            let render = async move { prompt.handler.get(request).await };
            let timeout = engine.shared.config.tool_timeout;
            let got = ExecutionPolicy::run(
                engine.shared.platform.runtime.as_ref(),
                engine.shared.platform.time.as_ref(),
                ticket,
                Some(timeout),
                &cancel,
                render,
            )
            .await?;
            let outcome = engine.round_outcome(&session, "prompts/get", &name, round.as_deref());
            let result = match (outcome, got) {
                (Some(r), _) => r,
                (None, Err(failure)) => Err(invoke::failure_error(
                    HandlerKind::Prompt,
                    &format!("Prompt {name}"),
                    failure,
                )),
                (None, Ok(Ok(rendered))) => serde_json::to_value(rendered)
                    .map_err(|_| ErrorObject::internal("Prompt result could not be encoded"))
                    .and_then(|v| engine.cap_result(v)),
                (None, Ok(Err(detail))) => Err(ErrorObject::internal(detail.error_message)),
            };
            Some(engine.respond(id, result, &scope))
        }))
    }

    /// `subscriptions/listen`: acknowledges the filter, then relays matching changes until
    /// the client cancels (closes the stream, or sends `notifications/cancelled` on stdio).
    fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let filter = params
            .get("notifications")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let wants = |k: &str| filter.get(k).and_then(Value::as_bool).unwrap_or(false);
        let tools = wants("toolsListChanged");
        let prompts = wants("promptsListChanged") && self.shared.prompts.is_some();
        let resources = wants("resourcesListChanged") && self.shared.resources.is_some();
        let uris: std::collections::HashSet<String> = if self.shared.resources.is_some() {
            filter
                .get("resourceSubscriptions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .take(4096)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Default::default()
        };
        let mut ack = Map::new();
        if tools {
            ack.insert("toolsListChanged".into(), json!(true));
        }
        if prompts {
            ack.insert("promptsListChanged".into(), json!(true));
        }
        if resources {
            ack.insert("resourcesListChanged".into(), json!(true));
        }
        if !uris.is_empty() {
            let mut list: Vec<&String> = uris.iter().collect();
            list.sort();
            ack.insert("resourceSubscriptions".into(), json!(list));
        }
        let guard = match session.begin_request(id.clone()) {
            Ok(guard) => guard,
            Err(refused) => return error(&id, refused.error()),
        };
        let mut events = self.events();
        let sink = sink.clone();
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        let _ = scope;
        Handled::Pending(Box::pin(async move {
            let cancel = guard.token();
            let _guard = guard;
            let tag = |mut params: Map<String, Value>| {
                params.insert(
                    "_meta".into(),
                    json!({ META_SUBSCRIPTION_ID: subscription }),
                );
                Value::Object(params)
            };
            let mut first = Map::new();
            first.insert("notifications".into(), Value::Object(ack));
            sink.send(OutgoingMessage::Notification {
                method: "notifications/subscriptions/acknowledged",
                params: tag(first),
            });
            loop {
                let event = futures_util::select_biased! {
                    () = cancel.cancelled().fuse() => return None,
                    e = events.next().fuse() => e,
                };
                let Some(event) = event else {
                    // The server is going away: end the subscription gracefully.
                    let result = json!({"resultType": "complete", "_meta": { META_SUBSCRIPTION_ID: subscription }});
                    return Some(OutgoingMessage::Response { id, result });
                };
                let (method, params) = match event {
                    ServerEvent::ToolsListChanged if tools => {
                        ("notifications/tools/list_changed", Map::new())
                    }
                    ServerEvent::PromptsListChanged if prompts => {
                        ("notifications/prompts/list_changed", Map::new())
                    }
                    ServerEvent::ResourcesListChanged if resources => {
                        ("notifications/resources/list_changed", Map::new())
                    }
                    ServerEvent::ResourceUpdated(uri) if uris.contains(&uri) => {
                        let mut p = Map::new();
                        p.insert("uri".into(), json!(uri));
                        ("notifications/resources/updated", p)
                    }
                    _ => continue,
                };
                sink.send(OutgoingMessage::Notification {
                    method,
                    params: tag(params),
                });
            }
        }))
    }

    /// The deadline of a call to `tool`: its own setting, else the per-name one, else
    /// `tool_timeout`.
    fn tool_timeout(&self, tool: &RegisteredTool, name: &str) -> Duration {
        tool.settings
            .timeout
            .or_else(|| self.shared.config.tool_timeouts.get(name).copied())
            .unwrap_or(self.shared.config.tool_timeout)
    }

    /// Maps a tool's output onto `CallToolResult`.
    fn call_tool_result(
        &self,
        tool: &RegisteredTool,
        output: ToolOutput,
        _scope: &RequestScope,
    ) -> Value {
        let ToolOutput { result, content } = output;
        let mut obj = Map::new();
        if result.is_failure() {
            let detail = result.error().cloned().unwrap_or_else(|| {
                McpErrorDetail::new("InternalError", "the tool failed without detail")
            });
            let mut text = format!("{}: {}", detail.error_type, detail.error_message);
            if let Some(details) = &detail.error_details
                && let Ok(d) = serde_json::to_string(details)
            {
                text.push_str("\nDetails: ");
                text.push_str(&d);
            }
            let blocks = content.unwrap_or_else(|| vec![ContentBlock::text(text)]);
            obj.insert("content".into(), blocks_value(blocks));
            if tool.definition.output_schema.is_none()
                && let Ok(v) = serde_json::to_value(&detail)
            {
                obj.insert("structuredContent".into(), v);
            }
            obj.insert("isError".into(), json!(true));
            return Value::Object(obj);
        }
        let data = result.data();
        let blocks = match content {
            Some(blocks) => blocks,
            None => {
                let mut blocks = Vec::with_capacity(2);
                if let Some(data) = data {
                    blocks.push(ContentBlock::text(
                        serde_json::to_string(data).unwrap_or_default(),
                    ));
                }
                if let Some(explanation) = result.explanation() {
                    blocks.push(ContentBlock::text(explanation));
                }
                blocks
            }
        };
        obj.insert("content".into(), blocks_value(blocks));
        if let Some(data) = data {
            obj.insert("structuredContent".into(), Value::Object(data.clone()));
        }
        Value::Object(obj)
    }
}

impl Engine {
    /// A tool's result, or a `RESULT_TOO_LARGE` failure in its place when its encoding exceeds
    /// `max_result_size`.
    fn cap_tool_result(
        &self,
        tool: &RegisteredTool,
        name: &str,
        result: Value,
        scope: &RequestScope,
    ) -> Value {
        let limit = self.shared.config.max_result_size;
        if encodes_within(&result, limit) {
            return result;
        }
        tracing::warn!(tool = %name, limit, "a tool result exceeded max_result_size");
        drop(result);
        let detail = McpErrorDetail::new(
            "RESULT_TOO_LARGE",
            format!(
                "Tool {name} returned a result larger than the server's limit of {limit} bytes (max_result_size); it was discarded"
            ),
        )
        .with_details(Map::from_iter([(
            "max_result_size".to_owned(),
            json!(limit),
        )]));
        self.call_tool_result(tool, ToolOutput::failure(detail), scope)
    }

    /// A resource or prompt result, or `-32603` when its encoding exceeds `max_result_size`.
    fn cap_result(&self, result: Value) -> Result<Value, ErrorObject> {
        let limit = self.shared.config.max_result_size;
        if encodes_within(&result, limit) {
            return Ok(result);
        }
        Err(ErrorObject::internal(format!(
            "The result is larger than the server's limit of {limit} bytes (max_result_size)"
        ))
        .with_data(json!({"max_result_size": limit})))
    }
}

/// Content blocks as a JSON array, moving their text.
fn blocks_value(blocks: Vec<ContentBlock>) -> Value {
    Value::Array(blocks.into_iter().map(ContentBlock::into_value).collect())
}

/// Whether `value`'s compact JSON encoding is at most `limit` bytes. A walk of the tree that
/// counts nodes, not bytes, settles almost every case; only a value that might be over the
/// limit is measured exactly.
fn encodes_within(value: &Value, limit: usize) -> bool {
    encoded_len_bound(value) <= limit || encoded_len_within(value, limit).is_some()
}

/// An upper bound of `value`'s compact JSON encoding: every string byte escaped as `\u00XX`
/// (6 bytes) and every number at its longest (24 bytes).
fn encoded_len_bound(value: &Value) -> usize {
    let string = |s: &str| s.len().saturating_mul(6).saturating_add(2);
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => string(s),
        Value::Array(items) => items.iter().fold(2usize, |n, v| {
            n.saturating_add(encoded_len_bound(v)).saturating_add(1)
        }),
        Value::Object(map) => map.iter().fold(2usize, |n, (k, v)| {
            n.saturating_add(string(k))
                .saturating_add(encoded_len_bound(v))
                .saturating_add(2)
        }),
    }
}

/// The length of `value`'s compact JSON encoding if it is at most `limit` bytes. Counts
/// without allocating and stops as soon as the limit is passed.
fn encoded_len_within(value: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        written: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written = self.written.saturating_add(buf.len());
            if self.written > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.written)
}

struct Prepared {
    guard: session::InFlightGuard,
    context: ToolContext,
    round: Option<Arc<RoundTrip>>,
    cancel: CancellationToken,
}

/// Whether a request names its protocol version in `_meta`, as modern-era requests do.
fn carries_meta_version(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
}

/// The decoded `cursor` parameter.
fn cursor(params: &Map<String, Value>) -> Result<Option<String>, ErrorObject> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => decode_cursor(c)
            .map(Some)
            .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor")),
        Some(_) => Err(ErrorObject::invalid_params("Invalid cursor")),
    }
}

/// Every protocol version served, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect()
}

fn encode_cursor(after: &str) -> String {
    after.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The longest cursor accepted, in hex digits: room for the URI of a listed file whose path is
/// as long as the CLI's sandbox accepts (4096 bytes, each percent-encoded in three), plus a
/// prefix.
const MAX_CURSOR_LEN: usize = 2 * (3 * 4096 + 512);

fn decode_cursor(cursor: &str) -> Option<String> {
    if !cursor.len().is_multiple_of(2) || cursor.len() > MAX_CURSOR_LEN {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod result_size_tests {
    use super::*;

    #[test]
    fn encoded_length_is_exact_up_to_the_limit() {
        let v = json!({"content": [{"type": "text", "text": "x".repeat(100)}]});
        let exact = serde_json::to_vec(&v).map(|b| b.len()).unwrap_or_default();
        assert_eq!(encoded_len_within(&v, exact), Some(exact));
        assert_eq!(encoded_len_within(&v, usize::MAX), Some(exact));
        assert_eq!(encoded_len_within(&v, exact - 1), None);
        assert_eq!(encoded_len_within(&json!(null), 3), None);
    }

    #[test]
    fn the_quick_bound_is_never_below_the_exact_length() {
        for v in [
            json!(null),
            json!(true),
            json!(-1.7976931348623157e308),
            json!(u64::MAX),
            json!("\u{0}\u{1f}\"\\é✓"),
            json!({"a": [1, {"b": "\n"}], "": []}),
        ] {
            let exact = serde_json::to_vec(&v).unwrap().len();
            assert!(encoded_len_bound(&v) >= exact, "{v}");
            assert!(encodes_within(&v, exact));
            assert!(!encodes_within(&v, exact - 1));
        }
    }

    #[test]
    fn moved_content_blocks_equal_their_serde_encoding() {
        let mut annotated = ContentBlock::text("hi");
        if let ContentBlock::Text {
            annotations, meta, ..
        } = &mut annotated
        {
            *annotations = Some(Map::from_iter([("priority".to_owned(), json!(1))]));
            *meta = Some(Map::from_iter([("k".to_owned(), json!("v"))]));
        }
        for block in [
            ContentBlock::text("a \"quoted\" text"),
            annotated,
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::audio("aGk=", "audio/wav"),
            ContentBlock::resource_link("file:///x", "x"),
        ] {
            assert_eq!(
                block.clone().into_value(),
                serde_json::to_value(&block).unwrap()
            );
        }
    }

    #[tokio::test]
    async fn an_oversized_tool_result_becomes_a_result_too_large_failure() {
        let registry = Arc::new(McpToolRegistry::new());
        registry
            .register(
                "big",
                json!({"type": "object"}),
                |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                    Ok(json!({"blob": "x".repeat(10_000)}))
                },
            )
            .unwrap();
        registry
            .register(
                "small",
                json!({"type": "object"}),
                |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({"ok": 1})) },
            )
            .unwrap();
        let engine = Engine::new(
            McpServerConfig::default()
                .with_rate_limit(None)
                .with_max_result_size(4096),
            registry,
        );
        let session = engine.new_session();
        let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
        let call = |name: &str| {
            let meta = json!({
                META_PROTOCOL_VERSION: "2026-07-28",
                META_CLIENT_CAPABILITIES: {},
            });
            IncomingMessage::Request {
                id: RequestId::from(1),
                method: "tools/call".into(),
                params: json!({"name": name, "_meta": meta}).as_object().cloned(),
            }
        };
        let answer = engine
            .handle(&session, call("big"), &sink)
            .into_message()
            .await;
        let Some(OutgoingMessage::Response { result, .. }) = answer else {
            panic!("a response expected: {answer:?}")
        };
        assert_eq!(result["isError"], json!(true));
        assert_eq!(
            result["structuredContent"]["error_type"],
            "RESULT_TOO_LARGE"
        );
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("max_result_size"), "{text}");
        assert!(serde_json::to_vec(&result).unwrap().len() < 4096);
        let answer = engine
            .handle(&session, call("small"), &sink)
            .into_message()
            .await;
        let Some(OutgoingMessage::Response { result, .. }) = answer else {
            panic!("a response expected: {answer:?}")
        };
        assert_eq!(result["structuredContent"], json!({"ok": 1}));
        assert_eq!(session.in_flight(), 0);
    }
}

#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod tests;
