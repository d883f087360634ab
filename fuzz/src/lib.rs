//! Shared pieces of the fuzz targets: a JSON generator biased towards MCP's vocabulary, an
//! engine with misbehaving tools, resources and prompts, and a recording sink.
//!
//! Everything here is deterministic given the fuzzer's bytes, so every crash reproduces.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use codomyrmex_mcp::MessageSink;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::PromptRequest;
use codomyrmex_mcp::ResourceRequest;
use codomyrmex_mcp::wire::{OutgoingMessage, ResourceContents};
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServerConfig,
    McpToolRegistry, PromptArgument, PromptDefinition, PromptMessage, PromptResult,
    ResourceDefinition, ResourceTemplateDefinition, ToolContext,
};
use serde_json::{Map, Number, Value, json};

/// Text a panicking handler carries: it must never reach the peer.
pub const SECRET: &str = "fuzz-secret-/etc/shadow";

pub const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "server/discover",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "no/such/method",
];

pub const TOOLS: &[&str] = &[
    "echo", "slow", "panic", "ask", "big", "fail", "progress", "missing",
];

pub const VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
    "2099-01-01",
    "",
];

pub const KEYS: &[&str] = &[
    "_meta",
    "name",
    "arguments",
    "cursor",
    "requestState",
    "inputResponses",
    "uri",
    "protocolVersion",
    "capabilities",
    "clientInfo",
    "level",
    "requestId",
    "progressToken",
    "ref",
    "argument",
    "context",
    "notifications",
    "resourceSubscriptions",
    "text",
    "ms",
    "n",
    "type",
    "value",
    "action",
    "content",
    "elicitation",
    "sampling",
    "roots",
    "toolsListChanged",
    "resourcesListChanged",
    "promptsListChanged",
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
    "io.modelcontextprotocol/clientInfo",
];

pub const URIS: &[&str] = &[
    "test://static",
    "test://panic",
    "test://big",
    "test://items/1",
    "test://items/a%20b",
    "test://items/%zz",
    "test://items/",
    "test://files/a/b/c.txt",
    "test://search?q=x&lang=en",
    "test://search",
    "test://nothing",
];

pub const LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
    "loud",
];

/// A short string: usually from `pool`, sometimes arbitrary.
pub fn pick_str(u: &mut Unstructured, pool: &[&str]) -> Result<String> {
    if u.ratio(1, 8)? {
        let len = u.int_in_range(0..=24)?;
        let bytes = u.bytes(len)?;
        Ok(String::from_utf8_lossy(bytes).into_owned())
    } else {
        Ok((*u.choose(pool)?).to_owned())
    }
}

/// Hex, as the engine's cursors are encoded.
pub fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// An arbitrary JSON value of bounded depth and size, biased towards MCP's vocabulary.
pub fn json_value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 6 } else { 8 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => match u.int_in_range(0..=3)? {
            0 => json!(u.arbitrary::<u64>()?),
            1 => Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
            _ => json!(u.int_in_range(-3..=3)?),
        },
        4 => Value::String(pick_str(u, KEYS)?),
        5 => Value::String(pick_str(u, &["", "x", "srv-1", "2026-07-28", "accept"])?),
        6 => {
            let n = u.int_in_range(0..=3)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(json_value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => Value::Object(json_object(u, depth - 1)?),
    })
}

/// An arbitrary JSON object whose keys mostly come from [`KEYS`].
pub fn json_object(u: &mut Unstructured, depth: u32) -> Result<Map<String, Value>> {
    let n = u.int_in_range(0..=4)?;
    let mut m = Map::new();
    for _ in 0..n {
        let k = pick_str(u, KEYS)?;
        m.insert(k, json_value(u, depth)?);
    }
    Ok(m)
}

/// `_meta` for a modern-era request (usually well formed, sometimes not).
pub fn modern_meta(u: &mut Unstructured) -> Result<Value> {
    let mut meta = Map::new();
    if !u.ratio(1, 16)? {
        meta.insert(
            "io.modelcontextprotocol/protocolVersion".into(),
            if u.ratio(1, 8)? {
                json_value(u, 0)?
            } else {
                json!(pick_str(u, VERSIONS)?)
            },
        );
    }
    if !u.ratio(1, 16)? {
        let mut caps = Map::new();
        for c in ["elicitation", "sampling", "roots"] {
            if u.arbitrary()? {
                caps.insert(c.into(), json!({}));
            }
        }
        meta.insert(
            "io.modelcontextprotocol/clientCapabilities".into(),
            if u.ratio(1, 16)? {
                json_value(u, 1)?
            } else {
                Value::Object(caps)
            },
        );
    }
    if u.ratio(1, 4)? {
        meta.insert(
            "io.modelcontextprotocol/logLevel".into(),
            json!(pick_str(u, LEVELS)?),
        );
    }
    if u.ratio(1, 4)? {
        meta.insert("progressToken".into(), json_value(u, 0)?);
    }
    Ok(Value::Object(meta))
}

