//! The client's reader side: each message the transport hands in goes to the request
//! waiting for it, to a handler (server requests and log messages go to the handlers of the
//! request on whose stream they arrived, if it set its own; progress) or to the
//! notification queue, until the transport ends; then every waiting request fails. It sends
//! nothing of its own but the answers to server requests, and the refusals of those past
//! [`ClientLimits::server_requests`](super::ClientLimits::server_requests) (sent before it
//! reads on, so a flood waits for the server to read them rather than piling up). The
//! notification queue is bounded in count and bytes ([`ClientLimits`](super::ClientLimits)).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::proto::{self, InputRequest, ServerMessage};
use super::{ClientError, ClientHandlers, Inbound, Outgoing, Shared, lock};
use crate::wire::{ErrorCode, ErrorObject, RequestId};

/// The reader side: routes each arriving message to its waiter, handler or the notification
/// queue, until the transport ends.
pub(super) async fn dispatch(
    mut inbound: super::inbound::InboundRx,
    shared: Arc<Shared>,
    outbox: mpsc::WeakSender<Outgoing>,
    notifications: mpsc::Sender<(Value, usize)>,
) {
    let mut last_failure = None;
    while let Some(queued) = inbound.recv().await {
        // Its share of the queue's byte budget is given back once it is handled.
        let (bytes, on_stream) = match queued.item {
            Inbound::Message(bytes) => (bytes, None),
            Inbound::OnStream { bytes, request } => (bytes, Some(request)),
            Inbound::Failed {
                id: Some(id),
                status,
                message,
            } => {
                if let Some(w) = lock(&shared.table).take(&id) {
                    let _ = w.send(Err(ClientError::Transport { status, message }));
                }
                continue;
            }
            Inbound::Failed {
                id: None, message, ..
            } => {
                tracing::debug!("client transport: {message}");
                last_failure = Some(message);
                continue;
            }
        };
        match proto::classify(&bytes) {
            ServerMessage::Response { id, outcome } => {
                let waiter = lock(&shared.table).take(&id);
                match waiter {
                    Some(w) => {
                        let _ = w.send(outcome.map_err(ClientError::Server));
                    }
                    None => tracing::debug!("client: a response to unknown id {id}"),
                }
            }
            ServerMessage::Request { id, method, params } => {
                // The handlers of the request on whose stream it came, if it set its own.
                let own = on_stream
                    .as_ref()
                    .and_then(|r| lock(&shared.own).get(r).and_then(|h| h.input.clone()));
                let refusal = answer(&shared, &outbox, id.clone(), method, params, own);
                if let Some(error) = refusal {
                    // Refused at once, never queued: the server hears why.
                    if let Some(outbox) = outbox.upgrade() {
                        let _ = outbox
                            .send(proto::answer_bytes(&id, &Err(error)).into())
                            .await;
                    }
                }
            }
            ServerMessage::Notification { method, params } => {
                match method.as_str() {
                    "notifications/cancelled" => {
                        // The server withdrew a request it sent: its handler stops unanswered.
                        let id = params
                            .get("requestId")
                            .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
                        if let Some(task) = id.and_then(|i| lock(&shared.answering).remove(&i)) {
                            task.abort();
                        }
                    }
                    "notifications/progress" => {
                        let token = params.get("progressToken").and_then(Value::as_str);
                        let handler = token.and_then(|t| lock(&shared.progress).get(t).cloned());
                        if let Some(h) = handler {
                            h(params.clone());
                        }
                    }
                    "notifications/message" => {
                        // The request's own handler, if the message came on its stream and
                        // it set one; else the client's.
                        let own = on_stream
                            .as_ref()
                            .and_then(|id| lock(&shared.own).get(id).and_then(|h| h.log.clone()));
                        if let Some(h) = own.as_ref().or(shared.handlers.logging_handler()) {
                            h(params.clone());
                        }
                    }
                    m => {
                        if let Some(list) = proto::list_changed_method(m) {
                            lock(&shared.cache).invalidate(list);
                        }
                    }
                }
                let note = json!({"method": method, "params": params});
                keep(&shared, &notifications, note, bytes.len());
            }
            ServerMessage::Unaddressed(error) => {
                let note = json!({"error": error.message, "code": error.code});
                keep(&shared, &notifications, note, bytes.len());
            }
            ServerMessage::Invalid(why) => {
                tracing::debug!("client: an unreadable message from the server: {why}");
            }
        }
    }
    let waiters = {
        let mut table = lock(&shared.table);
        shared.closed.store(true, Ordering::Release);
        if let Some(reason) = last_failure {
            *lock(&shared.close_reason) = Some(reason);
        }
        table.drain()
    };
    let reason = lock(&shared.close_reason).clone();
    for w in waiters {
        let _ = w.send(Err(match &reason {
            Some(message) => ClientError::Transport {
                status: None,
                message: message.clone(),
            },
            None => ClientError::Closed,
        }));
    }
}

/// Starts answering the server's request `id` in a task of its own, unless the client is
/// already answering its [`server_requests`](super::ClientLimits::server_requests) bound of
/// them or one with the same id: then the error to answer with.
fn answer(
    shared: &Arc<Shared>,
    outbox: &mpsc::WeakSender<Outgoing>,
    id: RequestId,
    method: String,
    params: Value,
    own: Option<ClientHandlers>,
) -> Option<ErrorObject> {
    // Held while the task is entered below, so it cannot leave before.
    let mut answering = lock(&shared.answering);
    if answering.contains_key(&id) {
        return Some(ErrorObject::new(
            ErrorCode::INVALID_REQUEST,
            "the client is already answering a request with this id",
        ));
    }
    let bound = shared.limits.server_requests;
    if answering.len() >= bound {
        return Some(ErrorObject::new(
            ErrorCode::UNAVAILABLE,
            format!(
                "the client is already answering {bound} requests of this server; try again later"
            ),
        ));
    }
    let task_shared = shared.clone();
    let outbox = outbox.clone();
    let task_id = id.clone();
    let task = tokio::spawn(async move {
        let shared = task_shared;
        let handlers = own.as_ref().unwrap_or(&shared.handlers);
        let outcome = handlers
            .answer(InputRequest::classify(&method, params))
            .await;
        lock(&shared.answering).remove(&task_id);
        // The client closed meanwhile: nobody to answer for.
        if let Some(outbox) = outbox.upgrade() {
            let _ = outbox
                .send(proto::answer_bytes(&task_id, &outcome).into())
                .await;
        }
    });
    answering.insert(id, task.abort_handle());
    None
}

/// Keeps `note` (`len` bytes as the server sent it) for [`next_notification`], unless the
/// queue is full in count or in bytes ([`ClientLimits`](super::ClientLimits)): then it is
/// not kept (its handlers saw it already).
///
/// [`next_notification`]: super::McpClient::next_notification
fn keep(shared: &Shared, queue: &mpsc::Sender<(Value, usize)>, note: Value, len: usize) {
    let bound = shared.limits.notification_bytes;
    let queued = shared.queued_bytes.fetch_add(len, Ordering::AcqRel);
    if queued.saturating_add(len) > bound || queue.try_send((note, len)).is_err() {
        shared.queued_bytes.fetch_sub(len, Ordering::AcqRel);
        tracing::debug!("client: a notification was not kept: too many wait to be taken");
    }
}
