//! Drives a stdio MCP server that asks its client for input, through [`McpClient`] and its
//! [`ClientHandlers`]: the interop check against a server built on the official Python SDK
//! (`tests/interop/client_interop.sh`, with `tests/interop/python_sdk_server.py`).
//!
//! `cargo run --example input_roundtrips -- ERA PROGRAM [ARGS...]`, ERA being `auto` or
//! `legacy`. Calls `ask_model` (sampling), `ask_user` (form elicitation) and `show_roots`
//! (roots), and checks each answer carries what this client's handler gave. Prints one `ok`
//! line per round trip; exits 1 on the first mismatch. Not a general client: the CLI is that.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientHandlers, ClientOptions, EraPreference, StdioCommand};
use serde_json::{Value, json};

const MODEL_TEXT: &str = "forty-two, from the Rust client's sampling handler";
const USER_NAME: &str = "Ferris from the elicitation handler";
const ROOT: &str = "file:///tmp/codomyrmex-interop-root";

/// The text of a `tools/call` result (its text content blocks joined), or why there is none.
fn text_of(result: &Value) -> Result<String, String> {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(format!("the tool failed: {result}"));
    }
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no content in {result}"))?;
    Ok(blocks
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n"))
}

// ANCHOR: run
async fn run(era: EraPreference, command: StdioCommand) -> Result<(), String> {
    let asked = Arc::new(AtomicUsize::new(0));
    let (sampled, elicited) = (asked.clone(), asked.clone());
    let handlers = ClientHandlers::new()
        .sampling(move |params| {
            sampled.fetch_add(1, Ordering::SeqCst);
            async move {
                // The question must have reached the handler.
                let question = params
                    .pointer("/messages/0/content/text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                Ok(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": format!("{MODEL_TEXT} (asked: {question})")},
                    "model": "rust-handler",
                    "stopReason": "endTurn",
                }))
            }
        })
        .elicitation(move |_| {
            elicited.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({"action": "accept", "content": {"name": USER_NAME}})) }
        })
        .roots(vec![json!({"uri": ROOT, "name": "interop"})]);
    let options = ClientOptions {
        handlers,
        request_timeout: Some(Duration::from_secs(60)),
        ..ClientOptions::default()
    };
    let client = McpClient::spawn(&command, options).map_err(|e| format!("spawn: {e}"))?;
    client
        .negotiate(era, Duration::from_secs(20))
        .await
        .map_err(|e| format!("negotiate: {e}"))?;
    println!("  ok   connected ({:?} era)", client.era());

    let checks: [(&str, Value, String); 3] = [
        (
            "ask_model",
            json!({"question": "what is six times seven?"}),
            format!("model rust-handler said: {MODEL_TEXT} (asked: what is six times seven?)"),
        ),
        ("ask_user", json!({}), format!("hello {USER_NAME}")),
        ("show_roots", json!({}), ROOT.to_owned()),
    ];
    for (tool, args, want) in checks {
        let result = client
            .call_tool(tool, args)
            .await
            .map_err(|e| format!("{tool}: {e}"))?;
        let text = text_of(&result).map_err(|e| format!("{tool}: {e}"))?;
        if text.trim() != want {
            return Err(format!("{tool}: got {text:?}, want {want:?}"));
        }
        println!("  ok   {tool}: {text}");
    }
    if asked.load(Ordering::SeqCst) != 2 {
        return Err(format!(
            "the handlers ran {} times, want 2",
            asked.load(Ordering::SeqCst)
        ));
    }
    client.close(Duration::from_secs(5)).await;
    Ok(())
}
// ANCHOR_END: run

#[tokio::main]
async fn main() -> ExitCode {
    let mut argv = std::env::args().skip(1);
    let era = match argv.next().as_deref() {
        Some("auto") => EraPreference::Auto,
        Some("legacy") => EraPreference::Legacy,
        _ => {
            eprintln!("usage: input_roundtrips auto|legacy PROGRAM [ARGS...]");
            return ExitCode::from(2);
        }
    };
    let Some(program) = argv.next() else {
        eprintln!("usage: input_roundtrips auto|legacy PROGRAM [ARGS...]");
        return ExitCode::from(2);
    };
    match run(era, StdioCommand::new(program).args(argv)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("  FAIL {e}");
            ExitCode::FAILURE
        }
    }
}