/// Params for `method`, shaped like what a client sends, with arbitrary deviations.
/// `states` holds `requestState` values the server handed out earlier.
pub fn params_for(
    u: &mut Unstructured,
    method: &str,
    modern: bool,
    states: &[String],
) -> Result<Map<String, Value>> {
    let mut p = if u.ratio(1, 6)? {
        json_object(u, 2)?
    } else {
        Map::new()
    };
    match method {
        "initialize" => {
            p.insert("protocolVersion".into(), json!(pick_str(u, VERSIONS)?));
            let mut caps = Map::new();
            for c in ["elicitation", "sampling", "roots"] {
                if u.arbitrary()? {
                    caps.insert(c.into(), json!({}));
                }
            }
            p.insert("capabilities".into(), Value::Object(caps));
            p.insert("clientInfo".into(), json!({"name": "fuzz", "version": "0"}));
        }
        "tools/call" => {
            p.insert("name".into(), json!(pick_str(u, TOOLS)?));
            let mut args = Map::new();
            if u.arbitrary()? {
                args.insert("text".into(), json!(pick_str(u, &["hi", ""])?));
            }
            if u.arbitrary()? {
                args.insert("ms".into(), json!(u.int_in_range(0..=120_000u32)?));
            }
            if u.arbitrary()? {
                args.insert("n".into(), json!(u.int_in_range(0..=40_000u32)?));
            }
            if u.ratio(1, 8)? {
                args.insert(pick_str(u, KEYS)?, json_value(u, 1)?);
            }
            p.insert("arguments".into(), Value::Object(args));
        }
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            p.insert("uri".into(), json!(pick_str(u, URIS)?));
        }
        "prompts/get" => {
            p.insert(
                "name".into(),
                json!(pick_str(u, &["greet", "panic", "big", "missing"])?),
            );
            if u.arbitrary()? {
                p.insert(
                    "arguments".into(),
                    json!({"who": pick_str(u, &["you", ""])?}),
                );
            }
        }
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            if u.arbitrary()? {
                let cursor = match u.int_in_range(0..=3)? {
                    0 => hex(&u.arbitrary::<u64>()?.to_string()),
                    1 => hex(&pick_str(u, TOOLS)?),
                    2 => hex(&u.int_in_range(0..=4usize)?.to_string()),
                    _ => pick_str(u, &["zz", "0", "", "30"])?,
                };
                p.insert("cursor".into(), json!(cursor));
            }
        }
        "completion/complete" => {
            let reference = if u.arbitrary()? {
                json!({"type": "ref/prompt", "name": pick_str(u, &["greet", "missing"])?})
            } else {
                json!({"type": "ref/resource", "uri": pick_str(u, &["test://items/{id}", "x"])?})
            };
            p.insert("ref".into(), reference);
            p.insert(
                "argument".into(),
                json!({"name": pick_str(u, &["who", "id"])?, "value": pick_str(u, &["", "a"])?}),
            );
        }
        "logging/setLevel" => {
            p.insert("level".into(), json!(pick_str(u, LEVELS)?));
        }
        "subscriptions/listen" => {
            p.insert(
                "notifications".into(),
                json!({
                    "toolsListChanged": u.arbitrary::<bool>()?,
                    "resourcesListChanged": u.arbitrary::<bool>()?,
                    "resourceSubscriptions": [pick_str(u, URIS)?],
                }),
            );
        }
        "notifications/cancelled" => {
            p.insert("requestId".into(), request_id(u)?);
        }
        _ => {}
    }
    if modern {
        p.insert("_meta".into(), modern_meta(u)?);
        if matches!(method, "tools/call" | "prompts/get" | "resources/read") {
            if !states.is_empty() && u.arbitrary()? {
                let i = u.choose_index(states.len())?;
                p.insert("requestState".into(), json!(states[i]));
            } else if u.ratio(1, 16)? {
                p.insert("requestState".into(), json!(pick_str(u, &["x.y", "."])?));
            }
            if u.arbitrary()? {
                p.insert(
                    "inputResponses".into(),
                    json!({
                        "elicitation": {"action": "accept", "content": {"name": "fuzz"}},
                        "roots": {"roots": []},
                    }),
                );
            }
        }
    } else if u.ratio(1, 4)? {
        p.insert("_meta".into(), json!({"progressToken": json_value(u, 0)?}));
    }
    Ok(p)
}

