//! Fault injection without sockets: tools that panic, hang or return too much; resource
//! readers and prompt handlers that panic; a flood of cancellations; and a stdio client that
//! disconnects in the middle of calls. After each fault the server still serves and nothing
//! stays in flight.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::PromptRequest;
use codomyrmex_mcp::ResourceRequest;
use codomyrmex_mcp::engine::{Engine, Handled, Session};
use codomyrmex_mcp::runtime::Drive as _;
use codomyrmex_mcp::wire::{IncomingMessage, OutgoingMessage, RequestId, ResourceContents};
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServer,
    McpServerConfig, McpToolRegistry, PromptDefinition, PromptMessage, PromptResult,
    ResourceDefinition, ResourceTemplateDefinition, ToolContext,
};
use codomyrmex_mcp::{MessageSink, NullSink};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

const SECRET: &str = "/secret/path/in/a/panic";

/// Counts running tool bodies: incremented when one starts, decremented when its future is
/// dropped or finishes, however that happens.
#[derive(Default)]
struct Gauge {
    running: AtomicUsize,
    started: AtomicUsize,
}

struct Running(Arc<Gauge>);

impl Running {
    fn new(g: &Arc<Gauge>) -> Self {
        g.running.fetch_add(1, Ordering::SeqCst);
        g.started.fetch_add(1, Ordering::SeqCst);
        Self(g.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

fn open_schema() -> Value {
    json!({"type": "object"})
}

fn tools(gauge: &Arc<Gauge>) -> Arc<McpToolRegistry> {
    let r = Arc::new(McpToolRegistry::new());
    r.register(
        "echo",
        open_schema(),
        |a: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(Value::Object(a)) },
    )
    .unwrap();
    r.register(
        "panic",
        open_schema(),
        |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { panic!("{SECRET}") },
    )
    .unwrap();
    r.register(
        "panic_later",
        open_schema(),
        |_: Map<String, Value>| async move {
            tokio::task::yield_now().await;
            if SECRET.starts_with('/') {
                panic!("{SECRET}");
            }
            Ok::<Value, McpErrorDetail>(json!({}))
        },
    )
    .unwrap();
    let g = gauge.clone();
    r.register("hang", open_schema(), move |_: Map<String, Value>| {
        let running = Running::new(&g);
        async move {
            // Never finishes and ignores cancellation: only dropping the future stops it.
            std::future::pending::<()>().await;
            drop(running);
            Ok::<Value, McpErrorDetail>(json!({}))
        }
    })
    .unwrap();
    let g = gauge.clone();
    r.register(
        "wait",
        open_schema(),
        move |_: Map<String, Value>, cx: ToolContext| {
            let running = Running::new(&g);
            async move {
                cx.cancelled().await;
                drop(running);
                Ok::<Value, McpErrorDetail>(json!({"cancelled": true}))
            }
        },
    )
    .unwrap();
    r.register(
        "big",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
        |a: Map<String, Value>| {
            let n = a.get("n").and_then(Value::as_u64).unwrap_or(0);
            vec![ContentBlock::text("x".repeat(usize::try_from(n).unwrap()))]
        },
    )
    .unwrap();
    r
}

fn resources() -> Arc<McpResourceRegistry> {
    let r = Arc::new(McpResourceRegistry::new());
    r.add(
        ResourceDefinition::new("test://panic", "panic"),
        |_: ResourceRequest| async move {
            if SECRET.starts_with('/') {
                panic!("{SECRET}");
            }
            Ok(Vec::new())
        },
    )
    .unwrap();
    r.add_template(
        ResourceTemplateDefinition::new("test://big/{n}", "big"),
        |req: ResourceRequest| async move {
            let n: usize = req.variables["n"].parse().unwrap_or(0);
            Ok(vec![ResourceContents::Text {
                uri: req.uri,
                mime_type: None,
                text: "y".repeat(n),
                meta: None,
            }])
        },
        BTreeMap::new(),
    )
    .unwrap();
    r
}

fn prompts() -> Arc<McpPromptRegistry> {
    let p = Arc::new(McpPromptRegistry::new());
    p.add(
        PromptDefinition::new("panic", "panics"),
        |_: PromptRequest| {
            // Panics while building its future, before any poll.
            if SECRET.starts_with('/') {
                panic!("{SECRET}");
            }
            async move { Err(McpErrorDetail::new("x", "y")) }
        },
    );
    p.add(
        PromptDefinition::new("big", "big"),
        |_: PromptRequest| async move {
            Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text("z".repeat(200_000)))],
            })
        },
    );
    p
}

