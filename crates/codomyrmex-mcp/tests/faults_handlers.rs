//! One execution policy for every handler kind: a tool, a static resource read, a template
//! read, a prompt, a prompt-argument completer, a resource-template completer and task work
//! that panics, hangs past the timeout or fails costs only its own request, and so does a
//! `ResourceLister` asked for a `resources/list` page. Each fault gets
//! a clear error that leaks no panic text; a `ping` (`server/discover` on stateless HTTP)
//! and a normal call succeed right after. Over stdio and Streamable HTTP, in both eras.
//!
//! Also: requests waiting for a concurrency permit are bounded, and past the bound refused at
//! once, while `ping`, cancellation and responses are still handled.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codomyrmex_mcp::PromptRequest;
use codomyrmex_mcp::engine::{Engine, TASKS_EXTENSION};
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{Completer, ResourceError, ResourceLister, ResourceRequest};
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServerConfig,
    McpToolRegistry, PromptDefinition, PromptMessage, PromptResult, ResourceDefinition,
    ResourceTemplateDefinition, TaskSupport, ToolDefinition, ToolOutput, ToolRegistration,
    ToolSettings,
};
use http_support::{LEGACY, MODERN, Req, initialize_body, parse_sse, send};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);
/// What a panicking handler panics with: it must never reach the client.
const SECRET: &str = "/secret/path/in/a/panic";
/// The deadline of every handler in these tests.
const TIMEOUT: Duration = Duration::from_millis(300);

/// Blocks a completer's thread until the fixture is dropped (so the runtime can shut down).
#[derive(Default)]
struct Release(AtomicBool);

impl Release {
    fn wait(&self) {
        let until = std::time::Instant::now() + HANG;
        while !self.0.load(Ordering::SeqCst) && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

struct Fixture {
    engine: Engine,
    release: Arc<Release>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.release.0.store(true, Ordering::SeqCst);
    }
}

/// What each handler does, by the mode its name, URI or argument value names.
async fn behave<T>(mode: &str, ok: T, err: impl FnOnce() -> T) -> T {
    match mode {
        "panic" => panic!("{SECRET}"),
        "hang" => std::future::pending().await,
        "error" => err(),
        _ => ok,
    }
}

fn completer(release: &Arc<Release>) -> Completer {
    let release = release.clone();
    Arc::new(
        move |partial: &str, _: &BTreeMap<String, String>| match partial {
            "panic" => panic!("{SECRET}"),
            "hang" => {
                release.wait();
                Vec::new()
            }
            _ => vec!["ok".to_owned(), "panic".to_owned()],
        },
    )
}

/// Lists nothing, or panics or hangs when the page's cursor names that mode: `panic` panics
/// in `list` itself, `panic-later` in the future it returns.
struct ModeLister;

impl ResourceLister for ModeLister {
    fn list(
        &self,
        after: Option<String>,
        _limit: usize,
    ) -> codomyrmex_mcp::platform::BoxFuture<'static, Vec<ResourceDefinition>> {
        if after.as_deref() == Some("panic") {
            panic!("{SECRET}");
        }
        Box::pin(async move {
            let mode = after.unwrap_or_default();
            let mode = if mode == "panic-later" {
                "panic"
            } else {
                &mode
            };
            behave(mode, Vec::new(), Vec::new).await
        })
    }
}

/// `cursor` for a `resources/list` page after `after` (the engine's cursors are the hex of
/// the last URI).
fn cursor_after(after: &str) -> String {
    after.bytes().map(|b| format!("{b:02x}")).collect()
}

