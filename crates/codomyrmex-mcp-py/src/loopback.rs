//! The in-memory connection behind `MCPServer.handle_request`: the library's in-memory client
//! ([`McpClient::in_memory_with`]) of the server, carrying the caller's JSON-RPC messages. A
//! persistent connection, so a legacy (`initialize`) session lives on across calls.
//!
//! The client speaks the legacy form, so a request's params reach the server as the caller
//! wrote them (`initialize` and a 2026-07-28 request's `_meta` included), and each request is
//! one round ([`McpClient::request_round`]): an `InputRequiredResult` comes back to the caller
//! as it is. The client picks the request's id on the wire; the response carries the caller's.
//! Notifications and responses of the caller's go to the server as they are. What the client
//! cannot carry is refused before anything is sent: a request id that is not a string or an
//! integer, or one already pending, an envelope that is not JSON-RPC 2.0, params that are not
//! an object or an array, a message over the server's `max_message_size`.
//!
//! Server-to-client requests (a 2025-11-25 tool's elicitation, sampling or roots) are answered
//! by the client's handlers, which hand them to the [`ClientHandler`] of a call waiting on the
//! connection; with no waiting call that has one, they are answered at once with an error
//! (`-32601`), so the tool sees its request fail instead of waiting for its timeout.
//!
//! A waiting call's [`NotificationHandler`] receives its progress (when its request carries a
//! `progressToken`: the client's progress handler, the token given back as the caller's) and
//! log messages (the client's logging handler; the connection does not say which request a
//! log message belongs to, so it goes to a waiting call that has a handler). Both are queued
//! by the client's reader before it hands over the response, so each reaches the handler before
//! the call returns. Other notifications (list changes, resource updates) go to a waiting call
//! that has a handler when one is waiting; they are not ordered against responses. Each call's
//! handler runs on a task of the call's own, fed through a bounded queue (past its bound,
//! notifications for that call are dropped).

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use codomyrmex_mcp::client::{CallOptions, ClientHandlers, ClientOptions, ProgressHandler};
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::platform::BoxFuture;
use codomyrmex_mcp::wire::{ErrorCode, ErrorObject};
use codomyrmex_mcp::{Era, McpServer};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Answers a server-to-client request (the JSON-RPC request: `method` and `params`) with its
/// result, or the error message sent back instead.
pub(crate) type ClientHandler =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// Takes one notification of the server's (the whole JSON-RPC notification); the call's
/// next notification waits until it has returned.
pub(crate) type NotificationHandler = Arc<dyn Fn(Value) -> BoxFuture<'static, ()> + Send + Sync>;

/// Notifications queued for one call's handler; past this, that call's are dropped.
const NOTIFICATION_QUEUE: usize = 1024;

/// A call waiting for its response.
struct Waiting {
    handler: Option<ClientHandler>,
    /// The queue to the call's notification handler.
    notifications: Option<mpsc::Sender<Value>>,
}

/// The calls waiting on the connection, in the order they started.
#[derive(Default)]
struct Calls {
    next: u64,
    waiting: BTreeMap<u64, Waiting>,
    /// The callers' ids of the requests in flight, as JSON text.
    ids: HashSet<String>,
}

type Shared = Arc<Mutex<Calls>>;

fn lock(calls: &Shared) -> MutexGuard<'_, Calls> {
    calls.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The queue of a waiting call with a notification handler, the earliest first.
fn any_queue(calls: &Shared) -> Option<mpsc::Sender<Value>> {
    lock(calls)
        .waiting
        .values()
        .find_map(|w| w.notifications.clone())
}

/// Queues `notification` for a call's handler; a full or closed queue drops it.
fn offer(queue: Option<mpsc::Sender<Value>>, notification: Value) {
    if let Some(queue) = queue {
        let _ = queue.try_send(notification);
    }
}

/// A client handler for `method` that hands the request to a waiting call's handler.
fn relay(
    calls: &Shared,
    method: &'static str,
) -> impl Fn(Value) -> BoxFuture<'static, Result<Value, ErrorObject>> + Send + Sync + 'static {
    let calls = calls.clone();
    move |params: Value| {
        let handler = lock(&calls)
            .waiting
            .values()
            .find_map(|w| w.handler.clone());
        Box::pin(async move {
            let Some(handler) = handler else {
                return Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "handle_request has no client to answer {method}: pass on_client_request"
                    ),
                ));
            };
            let request = json!({"jsonrpc": "2.0", "method": method, "params": params});
            handler(request)
                .await
                .map_err(|message| ErrorObject::new(ErrorCode::INTERNAL_ERROR, message))
        })
    }
}

/// The client's handlers: every server request and log message goes to the waiting calls.
fn handlers(calls: &Shared) -> ClientHandlers {
    let logs = calls.clone();
    ClientHandlers::new()
        .sampling(relay(calls, "sampling/createMessage"))
        .elicitation(relay(calls, "elicitation/create"))
        .url_elicitation(relay(calls, "elicitation/create"))
        .roots_with(relay(calls, "roots/list"))
        .logging(move |params| {
            let note =
                json!({"jsonrpc": "2.0", "method": "notifications/message", "params": params});
            offer(any_queue(&logs), note);
        })
}

/// Removes a call from the waiting ones however it ends.
struct Registered<'a> {
    calls: &'a Shared,
    key: u64,
    id: String,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut calls = lock(self.calls);
        calls.waiting.remove(&self.key);
        calls.ids.remove(&self.id);
    }
}

