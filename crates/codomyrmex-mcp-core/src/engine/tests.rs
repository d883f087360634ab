//! In-memory tests of the engine: decoded messages in, responses and notifications out, with
//! no transport. Each test drives [`Engine::handle_decoded`] / [`Engine::handle`] with a
//! [`Session`] and a sink that records what the engine sends on its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::CancellationToken;
use async_lock::Semaphore;
use serde_json::{Value, json};

use super::*;
use crate::config::{CacheScope, McpServerConfig, RateLimit};
use crate::context::{ClientRequestError, MessageSink, ToolContext};
use crate::registry::{McpToolRegistry, ToolDefinition, ToolRegistration, ToolSettings};
use crate::schema::{JsonObject, McpErrorDetail, McpToolResult};
use crate::test_runtime::{JoinHandle, advance, idle, run, spawn};
use crate::wire::jsonrpc::decode;
use crate::wire::{ContentBlock, OutgoingMessage, ResourceContents};

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

/// Records every message the engine sends through the sink (notifications, server requests).
#[derive(Default)]
struct Recorder(Mutex<Vec<OutgoingMessage>>);

impl MessageSink for Recorder {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.0.lock().unwrap().push(message);
        true
    }
}

/// The wire form of a message, as a client would read it.
fn wire(m: &OutgoingMessage) -> Value {
    let bytes = m.to_bytes();
    assert!(
        !bytes.contains(&b'\n'),
        "a message must not embed a newline"
    );
    serde_json::from_slice(&bytes).unwrap()
}

struct Harness {
    engine: Engine,
    session: Arc<Session>,
    recorder: Arc<Recorder>,
    sink: Arc<dyn MessageSink>,
}

impl Harness {
    fn new(config: McpServerConfig, registry: McpToolRegistry) -> Self {
        let engine = Engine::new(config, Arc::new(registry));
        let session = engine.new_session();
        let recorder = Arc::new(Recorder::default());
        let sink: Arc<dyn MessageSink> = recorder.clone();
        Self {
            engine,
            session,
            recorder,
            sink,
        }
    }

    fn standard() -> Self {
        Self::new(config(), registry())
    }

    /// Another connection to the same engine.
    fn new_session(&self) -> Self {
        let recorder = Arc::new(Recorder::default());
        let sink: Arc<dyn MessageSink> = recorder.clone();
        Self {
            engine: self.engine.clone(),
            session: self.engine.new_session(),
            recorder,
            sink,
        }
    }

    /// Hands one line to the engine, as a transport would.
    fn line(&self, text: &str) -> Handled {
        self.engine
            .handle_decoded(&self.session, decode(text.as_bytes()), &self.sink)
    }

    fn message(&self, msg: &Value) -> Handled {
        self.line(&msg.to_string())
    }

    /// What the engine answers to `text`, awaiting pending work.
    async fn answer(&self, text: &str) -> Option<Value> {
        self.line(text).into_message().await.map(|m| wire(&m))
    }

    async fn send(&self, msg: Value) -> Option<Value> {
        self.answer(&msg.to_string()).await
    }

    /// A request that must be answered.
    async fn request(&self, id: Value, method: &str, params: Value) -> Value {
        let response = self
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
            .unwrap_or_else(|| panic!("no answer to {method}"));
        assert_eq!(response["jsonrpc"], "2.0", "{response}");
        assert_eq!(response["id"], id, "the id must be echoed: {response}");
        response
    }

    /// A request whose result is returned; panics on an error response.
    async fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.request(json!(1), method, params).await;
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// A request whose error object is returned; panics on a result.
    async fn err(&self, method: &str, params: Value) -> Value {
        let response = self.request(json!(1), method, params).await;
        assert!(
            response.get("result").is_none(),
            "{method} should have failed: {response}"
        );
        response["error"].clone()
    }

    fn notify(&self, method: &str, params: Value) {
        let handled = self.message(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
        assert!(
            matches!(handled, Handled::Nothing),
            "a notification must never be answered: {handled:?}"
        );
    }

    /// The legacy handshake at `version`; returns the `initialize` result.
    async fn init_with(&self, version: &str, capabilities: Value) -> Value {
        let result = self
            .ok(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "engine-tests", "version": "0"},
                }),
            )
            .await;
        self.notify("notifications/initialized", json!({}));
        result
    }

    async fn init(&self) -> Value {
        self.init_with("2025-11-25", json!({})).await
    }

    /// Starts a request whose work is pending and drives it on its own task.
    fn spawn(&self, msg: Value) -> JoinHandle<Option<Value>> {
        match self.message(&msg) {
            h @ (Handled::Pending(_) | Handled::Invoke(_)) => {
                let f = h.into_message();
                spawn(async move { f.await.map(|m| wire(&m)) })
            }
            other => panic!("expected pending work, got {other:?}"),
        }
    }

    fn spawn_call(&self, id: Value, name: &str, args: Value) -> JoinHandle<Option<Value>> {
        self.spawn(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": args}}))
    }

    /// Takes what the sink recorded so far.
    fn sent(&self) -> Vec<Value> {
        std::mem::take(&mut *self.recorder.0.lock().unwrap())
            .iter()
            .map(wire)
            .collect()
    }
}

fn config() -> McpServerConfig {
    McpServerConfig::new("engine-test-server", "9.8.7")
        .with_instructions("Use the echo tool.")
        .with_rate_limit(None)
}

fn modern_meta() -> Value {
    json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {},
        META_CLIENT_INFO: {"name": "engine-tests", "version": "0"},
    })
}

/// `params` with the modern era's required `_meta`.
fn modern(params: Value) -> Value {
    let mut params = params;
    let meta = params
        .as_object_mut()
        .unwrap()
        .entry("_meta")
        .or_insert_with(|| json!({}));
    for (k, v) in modern_meta().as_object().unwrap() {
        meta.as_object_mut()
            .unwrap()
            .entry(k.clone())
            .or_insert(v.clone());
    }
    params
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn open_schema() -> Value {
    json!({"type": "object"})
}

fn level_of(name: &str) -> LoggingLevel {
    serde_json::from_value(json!(name)).unwrap()
}

/// Tools most tests use.
fn registry() -> McpToolRegistry {
    let r = McpToolRegistry::new();
    r.register(
        "echo",
        open_schema(),
        |args: JsonObject| -> Result<Value, McpErrorDetail> { Ok(Value::Object(args)) },
    )
    .unwrap();
    r.register(
        "add",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
        |args: JsonObject| -> Result<Value, McpErrorDetail> {
            Ok(json!(args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()))
        },
    )
    .unwrap();
    r.register("noop", open_schema(), |_: JsonObject| {
        McpToolResult::no_change_needed("The file already has that content.")
    })
    .unwrap();
    r.register(
        "fail",
        open_schema(),
        |_: JsonObject| -> Result<Value, McpErrorDetail> {
            Err(
                McpErrorDetail::new("FileNotFoundError", "no such file: a.txt")
                    .with_details(obj(json!({"path": "a.txt"}))),
            )
        },
    )
    .unwrap();
    r.register(
        "boom",
        open_schema(),
        |_: JsonObject| -> Result<Value, McpErrorDetail> {
            panic!("secret /home/user/.ssh/id_rsa")
        },
    )
    .unwrap();
    r.register("blocks", open_schema(), |_: JsonObject| {
        vec![
            ContentBlock::text("hello"),
            ContentBlock::image("aW1n", "image/png"),
            ContentBlock::audio("YXVk", "audio/wav"),
            ContentBlock::resource_link("file:///tmp/a.txt", "a.txt"),
            ContentBlock::embedded(ResourceContents::Text {
                uri: "test://doc".into(),
                mime_type: Some("text/plain".into()),
                text: "embedded".into(),
                meta: None,
            }),
        ]
    })
    .unwrap();
    r.register(
        "log",
        open_schema(),
        |_: JsonObject, cx: ToolContext| -> Result<Value, McpErrorDetail> {
            let mut queued = Vec::new();
            for level in ["debug", "info", "warning", "error"] {
                if cx.log(level_of(level), json!({"said": level})) {
                    queued.push(level);
                }
            }
            Ok(json!({"queued": queued}))
        },
    )
    .unwrap();
    r.register(
        "progress",
        open_schema(),
        |_: JsonObject, cx: ToolContext| -> Result<Value, McpErrorDetail> {
            let sent: Vec<bool> = (1..=3)
                .map(|i| cx.progress(f64::from(i), Some(3.0), Some(&format!("step {i}"))))
                .collect();
            Ok(json!({"sent": sent}))
        },
    )
    .unwrap();
    r.register(
        "ask",
        open_schema(),
        |_: JsonObject, cx: ToolContext| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
            match cx.elicit("What is your name?", schema).await {
                Ok(answer) => Ok(json!({"answer": answer})),
                Err(e) => Err(McpErrorDetail::new(
                    "ElicitationFailed",
                    match e {
                        ClientRequestError::MissingCapability(c) => format!("missing:{c}"),
                        ClientRequestError::Unavailable => "unavailable".to_owned(),
                        ClientRequestError::Client { code, message } => {
                            format!("client:{code}:{message}")
                        }
                        other => other.to_string(),
                    },
                )),
            }
        },
    )
    .unwrap();
    r
}

