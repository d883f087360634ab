//! The HTTP layer end to end, without sockets: arbitrary requests (method, path, headers,
//! body) through the default policy stack and the endpoint's routing, in both eras, with
//! session ids carried over from earlier answers.
//!
//! Invariants: nothing panics; no answer is a 500; every JSON answer is a JSON-RPC message;
//! no answer carries panic text; streams stay bounded.
#![no_main]

use std::net::SocketAddr;
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Method, Request, StatusCode};
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use fuzz_support::{SECRET, engine, message, pick_str, quiet_expected_panics};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tower::ServiceExt;

const PORT: u16 = 8080;

const ACCEPT: &[&str] = &[
    "application/json, text/event-stream",
    "application/json",
    "text/event-stream",
    "*/*",
    "text/html",
];

const CONTENT_TYPE: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "APPLICATION/JSON",
    "text/plain",
];

async fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let config = HttpConfig {
        rate_limit: None,
        max_sessions: 8,
        session_idle_timeout: Duration::from_secs(60),
        max_body_bytes: 64 * 1024,
        replay_events: 8,
        ..HttpConfig::default()
    };
    let router = HttpServer::new(engine(), config)
        .router(PORT)
        .expect("a valid configuration");
    let mut sessions: Vec<String> = Vec::new();
    let mut states: Vec<String> = Vec::new();
    let steps = u.int_in_range(1..=8usize)?;
    for _ in 0..steps {
        let method = match u.int_in_range(0..=9u8)? {
            0 => Method::GET,
            1 => Method::DELETE,
            2 => Method::PUT,
            3 => Method::OPTIONS,
            _ => Method::POST,
        };
        let path = pick_str(
            &mut u,
            &["/mcp", "/mcp", "/mcp", "/health", "/other", "/mcp/"],
        )?;
        let path_is_mcp = path.starts_with("/mcp");
        let mut req = Request::builder().method(method).uri(
            if path.starts_with('/') && path.is_ascii() && !path.contains(char::is_whitespace) {
                path
            } else {
                "/mcp".to_owned()
            },
        );
        let host = pick_str(
            &mut u,
            &["127.0.0.1:8080", "localhost:8080", "evil.example"],
        )?;
        let mut headers: Vec<(&'static str, Vec<u8>)> = vec![
            ("host", host.into_bytes()),
            ("accept", pick_str(&mut u, ACCEPT)?.into_bytes()),
            ("content-type", pick_str(&mut u, CONTENT_TYPE)?.into_bytes()),
        ];
        if !sessions.is_empty() && u.ratio(3, 4)? {
            let i = u.choose_index(sessions.len())?;
            headers.push(("mcp-session-id", sessions[i].clone().into_bytes()));
        } else if u.ratio(1, 8)? {
            let n = u.int_in_range(0..=40usize)?;
            headers.push(("mcp-session-id", u.bytes(n)?.to_vec()));
        }
        let body_value = message(&mut u, &states, 0)?;
        if let Some(m) = body_value.get("method").and_then(Value::as_str) {
            // The mirrored headers a modern client sends, usually right.
            if u.ratio(3, 4)? {
                headers.push(("mcp-method", m.as_bytes().to_vec()));
            }
            let version = body_value
                .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or("2025-11-25");
            if u.ratio(3, 4)? {
                headers.push(("mcp-protocol-version", version.as_bytes().to_vec()));
            }
            let name = body_value
                .pointer("/params/name")
                .or_else(|| body_value.pointer("/params/uri"))
                .and_then(Value::as_str);
            if let Some(name) = name
                && u.ratio(3, 4)?
            {
                headers.push(("mcp-name", name.as_bytes().to_vec()));
            }
        }
        if u.ratio(1, 8)? {
            headers.push((
                "last-event-id",
                pick_str(&mut u, &["0-0", "1-1", "x", "2-99"])?.into_bytes(),
            ));
        }
        if u.ratio(1, 8)? {
            headers.push((
                "origin",
                pick_str(
                    &mut u,
                    &["http://127.0.0.1:8080", "http://evil.example", "null"],
                )?
                .into_bytes(),
            ));
        }
        if u.ratio(1, 16)? {
            headers.push(("x-padding", vec![b'a'; 20_000]));
        }
        for (name, value) in headers {
            if let Ok(v) = HeaderValue::from_bytes(&value) {
                req = req.header(name, v);
            }
        }
        let body = if u.ratio(1, 8)? {
            let n = u.int_in_range(0..=256usize)?;
            u.bytes(n)?.to_vec()
        } else {
            serde_json::to_vec(&body_value).unwrap_or_default()
        };
        let Ok(mut req) = req.body(Body::from(body)) else {
            continue;
        };
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 40000))));
        let Ok(Ok(resp)) =
            tokio::time::timeout(Duration::from_secs(120), router.clone().oneshot(req)).await
        else {
            continue;
        };
        assert_ne!(
            resp.status(),
            StatusCode::INTERNAL_SERVER_ERROR,
            "500 for {body_value}"
        );
        if let Some(sid) = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            && sessions.len() < 4
        {
            sessions.push(sid.to_owned());
        }
        // `/health` answers plain JSON; everything else is JSON-RPC.
        let is_json = path_is_mcp
            && resp
                .headers()
                .get("content-type")
                .is_some_and(|v| v.as_bytes() == b"application/json");
        // Streams may never end (subscriptions, GET streams): read what comes in a while.
        let collected = tokio::time::timeout(
            Duration::from_secs(40),
            axum::body::to_bytes(resp.into_body(), 1 << 22),
        )
        .await;
        if let Ok(Ok(bytes)) = collected {
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(SECRET),
                "panic text reached the client: {text}"
            );
            if is_json && !bytes.is_empty() {
                let v: Value = serde_json::from_slice(&bytes).expect("a JSON answer parses");
                let one = |m: &Value| m.get("jsonrpc") == Some(&Value::from("2.0"));
                assert!(
                    one(&v) || v.as_array().is_some_and(|a| a.iter().all(one)),
                    "not JSON-RPC: {v}"
                );
                if let Some(s) = v.pointer("/result/requestState").and_then(Value::as_str)
                    && states.len() < 4
                {
                    states.push(s.to_owned());
                }
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    quiet_expected_panics();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let _ = rt.block_on(run(data));
});