fn fixture(config: McpServerConfig) -> Fixture {
    let release = Arc::new(Release::default());
    let tools = Arc::new(McpToolRegistry::new());
    for mode in ["ok", "panic", "hang", "error"] {
        tools
            .register(
                mode,
                json!({"type": "object"}),
                move |_: Map<String, Value>| {
                    behave(
                        mode,
                        ToolOutput::content(vec![ContentBlock::text("fine")]),
                        || ToolOutput::failure(McpErrorDetail::new("Broken", "it failed")),
                    )
                },
            )
            .unwrap();
        // Task work: waits first, so that the call becomes a task.
        let settings = ToolSettings {
            task_support: TaskSupport::Optional,
            timeout: Some(TIMEOUT),
            ..ToolSettings::default()
        };
        tools
            .register_tool(
                ToolRegistration::new(
                    ToolDefinition::new(format!("task_{mode}"), json!({"type": "object"})),
                    move |_: Map<String, Value>| async move {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        behave(
                            mode,
                            ToolOutput::content(vec![ContentBlock::text("fine")]),
                            || ToolOutput::failure(McpErrorDetail::new("Broken", "it failed")),
                        )
                        .await
                    },
                )
                .with_settings(settings),
            )
            .unwrap();
    }
    let resources = Arc::new(McpResourceRegistry::new());
    let contents = |uri: String| {
        vec![ResourceContents::Text {
            uri,
            mime_type: None,
            text: "fine".into(),
            meta: None,
        }]
    };
    for mode in ["ok", "panic", "hang", "error"] {
        resources
            .add(
                ResourceDefinition::new(format!("test://{mode}"), mode),
                move |req: ResourceRequest| async move {
                    behave(mode, Ok(contents(req.uri)), || {
                        Err(ResourceError::Failed("it failed".into()))
                    })
                    .await
                },
            )
            .unwrap();
    }
    resources
        .add_template(
            ResourceTemplateDefinition::new("tmpl://{mode}", "by mode"),
            move |req: ResourceRequest| async move {
                let mode = req.variables["mode"].clone();
                behave(&mode, Ok(contents(req.uri)), || {
                    Err(ResourceError::Failed("it failed".into()))
                })
                .await
            },
            BTreeMap::from([("mode".to_owned(), completer(&release))]),
        )
        .unwrap();
    resources.add_lister(ModeLister);
    let prompts = Arc::new(McpPromptRegistry::new());
    for mode in ["ok", "panic", "hang", "error"] {
        let definition = PromptDefinition::new(mode, mode);
        let handler = move |_: PromptRequest| async move {
            let fine = PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text("fine"))],
            };
            behave(mode, Ok(fine), || {
                Err(McpErrorDetail::new("Broken", "it failed"))
            })
            .await
        };
        prompts.add_with_completion(
            definition,
            handler,
            BTreeMap::from([("mode".to_owned(), completer(&release))]),
        );
    }
    let engine = Engine::new(config, tools)
        .with_resources(resources)
        .with_prompts(prompts);
    Fixture { engine, release }
}

fn config() -> McpServerConfig {
    McpServerConfig::new("faults", "0")
        .with_rate_limit(None)
        .with_tool_timeout(TIMEOUT)
}

/// Modern `_meta`, declaring the tasks extension.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "faults", "version": "0"},
    })
}

/// A connection of one era over one transport.
enum Conn {
    Stdio {
        modern: bool,
        input: DuplexStream,
        output: BufReader<DuplexStream>,
    },
    Http {
        addr: SocketAddr,
        session: Option<String>,
    },
}

impl Conn {
    async fn stdio(engine: &Engine, modern: bool) -> Self {
        let (input, server_input) = tokio::io::duplex(64 * 1024);
        let (server_output, output) = tokio::io::duplex(64 * 1024);
        let engine = engine.clone();
        tokio::spawn(codomyrmex_mcp::transport::stdio::serve(
            engine,
            server_input,
            server_output,
        ));
        let mut c = Self::Stdio {
            modern,
            input,
            output: BufReader::new(output),
        };
        if !modern {
            let r = c.request(0, "initialize", initialize_body()).await;
            assert!(r.get("result").is_some(), "{r}");
            c.notify("notifications/initialized", json!({})).await;
        }
        c
    }