/// Runs everything that can run, then checks that `f` holds: what a test waits for happens
/// without the clock moving, or not at all.
async fn wait_until(what: &str, f: impl Fn() -> bool) {
    idle().await;
    assert!(f(), "{what} did not happen (nothing else can run)");
}

/// Awaits a spawned request (the runtime's stall check is the hang guard).
async fn finish(h: JoinHandle<Option<Value>>) -> Option<Value> {
    h.await
}

fn text_of(block: &Value) -> &str {
    assert_eq!(block["type"], "text", "{block}");
    block["text"].as_str().unwrap()
}

/// Sets its flag when dropped: proves a tool's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A tool that never finishes by itself. It hands out its cancellation token and notes when
/// its future is dropped.
struct Hanging {
    started: Arc<AtomicUsize>,
    dropped: Arc<AtomicBool>,
    token: Arc<Mutex<Option<CancellationToken>>>,
}

impl Hanging {
    fn register(r: &McpToolRegistry, name: &str, settings: ToolSettings) -> Self {
        let this = Self {
            started: Arc::default(),
            dropped: Arc::default(),
            token: Arc::default(),
        };
        let (started, dropped, token) = (
            this.started.clone(),
            this.dropped.clone(),
            this.token.clone(),
        );
        r.register_tool(
            ToolRegistration::new(
                ToolDefinition::new(name, open_schema()),
                move |_: JsonObject, cx: ToolContext| {
                    let (started, dropped, token) =
                        (started.clone(), dropped.clone(), token.clone());
                    async move {
                        let _flag = DropFlag(dropped);
                        *token.lock().unwrap() = Some(cx.cancellation_token());
                        started.fetch_add(1, Ordering::SeqCst);
                        std::future::pending::<()>().await;
                        Ok::<_, McpErrorDetail>(json!("unreachable"))
                    }
                },
            )
            .with_settings(settings),
        )
        .unwrap();
        this
    }

    fn token(&self) -> CancellationToken {
        self.token
            .lock()
            .unwrap()
            .clone()
            .expect("the tool has not started")
    }
}

/// A tool that waits for a permit of `gate` per call, counting calls started and finished.
struct Gated {
    gate: Arc<Semaphore>,
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Gated {
    fn register(r: &McpToolRegistry, name: &str) -> Self {
        let this = Self {
            gate: Arc::new(Semaphore::new(0)),
            started: Arc::default(),
            finished: Arc::default(),
        };
        let (gate, started, finished) = (
            this.gate.clone(),
            this.started.clone(),
            this.finished.clone(),
        );
        r.register(name, open_schema(), move |_: JsonObject| {
            let (gate, started, finished) = (gate.clone(), started.clone(), finished.clone());
            async move {
                let n = started.fetch_add(1, Ordering::SeqCst) + 1;
                gate.acquire().await.forget();
                finished.fetch_add(1, Ordering::SeqCst);
                Ok::<_, McpErrorDetail>(json!({"call": n}))
            }
        })
        .unwrap();
        this
    }

    fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC 2.0
// ---------------------------------------------------------------------------------------------

#[test]
fn request_ids_are_echoed_exactly() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let ids = [
            r#""abc""#,
            r#""""#,
            r#""1""#,
            r#""with \"quotes\" and ü""#,
            "0",
            "7",
            "-42",
            "9007199254740993",
            "18446744073709551615",
            "-9223372036854775808",
        ];
        for id in ids {
            for (method, ok) in [("ping", true), ("no/such/method", false)] {
                let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}"}}"#);
                let Handled::Reply(m) = h.line(&line) else {
                    panic!("{method} should be answered at once")
                };
                let text = String::from_utf8(m.to_bytes()).unwrap();
                assert!(
                    text.contains(&format!(r#""id":{id},"#)),
                    "id {id} not echoed byte for byte: {text}"
                );
                assert_eq!(wire(&m).get("result").is_some(), ok, "{text}");
            }
        }
        // The same works for a tool call, whose answer comes later.
        let r = h
        .send(json!({"jsonrpc":"2.0","id":18446744073709551615u64,"method":"tools/call","params":{"name":"echo","arguments":{}}}))
        .await
        .unwrap();
        assert_eq!(r["id"], json!(18446744073709551615u64));
    });
}

#[test]
fn notifications_are_never_answered() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        h.notify("notifications/initialized", json!({}));
        h.notify("notifications/cancelled", json!({"requestId": 12345}));
        h.notify(
            "notifications/cancelled",
            json!({"requestId": {"bad": true}}),
        );
        h.notify(
            "notifications/progress",
            json!({"progressToken": 1, "progress": 1}),
        );
        h.notify("notifications/roots/list_changed", json!({}));
        h.notify("some/unknown/notification", json!({}));
        // A notification naming a request method is not a request: nothing runs, nothing answers.
        let gate_registry = registry();
        let gated = Gated::register(&gate_registry, "gated");
        let g = Harness::new(config(), gate_registry);
        g.init().await;
        g.notify("tools/call", json!({"name": "gated", "arguments": {}}));
        g.notify("ping", json!({}));
        g.notify("initialize", json!({"protocolVersion": "2025-11-25"}));
        idle().await;
        assert_eq!(gated.started(), 0);
        assert!(h.sent().is_empty() && g.sent().is_empty());
        // Without params at all, too.
        assert!(matches!(
            h.line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Handled::Nothing
        ));
    });
}

#[test]
fn parse_errors_answer_with_null_id() {
    run(async {
        let h = Harness::standard();
        for bad in [
            "{not json",
            "",
            "{\"jsonrpc\":\"2.0\",\"id\":1,",
            "\u{1}",
            "nul",
        ] {
            let Handled::Reply(m) = h.line(bad) else {
                panic!("{bad:?} should be answered")
            };
            let v = wire(&m);
            assert_eq!(v["error"]["code"], -32700, "{bad:?}: {v}");
            assert_eq!(v["id"], Value::Null, "{v}");
            assert!(
                v.as_object().unwrap().contains_key("id"),
                "id must be present as null"
            );
        }
        // The session is unharmed.
        h.init().await;
        assert_eq!(h.ok("ping", json!({})).await, json!({}));
    });
}

#[test]
fn invalid_requests_answer_minus_32600() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let cases: [(&str, Value); 7] = [
            (r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#, json!(5)),
            (r#"{"id":"x","method":"ping"}"#, json!("x")),
            (r#"{"jsonrpc":"2.0","id":6,"method":7}"#, json!(6)),
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"ping","params":[1]}"#,
                json!(8),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                Value::Null,
            ),
            (r#"42"#, Value::Null),
            (r#"[]"#, Value::Null),
        ];
        for (line, id) in cases {
            let Handled::Reply(m) = h.line(line) else {
                panic!("{line} should be answered")
            };
            let v = wire(&m);
            assert_eq!(v["error"]["code"], -32600, "{line}: {v}");
            assert_eq!(v["id"], id, "{line}: {v}");
        }
    });
}

