//! The gateway's era bridge: one upstream (our own server, over Streamable HTTP, in this
//! process) mounted twice, spoken to in 2025-11-25 (`old`) and in 2026-07-28 (`new`), and a
//! tool that asks for roots, sampling and a form elicitation (and a prompt that asks for a
//! sample, a resource whose read asks for roots). Clients of both eras call them
//! through the gateway (a child over stdio) and answer with their handlers; its progress
//! reaches them too, their cancellation reaches it, and a change of its tools reaches them as
//! `list_changed`.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{CallOptions, ClientHandlers, ClientOptions, EraPreference};
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    ContentBlock, InputRequest, LoggingLevel, McpErrorDetail, McpPromptRegistry,
    McpResourceRegistry, McpServerConfig, McpToolRegistry, ToolContext, ToolOutput,
};
use codomyrmex_mcp::{PromptDefinition, PromptMessage, PromptRequest, PromptResult};
use codomyrmex_mcp::{
    ResourceDefinition, ResourceError, ResourceRequest, ResourceTemplateDefinition,
};
use serde_json::{Map, Value, json};

const GUARD: Duration = Duration::from_secs(60);
/// Told by the test client's handler when the `withdraw` tool's request reached it.
static WITHDRAW: tokio::sync::Notify = tokio::sync::Notify::const_new();

fn text(t: impl Into<String>) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

fn upstream_tools(dropped: tokio::sync::mpsc::UnboundedSender<()>) -> Arc<McpToolRegistry> {
    let tools = McpToolRegistry::new();
    tools
        .register(
            "hang",
            json!({"type": "object", "properties": {}}),
            move |_: Map<String, Value>, cx: ToolContext| {
                // Says so when the upstream drops the work (the call was cancelled).
                struct Signal(tokio::sync::mpsc::UnboundedSender<()>);
                impl Drop for Signal {
                    fn drop(&mut self) {
                        let _ = self.0.send(());
                    }
                }
                let signal = Signal(dropped.clone());
                async move {
                    let _signal = signal;
                    cx.cancelled().await;
                    text("cancelled")
                }
            },
        )
        .unwrap();
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
            "log",
            schema.clone(),
            |_: Map<String, Value>, cx: ToolContext| async move {
                cx.log(LoggingLevel::Debug, json!("noise"));
                cx.log(LoggingLevel::Warning, json!("careful"));
                text("logged")
            },
        )
        .unwrap();
    // Both calls of a pair are in flight when each logs its tag (a barrier of two).
    let both = Arc::new(tokio::sync::Barrier::new(2));
    tools
        .register(
            "pair",
            schema.clone(),
            move |args: Map<String, Value>, cx: ToolContext| {
                let both = both.clone();
                async move {
                    let tag = args.get("tag").and_then(Value::as_str).unwrap_or("?");
                    // Bounded: a lone call still ends (and the test then fails on its logs).
                    let _ = tokio::time::timeout(GUARD, both.wait()).await;
                    cx.log(LoggingLevel::Warning, json!(tag));
                    text(tag)
                }
            },
        )
        .unwrap();
    // Two calls in flight at once, one of which asks for input while the other waits for it
    // (barriers of two before and after the ask).
    let around = Arc::new(tokio::sync::Barrier::new(2));
    tools
        .register(
            "ask_of_two",
            schema.clone(),
            move |args: Map<String, Value>, cx: ToolContext| {
                let around = around.clone();
                async move {
                    let asks = args.get("ask").and_then(Value::as_bool).unwrap_or(false);
                    let _ = tokio::time::timeout(GUARD, around.wait()).await;
                    let out = if asks {
                        match cx
                            .input(
                                "form",
                                InputRequest::form("name?", json!({"type": "object"})),
                            )
                            .await
                        {
                            Ok(r) => r["content"]["name"].as_str().unwrap_or("?").to_owned(),
                            Err(e) => {
                                let _ = tokio::time::timeout(GUARD, around.wait()).await;
                                return ToolOutput::failure(e.into());
                            }
                        }
                    } else {
                        "quiet".to_owned()
                    };
                    let _ = tokio::time::timeout(GUARD, around.wait()).await;
                    text(out)
                }
            },
        )
        .unwrap();
    tools
        .register(
            "withdraw",
            schema.clone(),
            |_: Map<String, Value>, cx: ToolContext| async move {
                // Asks, and withdraws the request once the client has it (dropping the ask).
                tokio::select! {
                    r = cx.input("form", InputRequest::form("name?", json!({"type": "object"}))) => {
                        return text(format!("answered: {r:?}"));
                    }
                    () = WITHDRAW.notified() => {}
                }
                text("withdrawn")
            },
        )
        .unwrap();
    tools
        .register(
            "progress",
            schema,
            |_: Map<String, Value>, cx: ToolContext| async move {
                for i in 1..=3 {
                    cx.progress(f64::from(i), Some(3.0), None);
                }
                text("done")
            },
        )
        .unwrap();
    Arc::new(tools)
}