fn config(tool_timeout: Duration) -> McpServerConfig {
    let mut c = McpServerConfig::new("faults", "0")
        .with_rate_limit(None)
        .with_tool_timeout(tool_timeout)
        .with_max_result_size(64 * 1024);
    c.shutdown_grace = Duration::from_millis(100);
    c
}

struct Fixture {
    engine: Engine,
    gauge: Arc<Gauge>,
}

/// Calls time out after a minute (never, in these tests).
fn fixture() -> Fixture {
    fixture_with_timeout(Duration::from_secs(60))
}

fn fixture_with_timeout(tool_timeout: Duration) -> Fixture {
    let gauge = Arc::new(Gauge::default());
    let engine = Engine::new(config(tool_timeout), tools(&gauge))
        .with_resources(resources())
        .with_prompts(prompts());
    Fixture { engine, gauge }
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn request(id: i64, method: &str, mut params: Value, modern: bool) -> IncomingMessage {
    if modern {
        params["_meta"] = modern_meta();
    }
    IncomingMessage::Request {
        id: RequestId::from(id),
        method: method.into(),
        params: params.as_object().cloned(),
    }
}

fn legacy_session(engine: &Engine) -> Arc<Session> {
    let session = engine.new_session();
    let init = request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        false,
    );
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    assert!(matches!(
        engine.handle(&session, init, &sink),
        Handled::Reply(OutgoingMessage::Response { .. })
    ));
    session
}

async fn answer(engine: &Engine, session: &Arc<Session>, m: IncomingMessage) -> OutgoingMessage {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    tokio::time::timeout(HANG, engine.handle(session, m, &sink).into_message())
        .await
        .expect("answered in time")
        .expect("an answer")
}

fn text_of(m: &OutgoingMessage) -> String {
    String::from_utf8(m.to_bytes()).unwrap()
}

/// Both eras: a fresh session for modern requests, an initialised one for legacy requests.
fn sessions(engine: &Engine) -> [(bool, Arc<Session>); 2] {
    [
        (true, engine.new_session()),
        (false, legacy_session(engine)),
    ]
}

#[tokio::test]
async fn a_panicking_tool_fails_cleanly_in_both_eras() {
    let f = fixture();
    for (modern, session) in sessions(&f.engine) {
        for tool in ["panic", "panic_later"] {
            let m = answer(
                &f.engine,
                &session,
                request(1, "tools/call", json!({"name": tool}), modern),
            )
            .await;
            let text = text_of(&m);
            assert!(!text.contains(SECRET), "panic text leaked: {text}");
            let Some(result) = m.result_value() else {
                panic!("{text}")
            };
            assert_eq!(result["isError"], true, "{text}");
            assert_eq!(result["structuredContent"]["error_type"], "InternalError");
            assert_eq!(session.in_flight(), 0);
        }
        // The server goes on serving.
        let m = answer(
            &f.engine,
            &session,
            request(
                2,
                "tools/call",
                json!({"name": "echo", "arguments": {"k": 1}}),
                modern,
            ),
        )
        .await;
        assert!(text_of(&m).contains("\"k\":1"));
    }
}