#[test]
fn unknown_methods_answer_minus_32601() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        for method in [
            "no/such/method",
            "resources/list",
            "prompts/list",
            "server/discover",
        ] {
            let e = h.err(method, json!({})).await;
            assert_eq!(e["code"], -32601, "{method}: {e}");
            assert!(e["message"].as_str().unwrap().contains(method), "{e}");
        }
        // In the modern era too.
        let m = h.new_session();
        for method in ["no/such/method", "resources/list", "initialized"] {
            let e = m.err(method, modern(json!({}))).await;
            assert_eq!(e["code"], -32601, "{method}: {e}");
        }
        // A huge method name is not echoed in full.
        let long = "x".repeat(10_000);
        let e = h.err(&long, json!({})).await;
        assert!(e["message"].as_str().unwrap().len() < 300, "{e}");
    });
}

#[test]
fn invalid_params_answer_minus_32602() {
    run(async {
        let h = Harness::standard();
        // initialize without a string protocolVersion, or with non-object capabilities.
        for params in [
            json!({}),
            json!({"protocolVersion": 20251125}),
            json!({"protocolVersion": "2025-11-25", "capabilities": []}),
        ] {
            let e = h.err("initialize", params.clone()).await;
            assert_eq!(e["code"], -32602, "{params}: {e}");
        }
        assert_eq!(
            h.session.negotiated(),
            None,
            "a refused initialize opens no session"
        );
        h.init().await;
        for params in [
            json!({}),
            json!({"name": 5}),
            json!({"name": "echo", "arguments": [1, 2]}),
            json!({"name": "echo", "arguments": "a=1"}),
        ] {
            let e = h.err("tools/call", params.clone()).await;
            assert_eq!(e["code"], -32602, "{params}: {e}");
        }
        for params in [json!({}), json!({"level": "loud"}), json!({"level": 3})] {
            let e = h.err("logging/setLevel", params.clone()).await;
            assert_eq!(e["code"], -32602, "{params}: {e}");
        }
    });
}

#[test]
fn panics_do_not_leak_into_answers() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = h
            .ok("tools/call", json!({"name": "boom", "arguments": {}}))
            .await;
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(r["structuredContent"]["error_type"], "InternalError");
        let text = r.to_string();
        assert!(!text.contains("secret") && !text.contains(".ssh"), "{text}");
        // The engine keeps serving.
        assert_eq!(h.ok("ping", json!({})).await, json!({}));
    });
}

// ---------------------------------------------------------------------------------------------
// Lifecycle (2025-11-25 and earlier)
// ---------------------------------------------------------------------------------------------

#[test]
fn initialize_negotiates_each_legacy_version() {
    run(async {
        for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] {
            let h = Harness::standard();
            let r = h.init_with(version, json!({})).await;
            assert_eq!(r["protocolVersion"], version);
            assert_eq!(h.session.negotiated().map(|v| v.as_str()), Some(version));
            assert!(h.session.initialized_notified());
        }
        for unknown in [
            "1999-01-01",
            "2025-11-26",
            "",
            "2026-07-28",
            "DRAFT-2026-v1",
        ] {
            let h = Harness::standard();
            let r = h.init_with(unknown, json!({})).await;
            assert_eq!(r["protocolVersion"], "2025-11-25", "asked for {unknown:?}");
        }
    });
}

#[test]
fn initialize_reports_capabilities_identity_and_instructions() {
    run(async {
        let h = Harness::standard();
        let r = h.init().await;
        assert_eq!(r["serverInfo"]["name"], "engine-test-server");
        assert_eq!(r["serverInfo"]["version"], "9.8.7");
        assert_eq!(r["instructions"], "Use the echo tool.");
        assert!(r["capabilities"]["tools"].is_object(), "{r}");
        assert_eq!(r["capabilities"]["tools"]["listChanged"], true, "{r}");
        assert!(r["capabilities"]["logging"].is_object(), "{r}");
        // Nothing is claimed that the server does not serve.
        for absent in ["prompts", "resources", "completions", "tasks"] {
            assert!(r["capabilities"].get(absent).is_none(), "{absent}: {r}");
        }
        // Legacy results carry no modern fields.
        assert!(
            r.get("resultType").is_none() && r.get("_meta").is_none(),
            "{r}"
        );
        assert_eq!(
            h.session.client_info(),
            Some(json!({"name": "engine-tests", "version": "0"}))
        );

        let quiet = Harness::new(McpServerConfig::new("q", "1"), registry());
        let r = quiet.init().await;
        assert!(r.get("instructions").is_none(), "{r}");
    });
}

#[test]
fn initialize_twice_is_refused() {
    run(async {
        let h = Harness::standard();
        h.init_with("2025-06-18", json!({})).await;
        let e = h
            .err(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
            )
            .await;
        assert_eq!(e["code"], -32600, "{e}");
        assert_eq!(
            h.session.negotiated().map(|v| v.as_str()),
            Some("2025-06-18"),
            "the first negotiation stands"
        );
    });
}

#[test]
fn requests_before_initialize_are_refused_but_ping_is_allowed() {
    run(async {
        let registry = registry();
        let gated = Gated::register(&registry, "gated");
        let h = Harness::new(config(), registry);
        assert_eq!(h.ok("ping", json!({})).await, json!({}));
        for (method, params) in [
            ("tools/list", json!({})),
            ("tools/call", json!({"name": "gated", "arguments": {}})),
            ("logging/setLevel", json!({"level": "info"})),
        ] {
            let e = h.err(method, params).await;
            assert_eq!(e["code"], -32602, "{method}: {e}");
            assert!(
                e["message"].as_str().unwrap().contains("initialize"),
                "the message should say what to do: {e}"
            );
        }
        idle().await;
        assert_eq!(gated.started(), 0, "no tool runs before initialize");
        // After the handshake the same requests work.
        h.init().await;
        let tools = h.ok("tools/list", json!({})).await;
        assert!(!tools["tools"].as_array().unwrap().is_empty());
    });
}