/// A prompt that asks for a sample before it renders.
fn upstream_prompts() -> Arc<McpPromptRegistry> {
    let prompts = McpPromptRegistry::new();
    prompts.add(
        PromptDefinition::new("ask_prompt", "asks for a sample"),
        |r: PromptRequest| async move {
            let sample = r
                .context
                .input(
                    "sample",
                    InputRequest::Sample(json!({"messages": [], "maxTokens": 5})),
                )
                .await
                .map_err(McpErrorDetail::from)?;
            let said = sample["content"]["text"].as_str().unwrap_or("?").to_owned();
            Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text(said))],
            })
        },
    );
    Arc::new(prompts)
}

/// A resource whose reader asks for the client's roots.
fn upstream_resources() -> Arc<McpResourceRegistry> {
    let resources = McpResourceRegistry::new();
    resources
        .add(
            ResourceDefinition::new("ask://roots", "roots"),
            |r: ResourceRequest| async move {
                let roots = r
                    .context
                    .input("roots", InputRequest::ListRoots)
                    .await
                    .map_err(|e| ResourceError::Failed(e.to_string()))?;
                Ok(vec![ResourceContents::Text {
                    uri: r.uri,
                    mime_type: None,
                    text: roots["roots"][0]["uri"].as_str().unwrap_or("?").to_owned(),
                    meta: None,
                }])
            },
        )
        .unwrap();
    resources
        .add(
            ResourceDefinition::new("watched://r", "watched"),
            |r: ResourceRequest| async move {
                Ok(vec![ResourceContents::Text {
                    uri: r.uri,
                    mime_type: None,
                    text: "now".to_owned(),
                    meta: None,
                }])
            },
        )
        .unwrap();
    resources
        .add_template(
            ResourceTemplateDefinition::new("tmpl://{name}", "templated"),
            |r: ResourceRequest| async move {
                Ok(vec![ResourceContents::Text {
                    uri: r.uri,
                    mime_type: None,
                    text: "made".to_owned(),
                    meta: None,
                }])
            },
            std::collections::BTreeMap::new(),
        )
        .unwrap();
    Arc::new(resources)
}

/// Our server over Streamable HTTP on a loopback port; returns its URL, its tools and its
/// resources. It stops with the test's runtime.
async fn upstream() -> (String, Arc<McpToolRegistry>, Arc<McpResourceRegistry>) {
    let (url, tools, _, resources) = upstream_with(Duration::from_secs(60)).await;
    (url, tools, resources)
}

/// [`upstream`], whose 2026-07-28 lists may be cached for `list_ttl`; also hears each dropped
/// `hang` call.
async fn upstream_with(
    list_ttl: Duration,
) -> (
    String,
    Arc<McpToolRegistry>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    Arc<McpResourceRegistry>,
) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let tools = upstream_tools(tx);
    let mut config = McpServerConfig::new("bridge-upstream", "1").with_rate_limit(None);
    config.list_ttl = list_ttl;
    let resources = upstream_resources();
    let engine = Engine::new(config, tools.clone())
        .with_prompts(upstream_prompts())
        .with_resources(resources.clone());
    let config = HttpConfig {
        bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        rate_limit: None,
        ..HttpConfig::default()
    };
    let server = HttpServer::new(engine, config);
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
    (format!("http://{addr}/mcp"), tools, rx, resources)
}

fn handlers() -> ClientHandlers {
    ClientHandlers::new()
        .roots(vec![json!({"uri": "file:///work", "name": "work"})])
        .sampling(|_| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "m"}))
        })
        .elicitation(|_| async { Ok(json!({"action": "accept", "content": {"name": "ada"}})) })
}

async fn gateway(dir: &std::path::Path, url: &str, era: EraPreference) -> McpClient {
    let config = format!(
        "[[upstream]]\nname = \"old\"\nurl = \"{url}\"\nera = \"legacy\"\ntimeout_secs = 600\n\n\
         [[upstream]]\nname = \"new\"\nurl = \"{url}\"\nera = \"modern\"\ntimeout_secs = 600\n"
    );
    gateway_with(dir, &config, era).await
}

