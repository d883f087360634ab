//! `subscriptions/listen` (2026-07-28): acknowledges a filter, then relays matching
//! changes as notifications until the request is cancelled. The notifications are queued as
//! values in the stream's `Outbound` queue (its bound, list changes and resource updates
//! coalesced), every event ready at a wake-up first, then drained to the stream.

use std::sync::Arc;

use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::wire::{OutgoingMessage, RequestId};

impl Engine {
    /// `subscriptions/listen`: acknowledges the filter, then relays matching changes until
    /// the client cancels (closes the stream, or sends `notifications/cancelled` on stdio).
    pub(super) fn listen(
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
                        // A URI the caller may not read is not subscribed to (no answer
                        // tells it apart from one that exists).
                        .filter(|u| self.permits_uri(session, u))
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
        let subscribers: Vec<_> = match &self.shared.resources {
            Some(registry) => uris.iter().map(|u| registry.note_subscribed(u)).collect(),
            None => Vec::new(),
        };
        // The stream's messages are queued as values and drained to its sink: every event
        // ready at a wake-up is queued first, so a burst of list changes is one notice.
        let out = crate::outbound::Outbound::to(sink.clone());
        let subscription = serde_json::to_value(&id).unwrap_or(Value::Null);
        let _ = scope;
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