    async fn http(engine: &Engine, modern: bool) -> Self {
        let config = HttpConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            rate_limit: None,
            ..HttpConfig::default()
        };
        let server = HttpServer::new(engine.clone(), config);
        let listener = server.bind().await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
        let mut c = Self::Http {
            addr,
            session: None,
        };
        if !modern {
            let req = Req::new("POST", "/mcp")
                .header("accept", "application/json, text/event-stream")
                .json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_body()}));
            let resp = send(addr, &format!("127.0.0.1:{}", addr.port()), &req).await;
            let id = resp.header("mcp-session-id").unwrap().to_owned();
            if let Self::Http { session, .. } = &mut c {
                *session = Some(id);
            }
            c.notify("notifications/initialized", json!({})).await;
        }
        c
    }

    fn modern(&self) -> bool {
        match self {
            Self::Stdio { modern, .. } => *modern,
            Self::Http { session, .. } => session.is_none(),
        }
    }

    async fn notify(&mut self, method: &str, params: Value) {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match self {
            Self::Stdio { input, .. } => write_line(input, &body).await,
            Self::Http { addr, session } => {
                let mut req = Req::new("POST", "/mcp")
                    .header("accept", "application/json, text/event-stream")
                    .json(&body);
                if let Some(s) = session {
                    req = req
                        .header("mcp-session-id", s.as_str())
                        .header("mcp-protocol-version", LEGACY);
                }
                let resp = send(*addr, &format!("127.0.0.1:{}", addr.port()), &req).await;
                assert_eq!(resp.status, 202);
            }
        }
    }

    /// Sends request `id` and returns its response message.
    async fn request(&mut self, id: i64, method: &str, mut params: Value) -> Value {
        let modern = self.modern() && method != "initialize" && method != "ping";
        if modern {
            params["_meta"] = modern_meta();
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = match self {
            Self::Stdio { input, output, .. } => {
                write_line(input, &body).await;
                read_response(output, id).await
            }
            Self::Http { addr, session } => {
                let mut req = Req::new("POST", "/mcp")
                    .header("accept", "application/json, text/event-stream")
                    .json(&body);
                if modern {
                    req = req
                        .header("mcp-protocol-version", MODERN)
                        .header("mcp-method", method);
                    let name = ["name", "uri", "taskId"]
                        .iter()
                        .find_map(|k| params.get(*k));
                    if let Some(n) = name.and_then(Value::as_str) {
                        req = req.header("mcp-name", n);
                    }
                }
                if let Some(s) = session {
                    req = req
                        .header("mcp-session-id", s.as_str())
                        .header("mcp-protocol-version", LEGACY);
                }
                let resp = send(*addr, &format!("127.0.0.1:{}", addr.port()), &req).await;
                let is_sse = resp
                    .header("content-type")
                    .is_some_and(|t| t.contains("event-stream"));
                if is_sse {
                    let (events, _) = parse_sse(&String::from_utf8_lossy(&resp.body));
                    events
                        .into_iter()
                        .map(|e| e.data)
                        .find(|d| d["id"] == json!(id))
                        .unwrap_or_else(|| panic!("no response to {id}"))
                } else {
                    resp.json()
                }
            }
        };
        let text = answer.to_string();
        assert!(!text.contains(SECRET), "panic text leaked: {text}");
        answer
    }

    /// The server still serves: a liveness request and a normal call of `kind` succeed.
    async fn still_serving(&mut self, id: i64, kind: Kind) {
        let alive = if matches!(self, Self::Http { session: None, .. }) {
            self.request(id, "server/discover", json!({})).await
        } else {
            self.request(id, "ping", json!({})).await
        };
        assert!(alive.get("result").is_some(), "{alive}");
        let (method, params) = kind.request("ok");
        let normal = self.request(id + 1, method, params).await;
        let result = &normal["result"];
        assert!(result.is_object(), "{kind:?}: {normal}");
        if kind == Kind::Task {
            // A task that completes fine.
            let done = self.task_outcome(id + 2, result).await;
            assert_eq!(done["status"], "completed", "{done}");
        } else {
            assert_ne!(result.get("isError"), Some(&json!(true)), "{normal}");
        }
    }

    /// Polls a created task until it ends (modern era only).
    async fn task_outcome(&mut self, id: i64, created: &Value) -> Value {
        assert_eq!(created["resultType"], "task", "{created}");
        let task_id = created["taskId"].clone();
        let deadline = tokio::time::Instant::now() + HANG;
        loop {
            let got = self
                .request(id, "tasks/get", json!({"taskId": task_id}))
                .await;
            let status = got["result"]["status"].as_str().unwrap_or("?").to_owned();
            if matches!(status.as_str(), "completed" | "failed" | "cancelled") {
                return got["result"].clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "task never ended: {got}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn write_line(w: &mut DuplexStream, v: &Value) {
    let mut line = serde_json::to_vec(v).unwrap();
    line.push(b'\n');
    w.write_all(&line).await.unwrap();
    w.flush().await.unwrap();
}

async fn read_response(r: &mut BufReader<DuplexStream>, id: i64) -> Value {
    tokio::time::timeout(HANG, async {
        loop {
            let mut line = String::new();
            assert!(r.read_line(&mut line).await.unwrap() > 0, "output ended");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return v;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no response to request {id}: the server stopped answering"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tool,
    Resource,
    Template,
    Prompt,
    PromptCompleter,
    TemplateCompleter,
    Lister,
    Task,
}

impl Kind {
    const ALL: [Kind; 8] = [
        Kind::Tool,
        Kind::Resource,
        Kind::Template,
        Kind::Prompt,
        Kind::PromptCompleter,
        Kind::TemplateCompleter,
        Kind::Lister,
        Kind::Task,
    ];

    /// The request that makes this kind of handler behave as `mode`.
    fn request(self, mode: &str) -> (&'static str, Value) {
        match self {
            Kind::Tool => ("tools/call", json!({"name": mode, "arguments": {}})),
            Kind::Task => (
                "tools/call",
                json!({"name": format!("task_{mode}"), "arguments": {}}),
            ),
            Kind::Resource => ("resources/read", json!({"uri": format!("test://{mode}")})),
            Kind::Template => ("resources/read", json!({"uri": format!("tmpl://{mode}")})),
            Kind::Prompt => ("prompts/get", json!({"name": mode})),
            Kind::PromptCompleter => (
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "ok"}, "argument": {"name": "mode", "value": mode}}),
            ),
            Kind::TemplateCompleter => (
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "tmpl://{mode}"}, "argument": {"name": "mode", "value": mode}}),
            ),
            Kind::Lister => ("resources/list", json!({"cursor": cursor_after(mode)})),
        }
    }

    /// Completers and listers return values, not errors: they can only panic or hang.
    fn modes(self) -> &'static [&'static str] {
        match self {
            Kind::PromptCompleter | Kind::TemplateCompleter => &["panic", "hang"],
            Kind::Lister => &["panic", "panic-later", "hang"],
            _ => &["panic", "hang", "error"],
        }
    }
}

