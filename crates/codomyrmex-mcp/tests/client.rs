//! `McpClient` against our own server (in memory, both eras) and against hand-written hostile
//! servers: handlers answer server input in both eras' forms, progress reaches its callback,
//! a dropped call is cancelled on the server, timeouts are exact errors, era negotiation
//! falls back, and bad input from a server gives a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::client::{CallOptions, ClientHandlers, ClientOptions, EraPreference};
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::{
    ContentBlock, Era, InputRequest, McpServer, McpServerConfig, McpToolRegistry, ToolContext,
    ToolOutput,
};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

fn text(t: impl Into<String>) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

fn server(cancelled: mpsc::UnboundedSender<()>) -> McpServer {
    let tools = McpToolRegistry::new();
    let schema = json!({"type": "object", "properties": {}});
    tools
        .register(
            "ask",
            schema.clone(),
            |_: Map<String, Value>, cx: ToolContext| async move {
                let roots = match cx.input("roots", InputRequest::ListRoots).await {
                    Ok(r) => r,
                    Err(e) => return ToolOutput::failure(e.into()),
                };
                let sample = match cx
                    .input(
                        "sample",
                        InputRequest::Sample(json!({"messages": [], "maxTokens": 5})),
                    )
                    .await
                {
                    Ok(r) => r,
                    Err(e) => return ToolOutput::failure(e.into()),
                };
                let form = match cx
                    .input(
                        "form",
                        InputRequest::form("name?", json!({"type": "object"})),
                    )
                    .await
                {
                    Ok(r) => r,
                    Err(e) => return ToolOutput::failure(e.into()),
                };
                text(format!(
                    "{}|{}|{}",
                    roots["roots"][0]["uri"].as_str().unwrap_or("?"),
                    sample["content"]["text"].as_str().unwrap_or("?"),
                    form["content"]["name"].as_str().unwrap_or("?")
                ))
            },
        )
        .unwrap();
    tools
        .register(
            "progress",
            schema.clone(),
            |_: Map<String, Value>, cx: ToolContext| async move {
                for i in 1..=3 {
                    cx.progress(f64::from(i), Some(3.0), None);
                }
                text("done")
            },
        )
        .unwrap();
    tools
        .register(
            "hang",
            schema,
            move |_: Map<String, Value>, cx: ToolContext| {
                let cancelled = cancelled.clone();
                async move {
                    // The server drops the work when the request is cancelled: say so from the
                    // drop.
                    struct Signal(mpsc::UnboundedSender<()>);
                    impl Drop for Signal {
                        fn drop(&mut self) {
                            let _ = self.0.send(());
                        }
                    }
                    let _signal = Signal(cancelled);
                    cx.progress(0.0, None, Some("started"));
                    cx.cancelled().await;
                    text("cancelled")
                }
            },
        )
        .unwrap();
    McpServer::new(McpServerConfig::new("client-test", "1"), Arc::new(tools))
}

