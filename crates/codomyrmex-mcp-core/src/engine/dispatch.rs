//! Dispatch: the engine's entry points (`handle*`, at a `now` or at the injected clock's),
//! a batch, the era and version a request is served under, the lifecycle requests
//! (`initialize`, `logging/setLevel`, `server/discover`), the routing of every request to its
//! family, and what an MRTR-capable request is set up with and ends with.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::sessions::Sessions;
use super::*;

impl Engine {
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
                Sessions::notification(session, &method, params.unwrap_or_default());
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
            let capabilities = |v| self.shared.tasks.with_capabilities(self.capabilities(), v);
            return self
                .shared
                .sessions
                .initialize(session, &id, &params, capabilities);
        }
        let scope = match Sessions::scope(now, session, method, meta) {
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
                    self.shared.access.grant(session),
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
                    self.shared.access.grant(session),
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
                    self.shared.access.grant(session),
                ));
            }
            (_, "completion/complete") if has_prompts || has_resources => {
                return self.complete_argument(session, id, &params, scope);
            }
            (Era::Modern, "subscriptions/listen") => {
                let permits = |uri: &str| self.shared.access.permits_uri(session, uri);
                return self
                    .shared
                    .listeners
                    .listen(session, id, params, permits, sink);
            }
            (Era::Legacy, "ping") => Ok(json!({})),
            (Era::Legacy, "logging/setLevel") => Sessions::set_level(session, &params),
            (Era::Modern, "server/discover") => Ok(self.discover(scope.now)),
            (_, m) if skills::is_skills_method(m) => {
                return self.handle_skills(session, id, m, &params, &scope);
            }
            (_, m) if m.starts_with("tasks/") => {
                return self.shared.tasks.handle(
                    session,
                    id,
                    m,
                    &params,
                    &scope,
                    sink,
                    self.host(),
                );
            }
            _ => Err(ErrorObject::method_not_found(method)),
        };
        Handled::Reply(self.shared.results.respond(id, result, &scope))
    }

    fn discover(&self, now: Timestamp) -> Value {
        let mut obj = Map::new();
        obj.insert("supportedVersions".into(), json!(supported_versions()));
        let caps = self
            .shared
            .tasks
            .with_capabilities(self.capabilities(), ProtocolVersion::LATEST_MODERN);
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

    /// Sets up an MRTR-capable request (`tools/call`, `prompts/get`, `resources/read`): its
    /// in-flight guard, round state and context.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn prepare(
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
            None => InputMode::Requests(session.asker()),
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
    pub(in crate::engine) fn round_outcome(
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

/// What an MRTR-capable request is set up with ([`Engine::prepare`]).
pub(super) struct Prepared {
    /// Its entry in the session's in-flight table, while it runs.
    pub(super) guard: session::InFlight,
    /// The handler's context.
    pub(super) context: ToolContext,
    /// The round (2026-07-28), with the principal its `requestState` is bound to.
    pub(super) round: Option<jobs::Round>,
    /// Its cancellation.
    pub(super) cancel: CancellationToken,
}