#[tokio::test]
async fn panicking_resource_readers_and_prompt_handlers_fail_cleanly() {
    // Regression: panics in resource readers and prompt handlers were not caught, so the
    // request's task died and the client never got an answer.
    let f = fixture();
    for (modern, session) in sessions(&f.engine) {
        for m in [
            request(3, "resources/read", json!({"uri": "test://panic"}), modern),
            request(4, "prompts/get", json!({"name": "panic"}), modern),
        ] {
            let m = answer(&f.engine, &session, m).await;
            let text = text_of(&m);
            assert!(!text.contains(SECRET), "panic text leaked: {text}");
            let OutgoingMessage::Error { error, .. } = m else {
                panic!("an error expected: {text}")
            };
            assert_eq!(error.code, -32603, "{text}");
            assert!(error.message.contains("internal error"), "{text}");
            assert_eq!(session.in_flight(), 0);
        }
    }
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_its_future_is_dropped() {
    let f = fixture_with_timeout(Duration::from_millis(300));
    for (modern, session) in sessions(&f.engine) {
        let before = f.gauge.started.load(Ordering::SeqCst);
        let m = answer(
            &f.engine,
            &session,
            request(5, "tools/call", json!({"name": "hang"}), modern),
        )
        .await;
        let Some(result) = m.result_value() else {
            panic!("{}", text_of(&m))
        };
        assert_eq!(result["isError"], true);
        assert_eq!(result["structuredContent"]["error_type"], "TIMEOUT");
        assert_eq!(f.gauge.started.load(Ordering::SeqCst), before + 1);
        assert_eq!(
            f.gauge.running.load(Ordering::SeqCst),
            0,
            "the hung tool still runs"
        );
        assert_eq!(session.in_flight(), 0);
    }
}

#[tokio::test]
async fn a_huge_result_is_capped_with_a_clear_error() {
    let f = fixture();
    for (modern, session) in sessions(&f.engine) {
        // Just under the cap passes (the envelope adds a few dozen bytes).
        let m = answer(
            &f.engine,
            &session,
            request(
                6,
                "tools/call",
                json!({"name": "big", "arguments": {"n": 60_000}}),
                modern,
            ),
        )
        .await;
        let Some(result) = m.result_value() else {
            panic!("a response")
        };
        assert_ne!(result["isError"], true);
        // 8 MiB against a 64 KiB cap.
        let m = answer(
            &f.engine,
            &session,
            request(
                7,
                "tools/call",
                json!({"name": "big", "arguments": {"n": 8 << 20}}),
                modern,
            ),
        )
        .await;
        let bytes = m.to_bytes();
        assert!(bytes.len() < 4096, "the capped answer is small");
        let Some(result) = m.result_value() else {
            panic!("a response")
        };
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["structuredContent"]["error_type"],
            "RESULT_TOO_LARGE"
        );
        assert_eq!(
            result["structuredContent"]["error_details"]["max_result_size"],
            64 * 1024
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("max_result_size") && text.contains("65536"),
            "{text}"
        );
        // Resources and prompts are capped too, with -32603.
        for m in [
            request(
                8,
                "resources/read",
                json!({"uri": "test://big/200000"}),
                modern,
            ),
            request(9, "prompts/get", json!({"name": "big"}), modern),
        ] {
            let m = answer(&f.engine, &session, m).await;
            let OutgoingMessage::Error { error, .. } = &m else {
                panic!("an error expected: {}", text_of(&m))
            };
            assert_eq!(error.code, -32603);
            assert!(
                error.message.contains("max_result_size"),
                "{}",
                error.message
            );
        }
        let m = answer(
            &f.engine,
            &session,
            request(
                10,
                "resources/read",
                json!({"uri": "test://big/10"}),
                modern,
            ),
        )
        .await;
        assert!(m.result_value().is_some(), "{m:?}");
        assert_eq!(session.in_flight(), 0);
    }
}

#[tokio::test]
async fn a_flood_of_cancellations_stops_everything_and_leaks_nothing() {
    let f = fixture();
    let session = legacy_session(&f.engine);
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let mut work = tokio::task::JoinSet::new();
    let calls = 200;
    for id in 0..calls {
        // Legacy and modern requests share the session, as they may over stdio.
        let modern = id % 2 == 0;
        let m = request(1000 + id, "tools/call", json!({"name": "wait"}), modern);
        match f.engine.handle(&session, m, &sink) {
            h @ Handled::Invoke(_) => {
                work.spawn(codomyrmex_mcp::runtime::drive(h));
            }
            other => panic!("pending work expected, got {other:?}"),
        }
    }
    // Let every call start.
    while work.len() == calls as usize && f.gauge.started.load(Ordering::SeqCst) < calls as usize {
        tokio::task::yield_now().await;
        if let Some(r) = work.try_join_next() {
            panic!("a call ended early: {r:?}");
        }
    }
    assert_eq!(session.in_flight(), calls as usize);
    // 10 000 cancellations: each call's id several times, unknown ids, and malformed ones.
    let mut sent = 0;
    for round in 0..50 {
        for id in 0..calls {
            let request_id = match (round + id) % 4 {
                0 | 1 => json!(1000 + id),
                2 => json!(format!("unknown-{id}")),
                _ => json!({"not": "an id"}),
            };
            let n = IncomingMessage::Notification {
                method: "notifications/cancelled".into(),
                params: json!({"requestId": request_id, "reason": "flood"})
                    .as_object()
                    .cloned(),
            };
            assert!(matches!(
                f.engine.handle(&session, n, &sink),
                Handled::Nothing
            ));
            sent += 1;
        }
    }
    assert_eq!(sent, 10_000);
    let answers = tokio::time::timeout(HANG, async {
        let mut answers = Vec::new();
        while let Some(r) = work.join_next().await {
            answers.push(r.expect("no call panicked"));
        }
        answers
    })
    .await
    .expect("every cancelled call ends");
    // Cancelled requests are not answered.
    assert!(answers.iter().all(Option::is_none), "{answers:?}");
    assert_eq!(session.in_flight(), 0);
    assert_eq!(f.gauge.running.load(Ordering::SeqCst), 0);
    // And the session still works.
    let m = answer(&f.engine, &session, request(1, "ping", json!({}), false)).await;
    assert!(matches!(m, OutgoingMessage::Response { .. }));
}