#[test]
fn tools_list_changed_goes_only_to_initialised_sessions() {
    run(async {
        let h = Harness::standard();
        assert!(
            h.engine
                .listeners()
                .tools_list_changed(&h.session)
                .is_none()
        );
        h.init().await;
        let n = h
            .engine
            .listeners()
            .tools_list_changed(&h.session)
            .expect("a notification");
        assert_eq!(
            wire(&n),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Batches
// ---------------------------------------------------------------------------------------------

const PING_BATCH: &str =
    r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;

#[test]
fn batches_are_rejected_from_2025_06_18_on_and_in_the_modern_era() {
    run(async {
        for version in ["2025-06-18", "2025-11-25"] {
            let h = Harness::standard();
            h.init_with(version, json!({})).await;
            let v = h.answer(PING_BATCH).await.expect("an answer");
            assert!(v.is_object(), "one error, not an array: {v}");
            assert_eq!(v["error"]["code"], -32600, "{v}");
            assert_eq!(v["id"], Value::Null);
        }
        // Modern requests (no session) in a batch.
        let h = Harness::standard();
        let batch = json!([
            {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": modern(json!({}))},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": modern(json!({}))},
        ]);
        let v = h.send(batch).await.expect("an answer");
        assert_eq!(v["error"]["code"], -32600, "{v}");
        // Nothing ran.
        assert!(h.sent().is_empty());
    });
}

#[test]
fn batches_are_answered_as_an_array_for_2025_03_26() {
    run(async {
        for version in ["2025-03-26", "2024-11-05"] {
            let h = Harness::standard();
            h.init_with(version, json!({})).await;
            let batch = json!([
                {"jsonrpc": "2.0", "id": "a", "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}},
                5,
                {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"},
                {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": version}},
            ]);
            let v = h.send(batch).await.expect("an answer");
            let items = v.as_array().unwrap_or_else(|| panic!("an array: {v}"));
            assert_eq!(
                items.len(),
                5,
                "one answer per request, none for the notification: {v}"
            );
            assert_eq!(items[0]["id"], "a");
            assert_eq!(items[0]["result"], json!({}));
            assert_eq!(items[1]["id"], 2);
            assert_eq!(
                items[1]["result"]["structuredContent"],
                json!({"result": 5})
            );
            assert_eq!(items[2]["id"], Value::Null);
            assert_eq!(items[2]["error"]["code"], -32600);
            assert_eq!(items[3]["id"], 3);
            assert_eq!(items[3]["error"]["code"], -32601);
            assert_eq!(items[4]["id"], 4);
            assert_eq!(
                items[4]["error"]["code"], -32600,
                "initialize is never batched"
            );
            // Only notifications: nothing at all.
            let quiet = json!([
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
            ]);
            assert_eq!(h.send(quiet).await, None);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// tools/list
// ---------------------------------------------------------------------------------------------

fn names(page: &Value) -> Vec<String> {
    page["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn tools_list_paginates_with_the_configured_page_size() {
    run(async {
        let h = Harness::new(config().with_page_size(4), registry());
        h.init().await;
        let all = h.engine.registry().list_tools();
        assert_eq!(all.len(), 9, "the fixture registry changed: {all:?}");
        let mut seen = Vec::new();
        let mut cursor: Option<Value> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = h.ok("tools/list", params).await;
            pages += 1;
            let got = names(&page);
            assert!(got.len() <= 4, "{page}");
            seen.extend(got);
            match page.get("nextCursor") {
                Some(c) => {
                    assert!(c.is_string(), "{page}");
                    cursor = Some(c.clone());
                }
                None => break,
            }
            assert!(pages < 10, "pagination does not end");
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, all, "every tool exactly once, in order");
        // A tool entry is an MCP Tool.
        let page = h.ok("tools/list", json!({})).await;
        let add = &page["tools"][0];
        assert_eq!(add["name"], "add");
        assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
        // An exact multiple of the page size ends without a dangling cursor.
        let r = McpToolRegistry::new();
        for n in ["a", "b", "c", "d"] {
            r.register(n, open_schema(), |_: JsonObject| {
                McpToolResult::success(None)
            })
            .unwrap();
        }
        let exact = Harness::new(config().with_page_size(2), r);
        exact.init().await;
        let p1 = exact.ok("tools/list", json!({})).await;
        let p2 = exact
            .ok("tools/list", json!({"cursor": p1["nextCursor"]}))
            .await;
        assert_eq!(names(&p2), ["c", "d"]);
        assert!(p2.get("nextCursor").is_none(), "{p2}");
    });
}

#[test]
fn invalid_cursors_answer_minus_32602() {
    run(async {
        let h = Harness::new(config().with_page_size(2), registry());
        h.init().await;
        for cursor in [
            json!("zz"),
            json!("abc"),
            json!(5),
            json!({}),
            json!("ff".repeat(300)),
        ] {
            let e = h.err("tools/list", json!({"cursor": cursor})).await;
            assert_eq!(e["code"], -32602, "{cursor}: {e}");
        }
        // In the modern era too.
        let e = h
            .err("tools/list", modern(json!({"cursor": "not a cursor"})))
            .await;
        assert_eq!(e["code"], -32602, "{e}");
    });
}

#[test]
fn legacy_lists_carry_no_modern_fields() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let page = h.ok("tools/list", json!({})).await;
        for key in ["ttlMs", "cacheScope", "resultType", "_meta"] {
            assert!(page.get(key).is_none(), "{key}: {page}");
        }
    });
}

// ---------------------------------------------------------------------------------------------
// tools/call
// ---------------------------------------------------------------------------------------------

async fn call(h: &Harness, name: &str, args: Value) -> Value {
    h.ok("tools/call", json!({"name": name, "arguments": args}))
        .await
}

#[test]
fn success_maps_to_structured_content_and_a_json_text_block() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let args = json!({"msg": "hi", "n": [1, 2, {"deep": true}]});
        let r = call(&h, "echo", args.clone()).await;
        assert_eq!(r["structuredContent"], args);
        assert_ne!(r["isError"], true, "{r}");
        let content = r["content"].as_array().unwrap();
        assert_eq!(content.len(), 1, "{r}");
        let text: Value = serde_json::from_str(text_of(&content[0])).unwrap();
        assert_eq!(text, args, "the text block carries the same JSON");
        // A non-object value is wrapped as {"result": value}.
        let r = call(&h, "add", json!({"a": 40, "b": 2})).await;
        assert_eq!(r["structuredContent"], json!({"result": 42}));
        // Missing arguments count as an empty object.
        let r = h.ok("tools/call", json!({"name": "echo"})).await;
        assert_eq!(r["structuredContent"], json!({}));
    });
}

#[test]
fn no_change_needed_is_a_success_with_the_explanation() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = call(&h, "noop", json!({})).await;
        assert_ne!(r["isError"], true, "{r}");
        let content = r["content"].as_array().unwrap();
        assert_eq!(content.len(), 1, "{r}");
        assert_eq!(text_of(&content[0]), "The file already has that content.");
    });
}

#[test]
fn failures_are_is_error_results_with_the_error_detail() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = call(&h, "fail", json!({})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(
            r["structuredContent"],
            json!({"error_type": "FileNotFoundError", "error_message": "no such file: a.txt", "error_details": {"path": "a.txt"}})
        );
        let text = text_of(&r["content"][0]);
        assert!(
            text.contains("FileNotFoundError")
                && text.contains("no such file: a.txt")
                && text.contains("a.txt"),
            "readable text: {text}"
        );
    });
}

#[test]
fn unknown_tools_are_protocol_errors() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let e = h
            .err("tools/call", json!({"name": "nope.tool", "arguments": {}}))
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        assert_eq!(e["message"], "Unknown tool: nope.tool");
        let m = h.new_session();
        let e = m
            .err(
                "tools/call",
                modern(json!({"name": "nope.tool", "arguments": {}})),
            )
            .await;
        assert_eq!(e["code"], -32602, "{e}");
        assert_eq!(e["message"], "Unknown tool: nope.tool");
    });
}

#[test]
fn invalid_arguments_are_tool_execution_errors() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = call(&h, "add", json!({"a": "two"})).await;
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(
            r["structuredContent"]["error_type"], "ValidationError",
            "{r}"
        );
        let violations = r["structuredContent"]["error_details"]["violations"]
            .as_array()
            .unwrap();
        assert_eq!(violations.len(), 2, "both problems are reported: {r}");
        let text = text_of(&r["content"][0]);
        assert!(text.starts_with("ValidationError: "), "{text}");
    });
}

#[test]
fn content_blocks_pass_through_unchanged() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = call(&h, "blocks", json!({})).await;
        assert_eq!(
            r["content"],
            json!([
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aW1n", "mimeType": "image/png"},
                {"type": "audio", "data": "YXVk", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt"},
                {"type": "resource", "resource": {"uri": "test://doc", "mimeType": "text/plain", "text": "embedded"}},
            ])
        );
        assert!(r.get("structuredContent").is_none(), "{r}");
        assert_ne!(r["isError"], true);
    });
}

