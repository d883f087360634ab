//! `subscriptions/listen` (2026-07-28): acknowledges a filter, then relays matching
//! changes as notifications until the request is cancelled. The notifications are queued as
//! values in the stream's `Outbound` queue (its bound, list changes and resource updates
//! coalesced), every event ready at a wake-up first, then drained to the stream. The
//! [`Listeners`] own it, and every other way a change reaches a client.

use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::wire::{OutgoingMessage, RequestId};

/// Who hears about changes: the registries' change feeds, changes other instances announced,
/// log messages for sessions, the notices legacy sessions are sent, and `subscriptions/listen`
/// streams. Reached through [`Engine::listeners`].
pub struct Listeners {
    registry: Arc<McpToolRegistry>,
    resources: Option<Arc<McpResourceRegistry>>,
    prompts: Option<Arc<McpPromptRegistry>>,
    /// Changes other instances announced, and log messages for sessions.
    announced: crate::sync::Broadcast<ServerEvent>,
}

impl std::fmt::Debug for Listeners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listeners").finish_non_exhaustive()
    }
}

impl Listeners {
    /// Listeners of the changes of these registries.
    pub(super) fn new(
        registry: Arc<McpToolRegistry>,
        resources: Option<Arc<McpResourceRegistry>>,
        prompts: Option<Arc<McpPromptRegistry>>,
    ) -> Self {
        Self {
            registry,
            resources,
            prompts,
            announced: crate::sync::Broadcast::new(1024),
        }
    }

    /// A stream of list changes and resource updates, for transports to relay.
    pub fn events(&self) -> EventStream {
        let mut events = self.local_events();
        events.remote = Some(self.announced.subscribe());
        events
    }

    /// Relays `event`, a change another instance announced (see [`crate::change_bus`]), to
    /// this engine's listeners as if it were its own; this engine's registries do not change.
    pub fn announce(&self, event: ServerEvent) {
        self.announced.send(event);
    }

    /// Sends a log message that belongs to no request (`logger` and `data` as in
    /// `notifications/message`) to every 2025-11-25 session that set a log level at or below
    /// `level`: over stdio to the session, over Streamable HTTP on its standalone (GET)
    /// stream. 2026-07-28 clients never get it: their logging is request-scoped
    /// ([`ToolContext::log`] is the way to log within a request, in both eras).
    pub fn log_to_sessions(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        let mut params = Map::new();
        params.insert("level".into(), json!(level.as_str()));
        if let Some(logger) = logger {
            params.insert("logger".into(), json!(logger));
        }
        params.insert("data".into(), data);
        self.announced.send(ServerEvent::Log {
            level,
            params: Value::Object(params),
        });
    }

    /// The changes of this engine's own registries only, without those of other instances
    /// ([`announce`](Self::announce)): what a change bus publishes.
    pub fn local_events(&self) -> EventStream {
        let mut tools = self.registry.subscribe();
        tools.mark_unchanged();
        EventStream {
            tools,
            prompts: self.prompts.as_ref().map(|p| {
                let mut r = p.subscribe();
                r.mark_unchanged();
                r
            }),
            resources: self.resources.as_ref().map(|r| {
                let mut w = r.subscribe_list();
                w.mark_unchanged();
                w
            }),
            updates: self.resources.as_ref().map(|r| r.subscribe_updates()),
            remote: None,
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
                return session
                    .is_subscribed(uri)
                    .then(|| updated_notification(uri));
            }
            ServerEvent::Log { level, params } => match session.log_level() {
                Some(min) if *level >= min => ("notifications/message", params.clone()),
                _ => return None,
            },
        };
        Some(OutgoingMessage::Notification { method, params })
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

    /// Takes `event` for `session` at `now` (quinn's `handle_event`): the notification a
    /// legacy session should hear ([`legacy_notification`](Self::legacy_notification))
    /// is queued as a value in the session's own queue, which its transport takes with
    /// [`Session::poll_transmit`](Session::poll_transmit). A list change or resource
    /// update already queued is not queued again; at the queue's bound anything else is
    /// dropped (change notices are advisory). Returns whether `session` will hear of it.
    pub fn handle_event(
        &self,
        _now: crate::platform::Timestamp,
        session: &Session,
        event: &ServerEvent,
    ) -> bool {
        // A resource update is for the sessions that subscribed to its resource: most did
        // not, and for them no notification is built or weighed. The session checks under
        // its lock and builds it only for a subscriber.
        if let ServerEvent::ResourceUpdated(uri) = event {
            if session.negotiated().is_none() {
                return false;
            }
            return session.transmit_update(uri, || updated_notification(uri));
        }
        let Some(message) = self.legacy_notification(session, event) else {
            return false;
        };
        session.transmit(message)
    }

    /// `subscriptions/listen`: acknowledges the filter, then relays matching changes until
    /// the client cancels (closes the stream, or sends `notifications/cancelled` on stdio).
    pub(super) fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Map<String, Value>,
        permits_uri: impl Fn(&str) -> bool,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let filter = params
            .get("notifications")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let wants = |k: &str| filter.get(k).and_then(Value::as_bool).unwrap_or(false);
        let tools = wants("toolsListChanged");
        let prompts = wants("promptsListChanged") && self.prompts.is_some();
        let resources = wants("resourcesListChanged") && self.resources.is_some();
        let uris: std::collections::HashSet<String> = if self.resources.is_some() {
            filter
                .get("resourceSubscriptions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .take(4096)
                        // A URI the caller may not read is not subscribed to (no answer
                        // tells it apart from one that exists).
                        .filter(|u| permits_uri(u))
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
        // Counted as subscriptions while the stream lives.
        let subscribers: Vec<_> = match &self.resources {
            Some(registry) => uris.iter().map(|u| registry.note_subscribed(u)).collect(),
            None => Vec::new(),
        };
        // The stream's messages are queued as values and drained to its sink: every event
        // ready at a wake-up is queued first, so a burst of list changes is one notice.
        let out = crate::outbound::Outbound::to(sink.clone());
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        Handled::Pending(Box::pin(async move {
            let cancel = guard.token();
            let _guard = guard;
            let _subscribers = subscribers;
            let tag = |mut params: Map<String, Value>| {
                params.insert(
                    "_meta".into(),
                    json!({ META_SUBSCRIPTION_ID: subscription }),
                );
                Value::Object(params)
            };
            let mut first = Map::new();
            first.insert("notifications".into(), Value::Object(ack));
            out.push(OutgoingMessage::Notification {
                method: "notifications/subscriptions/acknowledged",
                params: tag(first),
            });
            out.drain();
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
                // This event and every one ready now, then the queue to the stream.
                let ready = std::iter::once(event).chain(std::iter::from_fn(|| {
                    events.next().now_or_never().flatten()
                }));
                for event in ready {
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
                    out.push(OutgoingMessage::Notification {
                        method,
                        params: tag(params),
                    });
                }
                out.drain();
            }
        }))
    }
}

/// `notifications/resources/updated` for `uri`.
fn updated_notification(uri: &str) -> OutgoingMessage {
    OutgoingMessage::Notification {
        method: "notifications/resources/updated",
        params: json!({"uri": uri}),
    }
}
