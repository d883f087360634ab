//! [`McpClient`]: a small MCP client over any newline-delimited byte stream, speaking either
//! era. Tests and tools use it to drive servers; [`McpClient::in_memory`] connects to an
//! [`McpServer`](crate::McpServer) through an in-process duplex.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::engine::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use crate::wire::jsonrpc::{Decoded, decode};
use crate::wire::{Era, ErrorObject, IncomingMessage, ProtocolVersion, RequestId};

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Server(ErrorObject),
    /// The connection closed before the answer arrived.
    #[error("the connection closed")]
    Closed,
    /// The answer was not what the protocol promises.
    #[error("unexpected answer: {0}")]
    Protocol(String),
}

type Pending = Arc<Mutex<HashMap<RequestId, oneshot::Sender<Result<Value, ErrorObject>>>>>;

/// A client connection.
pub struct McpClient {
    era: Era,
    outbox: mpsc::Sender<Vec<u8>>,
    pending: Pending,
    /// Set (under the `pending` lock) once the connection's input has ended: no answer can
    /// arrive any more, so new requests fail at once instead of waiting forever.
    closed: Arc<AtomicBool>,
    next_id: AtomicI64,
    notifications: tokio::sync::Mutex<mpsc::Receiver<Value>>,
    capabilities: Value,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Connects to `server` in memory, in the given era. A legacy client still has to call
    /// [`initialize`](Self::initialize).
    pub fn in_memory(server: &crate::McpServer, era: Era) -> Self {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (sr, sw) = tokio::io::split(server_io);
        let server = server.clone();
        tokio::spawn(async move {
            let _ = server.serve_stream(sr, sw).await;
        });
        let (cr, cw) = tokio::io::split(client_io);
        Self::connect(cr, cw, era)
    }

    /// Connects over a reader and writer.
    pub fn connect<R, W>(reader: R, writer: W, era: Era) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (outbox, mut out_rx) = mpsc::channel::<Vec<u8>>(256);
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let (note_tx, note_rx) = mpsc::channel::<Value>(4096);
        tokio::spawn(async move {
            let mut writer = writer;
            while let Some(mut bytes) = out_rx.recv().await {
                bytes.push(b'\n');
                if writer.write_all(&bytes).await.is_err() || writer.flush().await.is_err() {
                    break;
                }
            }
        });
        let reader_pending = pending.clone();
        let closed = Arc::new(AtomicBool::new(false));
        let reader_closed = closed.clone();
        let reply = outbox.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(reader).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Decoded::Single(Ok(msg)) = decode(line.as_bytes()) else {
                    continue;
                };
                match msg {
                    IncomingMessage::Response { id, result } => {
                        let tx = reader_pending
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id);
                        if let Some(tx) = tx {
                            let _ = tx.send(Ok(result));
                        }
                    }
                    IncomingMessage::Error {
                        id: Some(id),
                        error,
                    } => {
                        let tx = reader_pending
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .remove(&id);
                        if let Some(tx) = tx {
                            let _ = tx.send(Err(error));
                        }
                    }
                    IncomingMessage::Error { id: None, error } => {
                        let _ =
                            note_tx.try_send(json!({"error": error.message, "code": error.code}));
                    }
                    IncomingMessage::Notification { method, params } => {
                        let _ = note_tx.try_send(json!({"method": method, "params": params}));
                    }
                    IncomingMessage::Request { id, method, .. } => {
                        // This client declares no capabilities, so it answers every
                        // server-to-client request with method-not-found.
                        let answer = crate::wire::OutgoingMessage::Error {
                            id: Some(id),
                            error: ErrorObject::method_not_found(&method),
                        };
                        let _ = reply.send(answer.to_bytes()).await;
                    }
                }
            }
            let mut pending = reader_pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            reader_closed.store(true, Ordering::Release);
            pending.clear();
        });
        Self {
            era,
            outbox,
            pending,
            closed,
            next_id: AtomicI64::new(1),
            notifications: tokio::sync::Mutex::new(note_rx),
            capabilities: json!({}),
        }
    }

    /// The era this client speaks.
    pub fn era(&self) -> Era {
        self.era
    }

    /// Sends a raw request; in the modern era, adds the required `_meta` fields.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = RequestId::from(self.next_id.fetch_add(1, Ordering::Relaxed));
        let params = self.with_meta(params);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if self.closed.load(Ordering::Acquire) {
                return Err(ClientError::Closed);
            }
            pending.insert(id.clone(), tx);
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let bytes = serde_json::to_vec(&msg).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.outbox
            .send(bytes)
            .await
            .map_err(|_| ClientError::Closed)?;
        match rx.await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(ClientError::Server(e)),
            Err(_) => Err(ClientError::Closed),
        }
    }

    /// The id the next request will use (for cancelling it).
    pub fn next_request_id(&self) -> RequestId {
        RequestId::from(self.next_id.load(Ordering::Relaxed))
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let bytes = serde_json::to_vec(&msg).map_err(|e| ClientError::Protocol(e.to_string()))?;
        self.outbox
            .send(bytes)
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// Sends raw bytes as one line (for testing servers with malformed input).
    pub async fn send_raw(&self, bytes: &[u8]) -> Result<(), ClientError> {
        self.outbox
            .send(bytes.to_vec())
            .await
            .map_err(|_| ClientError::Closed)
    }

    /// The next notification (or id-less error) from the server.
    pub async fn next_notification(&self) -> Option<Value> {
        self.notifications.lock().await.recv().await
    }

    fn with_meta(&self, params: Value) -> Value {
        if self.era != Era::Modern {
            return params;
        }
        let mut obj = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.entry(META_PROTOCOL_VERSION)
                .or_insert_with(|| json!(ProtocolVersion::LATEST_MODERN.as_str()));
            meta.entry(META_CLIENT_CAPABILITIES)
                .or_insert_with(|| self.capabilities.clone());
            meta.entry(META_CLIENT_INFO).or_insert_with(
                || json!({"name": "codomyrmex-mcp-client", "version": env!("CARGO_PKG_VERSION")}),
            );
        }
        Value::Object(obj)
    }

    /// Legacy handshake: `initialize` then `notifications/initialized`. Returns the
    /// `initialize` result. In the modern era, calls `server/discover` instead.
    pub async fn initialize(&self) -> Result<Value, ClientError> {
        if self.era == Era::Modern {
            return self.request("server/discover", json!({})).await;
        }
        let result = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": ProtocolVersion::LATEST_LEGACY.as_str(),
                    "capabilities": self.capabilities,
                    "clientInfo": {"name": "codomyrmex-mcp-client", "version": env!("CARGO_PKG_VERSION")},
                }),
            )
            .await?;
        self.notify("notifications/initialized", json!({})).await?;
        Ok(result)
    }

    /// Every tool, following pagination.
    pub async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
            let Some(items) = page.get("tools").and_then(Value::as_array) else {
                return Err(ClientError::Protocol(
                    "tools/list result has no tools array".into(),
                ));
            };
            tools.extend(items.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => return Ok(tools),
            }
        }
    }

    /// Calls a tool and returns the `CallToolResult`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }
}