fn handlers() -> ClientHandlers {
    ClientHandlers::new()
        .roots(vec![json!({"uri": "file:///work", "name": "work"})])
        .sampling(|_| async { Ok(json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"})) })
        .elicitation(|_| async { Ok(json!({"action": "accept", "content": {"name": "ada"}})) })
}

fn client(era: Era, handlers: ClientHandlers) -> (McpClient, mpsc::UnboundedReceiver<()>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = server(tx);
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (sr, sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let _ = server.serve_stream(sr, sw).await;
    });
    let (cr, cw) = tokio::io::split(client_io);
    let options = ClientOptions {
        handlers,
        ..ClientOptions::default()
    };
    (McpClient::connect_with(cr, cw, era, options), rx)
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

#[tokio::test]
async fn handlers_answer_server_input_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let (c, _) = client(era, handlers());
        c.initialize().await.unwrap();
        let r = c.call_tool("ask", json!({})).await.unwrap();
        assert_eq!(text_of(&r), "file:///work|sampled|ada", "{era:?}: {r}");
    }
}

#[tokio::test]
async fn capabilities_are_declared_from_the_handlers() {
    let (c, _) = client(Era::Legacy, handlers());
    assert_eq!(
        c.capabilities(),
        &json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": true}})
    );
    let (bare, _) = client(Era::Legacy, ClientHandlers::new());
    assert_eq!(bare.capabilities(), &json!({}));
    bare.initialize().await.unwrap();
    let r = bare.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(r["isError"], true, "no roots handler, no roots: {r}");
}

#[tokio::test]
async fn progress_reaches_the_callback() {
    for era in [Era::Legacy, Era::Modern] {
        let (c, _) = client(era, ClientHandlers::new());
        c.initialize().await.unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let options = CallOptions {
            progress: Some(Arc::new(move |p: Value| {
                let _ = tx.send(p["progress"].as_f64().unwrap_or(-1.0));
            })),
            timeout: None,
            log: None,
            input: None,
        };
        let r = c
            .call_tool_with("progress", json!({}), &options)
            .await
            .unwrap();
        assert_eq!(text_of(&r), "done");
        drop(options);
        let mut seen = Vec::new();
        while let Some(p) = rx.recv().await {
            seen.push(p);
        }
        assert_eq!(seen, [1.0, 2.0, 3.0], "{era:?}");
    }
}

#[tokio::test]
async fn a_dropped_or_timed_out_call_is_cancelled_on_the_server() {
    let (c, mut cancelled) = client(Era::Legacy, ClientHandlers::new());
    c.initialize().await.unwrap();
    let (tx, mut started) = mpsc::unbounded_channel();
    let options = CallOptions {
        progress: Some(Arc::new(move |_| {
            let _ = tx.send(());
        })),
        timeout: None,
        log: None,
        input: None,
    };
    {
        let call = c.call_tool_with("hang", json!({}), &options);
        tokio::pin!(call);
        tokio::select! {
            _ = &mut call => panic!("hang answered"),
            _ = started.recv() => {}
        }
    } // dropped here
    cancelled
        .recv()
        .await
        .expect("the tool saw the cancellation");

    let timeout = CallOptions {
        progress: None,
        timeout: Some(Duration::from_millis(200)),
        log: None,
        input: None,
    };
    let e = c
        .call_tool_with("hang", json!({}), &timeout)
        .await
        .unwrap_err();
    assert_eq!(e, ClientError::Timeout(Duration::from_millis(200)));
    cancelled
        .recv()
        .await
        .expect("the timed-out call was cancelled");
    // The connection still works.
    c.ping().await.unwrap();
}

/// A hand-written stdio peer: reads the client's lines and answers each with `reply`.
fn fake_server<F>(reply: F) -> McpClient
where
    F: Fn(&Value) -> Vec<Vec<u8>> + Send + 'static,
{
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, mut sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            for out in reply(&msg) {
                if sw.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    McpClient::connect(cr, cw, Era::Legacy)
}

fn line(v: Value) -> Vec<u8> {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    b
}

#[tokio::test]
async fn auto_negotiation_falls_back_to_initialize_for_a_legacy_server() {
    let legacy = |m: &Value| match m["method"].as_str() {
        Some("server/discover") => vec![line(
            json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}}),
        )],
        Some("initialize") => vec![line(
            json!({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}}),
        )],
        Some("ping") => vec![line(json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}))],
        _ => vec![],
    };
    let c = fake_server(legacy);
    let r = c
        .negotiate(EraPreference::Auto, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(r["serverInfo"]["name"], "old");
    assert_eq!(c.era(), Era::Legacy);
    assert_eq!(c.protocol_version().map(|v| v.as_str()), Some("2025-06-18"));
    c.ping().await.unwrap();

    let c = fake_server(legacy);
    let e = c
        .negotiate(EraPreference::Modern, Duration::from_secs(30))
        .await
        .unwrap_err();
    let ClientError::Era(hint) = &e else {
        panic!("{e:?}")
    };
    assert!(
        hint.contains("--era auto") && hint.contains("2025-11-25"),
        "{hint}"
    );

    // Our own server is dual-era: auto picks 2026-07-28.
    let (ours, _) = client(Era::Legacy, ClientHandlers::new());
    let r = ours
        .negotiate(EraPreference::Auto, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(r["supportedVersions"].is_array(), "{r}");
    assert_eq!(ours.era(), Era::Modern);
    assert_eq!(ours.list_tools().await.unwrap().len(), 3);
}

#[tokio::test]
async fn bad_input_from_a_server_gives_clear_errors() {
    // Malformed JSON, a response to an unknown id and a batch are skipped; the real answer
    // still arrives.
    let c = fake_server(|m| {
        vec![
            b"{not json\n".to_vec(),
            line(json!({"jsonrpc": "2.0", "id": 999_999, "result": {}})),
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]\n".to_vec(),
            line(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"ok": true}})),
        ]
    });
    assert_eq!(
        c.request("x", json!({})).await.unwrap(),
        json!({"ok": true})
    );

    // A server that never answers: the timeout, not a hang.
    let silent = fake_server(|_| vec![]);
    let e = silent
        .request_with(
            "x",
            json!({}),
            &CallOptions {
                progress: None,
                timeout: Some(Duration::from_millis(100)),
                log: None,
                input: None,
            },
        )
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Timeout(_)), "{e:?}");
    // One round alone (a gateway's) keeps the call's timeout too.
    let options = CallOptions {
        progress: None,
        timeout: Some(Duration::from_millis(100)),
        log: None,
        input: None,
    };
    let params = json!({});
    let round = silent.request_round("x", &params, &options);
    let e = tokio::time::timeout(Duration::from_secs(30), round)
        .await
        .expect("the round's timeout, not a hang")
        .unwrap_err();
    assert_eq!(e, ClientError::Timeout(Duration::from_millis(100)));

    // A line longer than the limit ends the connection with a transport error.
    let huge = fake_server(|_| {
        let mut big = vec![b' '; codomyrmex_mcp::client::MAX_LINE + 10];
        big.push(b'\n');
        vec![big]
    });
    let e = huge.request("x", json!({})).await.unwrap_err();
    let ClientError::Transport { message, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(message.contains("longer than"), "{message}");

    // A server that goes away: the connection closed, for this and every later request.
    let (client_io, server_io) = tokio::io::duplex(64);
    drop(server_io);
    let (cr, cw) = tokio::io::split(client_io);
    let gone = McpClient::connect(cr, cw, Era::Legacy);
    assert_eq!(
        gone.request("x", json!({})).await.unwrap_err(),
        ClientError::Closed
    );
    assert_eq!(
        gone.request("x", json!({})).await.unwrap_err(),
        ClientError::Closed
    );
}

