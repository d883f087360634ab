//! An in-memory connection to the engine, for `MCPServer.handle_request`: messages go in as
//! newline-delimited JSON, exactly as over stdio, and responses are matched to their
//! requests by id. A persistent connection, so a legacy (`initialize`) session lives on
//! across calls.
//!
//! Server-to-client requests (a 2025-11-25 tool's elicitation, sampling or roots) go to the
//! [`ClientHandler`] of a call waiting on the connection, whose answer is sent back; with no
//! waiting call that has one, they are answered at once with an error (`-32601`), so the
//! tool sees its request fail instead of waiting for its timeout.
//!
//! Notifications the server sends (progress, log messages, list changes) go to the
//! [`NotificationHandler`] of a waiting call, in the order the server sent them and before
//! that call's response: a progress notification to the call whose `progressToken` it
//! carries, any other to a waiting call that has a handler (the connection does not say which
//! request a log message belongs to; with one call at a time, it is that call's). With no
//! such call waiting, they are dropped. Each call's handler runs on a task of the call's own,
//! fed through a bounded queue, so the reader never waits for it (a handler may send
//! requests of its own) unless that call's queue is full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use codomyrmex_mcp::McpServer;
use codomyrmex_mcp::registry::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::{mpsc, oneshot};

/// Answers a server-to-client request (the whole JSON-RPC request) with its result, or the
/// error message sent back instead.
pub(crate) type ClientHandler =
    Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// Takes one notification of the server's (the whole JSON-RPC notification); the
/// connection reads on once it has returned.
pub(crate) type NotificationHandler = Arc<dyn Fn(Value) -> BoxFuture<'static, ()> + Send + Sync>;

/// A call waiting for its response, and who answers the server's requests and takes its
/// notifications meanwhile.
struct Waiter {
    reply: oneshot::Sender<Value>,
    handler: Option<ClientHandler>,
    /// The queue to the call's notification handler.
    notifications: Option<mpsc::Sender<Value>>,
    /// The request's `params._meta.progressToken`, as JSON text.
    progress_token: Option<String>,
}

/// The waiting call a notification goes to (see the module docs).
fn notification_queue(
    waiters: &HashMap<String, Waiter>,
    notification: &Value,
) -> Option<mpsc::Sender<Value>> {
    if notification.get("method").and_then(Value::as_str) == Some("notifications/progress") {
        let token = notification.pointer("/params/progressToken")?.to_string();
        return waiters
            .values()
            .find(|w| w.progress_token.as_deref() == Some(token.as_str()))
            .and_then(|w| w.notifications.clone());
    }
    waiters.values().find_map(|w| w.notifications.clone())
}

type Pending = Arc<Mutex<HashMap<String, Waiter>>>;
type Writer = Arc<tokio::sync::Mutex<WriteHalf<DuplexStream>>>;

/// JSON-RPC's "method not found", what a client without the capability answers.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "internal error": the handler failed.
const INTERNAL_ERROR: i64 = -32603;

/// Writes one line; false if the connection is closed.
async fn write_line(writer: &Writer, message: &Value) -> std::io::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    let mut writer = writer.lock().await;
    writer.write_all(line.as_bytes()).await?;
    writer.flush().await
}

/// Answers one server-to-client request: through `handler`, or with an error without one.
async fn answer(writer: Writer, request: Value, handler: Option<ClientHandler>) {
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let response = match handler {
        None => json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": METHOD_NOT_FOUND,
            "message": format!("handle_request has no client to answer {method}: pass on_client_request"),
        }}),
        Some(handler) => match handler(request).await {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(message) => json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": INTERNAL_ERROR,
                "message": message,
            }}),
        },
    };
    // A closed connection has no tool left to answer.
    let _ = write_line(&writer, &response).await;
}

/// The client end of an in-memory connection.
pub(crate) struct Loopback {
    writer: Writer,
    pending: Pending,
    /// The server's `max_message_size`: a longer line would be answered without an id.
    max_message_size: usize,
}

/// Notifications queued for one call's handler before the reader waits for it.
const NOTIFICATION_QUEUE: usize = 1024;

/// The largest line the connection buffers at once; the engine's own message limit applies.
const BUFFER: usize = 256 * 1024;