/// The gateway (a child over stdio) with the configuration `toml`, its handshake done in `era`.
async fn gateway_with(dir: &std::path::Path, toml: &str, era: EraPreference) -> McpClient {
    let config = dir.join("gateway.toml");
    std::fs::write(&config, toml).unwrap();
    support::gateway_stdio(&config, era, handlers()).await
}

async fn bridge(era: EraPreference) {
    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, era).await;
    for up in ["old", "new"] {
        // Three requests for input, each answered by this client's handlers, in its era.
        let r = tokio::time::timeout(GUARD, client.call_tool(&format!("{up}.ask"), json!({})))
            .await
            .expect("no hang")
            .unwrap();
        assert_ne!(r["isError"], true, "{up}: {r}");
        assert_eq!(
            r["content"][0]["text"], "file:///work|sampled|ada",
            "{up}: {r}"
        );
        // The upstream's progress reaches this client.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let options = CallOptions {
            progress: Some(Arc::new(move |p: Value| {
                let _ = tx.send(p["progress"].as_f64().unwrap_or(-1.0));
            })),
            timeout: Some(GUARD),
            log: None,
            input: None,
        };
        let r = client
            .call_tool_with(&format!("{up}.progress"), json!({}), &options)
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "done", "{up}: {r}");
        let mut seen = Vec::new();
        while let Ok(p) = rx.try_recv() {
            seen.push(p);
        }
        assert_eq!(seen, vec![1.0, 2.0, 3.0], "{up}: progress");

        // A prompt and a resource read that ask for input cross the bridge as calls do.
        let p = tokio::time::timeout(
            GUARD,
            client.get_prompt(&format!("{up}.ask_prompt"), json!({})),
        )
        .await
        .expect("no hang")
        .unwrap_or_else(|e| panic!("{up}: prompts/get: {e}"));
        assert_eq!(p["messages"][0]["content"]["text"], "sampled", "{up}: {p}");
        let uri = format!("{up}+ask://roots");
        let r = tokio::time::timeout(GUARD, client.read_resource(&uri))
            .await
            .expect("no hang")
            .unwrap_or_else(|e| panic!("{up}: resources/read: {e}"));
        assert_eq!(r["contents"][0]["text"], "file:///work", "{up}: {r}");
        assert_eq!(r["contents"][0]["uri"], uri, "{up}: {r}");
    }
    client.close(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_2025_client_answers_the_input_of_upstreams_of_both_eras() {
    bridge(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_client_answers_the_input_of_upstreams_of_both_eras() {
    bridge(EraPreference::Modern).await;
}

/// An upstream that says its tools changed is listed again (a 2025-11-25 upstream says so
/// with `list_changed`, a 2026-07-28 one on the `subscriptions/listen` stream the gateway
/// keeps open): the gateway's client hears `list_changed` and finds the new tool under both
/// namespaces.
#[tokio::test]
async fn an_upstreams_list_changed_reaches_the_gateways_client() {
    let (url, tools, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, EraPreference::Legacy).await;
    let names = |tools: &[Value]| -> Vec<String> {
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let before = names(&client.list_tools().await.unwrap());
    assert!(before.contains(&"old.ask".to_owned()), "{before:?}");
    assert!(!before.contains(&"old.later".to_owned()), "{before:?}");
    tools
        .register(
            "later",
            json!({"type": "object", "properties": {}}),
            |_: Map<String, Value>, _: ToolContext| async move { text("added later") },
        )
        .unwrap();
    let heard = tokio::time::timeout(GUARD, async {
        while let Some(n) = client.next_notification().await {
            if n["method"] == "notifications/tools/list_changed" {
                return true;
            }
        }
        false
    })
    .await
    .expect("list_changed within the guard");
    assert!(heard, "the connection ended before list_changed");
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let now = names(&client.list_tools().await.unwrap());
        if now.contains(&"old.later".to_owned()) && now.contains(&"new.later".to_owned()) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not listed: {now:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for up in ["old", "new"] {
        let r = client
            .call_tool(&format!("{up}.later"), json!({}))
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "added later", "{up}: {r}");
    }
    client.close(Duration::from_secs(5)).await;
}

/// The next `notifications/message` the client hears, with what it heard before it.
async fn next_log(client: &McpClient) -> (Value, Vec<Value>) {
    let mut before = Vec::new();
    let found = tokio::time::timeout(GUARD, async {
        while let Some(n) = client.next_notification().await {
            if n["method"] == "notifications/message" {
                return n["params"].clone();
            }
            before.push(n);
        }
        panic!("the connection ended before a log message");
    })
    .await
    .expect("a log message within the guard");
    (found, before)
}

/// An upstream's log messages during a call reach the gateway's client, at the client's own
/// level: `logging/setLevel` (2025-11-25) or the request's log level `_meta` (2026-07-28).
async fn logs(era: EraPreference) {
    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, era).await;
    if era == EraPreference::Legacy {
        client.set_log_level(LoggingLevel::Info).await.unwrap();
    }
    for up in ["old", "new"] {
        let r = client
            .request(
                "tools/call",
                json!({
                    "name": format!("{up}.log"),
                    "arguments": {},
                    "_meta": {"io.modelcontextprotocol/logLevel": "info"},
                }),
            )
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "logged", "{up}: {r}");
        let (log, _) = next_log(&client).await;
        // The debug message before it was below the client's level.
        assert_eq!(log["data"], "careful", "{up}: {log}");
        assert_eq!(log["level"], "warning", "{up}: {log}");
    }
    client.close(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_2025_client_hears_the_log_messages_of_upstreams_of_both_eras() {
    logs(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_client_hears_the_log_messages_of_upstreams_of_both_eras() {
    logs(EraPreference::Modern).await;
}

/// Two calls in flight to one upstream at once each log (`pair`, whose calls wait for each
/// other): the client hears both messages, whichever era each side speaks (the upstream is
/// reached over Streamable HTTP, whose streams say which call a message belongs to).
async fn logs_of_concurrent_calls(era: EraPreference) {
    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, era).await;
    if era == EraPreference::Legacy {
        client.set_log_level(LoggingLevel::Info).await.unwrap();
    }
    for up in ["old", "new"] {
        let call = |tag: &str| {
            client.request(
                "tools/call",
                json!({
                    "name": format!("{up}.pair"),
                    "arguments": {"tag": tag},
                    "_meta": {"io.modelcontextprotocol/logLevel": "info"},
                }),
            )
        };
        let (a, b) = tokio::time::timeout(GUARD, async { tokio::join!(call("a"), call("b")) })
            .await
            .expect("no hang");
        assert_eq!(a.unwrap()["content"][0]["text"], "a", "{up}");
        assert_eq!(b.unwrap()["content"][0]["text"], "b", "{up}");
        let mut heard = std::collections::BTreeSet::new();
        while heard.len() < 2 {
            let (log, _) = next_log(&client).await;
            assert_eq!(log["level"], "warning", "{up}: {log}");
            heard.insert(log["data"].as_str().unwrap().to_owned());
        }
        assert_eq!(heard, ["a".to_owned(), "b".to_owned()].into(), "{up}");
    }
    client.close(Duration::from_secs(5)).await;
}

/// Two calls in flight to one 2025-11-25 upstream over Streamable HTTP, one of which elicits:
/// the upstream's request goes to the call on whose stream it arrived, and this client (of
/// either era) answers it for that call; the other call ends as it would alone.
async fn input_of_concurrent_calls(era: EraPreference) {
    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, era).await;
    // Only the 2025-11-25 upstream: a 2026-07-28 one runs the asking tool again on the retry,
    // without its partner.
    for up in ["old"] {
        let name = format!("{up}.ask_of_two");
        let call = |ask: bool| client.call_tool(&name, json!({"ask": ask}));
        let (a, b) = tokio::time::timeout(GUARD, async { tokio::join!(call(true), call(false)) })
            .await
            .expect("no hang");
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_ne!(a["isError"], true, "{up}: {a}");
        assert_eq!(a["content"][0]["text"], "ada", "{up}: {a}");
        assert_eq!(b["content"][0]["text"], "quiet", "{up}: {b}");
    }
    client.close(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_2025_client_answers_the_input_of_one_of_two_concurrent_calls() {
    input_of_concurrent_calls(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_client_answers_the_input_of_one_of_two_concurrent_calls() {
    input_of_concurrent_calls(EraPreference::Modern).await;
}

#[tokio::test]
async fn a_2025_client_hears_the_logs_of_concurrent_calls_to_one_upstream() {
    logs_of_concurrent_calls(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_client_hears_the_logs_of_concurrent_calls_to_one_upstream() {
    logs_of_concurrent_calls(EraPreference::Modern).await;
}

/// A `pair` call of upstream `up` with `tag`, the log level `info`; the log messages that came
/// on its own stream.
async fn logged_pair(client: &McpClient, up: &str, tag: &str) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let options = CallOptions {
        progress: None,
        timeout: Some(GUARD),
        log: Some(Arc::new(move |p: Value| {
            let _ = tx.send(p["data"].as_str().unwrap_or("?").to_owned());
        })),
        input: None,
    };
    let params = json!({
        "name": format!("{up}.pair"),
        "arguments": {"tag": tag},
        "_meta": {"io.modelcontextprotocol/logLevel": "info"},
    });
    let r = client
        .request_with("tools/call", params, &options)
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], tag, "{up}: {r}");
    rx.try_iter().collect()
}

/// Two 2026-07-28 clients of the gateway over Streamable HTTP call one upstream at once
/// (`pair`): each call's log message reaches the call that caused it, on that call's own
/// stream (`CallOptions::log`), and never the other client's.
#[tokio::test]
async fn each_concurrent_call_hears_only_its_own_log_messages() {
    use codomyrmex_mcp::client::http::HttpTarget;

    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"old\"\nurl = \"{url}\"\nera = \"legacy\"\n\n\
             [[upstream]]\nname = \"new\"\nurl = \"{url}\"\nera = \"modern\"\n"
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_owned();
    // Waited for off the runtime, which serves the upstream meanwhile.
    let gateway = tokio::task::spawn_blocking(move || {
        support::http_server(
            &["gateway", "--config", &config, "--http", "127.0.0.1:0"],
            &[],
        )
    })
    .await
    .unwrap();
    let mut clients = Vec::new();
    for _ in 0..2 {
        let c = McpClient::connect_http(
            HttpTarget::new(gateway.url.clone()),
            ClientOptions::default(),
        )
        .unwrap();
        tokio::time::timeout(GUARD, c.negotiate(EraPreference::Modern, GUARD))
            .await
            .expect("no hang")
            .unwrap();
        clients.push(c);
    }
    for up in ["old", "new"] {
        let (a, b) = tokio::join!(
            logged_pair(&clients[0], up, "a"),
            logged_pair(&clients[1], up, "b")
        );
        assert_eq!(a, vec!["a".to_owned()], "{up}: the first client's call");
        assert_eq!(b, vec!["b".to_owned()], "{up}: the second client's call");
    }
}

/// The gateway with one upstream, `py`: the Python stdio server `script` (see
/// [`support::python_server`]), its table completed by the TOML lines `settings`; a client's
/// handshake done in `era`.
async fn python_gateway(
    dir: &std::path::Path,
    script: &str,
    settings: &str,
    era: EraPreference,
) -> McpClient {
    let path = dir.join("upstream.py");
    std::fs::write(&path, format!("{}{script}", support::PYTHON_SERVER_PRELUDE)).unwrap();
    let toml = format!(
        "[[upstream]]\nname = \"py\"\ncommand = \"python3\"\nargs = [\"{}\"]\n{settings}\n",
        path.display()
    );
    gateway_with(dir, &toml, era).await
}

/// A 2025-11-25 stdio upstream (Python) that logs outside any request: once its `arm` tool
/// was called, after answering the next health check (`ping`) it sends a debug message and
/// a warning.
const LOGS_OUTSIDE: &str = r#"
armed = False
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if "id" not in m:
        continue
    if method == "initialize":
        r = initialized("py", {"tools": {}, "logging": {}})
    elif method == "tools/list":
        r = {"result": {"tools": [{"name": "arm", "inputSchema": {"type": "object"}}]}}
    elif method == "tools/call":
        armed = True
        r = {"result": {"content": [{"type": "text", "text": "armed"}]}}
    elif method in ("ping", "logging/setLevel"):
        r = {"result": {}}
    else:
        r = NOT_FOUND
    send(dict(r, jsonrpc="2.0", id=m["id"]))
    if method == "ping" and armed:
        armed = False
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "debug", "data": "quiet"}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "logger": "py", "data": "outside"}})
"#;

/// An upstream's log message outside any request reaches the 2025-11-25 clients that set a
/// log level, at that level.
#[tokio::test]
async fn an_upstreams_log_outside_a_request_reaches_a_2025_client_that_set_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = "era = \"legacy\"\nhealth_check_secs = 1";
    let client = python_gateway(dir.path(), LOGS_OUTSIDE, upstream, EraPreference::Legacy).await;
    client.set_log_level(LoggingLevel::Info).await.unwrap();
    let r = tokio::time::timeout(GUARD, client.call_tool("py.arm", json!({})))
        .await
        .expect("no hang")
        .unwrap();
    assert_eq!(r["content"][0]["text"], "armed", "{r}");
    let (log, _) = next_log(&client).await;
    // The debug message before it was below the client's level.
    assert_eq!(log["data"], "outside", "{log}");
    assert_eq!(log["level"], "warning", "{log}");
    client.close(Duration::from_secs(5)).await;
}

/// A 2026-07-28 stdio upstream (Python) whose first `subscriptions/listen` stream it ends at
/// once (a complete result after the acknowledgment); on the next one it adds a tool and
/// says so there (`notifications/tools/list_changed`).
const LISTEN_CLOSES: &str = r#"
listens = 0
tools = [{"name": "first", "inputSchema": {"type": "object"}}]
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if "id" not in m:
        continue
    sub = {"io.modelcontextprotocol/subscriptionId": m["id"]}
    if method == "server/discover":
        r = {"result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "py", "version": "1"}}}
    elif method == "tools/list":
        r = {"result": {"tools": tools}}
    elif method == "tools/call":
        r = {"result": {"content": [{"type": "text", "text": m["params"]["name"]}]}}
    elif method == "subscriptions/listen":
        listens += 1
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": sub, "notifications": {"toolsListChanged": True}}})
        if listens == 1:
            r = {"result": {"resultType": "complete", "_meta": sub}}
        else:
            tools = tools + [{"name": "later", "inputSchema": {"type": "object"}}]
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": sub}})
            continue
    else:
        r = NOT_FOUND
    send(dict(r, jsonrpc="2.0", id=m["id"]))
"#;

/// A 2026-07-28 upstream that ends its `subscriptions/listen` stream while it is healthy is
/// listened to again: the list change it announces on the new stream reaches the gateway's
/// client, and the new tool is mounted.
#[tokio::test]
async fn a_closed_upstream_listen_stream_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let client = python_gateway(
        dir.path(),
        LISTEN_CLOSES,
        "era = \"modern\"",
        EraPreference::Legacy,
    )
    .await;
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let tools = client.list_tools().await.unwrap();
        if tools.iter().any(|t| t["name"] == "py.later") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not listed: {tools:?}"
        );
        // Heard, or the guard's end: then listed once more and failed.
        let _ = tokio::time::timeout(
            deadline.saturating_duration_since(std::time::Instant::now()),
            async {
                while let Some(n) = client.next_notification().await {
                    if n["method"] == "notifications/tools/list_changed" {
                        return;
                    }
                }
            },
        )
        .await;
    }
    let r = client.call_tool("py.later", json!({})).await.unwrap();
    assert_eq!(r["content"][0]["text"], "later", "{r}");
    client.close(Duration::from_secs(5)).await;
}