/// A request id: small integers and a few strings, so ids collide and cancellations hit.
pub fn request_id(u: &mut Unstructured) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0 => json!(pick_str(u, &["a", "b", "srv-1", "srv-2"])?),
        1 => Value::Null,
        2 => json!(u.arbitrary::<i64>()?),
        3 => json!(1.5),
        _ => json!(u.int_in_range(0..=6)?),
    })
}

/// One JSON-RPC message (or, rarely, a batch), as a JSON value.
pub fn message(u: &mut Unstructured, states: &[String], depth: u32) -> Result<Value> {
    let kind = u.int_in_range(0..=15)?;
    Ok(match kind {
        0 => json_value(u, 2)?,
        1 if depth == 0 => {
            let n = u.int_in_range(0..=3)?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(message(u, states, depth + 1)?);
            }
            Value::Array(items)
        }
        2 => {
            // An answer to a server-to-client request.
            let id = json!(pick_str(u, &["srv-1", "srv-2", "srv-3"])?);
            if u.arbitrary()? {
                json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "fuzz"}}})
            } else {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "no"}})
            }
        }
        _ => {
            let method = pick_str(u, METHODS)?;
            let modern = u.arbitrary()?;
            let params = params_for(u, &method, modern, states)?;
            let mut m = Map::new();
            m.insert("jsonrpc".into(), json!("2.0"));
            if !method.starts_with("notifications/") || u.ratio(1, 8)? {
                m.insert("id".into(), request_id(u)?);
            }
            m.insert("method".into(), json!(method));
            if !params.is_empty() || u.arbitrary()? {
                m.insert("params".into(), Value::Object(params));
            }
            if u.ratio(1, 32)? {
                m.insert(
                    pick_str(u, &["result", "error", "jsonrpc"])?,
                    json_value(u, 0)?,
                );
            }
            Value::Object(m)
        }
    })
}

/// A sink that records what it is sent, up to a bound.
#[derive(Default)]
pub struct RecordingSink {
    pub messages: Mutex<Vec<OutgoingMessage>>,
}

impl MessageSink for RecordingSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        let mut m = self.messages.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= 4096 {
            return false;
        }
        m.push(message);
        true
    }
}

fn open() -> Value {
    json!({"type": "object"})
}

/// The tools every engine target serves: well-behaved and not.
fn tools() -> Arc<McpToolRegistry> {
    let r = Arc::new(McpToolRegistry::new());
    let _ = r.register(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |a: Map<String, Value>| -> std::result::Result<Value, McpErrorDetail> {
            Ok(json!({"text": a.get("text").cloned()}))
        },
    );
    let _ = r.register(
        "slow",
        json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}}),
        |a: Map<String, Value>, cx: ToolContext| async move {
            let ms = a.get("ms").and_then(Value::as_u64).unwrap_or(10);
            cx.progress(0.0, None, Some("sleeping"));
            tokio::select! {
                () = cx.cancelled() => {}
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            }
            Ok::<Value, McpErrorDetail>(json!({"slept": ms}))
        },
    );
    let _ = r.register(
        "panic",
        open(),
        |_: Map<String, Value>| -> std::result::Result<Value, McpErrorDetail> {
            panic!("{SECRET}")
        },
    );
    let _ = r.register(
        "ask",
        open(),
        |_: Map<String, Value>, cx: ToolContext| async move {
            let name = cx
                .elicit("name?", json!({"type": "object"}))
                .await
                .map_err(|e| McpErrorDetail::new("Input", e.to_string()))?;
            cx.set_request_state(json!({"step": 2}));
            let roots = cx
                .list_roots()
                .await
                .map_err(|e| McpErrorDetail::new("Input", e.to_string()))?;
            Ok::<Value, McpErrorDetail>(json!({"name": name, "roots": roots}))
        },
    );
    let _ = r.register(
        "big",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
        |a: Map<String, Value>| {
            let n = a.get("n").and_then(Value::as_u64).unwrap_or(0).min(1 << 16);
            vec![ContentBlock::text(
                "x".repeat(usize::try_from(n).unwrap_or(0)),
            )]
        },
    );
    let _ = r.register(
        "fail",
        open(),
        |_: Map<String, Value>| -> std::result::Result<Value, McpErrorDetail> {
            Err(McpErrorDetail::new("Nope", "failed on purpose"))
        },
    );
    let _ = r.register(
        "progress",
        open(),
        |_: Map<String, Value>, cx: ToolContext| async move {
            for i in 0..3u8 {
                cx.progress(f64::from(i), Some(3.0), None);
                cx.log(codomyrmex_mcp::LoggingLevel::Info, json!(i));
                tokio::task::yield_now().await;
            }
            Ok::<Value, McpErrorDetail>(json!({}))
        },
    );
    r
}

