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
mod dispatch;
use dispatch::Prepared;
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
mod session_state;
mod sessions;
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
    /// Authorization: the policy, asked per request and per name.
    access: authz::Access,
    /// Making sessions, and negotiating with them.
    sessions: sessions::Sessions,
    /// Shaping and capping results.
    results: results::Results,
    /// Admission, rate limit, timeout and unwind guard of every handler invocation.
    policy: ExecutionPolicy,
    /// Created once per engine: every `requestState` it hands out stays verifiable.
    sealer: Arc<Sealer>,
    /// Tasks: the live table and its records, and the `tasks/*` family.
    tasks: tasks::Tasks,
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
            .field("server_info", self.shared.sessions.server_info())
            .finish_non_exhaustive()
    }
}

/// An error answer to request `id`.
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
            tasks: s.tasks.store().config().clone(),
            sealer: Some(s.sealer.clone()),
            time: Some(s.platform.time.clone()),
            entropy: Some(s.platform.entropy.clone()),
            shared_tasks: s.tasks.store().shared.clone(),
        }
    }

    /// This engine, also serving `resources` (and advertising the `resources` capability).
    /// Call it while setting up, before serving. A thin wrapper of [`EngineBuilder`]: the
    /// new engine keeps this one's `requestState` key and task store.
    pub fn with_resources(&self, resources: Arc<McpResourceRegistry>) -> Self {
        self.rebuild()
            .resources(resources)
            .build_sharing_tasks(self.shared.tasks.store().clone())
    }

    /// This engine, also serving `prompts` (and advertising the `prompts` capability).
    /// Call it while setting up, before serving. A thin wrapper of [`EngineBuilder`]: the
    /// new engine keeps this one's `requestState` key and task store.
    pub fn with_prompts(&self, prompts: Arc<McpPromptRegistry>) -> Self {
        self.rebuild()
            .prompts(prompts)
            .build_sharing_tasks(self.shared.tasks.store().clone())
    }

    /// This engine, also serving `skills` (the Skills extension; see
    /// [`EngineBuilder::skills`]). Call it while setting up, before serving.
    pub fn with_skills(&self, skills: Arc<crate::skills::McpSkillRegistry>) -> Self {
        self.rebuild()
            .skills(skills)
            .build_sharing_tasks(self.shared.tasks.store().clone())
    }

    /// This engine with task limits `config`. Call it while setting up, before serving.
    pub fn with_task_config(&self, config: TaskConfig) -> Self {
        self.rebuild().task_config(config).build()
    }

    /// This engine with its task records shared through `store` (see
    /// [`EngineBuilder::task_store`](EngineBuilder::task_store)). Call it while
    /// setting up, before serving: tasks created before are not carried over.
    pub fn with_task_store(
        &self,
        store: Arc<dyn crate::task_store::TaskStore>,
        instance: impl Into<String>,
        lease: std::time::Duration,
    ) -> Self {
        self.rebuild().task_store(store, instance, lease).build()
    }

    /// The task limits.
    pub fn task_config(&self) -> &TaskConfig {
        self.shared.tasks.store().config()
    }

    /// The driver's handle on this engine's tasks in a shared
    /// [`TaskStore`](crate::task_store::TaskStore); `None` when the engine keeps its tasks to
    /// itself (no store configured).
    pub fn task_sync(&self) -> Option<TaskSync> {
        self.shared.tasks.sync()
    }

    /// Sends what 2025-11-25 task `task_id` of `session` sends the client (its
    /// server-to-client requests and notifications) to `sink` from now on: the stream of a
    /// `tasks/result` another instance serves for it. `false` when this engine does not run
    /// that task for that session.
    pub fn relay_task(
        &self,
        session: &Arc<Session>,
        task_id: &str,
        sink: Arc<dyn MessageSink>,
    ) -> bool {
        self.shared.tasks.relay(session, task_id, sink)
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
        self.shared.sessions.open()
    }

    /// A session for one stateless (`2026-07-28`) request, as Streamable HTTP makes for each
    /// POST. Unlike [`new_session`](Self::new_session)'s, these sessions share one
    /// concurrency bound: `max_concurrent_requests` applies across all of them.
    pub fn new_stateless_session(&self) -> Arc<Session> {
        self.shared.sessions.open_stateless()
    }

    /// The earliest instant [`handle_timeout`](Self::handle_timeout) has work (a task's TTL,
    /// the orphan check of 2025-11-25 tasks), if any. Re-read after every `handle`.
    pub fn poll_timeout(&self) -> Option<std::time::Instant> {
        crate::invocation::TimerHost::poll_timeout(self.shared.tasks.store().as_ref())
    }

    /// Fires what is due at `now`: expires tasks past their TTL, and stops the running
    /// 2025-11-25 tasks whose session is gone. Nothing due: nothing happens.
    pub fn handle_timeout(&self, now: std::time::Instant) {
        crate::invocation::TimerHost::handle_timeout(self.shared.tasks.store().as_ref(), now);
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
