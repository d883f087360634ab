//! The protocol engine: MCP semantics with no I/O.
//!
//! The engine takes decoded [`IncomingMessage`]s and a [`Session`], and returns what to send
//! back ([`Handled`]). Work that must wait (a tool call) comes back as a future for the
//! transport to drive; dropping that future cancels the work. Notifications produced while a
//! request runs go to the [`MessageSink`] the transport passed in with the request.
//!
//! The engine never touches sockets, pipes, HTTP or the clock beyond tokio's timers. Both
//! protocol eras share it: a request carrying modern `_meta` is served statelessly under
//! `2026-07-28`; an `initialize` request opens a legacy session on the [`Session`] it arrived on.

mod limits;
mod session;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::config::McpServerConfig;
use crate::context::{ContextInner, MessageSink, ToolContext};
use crate::registry::{BoxFuture, McpToolRegistry, RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::wire::jsonrpc::Decoded;
use crate::wire::{
    ContentBlock, Era, ErrorCode, ErrorObject, Implementation, IncomingMessage, LoggingLevel,
    OutgoingMessage, ProtocolVersion, RequestId,
};

use limits::RateLimiter;
pub use session::Session;

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
    client_capabilities: Value,
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
    server_info: Implementation,
    limiter: RateLimiter,
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
        let server_info = Implementation::new(config.name.clone(), config.version.clone());
        let limiter = RateLimiter::new(config.rate_limit, config.tool_rate_limits.clone());
        Self {
            shared: Arc::new(Shared {
                config,
                registry,
                server_info,
                limiter,
            }),
        }
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
        Arc::new(Session::new(Arc::new(Semaphore::new(
            self.shared.config.max_concurrent_requests.max(1),
        ))))
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
                        client_capabilities: caps.clone(),
                        log_level,
                    });
                }
                Some(v) if session.negotiated() == Some(v) => {}
                _ => return Err(self.unsupported_version(text)),
            }
        }
        if let Some(version) = session.negotiated() {
            return Ok(RequestScope {
                era: Era::Legacy,
                version,
                client_capabilities: session.client_capabilities(),
                log_level: session.log_level(),
            });
        }
        if method == "ping" {
            // Legacy clients may ping before initialising.
            return Ok(RequestScope {
                era: Era::Legacy,
                version: ProtocolVersion::LATEST_LEGACY,
                client_capabilities: json!({}),
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
        if method == "initialize" {
            return self.initialize(session, &id, &params);
        }
        let scope = match self.scope(session, method, &params) {
            Ok(s) => s,
            Err(e) => return error(&id, e),
        };
        let result = match (scope.era, method) {
            (_, "tools/call") => return self.call_tool(session, id, params, scope, sink),
            (_, "tools/list") => self.list_tools(&params, &scope),
            (Era::Legacy, "ping") => Ok(json!({})),
            (Era::Legacy, "logging/setLevel") => self.set_level(session, &params),
            (Era::Modern, "server/discover") => Ok(self.discover()),
            _ => Err(ErrorObject::method_not_found(method)),
        };
        match result {
            Ok(result) => Handled::Reply(OutgoingMessage::Response {
                id,
                result: self.finish_result(result, &scope),
            }),
            Err(e) => error(&id, e),
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
                    json!({"name": self.shared.server_info.name, "version": self.shared.server_info.version}),
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
        json!({
            "tools": {"listChanged": true},
            "logging": {},
        })
    }

    fn discover(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("supportedVersions".into(), json!(supported_versions()));
        obj.insert("capabilities".into(), self.capabilities());
        if let Some(i) = &self.shared.config.instructions {
            obj.insert("instructions".into(), json!(i));
        }
        self.cacheable(
            obj,
            &RequestScope {
                era: Era::Modern,
                version: ProtocolVersion::LATEST_MODERN,
                client_capabilities: json!({}),
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
        result.insert("capabilities".into(), self.capabilities());
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
        let mut obj = Map::new();
        obj.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        Ok(self.cacheable(obj, scope))
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
        let Some(guard) = session.begin_request(id.clone()) else {
            return error(
                &id,
                ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    "Invalid request: a request with this id is already in progress",
                ),
            );
        };
        let meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let progress_token = meta
            .get("progressToken")
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let cancel = guard.token();
        let context = ToolContext::from_inner(ContextInner {
            request_id: Some(id.clone()),
            tool_name: name.clone(),
            meta,
            progress_token,
            cancel: cancel.clone(),
            sink: sink.clone(),
            log_level: scope.log_level,
            era: scope.era,
            protocol_version: scope.version,
            client_capabilities: scope.client_capabilities.clone(),
            principal: session.principal(),
            requester: (scope.era == Era::Legacy).then(|| {
                Arc::new(session::SessionRequester(session.clone()))
                    as Arc<dyn crate::context::ClientRequester>
            }),
        });
        let engine = self.clone();
        let permits = session.permits();
        Handled::Pending(Box::pin(async move {
            let _guard = guard;
            let permit = tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                p = permits.acquire_owned() => p.ok(),
            };
            let output = engine
                .run_tool(&tool, &name, arguments, context, &cancel)
                .await?;
            drop(permit);
            let result = engine.call_tool_result(&tool, output, &scope);
            Some(OutgoingMessage::Response {
                id,
                result: engine.finish_result(result, &scope),
            })
        }))
    }

    /// Runs a tool under its rate limit and timeout. `None` when the client cancelled.
    async fn run_tool(
        &self,
        tool: &RegisteredTool,
        name: &str,
        arguments: Map<String, Value>,
        context: ToolContext,
        cancel: &CancellationToken,
    ) -> Option<ToolOutput> {
        if let Err(retry_after) = self.shared.limiter.check(name) {
            return Some(ToolOutput::failure(
                McpErrorDetail::new(
                    "RATE_LIMITED",
                    format!(
                        "Rate limit exceeded for tool {name}; retry in {} ms",
                        retry_after.as_millis()
                    ),
                )
                .with_details(Map::from_iter([(
                    "retry_after_ms".to_owned(),
                    json!(u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX)),
                )])),
            ));
        }
        let timeout = tool
            .settings
            .timeout
            .or_else(|| self.shared.config.tool_timeouts.get(name).copied())
            .unwrap_or(self.shared.config.tool_timeout);
        let run = tool.invoke(arguments, context);
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            r = tokio::time::timeout(timeout, run) => Some(match r {
                Ok(output) => output,
                Err(_) => {
                    cancel.cancel();
                    ToolOutput::failure(timeout_error(name, timeout))
                }
            }),
        }
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
            obj.insert(
                "content".into(),
                serde_json::to_value(blocks).unwrap_or_else(|_| json!([])),
            );
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
        obj.insert(
            "content".into(),
            serde_json::to_value(blocks).unwrap_or_else(|_| json!([])),
        );
        if let Some(data) = data {
            obj.insert("structuredContent".into(), Value::Object(data.clone()));
        }
        Value::Object(obj)
    }
}

fn timeout_error(name: &str, timeout: Duration) -> McpErrorDetail {
    McpErrorDetail::new(
        "TIMEOUT",
        format!(
            "Tool {name} did not finish within {} ms and was cancelled",
            timeout.as_millis()
        ),
    )
}

/// Every protocol version served, newest first.
pub fn supported_versions() -> Vec<&'static str> {
    ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect()
}

fn encode_cursor(after: &str) -> String {
    after.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_cursor(cursor: &str) -> Option<String> {
    if !cursor.len().is_multiple_of(2) || cursor.len() > 512 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..cursor.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(cursor.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests;