fn resources() -> Arc<McpResourceRegistry> {
    let r = Arc::new(McpResourceRegistry::new());
    let _ = r.add_text(ResourceDefinition::new("test://static", "static"), "hello");
    let _ = r.add(
        ResourceDefinition::new("test://panic", "panic"),
        |_: ResourceRequest| async move {
            if SECRET.len() > 1 {
                panic!("{SECRET}");
            }
            Ok(Vec::new())
        },
    );
    let _ = r.add(
        ResourceDefinition::new("test://big", "big"),
        |req: ResourceRequest| async move {
            Ok(vec![ResourceContents::Text {
                uri: req.uri,
                mime_type: None,
                text: "y".repeat(40_000),
                meta: None,
            }])
        },
    );
    let _ = r.add_template(
        ResourceTemplateDefinition::new("test://items/{id}", "item"),
        |req: ResourceRequest| async move {
            let answer = req.context.elicit("sure?", json!({"type": "object"})).await;
            Ok(vec![ResourceContents::Text {
                uri: req.uri,
                mime_type: None,
                text: format!("{:?} {:?}", req.variables, answer.is_ok()),
                meta: None,
            }])
        },
        BTreeMap::new(),
    );
    let _ = r.add_template(
        ResourceTemplateDefinition::new("test://files/{+path}", "file"),
        |req: ResourceRequest| async move {
            Ok(vec![ResourceContents::Text {
                uri: req.uri,
                mime_type: None,
                text: format!("{:?}", req.variables),
                meta: None,
            }])
        },
        BTreeMap::new(),
    );
    let _ = r.add_template(
        ResourceTemplateDefinition::new("test://search{?q,lang}", "search"),
        |req: ResourceRequest| async move {
            Ok(vec![ResourceContents::Text {
                uri: req.uri,
                mime_type: None,
                text: format!("{:?}", req.variables),
                meta: None,
            }])
        },
        BTreeMap::new(),
    );
    r
}

fn prompts() -> Arc<McpPromptRegistry> {
    let p = Arc::new(McpPromptRegistry::new());
    p.add(
        PromptDefinition::new("greet", "greets")
            .with_argument(PromptArgument::required("who", "who")),
        |req: PromptRequest| async move {
            let who = req.arguments.get("who").cloned().unwrap_or_default();
            Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text(format!("hi {who}")))],
            })
        },
    );
    p.add(
        PromptDefinition::new("panic", "panics"),
        |_: PromptRequest| async move {
            if SECRET.len() > 1 {
                panic!("{SECRET}");
            }
            Err(McpErrorDetail::new("x", "y"))
        },
    );
    p.add(
        PromptDefinition::new("big", "big"),
        |_: PromptRequest| async move {
            Ok(PromptResult {
                description: Some("z".repeat(40_000)),
                messages: Vec::new(),
            })
        },
    );
    p
}

/// The engine the targets share (built once: compiling schemas is slow). No rate limit,
/// short timeouts, a small page and a small result cap, so every path is reachable.
pub fn engine() -> Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut config = McpServerConfig::new("fuzz", "0")
                .with_rate_limit(None)
                .with_page_size(2)
                .with_tool_timeout(Duration::from_secs(30))
                .with_max_result_size(32 * 1024);
            config.max_concurrent_requests = 4;
            config.request_state_key = Some([7; 32]);
            Engine::new(config, tools())
                .with_resources(resources())
                .with_prompts(prompts())
        })
        .clone()
}

/// Silences the default panic hook's output for panics the targets cause on purpose (tool
/// handlers), while keeping libFuzzer's crash reporting for every other panic.
pub fn quiet_expected_panics() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if !text.contains(SECRET) {
                default(info);
            }
        }));
    });
}