#[test]
fn output_schemas_govern_structured_content() {
    run(async {
        let r = registry();
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        r.register_tool(ToolRegistration::new(
            ToolDefinition::new("typed", open_schema()).with_output_schema(schema.clone()),
            |args: JsonObject| -> Result<Value, McpErrorDetail> {
                match args.get("mode").and_then(Value::as_str) {
                    Some("fail") => Err(McpErrorDetail::new("Nope", "failed")),
                    Some("wrong") => Ok(json!({"n": "not a number"})),
                    _ => Ok(json!({"n": 1})),
                }
            },
        ))
        .unwrap();
        let h = Harness::new(config(), r);
        h.init().await;
        let page = h.ok("tools/list", json!({})).await;
        let typed = page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "typed")
            .unwrap();
        assert_eq!(typed["outputSchema"], schema);
        let ok = call(&h, "typed", json!({})).await;
        assert_eq!(ok["structuredContent"], json!({"n": 1}));
        // A failure cannot put an McpErrorDetail where the output schema's data goes.
        let failed = call(&h, "typed", json!({"mode": "fail"})).await;
        assert_eq!(failed["isError"], true);
        assert!(failed.get("structuredContent").is_none(), "{failed}");
        assert!(text_of(&failed["content"][0]).contains("Nope"));
        let wrong = call(&h, "typed", json!({"mode": "wrong"})).await;
        assert_eq!(wrong["isError"], true, "{wrong}");
        assert!(
            text_of(&wrong["content"][0]).starts_with("OutputValidationError"),
            "{wrong}"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// The modern era (2026-07-28)
// ---------------------------------------------------------------------------------------------

fn assert_modern_result(r: &Value, server: &str) {
    assert_eq!(r["resultType"], "complete", "{r}");
    assert_eq!(
        r["_meta"][META_SERVER_INFO],
        json!({"name": server, "version": "9.8.7"}),
        "{r}"
    );
}

#[test]
fn server_discover_describes_the_server() {
    run(async {
        let mut cfg = config();
        cfg.list_ttl = Duration::from_millis(1234);
        cfg.cache_scope = CacheScope::Private;
        let h = Harness::new(cfg, registry());
        let r = h.ok("server/discover", modern(json!({}))).await;
        assert_eq!(
            r["supportedVersions"],
            json!([
                "2026-07-28",
                "2025-11-25",
                "2025-06-18",
                "2025-03-26",
                "2024-11-05"
            ])
        );
        assert!(r["capabilities"]["tools"].is_object(), "{r}");
        assert_eq!(r["instructions"], "Use the echo tool.");
        assert_eq!(r["ttlMs"], 1234);
        assert_eq!(r["cacheScope"], "private");
        assert_modern_result(&r, "engine-test-server");
        assert_eq!(
            h.session.negotiated(),
            None,
            "modern requests open no session"
        );
    });
}

#[test]
fn modern_requests_need_version_and_capabilities_in_meta() {
    run(async {
        let h = Harness::standard();
        let cases = [
            // No _meta at all (and no session).
            json!({}),
            // protocolVersion missing.
            json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}),
            // clientCapabilities missing.
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}),
            // clientCapabilities not an object.
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: null}}),
            // protocolVersion not a string.
            json!({"_meta": {META_PROTOCOL_VERSION: 20260728, META_CLIENT_CAPABILITIES: {}}}),
            // logLevel not a level.
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "loud"}}),
        ];
        for method in ["server/discover", "tools/list", "tools/call"] {
            for params in &cases {
                let mut params = params.clone();
                if method == "tools/call" {
                    params["name"] = json!("echo");
                }
                let e = h.err(method, params.clone()).await;
                assert_eq!(e["code"], -32602, "{method} {params}: {e}");
            }
        }
        assert!(h.sent().is_empty());
    });
}

#[test]
fn unsupported_versions_answer_minus_32022() {
    run(async {
        let h = Harness::standard();
        for requested in ["1900-01-01", "2027-01-01", ""] {
            let params =
                json!({"_meta": {META_PROTOCOL_VERSION: requested, META_CLIENT_CAPABILITIES: {}}});
            for method in ["server/discover", "tools/list"] {
                let e = h.err(method, params.clone()).await;
                assert_eq!(e["code"], -32022, "{e}");
                assert_eq!(e["message"], "Unsupported protocol version");
                assert_eq!(e["data"]["requested"], requested);
                let supported = e["data"]["supported"].as_array().unwrap();
                assert!(supported.contains(&json!("2026-07-28")), "{e}");
                assert!(supported.contains(&json!("2025-11-25")), "{e}");
            }
        }
        // A legacy version in _meta is not a modern version, and no session negotiated it.
        let e = h
        .err(
            "tools/list",
            json!({"_meta": {META_PROTOCOL_VERSION: "2025-06-18", META_CLIENT_CAPABILITIES: {}}}),
        )
        .await;
        assert_eq!(e["code"], -32022, "{e}");
        // The echoed version is bounded.
        let e = h
        .err(
            "tools/list",
            json!({"_meta": {META_PROTOCOL_VERSION: "9".repeat(10_000), META_CLIENT_CAPABILITIES: {}}}),
        )
        .await;
        assert!(e["data"]["requested"].as_str().unwrap().len() <= 64, "{e}");
    });
}

#[test]
fn every_modern_result_carries_result_type_and_server_info() {
    run(async {
        let h = Harness::new(config().with_page_size(3), registry());
        let discover = h.ok("server/discover", modern(json!({}))).await;
        assert_modern_result(&discover, "engine-test-server");
        let list = h.ok("tools/list", modern(json!({}))).await;
        assert_modern_result(&list, "engine-test-server");
        assert_eq!(list["ttlMs"], 60_000, "the default TTL is 60 s");
        assert_eq!(list["cacheScope"], "public");
        assert_eq!(names(&list).len(), 3);
        let next = h
            .ok("tools/list", modern(json!({"cursor": list["nextCursor"]})))
            .await;
        assert_modern_result(&next, "engine-test-server");
        assert_eq!(next["ttlMs"], 60_000);
        let ok = h
            .ok(
                "tools/call",
                modern(json!({"name": "add", "arguments": {"a": 1, "b": 2}})),
            )
            .await;
        assert_modern_result(&ok, "engine-test-server");
        assert_eq!(ok["structuredContent"], json!({"result": 3}));
        let failed = h
            .ok(
                "tools/call",
                modern(json!({"name": "fail", "arguments": {}})),
            )
            .await;
        assert_modern_result(&failed, "engine-test-server");
        assert_eq!(failed["isError"], true);
        // Call results are not cacheable lists.
        assert!(
            ok.get("ttlMs").is_none() && ok.get("cacheScope").is_none(),
            "{ok}"
        );
    });
}

#[test]
fn ping_and_set_level_do_not_exist_in_the_modern_era() {
    run(async {
        let h = Harness::standard();
        for (method, params) in [
            ("ping", json!({})),
            ("logging/setLevel", json!({"level": "info"})),
        ] {
            let e = h.err(method, modern(params.clone())).await;
            assert_eq!(e["code"], -32601, "{method}: {e}");
        }
        // Also on a connection that has a legacy session: the request's _meta picks the era.
        h.init().await;
        let e = h.err("ping", modern(json!({}))).await;
        assert_eq!(e["code"], -32601, "{e}");
        assert_eq!(h.ok("ping", json!({})).await, json!({}));
    });
}

#[test]
fn both_eras_share_one_connection() {
    run(async {
        let h = Harness::standard();
        h.init_with("2025-06-18", json!({})).await;
        let legacy = h.ok("tools/list", json!({})).await;
        let modern_list = h.ok("tools/list", modern(json!({}))).await;
        assert_eq!(legacy["tools"], modern_list["tools"]);
        assert!(legacy.get("resultType").is_none());
        assert_eq!(modern_list["resultType"], "complete");
        // A legacy request may restate its negotiated version in _meta.
        let restated = h
            .ok(
                "tools/list",
                json!({"_meta": {META_PROTOCOL_VERSION: "2025-06-18"}}),
            )
            .await;
        assert!(restated.get("resultType").is_none(), "{restated}");
        assert_eq!(
            h.session.negotiated().map(|v| v.as_str()),
            Some("2025-06-18"),
            "modern traffic leaves the legacy session alone"
        );
    });
}