/// Changes `upstream_uris` at the upstream until the client heard
/// `notifications/resources/updated` for each of `want` (local URIs): the gateway subscribes
/// at the upstream on its own time.
async fn hear_updates(
    client: &McpClient,
    resources: &McpResourceRegistry,
    upstream_uris: &[&str],
    want: &[&str],
) {
    let want: std::collections::BTreeSet<String> = want.iter().map(|u| (*u).to_owned()).collect();
    let mut heard = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + GUARD;
    while heard != want {
        assert!(
            std::time::Instant::now() < deadline,
            "heard only {heard:?} of {want:?}"
        );
        for uri in upstream_uris {
            resources.notify_updated(*uri);
        }
        let quiet = tokio::time::timeout(Duration::from_millis(200), async {
            while let Some(n) = client.next_notification().await {
                if n["method"] == "notifications/resources/updated" {
                    return Some(n["params"]["uri"].as_str().unwrap().to_owned());
                }
            }
            None
        });
        if let Ok(Some(uri)) = quiet.await {
            assert!(want.contains(&uri), "an update nobody subscribed to: {uri}");
            heard.insert(uri);
        }
    }
}

/// A client subscribed to a mounted resource hears when it changes at its upstream, under
/// the resource's local URI, whichever era the upstream speaks.
#[tokio::test]
async fn an_upstreams_resource_update_reaches_the_subscribed_client() {
    let (url, _, resources) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, EraPreference::Legacy).await;
    for up in ["old", "new"] {
        client
            .subscribe(&format!("{up}+watched://r"))
            .await
            .unwrap();
    }
    hear_updates(
        &client,
        &resources,
        &["watched://r"],
        &["new+watched://r", "old+watched://r"],
    )
    .await;
    client.close(Duration::from_secs(5)).await;
}