/// Every fault of every kind on `conn`, each followed by proof that the server still serves.
async fn every_fault(mut conn: Conn) {
    let mut id = 100;
    for kind in Kind::ALL {
        if kind == Kind::Task && !conn.modern() {
            // Tasks of 2025-11-25 are covered by the engine's task tests.
            continue;
        }
        for &mode in kind.modes() {
            id += 10;
            let (method, params) = kind.request(mode);
            let answer = conn.request(id, method, params).await;
            match kind {
                Kind::Tool => {
                    assert_eq!(
                        answer["result"]["isError"], true,
                        "{kind:?} {mode}: {answer}"
                    );
                    if mode == "hang" {
                        assert!(answer.to_string().contains("TIMEOUT"), "{answer}");
                    }
                }
                Kind::Task => {
                    let done = conn.task_outcome(id + 1, &answer["result"]).await;
                    let failed = done["status"] == "failed"
                        || (done["status"] == "completed"
                            && done["result"]["isError"] == json!(true));
                    assert!(failed, "{kind:?} {mode}: {done}");
                    assert!(!done.to_string().contains(SECRET), "{done}");
                }
                _ => {
                    assert_eq!(answer["error"]["code"], -32603, "{kind:?} {mode}: {answer}");
                }
            }
            conn.still_serving(id + 5, kind).await;
        }
    }
}

#[tokio::test]
async fn every_handler_kind_fails_alone_over_stdio_legacy() {
    let f = fixture(config());
    every_fault(Conn::stdio(&f.engine, false).await).await;
}

#[tokio::test]
async fn every_handler_kind_fails_alone_over_stdio_modern() {
    let f = fixture(config());
    every_fault(Conn::stdio(&f.engine, true).await).await;
}

#[tokio::test]
async fn every_handler_kind_fails_alone_over_http_legacy() {
    let f = fixture(config());
    every_fault(Conn::http(&f.engine, false).await).await;
}

#[tokio::test]
async fn every_handler_kind_fails_alone_over_http_modern() {
    let f = fixture(config());
    every_fault(Conn::http(&f.engine, true).await).await;
}

