//! A hostile server's byte stream into [`McpClient`]: the entry of the `client_stream` fuzz
//! target and of its regression tests. The client runs `initialize`, lists every kind and
//! calls a tool against a peer that writes the fuzzer's bytes; it must never panic, hang or
//! hold more than its [`ClientLimits`](crate::client::ClientLimits) allow.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::Era;
use crate::client::{ClientError, McpClient};
use crate::client::{ClientHandlers, ClientOptions};

/// What separates the server's turns in the fuzzer's bytes (never valid in JSON text).
pub const TURN: u8 = 0;
/// In a turn, replaced by the id of the client's last message (`null` if it had none), so
/// that a turn can answer the request it follows.
pub const LAST_ID: &[u8] = b"$ID";

/// How each step of the client's session against the hostile server ended: the number of
/// items (or `1` for a call), or the client's error.
#[derive(Debug)]
pub struct HostileOutcome {
    /// `initialize`.
    pub initialize: Result<usize, ClientError>,
    /// `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`.
    pub lists: Vec<Result<usize, ClientError>>,
    /// `tools/call`.
    pub call: Result<usize, ClientError>,
}

/// Runs a client against a server that writes `bytes`: its turns (split at [`TURN`]) are
/// written one per message the client sends, the first at once; [`LAST_ID`] in a turn is
/// the id of the client's message it follows. After the last turn the server closes the
/// connection. Every request has a 5 s timeout (instant under a paused clock).
pub async fn hostile_server(bytes: &[u8]) -> HostileOutcome {
    let mut turns: Vec<Vec<u8>> = bytes.split(|b| *b == TURN).map(<[u8]>::to_vec).collect();
    turns.reverse();
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, mut sw) = tokio::io::split(server_io);
    // The server reads all the time (so the client's answers never stall it) and writes a
    // turn for each message it read.
    let (read_tx, mut read_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let reader = tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let id = serde_json::from_str::<Value>(&line)
                .ok()
                .and_then(|m| m.get("id").cloned())
                .unwrap_or(Value::Null)
                .to_string();
            if read_tx.send(id).is_err() {
                return;
            }
        }
    });
    let writer = tokio::spawn(async move {
        if let Some(first) = turns.pop()
            && sw.write_all(&first).await.is_err()
        {
            return;
        }
        while let Some(turn) = turns.pop() {
            let Some(id) = read_rx.recv().await else {
                return;
            };
            if sw.write_all(&replace(&turn, id.as_bytes())).await.is_err() {
                return;
            }
        }
        // Every turn written: the server hangs up.
        let _ = sw.shutdown().await;
    });
    let handlers = ClientHandlers::new()
        .roots(vec![json!({"uri": "file:///fuzz", "name": "fuzz"})])
        .sampling(|_| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}))
        })
        .elicitation(|_| async { Ok(json!({"action": "decline"})) });
    let options = ClientOptions {
        handlers,
        request_timeout: Some(Duration::from_secs(5)),
        ..ClientOptions::default()
    };
    let (cr, cw) = tokio::io::split(client_io);
    let client = McpClient::connect_with(cr, cw, Era::Legacy, options);
    let initialize = client.initialize().await.map(|_| 1);
    let mut lists = Vec::new();
    lists.push(client.list_tools().await.map(|t| t.len()));
    lists.push(client.list_prompts().await.map(|t| t.len()));
    lists.push(client.list_resources().await.map(|t| t.len()));
    lists.push(client.list_resource_templates().await.map(|t| t.len()));
    let call = client.call_tool("fuzz", json!({"a": 1})).await.map(|_| 1);
    client.close(Duration::from_secs(1)).await;
    writer.abort();
    reader.abort();
    HostileOutcome {
        initialize,
        lists,
        call,
    }
}

/// `turn` with every [`LAST_ID`] replaced by `id`.
fn replace(turn: &[u8], id: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(turn.len());
    let mut rest = turn;
    while let Some(at) = rest.windows(LAST_ID.len()).position(|w| w == LAST_ID) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(id);
        rest = &rest[at + LAST_ID.len()..];
    }
    out.extend_from_slice(rest);
    out
}