/// A 2026-07-28 client's `subscriptions/listen` stream (kept open in a task of its own),
/// asking for `uris`.
fn listen(client: &Arc<McpClient>, uris: &[&str]) -> tokio::task::JoinHandle<()> {
    let client = client.clone();
    let params = json!({"notifications": {"resourceSubscriptions": uris}});
    tokio::spawn(async move {
        let options = CallOptions {
            progress: None,
            timeout: Some(GUARD * 4),
            log: None,
            input: None,
        };
        let _ = client
            .request_round("subscriptions/listen", &params, &options)
            .await;
    })
}

/// A 2026-07-28 client listening through the gateway (`subscriptions/listen`) hears an
/// upstream's resource updates, under the resources' local URIs, whichever era the upstream
/// speaks.
#[tokio::test]
async fn a_2026_client_listening_hears_an_upstreams_resource_update() {
    let (url, _, resources) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = Arc::new(gateway(dir.path(), &url, EraPreference::Modern).await);
    let want = ["new+watched://r", "old+watched://r"];
    let listening = listen(&client, &want);
    hear_updates(&client, &resources, &["watched://r"], &want).await;
    listening.abort();
}

/// A client subscribed to a URI of an upstream's resource template (`NAMESPACE+tmpl://x`,
/// listed nowhere) hears its updates, in either era, whichever era the upstream speaks.
async fn templated_updates(era: EraPreference) {
    let (url, _, resources) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let client = Arc::new(gateway(dir.path(), &url, era).await);
    let want = ["new+tmpl://x", "old+tmpl://x"];
    // Read through the template first, as a client would.
    for uri in want {
        let r = tokio::time::timeout(GUARD, client.read_resource(uri))
            .await
            .expect("no hang")
            .unwrap();
        assert_eq!(r["contents"][0]["uri"], uri, "{r}");
    }
    let listening = match era {
        EraPreference::Modern => Some(listen(&client, &want)),
        _ => {
            for uri in want {
                client.subscribe(uri).await.unwrap();
            }
            None
        }
    };
    hear_updates(&client, &resources, &["tmpl://x"], &want).await;
    if let Some(l) = listening {
        l.abort();
    }
}

