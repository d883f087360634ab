//! Unit tests of `client/http.rs`.

use super::*;
use serde_json::json;

#[test]
fn urls_parse() {
    let e = parse_url("http://127.0.0.1:8080/mcp").unwrap();
    assert_eq!(
        (
            e.host.as_str(),
            e.port,
            e.path.as_str(),
            e.authority.as_str()
        ),
        ("127.0.0.1", 8080, "/mcp", "127.0.0.1:8080")
    );
    let e = parse_url("http://example.com").unwrap();
    assert_eq!((e.port, e.path.as_str()), (80, "/"));
    let e = parse_url("http://[::1]:9000/a/b?x=1#frag").unwrap();
    assert_eq!(
        (
            e.host.as_str(),
            e.port,
            e.path.as_str(),
            e.authority.as_str()
        ),
        ("::1", 9000, "/a/b?x=1", "[::1]:9000")
    );
    assert_eq!(parse_url("http://h?q").unwrap().path, "/?q");
    let e = parse_url("https://example.com/mcp").unwrap();
    assert_eq!((e.port, e.https), (443, true));
    assert!(!parse_url("http://example.com/mcp").unwrap().https);
    for bad in [
        "ftp://x",
        "http://",
        "http://user@h/",
        "http://h:notaport/",
        "http://[::1/",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_targets_debug_shows_no_secret() {
    let target = HttpTarget {
        url: "https://h/mcp?api_key=K".into(),
        headers: vec![("Authorization".into(), "Basic SECRET".into())],
        token: Some("TOKEN".into()),
        ca_file: None,
    };
    let shown = format!("{target:?}");
    for secret in ["=K", "SECRET", "TOKEN"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    assert!(
        shown.contains("Authorization") && shown.contains("https://h/mcp"),
        "{shown}"
    );
}

#[test]
fn url_errors_show_no_secret() {
    let e = parse_url("http://user:PASS@host/mcp?api_key=K").unwrap_err();
    assert!(e.contains("credentials in the URL"), "{e}");
    assert!(e.contains("header"), "{e}");
    assert!(!e.contains("PASS") && !e.contains("=K"), "{e}");
    let e = parse_url("http://host:bad/mcp?api_key=K#F").unwrap_err();
    assert!(
        e.contains("bad port") && e.contains("http://host:bad/mcp"),
        "{e}"
    );
    assert!(!e.contains("=K") && !e.contains("#F"), "{e}");
}

#[test]
fn modern_headers_mirror_the_body() {
    let target = HttpTarget {
        url: String::new(),
        headers: vec![("X-Custom".into(), "1".into())],
        token: Some("tok".into()),
        ca_file: None,
    };
    let m = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "file_system.read", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
    let h = headers_for(
        &m,
        &target,
        oauth_flow::bearer("tok"),
        Some("s"),
        Some("2025-11-25"),
    );
    let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get("MCP-Protocol-Version"), Some("2026-07-28"));
    assert_eq!(get("Mcp-Method"), Some("tools/call"));
    assert_eq!(get("Mcp-Name"), Some("file_system.read"));
    assert_eq!(get("Authorization"), Some("Bearer tok"));
    assert_eq!(get("X-Custom"), Some("1"));
    assert_eq!(get("Mcp-Session-Id"), None);
    let m = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "x://é", "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
    let h = headers_for(&m, &HttpTarget::default(), Vec::new(), None, None);
    assert!(
        h.iter()
            .any(|(k, v)| k == "Mcp-Name" && v.starts_with("=?base64?"))
    );
    let m = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let h = headers_for(
        &m,
        &HttpTarget::default(),
        Vec::new(),
        Some("s1"),
        Some("2025-11-25"),
    );
    assert!(h.contains(&("Mcp-Session-Id".into(), "s1".into())));
    assert!(h.contains(&("MCP-Protocol-Version".into(), "2025-11-25".into())));
    assert!(!h.iter().any(|(k, _)| k == "traceparent"));
}

/// Issue #31 item 5: a request's `_meta.traceparent` is mirrored in the `traceparent` header
/// (what the gateway's HTTP upstreams read); a value with controls or spaces is not.
#[test]
fn a_requests_traceparent_is_mirrored_in_the_header() {
    let tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let m = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": {"traceparent": tp}}});
    let h = headers_for(&m, &HttpTarget::default(), Vec::new(), None, None);
    assert!(h.contains(&("traceparent".into(), tp.into())), "{h:?}");
    let m = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "_meta": {"traceparent": "00-a b\r\nx: y"}}});
    let h = headers_for(&m, &HttpTarget::default(), Vec::new(), None, None);
    assert!(!h.iter().any(|(k, _)| k == "traceparent"), "{h:?}");
}

/// Issue #27 item 4: for every method the wire knows, the headers the client sends for a
/// 2026-07-28 request are the ones the server's transport checks: the server accepts them,
/// and every `Mcp-Name` the client sends is one the server reads (altering it is refused).
#[test]
fn the_clients_headers_are_what_the_server_checks_for_every_method() {
    use crate::McpToolRegistry;
    use crate::transport::http::headers::validate;
    let registry = McpToolRegistry::new();
    let mut wrong = Vec::new();
    for method in crate::wire::METHODS {
        let params = json!({
            "name": "n", "uri": "file:///u", "taskId": "t",
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28"},
        });
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let sent = headers_for(
            &message,
            &HttpTarget::new("http://h/"),
            Vec::new(),
            None,
            None,
        );
        let to_map = |headers: &[(String, String)]| {
            let mut map = axum::http::HeaderMap::new();
            for (n, v) in headers {
                map.append(
                    axum::http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                    axum::http::HeaderValue::from_str(v).unwrap(),
                );
            }
            map
        };
        let body = params.as_object().unwrap();
        if let Err(e) = validate(&to_map(&sent), method, body, &registry) {
            wrong.push(format!(
                "{method}: the server refused the client's headers: {}",
                e.message
            ));
        }
        if sent.iter().any(|(n, _)| n == "Mcp-Name") {
            let altered: Vec<(String, String)> = sent
                .iter()
                .map(|(n, v)| {
                    let v = if n == "Mcp-Name" {
                        "altered".to_owned()
                    } else {
                        v.clone()
                    };
                    (n.clone(), v)
                })
                .collect();
            if validate(&to_map(&altered), method, body, &registry).is_ok() {
                wrong.push(format!(
                    "{method}: the client sends an Mcp-Name the server ignores"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
