//! The protocol engine: MCP semantics with no I/O.
//!
//! The engine takes decoded [`IncomingMessage`]s and a [`Session`], and returns what to send
//! back ([`Handled`]). A handler call comes back as an [`Invocation`] value for a driver to
//! carry out; dropping it cancels the work. Time-driven state (task TTLs, the orphan check)
//! is [`Engine::poll_timeout`] and [`Engine::handle_timeout`]. Notifications produced while a
//! request runs (progress, log messages) are queued as values in the request's
//! [`Outbound`], which the driver drains to the [`MessageSink`] the transport passed in with
//! the request, before the request's answer.
//!
//! The engine never touches sockets, pipes, HTTP or a runtime, and cannot spawn or sleep;
//! time and entropy come in from its [`Platform`](crate::platform::Platform). Both
//! protocol eras share it: a request carrying modern `_meta` is served statelessly under
//! `2026-07-28`; an `initialize` request opens a legacy session on the [`Session`] it arrived on.

mod builder;
mod classify;
mod drive;
#[cfg(test)]
pub(crate) use drive::TestRuntime;
mod events;
#[cfg(test)]
mod invocation_tests;
mod invoke;
mod jobs;
mod list_pages;
mod listen;
mod media;
mod meta;
pub(crate) mod mrtr;
/// The execution policy lives below the registries (`crate::policy`), so direct calls
/// (`McpToolRegistry::execute`) are admitted by it too.
pub(crate) use crate::policy;
mod apps;
mod authz;
#[cfg(test)]
mod authz_tests;
mod prompts;
mod resources;
mod results;
mod session;
mod skills;
pub(crate) mod tasks;
mod tools;

use std::sync::Arc;

use crate::sync::CancellationToken;
use serde_json::{Map, Value, json};

use crate::config::McpServerConfig;
use crate::context::{ContextInner, InputMode, MessageSink, Outbound, ToolContext};
use crate::prompts::McpPromptRegistry;
use crate::registry::{BoxFuture, McpToolRegistry};
use crate::resources::McpResourceRegistry;
use crate::wire::jsonrpc::Decoded;
use crate::wire::{
    Era, ErrorCode, ErrorObject, Implementation, IncomingMessage, LoggingLevel, OutgoingMessage,
    ProtocolVersion, RequestId,
};
use list_pages::ListKind;

use crate::invocation::{Invocation, Wait};
use crate::platform::Timestamp;
pub use builder::EngineBuilder;
pub use classify::{
    Classification, Delivery, Refusal, Respond, Route, Status, called_tool, cancelled_request,
    changes_session_record, legacy_version_header, mirrored_name_field, relayed_task, status_for,
};
pub use events::{EventStream, ServerEvent};
pub use listen::Listeners;
pub use media::{Accepts, JSON_MEDIA_TYPE, STREAM_MEDIA_TYPE, check_post, check_stream};
pub use meta::{MetaField, RequestMeta};
use mrtr::{Binding, RoundTrip, Sealer};
use policy::{ExecutionPolicy, Gate, HandlerKind};
pub use session::Session;

pub use tasks::{META_RELATED_TASK, TASKS_EXTENSION, TaskConfig, TaskSync};

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
    /// Drive this future; send what it yields, if anything. Dropping it cancels the work. Only
    /// for waits that are no handler call and end with their request or session: a
    /// `subscriptions/listen` stream.
    Pending(BoxFuture<'static, Option<OutgoingMessage>>),
    /// Carry out this wait under its deadline (see [`Wait`]): a task store's read (every
    /// `tasks/*`, in-memory or shared).
    Wait(Wait),
    /// Carry out this handler call (see [`Invocation`]); send what its completion returns.
    Invoke(Invocation),
    /// A JSON-RPC batch: settle each in order, and send what they yield as one batch.
    Batch(Vec<Handled>),
}