impl Loopback {
    /// Opens a connection to `server`. Must run inside the runtime.
    pub(crate) fn open(server: &McpServer) -> Self {
        let (client, server_end) = tokio::io::duplex(BUFFER);
        let (server_read, server_write) = tokio::io::split(server_end);
        let max_message_size = server.engine().config().max_message_size;
        let server = server.clone();
        tokio::spawn(async move {
            if let Err(e) = server.serve_stream(server_read, server_write).await {
                eprintln!("codomyrmex_mcp: in-memory connection ended: {e}");
            }
        });
        let (client_read, client_write) = tokio::io::split(client);
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(client_write));
        let pending: Pending = Arc::default();
        let replies = pending.clone();
        let answers = writer.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(client_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("method").is_some() {
                    if message.get("id").is_some() {
                        // A request of the server's: the handler of any waiting call that
                        // has one answers it (on a task of its own: the reader reads on).
                        let handler = replies
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .values()
                            .find_map(|w| w.handler.clone());
                        tokio::spawn(answer(answers.clone(), message, handler));
                    } else {
                        // A notification: queued before the reader reads on, so that it
                        // reaches the call's handler before the response that follows it.
                        let queue = notification_queue(
                            &replies.lock().unwrap_or_else(PoisonError::into_inner),
                            &message,
                        );
                        if let Some(queue) = queue {
                            // A closed queue: its call has its answer; nothing waits.
                            let _ = queue.send(message).await;
                        }
                    }
                    continue;
                }
                let Some(id) = message.get("id").map(Value::to_string) else {
                    continue;
                };
                let waiter = replies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&id);
                if let Some(waiter) = waiter {
                    let _ = waiter.reply.send(message);
                }
            }
            // The connection is gone: waiters see their sender dropped.
            replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        });
        Self {
            writer,
            pending,
            max_message_size,
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
        // Only what the engine answers by id may wait for an answer: a request whose id is
        // not a string or an integer, or whose line is over the size limit, is answered
        // with a null id, which no waiter could be matched to.
        let request_id = match (object.get("method"), object.get("id")) {
            (Some(_), Some(id)) if id.is_string() || id.is_i64() || id.is_u64() => {
                Some(id.to_string())
            }
            (Some(_), Some(id)) if !id.is_null() => {
                return Err(format!(
                    "a request id must be a string or an integer, got {id}"
                ));
            }
            _ => None,
        };
        let length = message.to_string().len();
        if length > self.max_message_size {
            return Err(format!(
                "the message is {length} bytes, over the server's {}-byte limit (max_message_size)",
                self.max_message_size
            ));
        }
        // The call's notification handler, on a task of its own that ends once the queue
        // closes: when the reader took the response (and with it the waiter's sender).
        let mut drain = None;
        let waiter = match &request_id {
            None => None,
            Some(id) => {
                let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
                if pending.contains_key(id) {
                    return Err(format!("a request with id {id} is already pending"));
                }
                let (reply, rx) = oneshot::channel();
                let notifications = on_notification.map(|handler| {
                    let (queue, mut queued) = mpsc::channel::<Value>(NOTIFICATION_QUEUE);
                    drain = Some(tokio::spawn(async move {
                        while let Some(notification) = queued.recv().await {
                            handler(notification).await;
                        }
                    }));
                    queue
                });
                let progress_token = message
                    .pointer("/params/_meta/progressToken")
                    .map(Value::to_string);
                pending.insert(
                    id.clone(),
                    Waiter {
                        reply,
                        handler,
                        notifications,
                        progress_token,
                    },
                );
                Some(rx)
            }
        };
        if let Err(e) = write_line(&self.writer, &message).await {
            if let Some(id) = &request_id {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(id);
            }
            return Err(format!("the server connection is closed: {e}"));
        }
        let Some(rx) = waiter else {
            return Ok(None);
        };
        let reply = rx.await;
        if let Some(drain) = drain {
            // Every notification before the response has been handled once this returns
            // (a handler that panicked has ended the drain: nothing is left to wait for).
            let _ = drain.await;
        }
        reply
            .map(Some)
            .map_err(|_| "the server connection closed before answering".to_owned())
    }
}