#[tokio::test]
async fn a_2025_client_hears_updates_of_a_templated_resource() {
    templated_updates(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_client_hears_updates_of_a_templated_resource() {
    templated_updates(EraPreference::Modern).await;
}

/// A 2025-11-25 upstream that withdraws its request (`notifications/cancelled`) has it
/// withdrawn at the gateway's 2025-11-25 client too: its handler stops unanswered.
#[tokio::test]
async fn an_upstreams_cancelled_request_is_cancelled_at_a_2025_client() {
    let (url, _, _) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"old\"\nurl = \"{url}\"\nera = \"legacy\"\n"),
    )
    .unwrap();
    let (stopped_tx, mut stopped) = tokio::sync::mpsc::unbounded_channel::<()>();
    let handlers = ClientHandlers::new().elicitation(move |_| {
        struct Stopped(tokio::sync::mpsc::UnboundedSender<()>);
        impl Drop for Stopped {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let stopped = Stopped(stopped_tx.clone());
        async move {
            let _stopped = stopped;
            WITHDRAW.notify_one();
            std::future::pending::<Result<Value, codomyrmex_mcp::wire::ErrorObject>>().await
        }
    });
    let client = support::gateway_stdio(&config, EraPreference::Legacy, handlers).await;
    let r = tokio::time::timeout(GUARD, client.call_tool("old.withdraw", json!({})))
        .await
        .expect("no hang")
        .unwrap();
    assert_eq!(r["content"][0]["text"], "withdrawn", "{r}");
    tokio::time::timeout(GUARD, stopped.recv())
        .await
        .expect("the client's handler was never stopped");
    client.close(Duration::from_secs(5)).await;
}

/// The next `Subscribed`/`Unsubscribed` event of the upstream's registry (updates skipped).
async fn next_subscription_event(
    events: &mut codomyrmex_mcp::sync::Receiver<codomyrmex_mcp::ResourceEvent>,
) -> codomyrmex_mcp::ResourceEvent {
    use codomyrmex_mcp::ResourceEvent;
    use codomyrmex_mcp::sync::Recv;
    loop {
        match tokio::time::timeout(GUARD, events.recv())
            .await
            .expect("no hang")
        {
            Recv::Value(ResourceEvent::Updated(_)) | Recv::Lagged(_) => {}
            Recv::Value(e) => return e,
            Recv::Closed => panic!("the upstream's registry is gone"),
        }
    }
}

/// A URI subscribed at an upstream through the gateway is unsubscribed there once the last
/// client subscribed to it at the gateway unsubscribes, whichever era the upstream speaks
/// (2025-11-25: `resources/unsubscribe`; 2026-07-28: a listen stream without it).
#[tokio::test]
async fn the_last_unsubscribe_at_the_gateway_reaches_the_upstream() {
    use codomyrmex_mcp::ResourceEvent;
    let (url, _, resources) = upstream().await;
    let mut events = resources.subscribe_updates();
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, EraPreference::Legacy).await;
    for (local, up) in [("old+tmpl://a", "tmpl://a"), ("new+tmpl://b", "tmpl://b")] {
        client.subscribe(local).await.unwrap();
        // The gateway subscribes at the upstream (the mounted resources first, on connecting).
        while next_subscription_event(&mut events).await != ResourceEvent::Subscribed(up.into()) {}
        let unsubscribe = json!({"uri": local});
        client
            .request("resources/unsubscribe", unsubscribe)
            .await
            .unwrap();
        loop {
            let e = next_subscription_event(&mut events).await;
            if e == ResourceEvent::Unsubscribed(up.into()) {
                break;
            }
            // A 2026-07-28 upstream's listen stream is opened anew with the rest.
            assert!(matches!(e, ResourceEvent::Subscribed(_)), "{local}: {e:?}");
        }
    }
    client.close(Duration::from_secs(5)).await;
}