/// Serves `engine` over two in-memory pipes (input and output, closable independently);
/// returns the client's ends and the server task.
fn serve_in_memory(
    engine: &Engine,
) -> (
    tokio::io::DuplexStream,
    BufReader<tokio::io::DuplexStream>,
    tokio::task::JoinHandle<Result<(), codomyrmex_mcp::transport::stdio::StdioError>>,
) {
    let (to_server, server_input) = tokio::io::duplex(64 * 1024);
    let (server_output, from_server) = tokio::io::duplex(64 * 1024);
    let registry = engine.registry().clone();
    let server = McpServer::new(engine.config().clone(), registry);
    let handle =
        tokio::spawn(async move { server.serve_stream(server_input, server_output).await });
    (to_server, BufReader::new(from_server), handle)
}

async fn send_line(w: &mut (impl AsyncWriteExt + Unpin), v: Value) {
    let mut line = serde_json::to_vec(&v).unwrap();
    line.push(b'\n');
    w.write_all(&line).await.unwrap();
    w.flush().await.unwrap();
}

async fn started(gauge: &Gauge, n: usize) {
    tokio::time::timeout(HANG, async {
        while gauge.running.load(Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the calls started");
}

#[tokio::test]
async fn a_stdio_client_that_disconnects_mid_call_cancels_its_calls() {
    let f = fixture();
    let (mut to_server, mut from_server, served) = serve_in_memory(&f.engine);
    send_line(
        &mut to_server,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
    )
    .await;
    let mut line = String::new();
    from_server.read_line(&mut line).await.unwrap();
    assert!(line.contains("\"protocolVersion\""), "{line}");
    for id in 1..=8 {
        let tool = if id % 2 == 0 { "wait" } else { "hang" };
        let mut params = json!({"name": tool});
        if id > 4 {
            params["_meta"] = modern_meta();
        }
        send_line(
            &mut to_server,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
        )
        .await;
    }
    started(&f.gauge, 8).await;
    // The client goes away: both directions close.
    drop(to_server);
    drop(from_server);
    let outcome = tokio::time::timeout(HANG, served)
        .await
        .expect("the server stops")
        .expect("no panic");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(
        f.gauge.running.load(Ordering::SeqCst),
        0,
        "calls outlived the client"
    );
}

#[tokio::test]
async fn a_closed_output_stops_the_stdio_server_and_its_calls() {
    let f = fixture();
    let (mut to_server, from_server, served) = serve_in_memory(&f.engine);
    for id in 1..=4 {
        send_line(
            &mut to_server,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hang", "_meta": modern_meta()}}),
        )
        .await;
    }
    started(&f.gauge, 4).await;
    // The reader of the server's output goes away while the input stays open; something to
    // answer makes the server notice.
    drop(from_server);
    for id in 10..20 {
        send_line(
            &mut to_server,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "big", "arguments": {"n": 30_000}, "_meta": modern_meta()}}),
        )
        .await;
    }
    let outcome = tokio::time::timeout(HANG, served)
        .await
        .expect("the server stops although its input is open")
        .expect("no panic");
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(f.gauge.running.load(Ordering::SeqCst), 0);
    drop(to_server);
}