#[test]
fn modern_log_level_is_per_request() {
    run(async {
        let h = Harness::standard();
        // No logLevel: no notifications/message, whatever the tool does.
        let r = h
            .ok(
                "tools/call",
                modern(json!({"name": "log", "arguments": {}})),
            )
            .await;
        assert_eq!(r["structuredContent"]["queued"], json!([]));
        assert!(h.sent().is_empty());
        // With one: only that level and above, for that request only.
        let mut params = modern(json!({"name": "log", "arguments": {}}));
        params["_meta"][META_LOG_LEVEL] = json!("warning");
        let r = h.ok("tools/call", params).await;
        assert_eq!(
            r["structuredContent"]["queued"],
            json!(["warning", "error"])
        );
        let sent = h.sent();
        assert_eq!(sent.len(), 2, "{sent:?}");
        for (note, level) in sent.iter().zip(["warning", "error"]) {
            assert_eq!(note["method"], "notifications/message");
            assert_eq!(note["params"]["level"], level);
            assert_eq!(note["params"]["logger"], "log");
            assert_eq!(note["params"]["data"], json!({"said": level}));
            assert!(note.get("id").is_none());
        }
        let _ = h
            .ok(
                "tools/call",
                modern(json!({"name": "log", "arguments": {}})),
            )
            .await;
        assert!(
            h.sent().is_empty(),
            "the level does not stick to the connection"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Logging and progress (legacy)
// ---------------------------------------------------------------------------------------------

#[test]
fn set_level_filters_log_messages() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        let r = call(&h, "log", json!({})).await;
        assert_eq!(
            r["structuredContent"]["queued"],
            json!([]),
            "no level set: no messages"
        );
        assert!(h.sent().is_empty());
        assert_eq!(
            h.ok("logging/setLevel", json!({"level": "info"})).await,
            json!({})
        );
        call(&h, "log", json!({})).await;
        let levels: Vec<Value> = h
            .sent()
            .iter()
            .map(|n| n["params"]["level"].clone())
            .collect();
        assert_eq!(levels, [json!("info"), json!("warning"), json!("error")]);
        h.ok("logging/setLevel", json!({"level": "error"})).await;
        call(&h, "log", json!({})).await;
        let sent = h.sent();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["method"], "notifications/message");
        assert_eq!(sent[0]["params"]["level"], "error");
        // The level belongs to the session: another connection hears nothing.
        let other = h.new_session();
        other.init().await;
        call(&other, "log", json!({})).await;
        assert!(other.sent().is_empty());
    });
}

#[test]
fn progress_notifications_follow_the_progress_token() {
    run(async {
        let h = Harness::standard();
        h.init().await;
        for token in [json!("tok-1"), json!(77)] {
            let r = h
                .ok(
                    "tools/call",
                    json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": token}}),
                )
                .await;
            assert_eq!(r["structuredContent"]["sent"], json!([true, true, true]));
            let sent = h.sent();
            assert_eq!(sent.len(), 3, "{sent:?}");
            for (i, note) in sent.iter().enumerate() {
                let step = i + 1;
                assert_eq!(note["method"], "notifications/progress");
                assert_eq!(note["params"]["progressToken"], token);
                assert_eq!(note["params"]["progress"], json!(step as f64));
                assert_eq!(note["params"]["total"], json!(3.0));
                assert_eq!(note["params"]["message"], format!("step {step}"));
            }
        }
        // No token, or one that is neither a string nor an integer: no notifications.
        for meta in [
            json!({}),
            json!({"progressToken": 1.5}),
            json!({"progressToken": {"x": 1}}),
        ] {
            let r = h
                .ok(
                    "tools/call",
                    json!({"name": "progress", "arguments": {}, "_meta": meta}),
                )
                .await;
            assert_eq!(
                r["structuredContent"]["sent"],
                json!([false, false, false]),
                "{meta}"
            );
        }
        assert!(h.sent().is_empty());
        // Modern requests get progress too.
        let m = h.new_session();
        let mut params = modern(json!({"name": "progress", "arguments": {}}));
        params["_meta"]["progressToken"] = json!("m");
        m.ok("tools/call", params).await;
        assert_eq!(m.sent().len(), 3);
    });
}

// ---------------------------------------------------------------------------------------------
// Cancellation, timeouts, rate limits, concurrency
// ---------------------------------------------------------------------------------------------

#[test]
fn cancellation_stops_the_tool_and_suppresses_the_response() {
    run(async {
        let r = registry();
        let hang = Hanging::register(&r, "hang", ToolSettings::default());
        let h = Harness::new(config(), r);
        h.init().await;
        let task = h.spawn_call(json!("req-1"), "hang", json!({}));
        wait_until("the tool to start", || {
            hang.started.load(Ordering::SeqCst) == 1
        })
        .await;
        assert_eq!(h.session.in_flight(), 1);
        let token = hang.token();
        assert!(!token.is_cancelled());
        // A cancellation of another id (same digits, other type) changes nothing.
        h.notify("notifications/cancelled", json!({"requestId": 1}));
        h.notify("notifications/cancelled", json!({"requestId": "req-2"}));
        idle().await;
        assert!(!token.is_cancelled());
        h.notify(
            "notifications/cancelled",
            json!({"requestId": "req-1", "reason": "user pressed stop"}),
        );
        assert!(token.is_cancelled(), "the tool's cancellation token fires");
        assert_eq!(
            finish(task).await,
            None,
            "no response for a cancelled request"
        );
        assert!(
            hang.dropped.load(Ordering::SeqCst),
            "the tool's future was dropped"
        );
        assert_eq!(h.session.in_flight(), 0);
        assert!(h.sent().is_empty(), "nothing else is sent for it");
        // A late cancellation of a finished request is ignored, and the id can be reused.
        h.notify("notifications/cancelled", json!({"requestId": "req-1"}));
        let again = h
            .request(
                json!("req-1"),
                "tools/call",
                json!({"name": "echo", "arguments": {"x": 1}}),
            )
            .await;
        assert_eq!(again["result"]["structuredContent"], json!({"x": 1}));
    });
}

#[test]
fn cancellation_before_the_work_starts() {
    run(async {
        let r = registry();
        let hang = Hanging::register(&r, "hang", ToolSettings::default());
        let h = Harness::new(config(), r);
        h.init().await;
        let handled = h.message(
            &json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hang"}}),
        );
        assert!(
            matches!(handled, Handled::Invoke(_)),
            "an invocation expected"
        );
        let fut = handled.into_message();
        h.notify("notifications/cancelled", json!({"requestId": 5}));
        assert_eq!(fut.await, None);
        assert_eq!(hang.started.load(Ordering::SeqCst), 0, "the tool never ran");
        assert_eq!(h.session.in_flight(), 0);
    });
}

