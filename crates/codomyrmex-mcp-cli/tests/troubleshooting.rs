//! The guide's troubleshooting chapter quotes real messages (issue #29 item 2): every
//! ```` ```text ```` and ```` ```json ```` block of `docs/troubleshooting.md` is produced
//! here, by putting the binary into the situation its entry describes, and compared whole
//! with what the binary printed (a line of its stderr, or the HTTP response's body). A
//! block no case here produces fails the test, so a new entry needs a case.
// Tests fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::Path;

use support::{BIN, HANG_GUARD, python_server, run, serve_http};

/// A block of the chapter: the `## ` heading it is under, its language and its text.
struct Quote {
    heading: String,
    lang: String,
    text: String,
}

fn chapter() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/troubleshooting.md");
    std::fs::read_to_string(path).unwrap()
}

fn quotes(chapter: &str) -> Vec<Quote> {
    let mut out = Vec::new();
    let mut heading = String::new();
    let mut lines = chapter.lines();
    while let Some(line) = lines.next() {
        if let Some(h) = line.strip_prefix("## ") {
            heading = h.to_owned();
        } else if let Some(lang) = line.strip_prefix("```") {
            let mut body = Vec::new();
            for line in lines.by_ref() {
                if line == "```" {
                    break;
                }
                body.push(line);
            }
            out.push(Quote {
                heading: heading.clone(),
                lang: lang.trim().to_owned(),
                text: body.join("\n"),
            });
        }
    }
    out
}

/// A 2025-11-25 server that knows no `server/discover` (it answers "Method not found", as
/// the official SDKs' servers of that era do).
const LEGACY_SERVER: &str = r#"
def answer(method, p, m):
    if method == "initialize":
        return initialized("old", {"tools": {}})
    if method == "tools/list":
        return {"result": {"tools": []}}
    return NOT_FOUND
serve(answer)
"#;

/// A port nothing listens on: one the OS just gave and took back.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The body of a POST to `addr`'s `/mcp` with `Host: host`.
fn post_with_host(addr: &str, host: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    body.to_owned()
}

/// What the binary prints in the situation of the entry under `heading`: each line of its
/// stderr (or the response body), for the quote to be one of; `None` for an entry no case
/// here knows.
fn produce(heading: &str, root: &Path) -> Option<Vec<String>> {
    let root_arg = root.display().to_string();
    let serve = format!("{BIN} serve --root '{root_arg}'");
    let lines = |r: support::Ran| {
        assert_ne!(r.code, Some(0), "it was meant to fail: {}", r.stderr);
        r.stderr.lines().map(str::to_owned).collect::<Vec<_>>()
    };
    let produced = if heading.contains("refusing to listen on 0.0.0.0:8080") {
        // Refused before the socket is bound: no port is taken.
        lines(run(&[
            "serve",
            "--root",
            &root_arg,
            "--http",
            "0.0.0.0:8080",
        ]))
    } else if heading.contains("refusing to serve the full profile over HTTP") {
        lines(run(&[
            "serve",
            "--root",
            &root_arg,
            "--profile",
            "full",
            "--http",
            "127.0.0.1:8080",
        ]))
    } else if heading.contains("Host header is not allowed") {
        let server = serve_http(root, &[], &[]);
        vec![post_with_host(server.addr(), "mcp.example.com")]
    } else if heading.contains("ACCESS_DENIED") {
        lines(run(&[
            "client",
            "--stdio",
            &serve,
            "call",
            "file_system.read",
            "path=../etc/passwd",
        ]))
    } else if heading.contains("Unknown tool") {
        lines(run(&["client", "--stdio", &serve, "call", "nope.tool"]))
    } else if heading.contains("does not speak 2026-07-28") {
        let legacy = python_server(root, "legacy.py", LEGACY_SERVER);
        lines(run(&[
            "client", "--stdio", &legacy, "--era", "modern", "tools",
        ]))
    } else if heading.contains("cannot connect to 127.0.0.1:8080") {
        let port = closed_port();
        let url = format!("http://127.0.0.1:{port}/mcp");
        lines(run(&["client", "--http", &url, "--timeout", "10", "tools"]))
            .into_iter()
            // The chapter shows the port of its other examples.
            .map(|l| l.replace(&format!("127.0.0.1:{port}"), "127.0.0.1:8080"))
            .collect()
    } else {
        return None;
    };
    Some(produced)
}

#[test]
fn every_message_the_troubleshooting_chapter_quotes_is_the_one_printed() {
    let chapter = chapter();
    let quotes: Vec<Quote> = quotes(&chapter)
        .into_iter()
        .filter(|q| q.lang == "text" || q.lang == "json")
        .collect();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("hello.txt"), "hello\n").unwrap();
    for quote in &quotes {
        let Some(printed) = produce(&quote.heading, root.path()) else {
            panic!(
                "docs/troubleshooting.md, `## {}`: a quoted message no case of this test produces",
                quote.heading
            );
        };
        assert!(
            printed.iter().any(|line| line == &quote.text),
            "docs/troubleshooting.md, `## {}`, quotes\n{}\nbut the binary printed\n{}",
            quote.heading,
            quote.text,
            printed.join("\n")
        );
        // The heading names the message it is about: one of its `code` spans is in it.
        assert!(
            quote
                .heading
                .split('`')
                .skip(1)
                .step_by(2)
                .any(|named| !named.is_empty() && quote.text.contains(named)),
            "`## {}` does not name its message",
            quote.heading
        );
    }
    assert!(quotes.len() >= 7, "only {} quotes found", quotes.len());
}

#[test]
fn a_quote_the_binary_does_not_print_is_caught() {
    let root = tempfile::tempdir().unwrap();
    let printed = produce("`Unknown tool: NAME` (`-32602`)", root.path()).unwrap();
    let right =
        "codomyrmex-mcp client: the server answered with error -32602: Unknown tool: nope.tool";
    assert!(printed.iter().any(|l| l == right), "{printed:?}");
    let wrong = right.replace("-32602", "-32601");
    assert!(!printed.iter().any(|l| l == &wrong));
    assert!(produce("`a message nobody prints`", root.path()).is_none());
}
