//! W3C `traceparent` (issue #16 item 7): from `_meta` or the HTTP header, continued in the
//! `tracing` span a request's handler runs in, on the JSON and the SSE path.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use codomyrmex_mcp::{McpErrorDetail, ToolContext};
use http_support::*;
use serde_json::{Map, Value, json};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The captured lines that carry `marker`.
    fn lines_with(&self, marker: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .filter(|l| l.contains(marker))
            .map(str::to_owned)
            .collect()
    }
}

const FROM_META: &str = "0af7651916cd43dd8448eb211c80319c";
const FROM_HEADER: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[tokio::test]
async fn traceparent_is_continued_in_the_handlers_span() {
    let captured = Captured::default();
    let writer = captured.clone();
    tracing::subscriber::set_global_default(
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish(),
    )
    .unwrap();
    let probes = Arc::new(Probes::default());
    let registry = registry(&probes);
    registry
        .register(
            "traced",
            json!({"type": "object", "properties": {"tag": {"type": "string"}}}),
            |args: Map<String, Value>, cx: ToolContext| async move {
                let tag = args
                    .get("tag")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                cx.progress(1.0, None, None);
                tracing::info!("inside the tool: {tag}");
                Ok::<Value, McpErrorDetail>(json!({}))
            },
        )
        .unwrap();
    let s = start_with(config(), registry, probes).await;
    let call = |tag: &str| {
        modern(
            "tools/call",
            1,
            json!({"name": "traced", "arguments": {"tag": tag}}),
        )
    };
    // JSON, trace context in `_meta` (it wins over the header).
    let mut req = call("json-meta").header(
        "traceparent",
        format!("00-{FROM_HEADER}-00f067aa0ba902b7-01"),
    );
    let mut body: Value = serde_json::from_slice(&req.body).unwrap();
    body["params"]["_meta"]["traceparent"] = json!(format!("00-{FROM_META}-00f067aa0ba902b7-01"));
    req.body = serde_json::to_vec(&body).unwrap();
    req.headers.retain(|(k, _)| k != "content-length");
    let r = s.send(&req.header("accept", "application/json")).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // SSE (a progress token), trace context in the header only.
    let mut req = call("sse-header");
    let mut body: Value = serde_json::from_slice(&req.body).unwrap();
    body["params"]["_meta"]["progressToken"] = json!("p");
    req.body = serde_json::to_vec(&body).unwrap();
    let req = req.header(
        "traceparent",
        format!("00-{FROM_HEADER}-b7ad6b7169203331-01"),
    );
    let r = s.send(&req).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream"),
        "{:?}",
        r.headers
    );
    // Without trace context: the span has no trace id.
    let r = s
        .send(&call("none").header("accept", "application/json"))
        .await;
    assert_eq!(r.status, 200);

    let json = captured.lines_with("inside the tool: json-meta");
    assert_eq!(json.len(), 1, "{json:?}");
    assert!(json[0].contains("mcp.request"), "{json:?}");
    assert!(
        json[0].contains(&format!("trace_id={FROM_META}")),
        "{json:?}"
    );
    assert!(
        json[0].contains("parent_span_id=00f067aa0ba902b7"),
        "{json:?}"
    );
    let sse = captured.lines_with("inside the tool: sse-header");
    assert_eq!(sse.len(), 1, "{sse:?}");
    assert!(
        sse[0].contains(&format!("trace_id={FROM_HEADER}")),
        "{sse:?}"
    );
    assert!(
        sse[0].contains("parent_span_id=b7ad6b7169203331"),
        "{sse:?}"
    );
    let none = captured.lines_with("inside the tool: none");
    assert_eq!(none.len(), 1, "{none:?}");
    assert!(
        none[0].contains("mcp.request") && !none[0].contains("trace_id"),
        "{none:?}"
    );
    s.stop().await;
}