/// The gateway's 2026-07-28 lists may be cached no longer than its upstreams' own.
#[tokio::test]
async fn the_gateways_list_ttl_is_no_longer_than_its_upstreams() {
    let (url, _, _, _) = upstream_with(Duration::from_millis(2_500)).await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, EraPreference::Modern).await;
    let page = client.request("tools/list", json!({})).await.unwrap();
    assert_eq!(page["ttlMs"], 2_500, "{page}");
    client.close(Duration::from_secs(5)).await;
}

async fn cancel(era: EraPreference) {
    let (url, _, mut dropped, _) = upstream_with(Duration::from_secs(60)).await;
    let dir = tempfile::tempdir().unwrap();
    let client = gateway(dir.path(), &url, era).await;
    for up in ["old", "new"] {
        // The client gives up (its timeout drops the call, which cancels it at the gateway);
        // the gateway's call to the upstream is cancelled in turn.
        let options = CallOptions {
            progress: None,
            timeout: Some(Duration::from_millis(300)),
            log: None,
            input: None,
        };
        let r = client
            .call_tool_with(&format!("{up}.hang"), json!({}), &options)
            .await;
        assert!(r.is_err(), "{up}: {r:?}");
        // Well before the upstream's own timeout (600 s) would end it.
        tokio::time::timeout(Duration::from_secs(30), dropped.recv())
            .await
            .unwrap_or_else(|_| panic!("{up}: the upstream's work was not cancelled"))
            .unwrap();
    }
    client.close(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_2025_clients_cancellation_reaches_upstreams_of_both_eras() {
    cancel(EraPreference::Legacy).await;
}

#[tokio::test]
async fn a_2026_clients_cancellation_reaches_upstreams_of_both_eras() {
    cancel(EraPreference::Modern).await;
}

/// A 2025-11-25 stdio upstream (Python) whose tool `say` logs a warning before it answers.
const LOGS_DURING: &str = r#"
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if "id" not in m:
        continue
    if method == "initialize":
        r = initialized("py", {"tools": {}, "logging": {}})
    elif method == "tools/list":
        r = {"result": {"tools": [{"name": "say", "inputSchema": {"type": "object"}}]}}
    elif method == "tools/call":
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "warning", "data": "during"}})
        r = {"result": {"content": [{"type": "text", "text": "said"}]}}
    elif method in ("ping", "logging/setLevel"):
        r = {"result": {}}
    else:
        r = NOT_FOUND
    send(dict(r, jsonrpc="2.0", id=m["id"]))
"#;

/// Over stdio nothing says which call a log message belongs to: with one call in flight to
/// the upstream it goes with that call, so a 2026-07-28 client (which hears log messages only
/// with its own requests) hears it.
#[tokio::test]
async fn over_stdio_the_one_call_in_flight_gets_the_upstreams_log() {
    let dir = tempfile::tempdir().unwrap();
    let settings = "era = \"legacy\"";
    let client = python_gateway(dir.path(), LOGS_DURING, settings, EraPreference::Modern).await;
    let r = tokio::time::timeout(
        GUARD,
        client.request(
            "tools/call",
            json!({
                "name": "py.say",
                "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": "info"},
            }),
        ),
    )
    .await
    .expect("no hang")
    .unwrap();
    assert_eq!(r["content"][0]["text"], "said", "{r}");
    let (log, _) = next_log(&client).await;
    assert_eq!(log["data"], "during", "{log}");
    client.close(Duration::from_secs(5)).await;
}
