//! The yardstick: a bare serde_json echo loop on stdio, with no MCP machinery at all.
//!
//! It reads newline-delimited JSON-RPC from stdin, parses each line into a `serde_json::Value`,
//! and answers `tools/call` with a `CallToolResult`-shaped result holding the `text` argument as
//! a single text content block. `initialize` gets a minimal result so the load tool's
//! handshake works; notifications get nothing; anything else gets `-32601`.
//!
//! One thread, buffered output, flushed whenever no more input is already buffered: the
//! cheapest honest way to answer over a pipe, and so the ceiling the ratios are measured against.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde_json::{Value, json};

fn answer(request: Value) -> Option<Value> {
    let id = request.get("id")?.clone();
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params");
    Some(match method {
        "tools/call" => {
            let text = params
                .and_then(|p| p.get("arguments"))
                .and_then(|a| a.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("");
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"content": [{"type": "text", "text": text}]},
            })
        }
        "initialize" => {
            let version = params
                .and_then(|p| p.get("protocolVersion"))
                .cloned()
                .unwrap_or_else(|| json!("2025-11-25"));
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bare-echo", "version": env!("CARGO_PKG_VERSION")},
                },
            })
        }
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        _ => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": "Method not found"},
        }),
    })
}

fn main() -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    let mut input = BufReader::with_capacity(64 * 1024, stdin);
    let mut output = BufWriter::with_capacity(64 * 1024, stdout);
    let mut line = Vec::with_capacity(4096);
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let reply = match serde_json::from_slice::<Value>(&line) {
            Ok(request) => answer(request),
            Err(_) => Some(json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": "Parse error"},
            })),
        };
        if let Some(reply) = reply {
            serde_json::to_writer(&mut output, &reply)?;
            output.write_all(b"\n")?;
        }
        if input.buffer().is_empty() {
            output.flush()?;
        }
    }
    output.flush()
}