impl std::fmt::Debug for Handled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Nothing => f.write_str("Nothing"),
            Self::Reply(m) => f.debug_tuple("Reply").field(m).finish(),
            Self::Pending(_) => f.write_str("Pending(..)"),
            Self::Invoke(i) => f.debug_tuple("Invoke").field(i).finish(),
            Self::Wait(w) => f.debug_tuple("Wait").field(w).finish(),
            Self::Batch(b) => f.debug_tuple("Batch").field(b).finish(),
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
    /// `_meta.progressToken`, when it is a string or an integer.
    progress_token: Option<Value>,
    /// When the request is handled: every decision `handle` makes about time (admission's
    /// rate limit, a `requestState`'s expiry, a task's TTL and timestamps) uses it.
    now: Timestamp,
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
    /// The Skills extension's skills, when served.
    skills: Option<Arc<crate::skills::McpSkillRegistry>>,
    server_info: Implementation,
    /// Shaping and capping results.
    results: results::Results,
    /// The admission bound that stateless sessions share.
    stateless_gate: Arc<Gate>,
    /// Admission, rate limit, timeout and unwind guard of every handler invocation.
    policy: ExecutionPolicy,
    /// Created once per engine: every `requestState` it hands out stays verifiable.
    sealer: Arc<Sealer>,
    tasks: Arc<tasks::TaskStore>,
    /// Change feeds, announcements and `subscriptions/listen` streams.
    listeners: listen::Listeners,
    /// `*/list` pages, reused until their registry changes.
    list_pages: list_pages::ListPages,
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
            skills: None,
            tasks: TaskConfig::default(),
            sealer: None,
            time: None,
            entropy: None,
            shared_tasks: None,
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
            skills: s.skills.clone(),
            tasks: s.tasks.config().clone(),
            sealer: Some(s.sealer.clone()),
            time: Some(s.platform.time.clone()),
            entropy: Some(s.platform.entropy.clone()),
            shared_tasks: s.tasks.shared.clone(),
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

    /// This engine, also serving `skills` (the Skills extension; see
    /// [`EngineBuilder::skills`]). Call it while setting up, before serving.
    pub fn with_skills(&self, skills: Arc<crate::skills::McpSkillRegistry>) -> Self {
        self.rebuild()
            .skills(skills)
            .build_sharing_tasks(self.shared.tasks.clone())
    }

    /// The skills being served, if any.
    pub fn skills(&self) -> Option<&Arc<crate::skills::McpSkillRegistry>> {
        self.shared.skills.as_ref()
    }

    /// The resources being served, if any.
    pub fn resources(&self) -> Option<&Arc<McpResourceRegistry>> {
        self.shared.resources.as_ref()
    }

    /// The prompts being served, if any.
    pub fn prompts(&self) -> Option<&Arc<McpPromptRegistry>> {
        self.shared.prompts.as_ref()
    }

    /// Who hears about changes: event streams, announcements, log messages for sessions.
    pub fn listeners(&self) -> &Listeners {
        &self.shared.listeners
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
        Arc::new(Session::with_gate(Arc::new(policy::gate(c))))
    }

    /// A session for one stateless (`2026-07-28`) request, as Streamable HTTP makes for each
    /// POST. Unlike [`new_session`](Self::new_session)'s, these sessions share one
    /// concurrency bound: `max_concurrent_requests` applies across all of them.
    pub fn new_stateless_session(&self) -> Arc<Session> {
        Arc::new(Session::one_shot(self.shared.stateless_gate.clone()))
    }

    /// The engine's injected clock, read once: the `now` the entry points without `_at`
    /// handle at.
    pub fn now(&self) -> Timestamp {
        Timestamp::of(self.shared.platform.time.as_ref())
    }

    /// Handles a decoded line or body: one message or a batch, at [`now`](Self::now).
    pub fn handle_decoded(
        &self,
        session: &Arc<Session>,
        decoded: Decoded,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        self.handle_decoded_at(self.now(), session, decoded, sink)
    }

    /// [`handle_decoded`](Self::handle_decoded) at `now`; every message of a batch is
    /// handled at the same `now`.
    pub fn handle_decoded_at(
        &self,
        now: Timestamp,
        session: &Arc<Session>,
        decoded: Decoded,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        match decoded {
            Decoded::Single(Ok(m)) => self.handle_at(now, session, m, sink),
            Decoded::Single(Err(e)) => Handled::Reply(e.to_response()),
            Decoded::Batch(items) => self.handle_batch(now, session, items, sink),
        }
    }

    fn handle_batch(
        &self,
        now: Timestamp,
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
                Ok(m) => self.handle_at(now, session, m, sink),
                Err(e) => Handled::Reply(e.to_response()),
            })
            .collect();
        Handled::Batch(handled)
    }

    /// The earliest instant [`handle_timeout`](Self::handle_timeout) has work (a task's TTL,
    /// the orphan check of 2025-11-25 tasks), if any. Re-read after every `handle`.
    pub fn poll_timeout(&self) -> Option<std::time::Instant> {
        crate::invocation::TimerHost::poll_timeout(self.shared.tasks.as_ref())
    }

    /// Fires what is due at `now`: expires tasks past their TTL, and stops the running
    /// 2025-11-25 tasks whose session is gone. Nothing due: nothing happens.
    pub fn handle_timeout(&self, now: std::time::Instant) {
        crate::invocation::TimerHost::handle_timeout(self.shared.tasks.as_ref(), now);
    }

    /// Takes the client's answer to server-to-client request `id` of `session` at `now`: the
    /// one way an answer comes back in (a response or error message handled here arrives
    /// through it too). The request left the engine as a value on the request's stream; the
    /// call that asked holds only the answer's slot. `false` if no call waits for this answer
    /// (unknown, answered already, or given up). `now` is the input's time, as every entry
    /// point takes one; no decision about an answer depends on it yet.
    pub fn handle_response(
        &self,
        _now: Timestamp,
        session: &Session,
        id: &RequestId,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        session.resolve_client_request(id, outcome)
    }

    /// Handles one message, at [`now`](Self::now): [`handle_at`](Self::handle_at) with the
    /// engine's injected clock read once.
    pub fn handle(
        &self,
        session: &Arc<Session>,
        message: IncomingMessage,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        self.handle_with_meta(self.now(), session, message, None, sink)
    }

    /// Handles one message at `now` (quinn-proto's `handle(now, ..)`): the time every
    /// decision it makes synchronously is taken at. The engine reads its injected
    /// `TimeSource` only for what happens later, inside the work it hands out (a task's
    /// `lastUpdatedAt`, a `requestState` sealed when a handler's round ends, a store read's
    /// clock after a wait).
    pub fn handle_at(
        &self,
        now: Timestamp,
        session: &Arc<Session>,
        message: IncomingMessage,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        self.handle_with_meta(now, session, message, None, sink)
    }

    /// [`handle`](Self::handle), with the message's `_meta` already parsed (by
    /// [`classify`](Self::classify)), so that it is not parsed again.
    pub fn handle_classified(
        &self,
        session: &Arc<Session>,
        message: IncomingMessage,
        meta: RequestMeta,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        self.handle_with_meta(self.now(), session, message, Some(meta), sink)
    }

    /// [`handle_classified`](Self::handle_classified) at `now`.
    pub fn handle_classified_at(
        &self,
        now: Timestamp,
        session: &Arc<Session>,
        message: IncomingMessage,
        meta: RequestMeta,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        self.handle_with_meta(now, session, message, Some(meta), sink)
    }

    fn handle_with_meta(
        &self,
        now: Timestamp,
        session: &Arc<Session>,
        message: IncomingMessage,
        meta: Option<RequestMeta>,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        match message {
            IncomingMessage::Request { id, method, params } => {
                let params = params.unwrap_or_default();
                let meta = meta.unwrap_or_else(|| RequestMeta::of(Some(&params)));
                self.handle_request(now, session, id, &method, params, &meta, sink)
            }
            IncomingMessage::Notification { method, params } => {
                self.handle_notification(session, &method, params.unwrap_or_default());
                Handled::Nothing
            }
            IncomingMessage::Response { id, result } => {
                self.handle_response(now, session, &id, Ok(result));
                Handled::Nothing
            }
            IncomingMessage::Error { id, error } => {
                if let Some(id) = id {
                    self.handle_response(now, session, &id, Err(error));
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
                if let Some(id) = classify::cancelled_id(&params) {
                    session.cancel(&id);
                }
            }
            _ => tracing::trace!(method, "ignoring notification"),
        }
    }

    /// Works out the era and version a request is served under, or the error it deserves,
    /// from its `_meta` (parsed once, [`RequestMeta`]).
    fn scope(
        &self,
        now: Timestamp,
        session: &Session,
        method: &str,
        meta: &RequestMeta,
    ) -> Result<RequestScope, ErrorObject> {
        let progress_token = meta.progress_token.get().cloned();
        match &meta.protocol_version {
            MetaField::Absent => {}
            MetaField::Invalid => {
                return Err(ErrorObject::invalid_params(format!(
                    "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
                )));
            }
            MetaField::Present(text) => match ProtocolVersion::parse(text) {
                Some(v) if v.era() == Era::Modern => {
                    let MetaField::Present(caps) = &meta.client_capabilities else {
                        return Err(ErrorObject::invalid_params(format!(
                            "Missing required _meta field \"{META_CLIENT_CAPABILITIES}\" (an object)"
                        )));
                    };
                    let log_level = match meta.log_level {
                        MetaField::Absent => None,
                        MetaField::Present(l) => Some(l),
                        MetaField::Invalid => {
                            return Err(ErrorObject::invalid_params(format!(
                                "_meta[\"{META_LOG_LEVEL}\"] is not a log level"
                            )));
                        }
                    };
                    return Ok(RequestScope {
                        era: Era::Modern,
                        version: v,
                        client_capabilities: caps.clone(),
                        log_level,
                        progress_token,
                        now,
                    });
                }
                Some(v) if session.negotiated() == Some(v) => {}
                _ => return Err(self.unsupported_version(text)),
            },
        }
        if let Some((version, client_capabilities, log_level)) = session.negotiated_scope() {
            return Ok(RequestScope {
                era: Era::Legacy,
                version,
                client_capabilities,
                log_level,
                progress_token,
                now,
            });
        }
        if method == "ping" {
            // Legacy clients may ping before initialising.
            return Ok(RequestScope {
                era: Era::Legacy,
                version: ProtocolVersion::LATEST_LEGACY,
                client_capabilities: crate::context::no_capabilities(),
                log_level: None,
                progress_token,
                now,
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

    #[allow(clippy::too_many_arguments)]
    fn handle_request(
        &self,
        now: Timestamp,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: Map<String, Value>,
        meta: &RequestMeta,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        // `initialize` exists only in the legacy era: a request carrying modern `_meta` is
        // scoped like any other and so answered "method not found" (2026-07-28 removed it).
        if method == "initialize" && !meta.names_version() {
            return self.initialize(session, &id, &params);
        }
        let scope = match self.scope(now, session, method, meta) {
            Ok(s) => s,
            Err(e) => return error(&id, e),
        };
        let has_resources = self.shared.resources.is_some();
        let has_prompts = self.shared.prompts.is_some();
        let result = match (scope.era, method) {
            (_, "tools/call") => return self.call_tool(session, id, params, scope, sink),
            (_, "tools/list") => {
                return Handled::Reply(self.list_page(
                    id,
                    ListKind::Tools,
                    &params,
                    &scope,
                    self.grant(session),
                ));
            }
            (_, "resources/read") if has_resources => {
                return self.read_resource(session, id, params, scope, sink);
            }
            (_, "resources/list") if has_resources => {
                return self.list_resources(session, id, &params, scope);
            }
            (_, "resources/templates/list") if has_resources => {
                return Handled::Reply(self.list_page(
                    id,
                    ListKind::Templates,
                    &params,
                    &scope,
                    self.grant(session),
                ));
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
            (_, "prompts/list") if has_prompts => {
                return Handled::Reply(self.list_page(
                    id,
                    ListKind::Prompts,
                    &params,
                    &scope,
                    self.grant(session),
                ));
            }
            (_, "completion/complete") if has_prompts || has_resources => {
                return self.complete_argument(session, id, &params, scope);
            }
            (Era::Modern, "subscriptions/listen") => {
                let permits = |uri: &str| self.permits_uri(session, uri);
                return self
                    .shared
                    .listeners
                    .listen(session, id, params, permits, sink);
            }
            (Era::Legacy, "ping") => Ok(json!({})),
            (Era::Legacy, "logging/setLevel") => self.set_level(session, &params),
            (Era::Modern, "server/discover") => Ok(self.discover(scope.now)),
            (_, m) if skills::is_skills_method(m) => {
                return self.handle_skills(session, id, m, &params, &scope);
            }
            (_, m) if m.starts_with("tasks/") => {
                return self.handle_tasks(session, id, m, &params, &scope, sink);
            }
            _ => Err(ErrorObject::method_not_found(method)),
        };
        Handled::Reply(self.shared.results.respond(id, result, &scope))
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
        self.with_apps_capability(self.with_skills_capability(Value::Object(caps)))
    }

    fn discover(&self, now: Timestamp) -> Value {
        let mut obj = Map::new();
        obj.insert("supportedVersions".into(), json!(supported_versions()));
        let caps = self.with_task_capabilities(self.capabilities(), ProtocolVersion::LATEST_MODERN);
        obj.insert("capabilities".into(), caps);
        if let Some(i) = &self.shared.config.instructions {
            obj.insert("instructions".into(), json!(i));
        }
        self.shared.results.cacheable(
            obj,
            &RequestScope {
                era: Era::Modern,
                version: ProtocolVersion::LATEST_MODERN,
                client_capabilities: crate::context::no_capabilities(),
                log_level: None,
                progress_token: None,
                now,
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
        let mut principal = None;
        let round = if scope.era == Era::Modern {
            principal = session.principal().map(|p| p.subject);
            let binding = Binding {
                method,
                target,
                principal: principal.as_deref(),
            };
            let (mut responses, state) = match params.remove("requestState") {
                None | Some(Value::Null) => (Map::new(), None),
                Some(Value::String(sealed)) => {
                    self.shared.sealer.open(&sealed, &binding, scope.now.wall)?
                }
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
        let progress_token = scope.progress_token.clone();
        let input = match &round {
            Some(r) => InputMode::RoundTrip(r.clone()),
            None => InputMode::Requests(session.client_calls().clone()),
        };
        let cancel = guard.token();
        // A legacy request whose client declared a capability it can be asked through
        // (sampling, elicitation, roots) may queue server-to-client requests.
        let may_ask = round.is_none()
            && ["sampling", "elicitation", "roots"]
                .iter()
                .any(|c| scope.client_capabilities.get(c).is_some());
        // A request that can emit nothing gets the shared closed queue: no allocation.
        let outbound = if progress_token.is_some() || scope.log_level.is_some() || may_ask {
            Outbound::to(sink.clone())
        } else {
            Outbound::closed()
        };
        let context = ToolContext::from_inner(ContextInner {
            request_id: Some(id.clone()),
            tool_name: target.to_owned(),
            meta,
            progress_token,
            cancel: cancel.clone(),
            sink: sink.clone(),
            outbound,
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
            round: round.map(|trip| jobs::Round { trip, principal }),
            cancel,
        })
    }

    /// After an MRTR-capable request ran (at `now`): the `InputRequiredResult` (or
    /// missing-capability error) its round calls for, if any.
    fn round_outcome(
        &self,
        now: Timestamp,
        method: &'static str,
        target: &str,
        round: Option<&jobs::Round>,
    ) -> Option<Result<Value, ErrorObject>> {
        let jobs::Round {
            trip: round,
            principal,
        } = round?;
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
        let binding = Binding {
            method,
            target,
            principal: principal.as_deref(),
        };
        let sealed =
            match self
                .shared
                .sealer
                .seal_at(&binding, &round.responses, state.as_ref(), now.wall)
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
}

struct Prepared {
    guard: session::InFlight,
    context: ToolContext,
    /// The round (2026-07-28), with the principal its `requestState` is bound to.
    round: Option<jobs::Round>,
    cancel: CancellationToken,
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
mod apps_tests;
#[cfg(test)]
mod ask_tests;
#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod emit_tests;
#[cfg(test)]
mod skills_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod time_tests;
#[cfg(test)]
mod transmit_tests;
