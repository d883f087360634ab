//! An in-memory connection to the engine, for `MCPServer.handle_request`: messages go in as
//! newline-delimited JSON, exactly as over stdio, and responses are matched to their
//! requests by id. A persistent connection, so a legacy (`initialize`) session lives on
//! across calls; server-to-client messages that answer no request are dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use codomyrmex_mcp::McpServer;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, WriteHalf};
use tokio::sync::oneshot;

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Value>>>>;

/// The client end of an in-memory connection.
pub(crate) struct Loopback {
    writer: tokio::sync::Mutex<WriteHalf<DuplexStream>>,
    pending: Pending,
    /// The server's `max_message_size`: a longer line would be answered without an id.
    max_message_size: usize,
}

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
        let pending: Pending = Arc::default();
        let replies = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(client_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("method").is_some() {
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
                    let _ = waiter.send(message);
                }
            }
            // The connection is gone: waiters see their sender dropped.
            replies
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        });
        Self {
            writer: tokio::sync::Mutex::new(client_write),
            pending,
            max_message_size,
        }
    }

    /// Sends one message; for a request, waits for its response.
    pub(crate) async fn send(&self, message: Value) -> Result<Option<Value>, String> {
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
        let mut line = message.to_string();
        if line.len() > self.max_message_size {
            return Err(format!(
                "the message is {} bytes, over the server's {}-byte limit (max_message_size)",
                line.len(),
                self.max_message_size
            ));
        }
        line.push('\n');
        let waiter = match &request_id {
            None => None,
            Some(id) => {
                let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
                if pending.contains_key(id) {
                    return Err(format!("a request with id {id} is already pending"));
                }
                let (tx, rx) = oneshot::channel();
                pending.insert(id.clone(), tx);
                Some(rx)
            }
        };
        let written = {
            let mut writer = self.writer.lock().await;
            match writer.write_all(line.as_bytes()).await {
                Ok(()) => writer.flush().await,
                Err(e) => Err(e),
            }
        };
        if let Err(e) = written {
            if let Some(id) = &request_id {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(id);
            }
            return Err(format!("the server connection is closed: {e}"));
        }
        match waiter {
            None => Ok(None),
            Some(rx) => rx
                .await
                .map(Some)
                .map_err(|_| "the server connection closed before answering".to_owned()),
        }
    }
}