/// The client end of an in-memory connection.
pub(crate) struct Loopback {
    client: Arc<McpClient>,
    calls: Shared,
    /// The server's `max_message_size`: a longer message is refused here.
    max_message_size: usize,
    /// Ends the task that hands other notifications on.
    closing: CancellationToken,
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.closing.cancel();
    }
}

impl Loopback {
    /// Opens a connection to `server`. Must run inside the runtime.
    pub(crate) fn open(server: &McpServer) -> Self {
        let calls = Shared::default();
        let options = ClientOptions {
            handlers: handlers(&calls),
            ..ClientOptions::default()
        };
        let client = Arc::new(McpClient::in_memory_with(server, Era::Legacy, options));
        let closing = CancellationToken::new();
        // Notifications no handler took (list changes, resource updates): to a waiting call.
        let (reader, others, stop) = (client.clone(), calls.clone(), closing.clone());
        tokio::spawn(async move {
            loop {
                let note = tokio::select! {
                    note = reader.next_notification() => note,
                    () = stop.cancelled() => None,
                };
                let Some(mut note) = note else { break };
                let method = note
                    .get("method")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if method.is_empty()
                    || method == "notifications/progress"
                    || method == "notifications/message"
                {
                    continue; // handled as they arrived, or an id-less error
                }
                if let Value::Object(fields) = &mut note {
                    fields.insert("jsonrpc".into(), json!("2.0"));
                }
                offer(any_queue(&others), note);
            }
        });
        Self {
            client,
            calls,
            max_message_size: server.engine().config().max_message_size,
            closing,
        }
    }

    /// Sends one message; for a request, waits for its response, with `handler` answering
    /// the server's requests and `on_notification` taking its notifications meanwhile.
    pub(crate) async fn send(
        &self,
        message: Value,
        handler: Option<ClientHandler>,
        on_notification: Option<NotificationHandler>,
    ) -> Result<Option<Value>, String> {
        let Value::Object(object) = &message else {
            return Err("a JSON-RPC message must be a JSON object".to_owned());
        };
        let text = message.to_string();
        if text.len() > self.max_message_size {
            return Err(format!(
                "the message is {} bytes, over the server's {}-byte limit (max_message_size)",
                text.len(),
                self.max_message_size
            ));
        }
        let closed = |e: ClientError| format!("the server connection is closed: {e}");
        // Notifications and responses go as they are; nothing answers them.
        let (Some(method), Some(id)) = (object.get("method"), object.get("id")) else {
            return self
                .client
                .send_raw(text.as_bytes())
                .await
                .map(|()| None)
                .map_err(closed);
        };
        if id.is_null() {
            return self
                .client
                .send_raw(text.as_bytes())
                .await
                .map(|()| None)
                .map_err(closed);
        }
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return Err(format!(
                "a request id must be a string or an integer, got {id}"
            ));
        }
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err("not a JSON-RPC 2.0 request: \"jsonrpc\" must be \"2.0\"".to_owned());
        }
        let Some(method) = method.as_str() else {
            return Err(format!("a request's method must be a string, got {method}"));
        };
        let params = match object.get("params") {
            None => json!({}),
            Some(p @ (Value::Object(_) | Value::Array(_))) => p.clone(),
            Some(p) => {
                return Err(format!(
                    "a request's params must be an object or an array, got {p}"
                ));
            }
        };
        let id_text = id.to_string();
        // The call's notification handler, on a task of its own that ends once the queue
        // closes (the call has its response and every sender is gone).
        let mut drain = None;
        let notifications = on_notification.map(|handler| {
            let (queue, mut queued) = mpsc::channel::<Value>(NOTIFICATION_QUEUE);
            drain = Some(tokio::spawn(async move {
                while let Some(notification) = queued.recv().await {
                    handler(notification).await;
                }
            }));
            queue
        });
        let registered = {
            let mut calls = lock(&self.calls);
            if !calls.ids.insert(id_text.clone()) {
                return Err(format!("a request with id {id_text} is already pending"));
            }
            let key = calls.next;
            calls.next += 1;
            calls.waiting.insert(
                key,
                Waiting {
                    handler,
                    notifications: notifications.clone(),
                },
            );
            Registered {
                calls: &self.calls,
                key,
                id: id_text,
            }
        };
        // Progress for a request that carries a token: the client sends its own token and
        // gives this call's back in each notification.
        let token = params.pointer("/_meta/progressToken").cloned();
        let progress = match (token, notifications) {
            (Some(token), Some(queue)) => Some(Arc::new(move |mut params: Value| {
                if let Value::Object(fields) = &mut params {
                    fields.insert("progressToken".into(), token.clone());
                }
                let note =
                    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params});
                offer(Some(queue.clone()), note);
            }) as ProgressHandler),
            _ => None,
        };
        let options = CallOptions {
            progress,
            ..CallOptions::default()
        };
        let outcome = self.client.request_round(method, &params, &options).await;
        drop(options);
        drop(registered);
        if let Some(drain) = drain {
            // Every notification before the response has been handled once this returns
            // (a handler that panicked has ended the drain: nothing is left to wait for).
            let _ = drain.await;
        }
        match outcome {
            Ok(result) => Ok(Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))),
            Err(ClientError::Server(error)) => {
                Ok(Some(json!({"jsonrpc": "2.0", "id": id, "error": error})))
            }
            Err(e) => Err(format!(
                "the server connection closed before answering: {e}"
            )),
        }
    }
}