/// A server that runs one handler at once and lets `queued` more wait.
fn bounded(queued: usize) -> Engine {
    let tools = Arc::new(McpToolRegistry::new());
    tools
        .register(
            "hold",
            json!({"type": "object"}),
            |_: Map<String, Value>, cx: codomyrmex_mcp::ToolContext| async move {
                cx.cancelled().await;
                ToolOutput::content(vec![ContentBlock::text("stopped")])
            },
        )
        .unwrap();
    tools
        .register("ok", json!({"type": "object"}), |_: Map<String, Value>| {
            ToolOutput::content(vec![ContentBlock::text("fine")])
        })
        .unwrap();
    tools
        .register(
            "ask",
            json!({"type": "object"}),
            |_: Map<String, Value>, cx: codomyrmex_mcp::ToolContext| async move {
                let request =
                    codomyrmex_mcp::InputRequest::form("Name?", json!({"type": "object"}));
                match cx.input("name", request).await {
                    Ok(answer) => ToolOutput::content(vec![ContentBlock::text(format!(
                        "hello {}",
                        answer["content"]["name"].as_str().unwrap_or("?")
                    ))]),
                    Err(e) => ToolOutput::failure(e.into()),
                }
            },
        )
        .unwrap();
    let resources = Arc::new(McpResourceRegistry::new());
    resources
        .add(
            ResourceDefinition::new("test://ok", "ok"),
            |req: ResourceRequest| async move {
                Ok(vec![ResourceContents::Text {
                    uri: req.uri,
                    mime_type: None,
                    text: "fine".into(),
                    meta: None,
                }])
            },
        )
        .unwrap();
    let mut config = McpServerConfig::new("bounded", "0").with_rate_limit(None);
    config.max_concurrent_requests = 1;
    config.max_queued_requests = queued;
    Engine::new(config, tools).with_resources(resources)
}

fn overloaded(answer: &Value) -> bool {
    answer["result"]["isError"] == json!(true)
        && answer["result"]["structuredContent"]["error_type"] == "OVERLOADED"
}

#[tokio::test]
async fn past_the_waiting_bound_requests_are_refused_at_once_and_ping_and_cancel_still_work() {
    let engine = bounded(1);
    let mut c = Conn::stdio(&engine, false).await;
    let Conn::Stdio { input, .. } = &mut c else {
        unreachable!()
    };
    // One runs, one waits: both are admitted before the ping after them is answered.
    for id in [1, 2] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hold", "arguments": {}}});
        write_line(input, &call).await;
    }
    let pong = c.request(3, "ping", json!({})).await;
    assert!(pong.get("result").is_some(), "{pong}");
    // A third is refused at once, a tool with a tool failure, a read with a JSON-RPC error.
    let refused = c
        .request(4, "tools/call", json!({"name": "ok", "arguments": {}}))
        .await;
    assert!(overloaded(&refused), "{refused}");
    let read = c
        .request(5, "resources/read", json!({"uri": "test://ok"}))
        .await;
    assert_eq!(read["error"]["code"], -32603, "{read}");
    assert!(
        read["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overloaded"),
        "{read}"
    );
    // Cancellation still reaches the running and the waiting call.
    for id in [1, 2] {
        c.notify("notifications/cancelled", json!({"requestId": id}))
            .await;
    }
    // Their slots come back: a normal call is admitted again (polled, with a deadline).
    let deadline = tokio::time::Instant::now() + HANG;
    let mut id = 10;
    loop {
        id += 1;
        let answer = c
            .request(id, "tools/call", json!({"name": "ok", "arguments": {}}))
            .await;
        if !overloaded(&answer) {
            assert_eq!(answer["result"]["content"][0]["text"], "fine", "{answer}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "slots never freed");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_response_to_a_server_request_arrives_while_every_permit_is_taken() {
    let engine = bounded(0);
    let (mut input, server_input) = tokio::io::duplex(64 * 1024);
    let (server_output, output) = tokio::io::duplex(64 * 1024);
    tokio::spawn(codomyrmex_mcp::transport::stdio::serve(
        engine,
        server_input,
        server_output,
    ));
    let mut output = BufReader::new(output);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "faults", "version": "0"}}});
    write_line(&mut input, &init).await;
    read_response(&mut output, 0).await;
    write_line(
        &mut input,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask", "arguments": {}}});
    write_line(&mut input, &ask).await;
    // The tool holds the only permit and asks the client.
    let request = tokio::time::timeout(HANG, async {
        loop {
            let mut line = String::new();
            assert!(output.read_line(&mut line).await.unwrap() > 0);
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["method"] == "elicitation/create" {
                return v;
            }
        }
    })
    .await
    .expect("the server asked");
    // Another call is refused at once; ping is answered.
    let other = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ok", "arguments": {}}});
    write_line(&mut input, &other).await;
    assert!(overloaded(&read_response(&mut output, 2).await));
    write_line(
        &mut input,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    )
    .await;
    assert!(read_response(&mut output, 3).await.get("result").is_some());
    // The answer to the server's request reaches the tool.
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"name": "ada"}}});
    write_line(&mut input, &answer).await;
    let done = read_response(&mut output, 1).await;
    assert_eq!(done["result"]["content"][0]["text"], "hello ada", "{done}");
}