fn asking_server(asks: Arc<AtomicUsize>, handlers: ClientHandlers) -> McpClient {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, mut sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let m: Value = serde_json::from_str(&l).unwrap();
            asks.fetch_add(1, Ordering::Relaxed);
            // The state must come back exactly as sent.
            if asks.load(Ordering::Relaxed) > 1 {
                assert_eq!(m["params"]["requestState"], "s\u{e9}.{opaque}");
                assert_eq!(m["params"]["inputResponses"]["r"]["roots"], json!([]));
            }
            let out = line(json!({"jsonrpc": "2.0", "id": m["id"], "result": {
                "resultType": "input_required",
                "inputRequests": {"r": {"method": "roots/list"}},
                "requestState": "s\u{e9}.{opaque}",
            }}));
            if sw.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    McpClient::connect_with(
        cr,
        cw,
        Era::Modern,
        ClientOptions {
            handlers,
            ..ClientOptions::default()
        },
    )
}

#[tokio::test]
async fn an_input_loop_is_bounded() {
    // Without a roots handler the client refuses at once.
    let asks = Arc::new(AtomicUsize::new(0));
    let c = asking_server(asks.clone(), ClientHandlers::new());
    let e = c
        .request("tools/call", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("roots/list")),
        "{e:?}"
    );
    assert_eq!(asks.load(Ordering::Relaxed), 1);
    // With one, it answers round after round, up to the limit.
    let asks = Arc::new(AtomicUsize::new(0));
    let c = asking_server(asks.clone(), ClientHandlers::new().roots(vec![]));
    let e = c
        .request("tools/call", json!({"name": "x"}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("rounds")),
        "{e:?}"
    );
    assert_eq!(
        asks.load(Ordering::Relaxed),
        codomyrmex_mcp::client::proto::MAX_INPUT_ROUNDS
    );
}

#[tokio::test]
async fn results_come_typed_with_the_raw_json() {
    let (c, _) = client(Era::Legacy, ClientHandlers::new());
    c.initialize().await.unwrap();
    let r = c.call_tool_typed("progress", json!({})).await.unwrap();
    assert_eq!(r.value.is_error, None);
    assert_eq!(r.value.content.len(), 1);
    assert_eq!(r.raw["content"][0]["text"], "done");
    // A result that is not the type is a protocol error, not a panic.
    let e = c
        .request_typed::<codomyrmex_mcp::wire::CallToolResult>("tools/list", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Protocol(ref m) if m.contains("tools/list")),
        "{e:?}"
    );
}