#[test]
fn modern_requests_are_cancellable_too() {
    run(async {
        let r = registry();
        let hang = Hanging::register(&r, "hang", ToolSettings::default());
        let h = Harness::new(config(), r);
        let task = h.spawn(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":modern(json!({"name":"hang"}))}));
        wait_until("the tool to start", || {
            hang.started.load(Ordering::SeqCst) == 1
        })
        .await;
        h.notify("notifications/cancelled", json!({"requestId": 9}));
        assert_eq!(finish(task).await, None);
        assert!(hang.token().is_cancelled());
    });
}

#[test]
fn dropping_the_pending_work_cancels_the_tool() {
    run(async {
        // What a transport does when it gives up on a request (HTTP client disconnect, shutdown).
        let r = registry();
        let hang = Hanging::register(&r, "hang", ToolSettings::default());
        let h = Harness::new(config(), r);
        h.init().await;
        let task = h.spawn_call(json!(3), "hang", json!({}));
        wait_until("the tool to start", || {
            hang.started.load(Ordering::SeqCst) == 1
        })
        .await;
        task.abort();
        assert!(hang.dropped.load(Ordering::SeqCst));
        assert!(
            hang.token().is_cancelled(),
            "work the tool spawned is told to stop"
        );
        assert_eq!(h.session.in_flight(), 0);
    });
}

#[test]
fn timeouts_cancel_the_tool_and_fail_with_timeout() {
    run(async {
        let r = registry();
        let by_default = Hanging::register(&r, "hang", ToolSettings::default());
        let by_config = Hanging::register(&r, "hang.configured", ToolSettings::default());
        let by_setting = Hanging::register(
            &r,
            "hang.own",
            ToolSettings {
                timeout: Some(Duration::from_millis(40)),
                ..ToolSettings::default()
            },
        );
        let mut cfg = config().with_tool_timeout(Duration::from_millis(50));
        cfg.tool_timeouts =
            HashMap::from([("hang.configured".to_owned(), Duration::from_millis(30))]);
        let h = Harness::new(cfg, r);
        h.init().await;
        for (name, tool, ms) in [
            ("hang", &by_default, 50),
            ("hang.configured", &by_config, 30),
            ("hang.own", &by_setting, 40),
        ] {
            let pending = h.spawn_call(json!(name), name, json!({}));
            advance(Duration::from_millis(ms - 1)).await;
            assert!(!pending.is_finished(), "{name}: the timeout fired early");
            advance(Duration::from_millis(1)).await;
            assert!(pending.is_finished(), "{name}: the timeout did not fire");
            let response = finish(pending).await.expect("a response");
            let out = response["result"].clone();
            assert_eq!(out["isError"], true, "{out}");
            assert_eq!(out["structuredContent"]["error_type"], "TIMEOUT", "{out}");
            let message = out["structuredContent"]["error_message"].as_str().unwrap();
            assert!(message.contains(&format!("{ms} ms")), "{name}: {message}");
            assert!(
                tool.dropped.load(Ordering::SeqCst),
                "{name}: the tool future was dropped"
            );
            assert!(tool.token().is_cancelled(), "{name}: the token fired");
        }
        assert_eq!(h.session.in_flight(), 0);
    });
}

#[test]
fn rate_limits_fail_with_rate_limited() {
    run(async {
        let h = Harness::new(
            config().with_rate_limit(Some(RateLimit {
                per_second: 0.0,
                burst: 2,
            })),
            registry(),
        );
        h.init().await;
        assert_ne!(call(&h, "echo", json!({})).await["isError"], true);
        assert_ne!(
            call(&h, "add", json!({"a": 1, "b": 1})).await["isError"],
            true
        );
        let limited = call(&h, "echo", json!({})).await;
        assert_eq!(limited["isError"], true, "{limited}");
        assert_eq!(limited["structuredContent"]["error_type"], "RATE_LIMITED");
        assert!(
            limited["structuredContent"]["error_details"]["retry_after_ms"]
                .as_u64()
                .unwrap()
                > 0,
            "{limited}"
        );
        // Pings are not tool calls and are never limited.
        assert_eq!(h.ok("ping", json!({})).await, json!({}));

        // Per-tool limits leave other tools alone.
        let mut cfg = config();
        cfg.tool_rate_limits = HashMap::from([(
            "echo".to_owned(),
            RateLimit {
                per_second: 0.0,
                burst: 1,
            },
        )]);
        let h = Harness::new(cfg, registry());
        h.init().await;
        assert_ne!(call(&h, "echo", json!({})).await["isError"], true);
        let limited = call(&h, "echo", json!({})).await;
        assert_eq!(
            limited["structuredContent"]["error_type"], "RATE_LIMITED",
            "{limited}"
        );
        for _ in 0..5 {
            assert_ne!(
                call(&h, "add", json!({"a": 1, "b": 1})).await["isError"],
                true
            );
        }
    });
}

#[test]
fn concurrency_is_bounded_by_config() {
    run(async {
        let r = registry();
        let gated = Gated::register(&r, "gated");
        let hang = Hanging::register(&r, "hang", ToolSettings::default());
        let mut cfg = config();
        cfg.max_concurrent_requests = 2;
        let h = Harness::new(cfg, r);
        h.init().await;
        let calls: Vec<_> = (0..3)
            .map(|i| h.spawn_call(json!(i), "gated", json!({})))
            .collect();
        wait_until("two calls to start", || gated.started() == 2).await;
        // Give the third every chance to start; it must not.
        for _ in 0..20 {
            idle().await;
        }
        advance(Duration::from_millis(50)).await;
        assert_eq!(gated.started(), 2, "the bound holds");
        assert_eq!(h.session.in_flight(), 3, "the third is queued, not refused");
        // Requests that are not tool calls are answered at once.
        assert!(matches!(
            h.line(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#),
            Handled::Reply(_)
        ));
        assert!(matches!(
            h.line(r#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#),
            Handled::Reply(_)
        ));
        // A queued request can be cancelled before it starts.
        let queued = h.spawn_call(json!("queued"), "hang", json!({}));
        idle().await;
        h.notify("notifications/cancelled", json!({"requestId": "queued"}));
        assert_eq!(finish(queued).await, None);
        assert_eq!(hang.started.load(Ordering::SeqCst), 0);
        // Releasing one lets the third in.
        gated.gate.add_permits(1);
        wait_until("the third call to start", || gated.started() == 3).await;
        gated.gate.add_permits(2);
        let mut seen = Vec::new();
        for (i, c) in calls.into_iter().enumerate() {
            let r = finish(c).await.expect("a response");
            assert_eq!(r["id"], i);
            seen.push(r["result"]["structuredContent"]["call"].as_u64().unwrap());
        }
        seen.sort_unstable();
        assert_eq!(seen, [1, 2, 3]);
        assert_eq!(gated.finished.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn stateless_sessions_share_one_concurrency_bound() {
    run(async {
        let r = registry();
        let gated = Gated::register(&r, "gated");
        let mut cfg = config();
        cfg.max_concurrent_requests = 2;
        let h = Harness::new(cfg, r);
        // Three stateless requests, each on a session of its own, as HTTP serves them.
        let calls: Vec<_> = (0..3)
            .map(|i| {
                let session = h.engine.new_stateless_session();
                let msg = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": modern(json!({"name": "gated", "arguments": {}}))});
                match h
                    .engine
                    .handle_decoded(&session, decode(msg.to_string().as_bytes()), &h.sink)
                {
                    h @ (Handled::Pending(_) | Handled::Invoke(_)) => {
                        let f = h.into_message();
                        spawn(async move { f.await.map(|m| wire(&m)) })
                    }
                    other => panic!("expected pending work, got {other:?}"),
                }
            })
            .collect();
        wait_until("two calls to start", || gated.started() >= 2).await;
        for _ in 0..20 {
            idle().await;
        }
        advance(Duration::from_millis(50)).await;
        assert_eq!(
            gated.started(),
            2,
            "the bound holds across stateless sessions"
        );
        // Sessions from `new_session` keep bounds of their own.
        let own = h.new_session();
        own.init().await;
        let separate = own.spawn_call(json!("own"), "gated", json!({}));
        wait_until("the separate session's call to start", || {
            gated.started() == 3
        })
        .await;
        gated.gate.add_permits(4);
        for c in calls {
            assert!(finish(c).await.is_some());
        }
        assert!(finish(separate).await.is_some());
        assert_eq!(gated.finished.load(Ordering::SeqCst), 4);
    });
}

#[test]
fn a_duplicate_in_flight_id_is_refused() {
    run(async {
        let r = registry();
        let gated = Gated::register(&r, "gated");
        let h = Harness::new(config(), r);
        h.init().await;
        let first = h.spawn_call(json!(7), "gated", json!({}));
        wait_until("the first call to start", || gated.started() == 1).await;
        let dup = h
            .request(
                json!(7),
                "tools/call",
                json!({"name": "echo", "arguments": {}}),
            )
            .await;
        assert_eq!(dup["error"]["code"], -32600, "{dup}");
        // The same digits as a string are another id.
        let other = h
            .request(
                json!("7"),
                "tools/call",
                json!({"name": "echo", "arguments": {}}),
            )
            .await;
        assert!(other.get("result").is_some(), "{other}");
        // The refusal did not disturb the running call.
        gated.gate.add_permits(1);
        let r = finish(first).await.expect("a response");
        assert_eq!(r["result"]["structuredContent"]["call"], 1);
        // Once answered, the id is free again.
        let again = h
            .request(
                json!(7),
                "tools/call",
                json!({"name": "echo", "arguments": {}}),
            )
            .await;
        assert!(again.get("result").is_some(), "{again}");
    });
}

// ---------------------------------------------------------------------------------------------
// Server-to-client requests (legacy)
// ---------------------------------------------------------------------------------------------

/// Waits for the server-to-client request the tool sent and returns it.
async fn server_request(h: &Harness) -> Value {
    let recorder = h.recorder.clone();
    wait_until("a server-to-client request", || {
        !recorder.0.lock().unwrap().is_empty()
    })
    .await;
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent.into_iter().next().unwrap()
}

#[test]
fn elicitation_round_trips_through_the_client() {
    run(async {
        let h = Harness::standard();
        h.init_with("2025-11-25", json!({"elicitation": {}})).await;
        let task = h.spawn_call(json!(1), "ask", json!({}));
        let req = server_request(&h).await;
        assert_eq!(req["jsonrpc"], "2.0");
        assert_eq!(req["method"], "elicitation/create");
        assert_eq!(req["params"]["message"], "What is your name?");
        assert_eq!(
            req["params"]["requestedSchema"]["required"],
            json!(["name"])
        );
        let id = req["id"].clone();
        assert!(id.is_string() || id.is_number(), "{req}");
        // An answer to some other id resolves nothing.
        let stray = h
            .message(&json!({"jsonrpc": "2.0", "id": "not-ours", "result": {"action": "decline"}}));
        assert!(matches!(stray, Handled::Nothing));
        // The client's answer is a response message, never answered itself.
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let handled = h.message(&json!({"jsonrpc": "2.0", "id": id, "result": answer}));
        assert!(matches!(handled, Handled::Nothing));
        let r = finish(task).await.expect("a response");
        assert_eq!(r["result"]["structuredContent"]["answer"], answer, "{r}");

        // A client error reaches the tool as such.
        let task = h.spawn_call(json!(2), "ask", json!({}));
        let req = server_request(&h).await;
        assert_ne!(req["id"], id, "each server request has its own id");
        let handled = h.message(
            &json!({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "no"}}),
        );
        assert!(matches!(handled, Handled::Nothing));
        let r = finish(task).await.expect("a response");
        assert_eq!(r["result"]["isError"], true);
        assert_eq!(
            r["result"]["structuredContent"]["error_message"],
            "client:-32601:no"
        );
    });
}

#[test]
fn elicitation_needs_the_declared_capability() {
    run(async {
        let h = Harness::standard();
        h.init_with("2025-11-25", json!({"sampling": {}})).await;
        let r = call(&h, "ask", json!({})).await;
        assert_eq!(r["isError"], true);
        assert_eq!(
            r["structuredContent"]["error_message"],
            "missing:elicitation"
        );
        assert!(h.sent().is_empty(), "the client is never asked");
    });
}

#[test]
fn cancelling_a_call_that_waits_for_the_client() {
    run(async {
        let h = Harness::standard();
        h.init_with("2025-11-25", json!({"elicitation": {}})).await;
        let task = h.spawn_call(json!("e"), "ask", json!({}));
        let req = server_request(&h).await;
        h.notify("notifications/cancelled", json!({"requestId": "e"}));
        assert_eq!(finish(task).await, None);
        // The late answer is harmless.
        let handled = h.message(
        &json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {}}}),
    );
        assert!(matches!(handled, Handled::Nothing));
        assert_eq!(h.ok("ping", json!({})).await, json!({}));
    });
}

#[test]
fn modern_requests_ask_for_input_with_input_required_results() {
    run(async {
        // On 2026-07-28 a server never writes requests of its own: input is asked for with an
        // InputRequiredResult, and the client retries with the answers.
        let h = Harness::standard();
        let with_elicitation = |extra: Value| {
            let mut params = modern(json!({"name": "ask", "arguments": {}}));
            params["_meta"][META_CLIENT_CAPABILITIES] = json!({"elicitation": {}});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            params
        };
        let first = h.ok("tools/call", with_elicitation(json!({}))).await;
        assert_eq!(first["resultType"], "input_required", "{first}");
        let asked = first["inputRequests"].as_object().unwrap();
        assert_eq!(asked.len(), 1, "{first}");
        let (key, request) = asked.iter().next().unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], "What is your name?");
        let state = first["requestState"]
            .as_str()
            .expect("a requestState")
            .to_owned();
        assert!(
            h.sent().is_empty(),
            "no server-to-client request was written"
        );
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let second = h
            .ok(
                "tools/call",
                with_elicitation(
                    json!({"inputResponses": {key.clone(): answer}, "requestState": state}),
                ),
            )
            .await;
        assert_eq!(second["resultType"], "complete", "{second}");
        assert_eq!(second["structuredContent"]["answer"], answer, "{second}");
        // Without the capability: the modern error, naming it.
        let e = h
            .err(
                "tools/call",
                modern(json!({"name": "ask", "arguments": {}})),
            )
            .await;
        assert_eq!(e["code"], -32021, "{e}");
        assert!(
            e["data"]["requiredCapabilities"]["elicitation"].is_object(),
            "{e}"
        );
        assert!(h.sent().is_empty());
    });
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn any_id_is_echoed(n in proptest::prelude::any::<i64>(), u in proptest::prelude::any::<u64>(), s in ".{0,40}") {
        run(async {
            let h = Harness::standard();
            h.init().await;
            for id in [json!(n), json!(u), json!(s)] {
                let r = h.request(id.clone(), "ping", json!({})).await;
                proptest::prop_assert_eq!(&r["id"], &id);
                let r = h.request(id.clone(), "tools/call", json!({"name": "echo", "arguments": {"id": id}})).await;
                proptest::prop_assert_eq!(&r["id"], &id);
                proptest::prop_assert_eq!(&r["result"]["structuredContent"]["id"], &id);
            }
            Ok(())
        })?;
    }

    #[test]
    fn arbitrary_lines_never_panic_and_requests_always_get_one_answer(line in ".{0,200}") {
        run(async {
            let h = Harness::standard();
            h.init().await;
            if let Some(answer) = h.answer(&line).await {
                let is_response = answer.is_array() || answer.get("result").is_some() || answer.get("error").is_some();
                proptest::prop_assert!(is_response, "{}", answer);
            }
            Ok(())
        })?;
    }
}

#[test]
fn answering_a_ping_needs_no_runtime() {
    // The engine is plain logic: building one and answering a ping needs no reactor.
    let engine = Engine::new(config(), Arc::new(registry()));
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(Recorder::default());
    let handled = engine.handle(
        &session,
        IncomingMessage::Request {
            id: RequestId::from("p"),
            method: "ping".into(),
            params: None,
        },
        &sink,
    );
    let Handled::Reply(m) = handled else {
        panic!("{handled:?}")
    };
    assert_eq!(wire(&m), json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
}

// ---------------------------------------------------------------------------------------------
// Construction: the requestState sealer is made once, and fails closed
// ---------------------------------------------------------------------------------------------

fn ask_with_elicitation(extra: Value) -> Value {
    let mut params = modern(json!({"name": "ask", "arguments": {}}));
    params["_meta"][META_CLIENT_CAPABILITIES] = json!({"elicitation": {}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    params
}

#[test]
fn request_states_handed_out_stay_valid_after_with_resources_and_with_prompts() {
    run(async {
        let mut h = Harness::standard();
        let first = h.ok("tools/call", ask_with_elicitation(json!({}))).await;
        let state = first["requestState"].as_str().unwrap().to_owned();
        let key = first["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        h.engine = h
            .engine
            .with_resources(Arc::new(crate::McpResourceRegistry::new()))
            .with_prompts(Arc::new(crate::McpPromptRegistry::new()));
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let second = h
            .ok(
                "tools/call",
                ask_with_elicitation(
                    json!({"inputResponses": {key: answer}, "requestState": state}),
                ),
            )
            .await;
        assert_eq!(second["resultType"], "complete", "{second}");
    });
}

#[test]
fn without_randomness_multi_round_trips_fail_closed_and_the_rest_still_works() {
    run(async {
        let mut h = Harness::standard();
        h.engine = Engine::builder(config(), Arc::new(registry()))
            .entropy(Arc::new(crate::platform::NoEntropy))
            .build();
        let e = h.err("tools/call", ask_with_elicitation(json!({}))).await;
        assert_eq!(e["code"], -32603, "{e}");
        let echo = h
            .ok(
                "tools/call",
                modern(json!({"name": "echo", "arguments": {"text": "hi"}})),
            )
            .await;
        assert_eq!(echo["resultType"], "complete", "{echo}");
    });
}
