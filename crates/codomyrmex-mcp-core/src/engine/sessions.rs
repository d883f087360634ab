//! Sessions: making them (one per connection, or one per stateless request under a shared
//! bound), the era and version each request is served under, and the requests and
//! notifications of a legacy session's lifecycle (`initialize`, `notifications/initialized`,
//! `notifications/cancelled`, `logging/setLevel`). A session's own state is `session.rs`'s.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;

/// How the engine makes sessions and negotiates with them. Made once per engine.
pub(super) struct Sessions {
    /// The admission bound that stateless sessions share.
    stateless_gate: Arc<Gate>,
    /// `max_concurrent_requests`: the handlers a session's gate runs at once.
    running: usize,
    /// `max_queued_requests`: the handlers a session's gate lets wait.
    waiting: usize,
    /// The server's identity, as `initialize` answers it.
    server_info: Implementation,
    /// The configured `instructions`, as `initialize` answers them.
    instructions: Option<String>,
}

impl Sessions {
    /// Sessions as `config` bounds them, for the server `server_info` names.
    pub(super) fn new(config: &McpServerConfig, server_info: Implementation) -> Self {
        Self {
            stateless_gate: Arc::new(policy::gate(config)),
            running: config.max_concurrent_requests,
            waiting: config.max_queued_requests,
            server_info,
            instructions: config.instructions.clone(),
        }
    }

    /// The server's identity.
    pub(super) fn server_info(&self) -> &Implementation {
        &self.server_info
    }

    /// A fresh session, bounded by the configured concurrency.
    pub(super) fn open(&self) -> Arc<Session> {
        Arc::new(Session::with_gate(Arc::new(policy::bounded(
            self.running,
            self.waiting,
        ))))
    }

    /// A session for one stateless request; these share one concurrency bound.
    pub(super) fn open_stateless(&self) -> Arc<Session> {
        Arc::new(Session::one_shot(self.stateless_gate.clone()))
    }

    /// Takes a notification from the client: `initialized`, `cancelled`; others are ignored.
    pub(super) fn notification(session: &Session, method: &str, params: Map<String, Value>) {
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
    pub(super) fn scope(
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
                _ => return Err(Self::unsupported_version(text)),
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

    fn unsupported_version(requested: &str) -> ErrorObject {
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

    /// `initialize` (2025-11-25 and earlier): negotiates a version on `session` and answers
    /// with the server's identity and the `capabilities` of the negotiated version.
    pub(super) fn initialize(
        &self,
        session: &Session,
        id: &RequestId,
        params: &Map<String, Value>,
        capabilities_of: impl FnOnce(ProtocolVersion) -> Value,
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
        let caps = capabilities_of(version);
        result.insert("capabilities".into(), caps);
        result.insert(
            "serverInfo".into(),
            serde_json::to_value(&self.server_info).unwrap_or_else(|_| json!({})),
        );
        if let Some(i) = &self.instructions {
            result.insert("instructions".into(), json!(i));
        }
        Handled::Reply(OutgoingMessage::Response {
            id: id.clone(),
            result: Value::Object(result),
        })
    }

    /// `logging/setLevel` (2025-11-25 and earlier).
    pub(super) fn set_level(
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
}
