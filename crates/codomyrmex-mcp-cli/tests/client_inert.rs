//! A hostile server's text is inert on the terminal: `client` shows no control, bidi or
//! format character a server put in its names, titles, descriptions, results, resource and
//! prompt text, log lines, progress messages, completions, notifications or error
//! messages, while newlines and tabs stay; `--json` keeps every value exactly as sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{Ran, json_of, python_server, run};

/// A 2025-11-25 server that puts `H` (window retitling, screen clearing, a bidi override, a
/// one-byte CSI, a zero-width space and a carriage return), with a tab and a newline, into
/// every string a client shows.
const HOSTILE_SERVER: &str = r#"
H = "\x1b]0;pwned\x07\x1b[2J\u202e\u009b\u200b\r"
T = "x" + H + "\ty\nz"
def answer(method, p, m):
    if method == "initialize":
        return initialized("hostile" + H, {"tools": {}, "resources": {}, "prompts": {}, "logging": {}, "completions": {}})
    if method == "notifications/initialized":
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "a://" + H}})
        return None
    if method == "tools/list":
        return {"result": {"tools": [{"name": "show" + H, "title": "Title" + H, "description": T,
            "inputSchema": {"type": "object", "properties": {"a": {"type": "string", "description": T}}}}]}}
    if method == "tools/call":
        name = p.get("name")
        if name == "boom":
            return {"error": {"code": -32000, "message": "error" + T}}
        token = p.get("_meta", {}).get("progressToken")
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1, "total": 2, "message": "step" + H}})
        send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info" + H, "data": "log" + T}})
        return {"result": {"content": [{"type": "text", "text": "result" + T}], "isError": name == "fail"}}
    if method == "resources/list":
        return {"result": {"resources": [{"uri": "a://r" + H, "name": "name" + H, "description": T, "mimeType": "text/plain" + H}]}}
    if method == "resources/templates/list":
        return {"result": {"resourceTemplates": [{"uriTemplate": "a://{x}" + H, "name": "tpl" + H, "description": T}]}}
    if method == "resources/read":
        return {"result": {"contents": [{"uri": p.get("uri"), "text": "contents" + T}]}}
    if method == "prompts/list":
        return {"result": {"prompts": [{"name": "p" + H, "description": T, "arguments": [{"name": "arg" + H}]}]}}
    if method == "prompts/get":
        return {"result": {"description": T, "messages": [{"role": "user" + H, "content": {"type": "text", "text": "message" + T}}]}}
    if method == "completion/complete":
        return {"result": {"completion": {"values": ["value" + H, "other"]}}}
    if method == "logging/setLevel":
        return {"result": {}}
    return NOT_FOUND
serve(answer)
"#;

/// The text the server sent with every forbidden character taken out.
const SHOWN: &str = "]0;pwned[2J";

/// What must never reach the terminal.
const FORBIDDEN: [char; 6] = ['\x1b', '\x07', '\u{202e}', '\u{9b}', '\u{200b}', '\r'];

/// `client --stdio SERVER --era legacy REST...`.
fn client(server: &str, rest: &[&str]) -> Ran {
    run(&[&["client", "--stdio", server, "--era", "legacy"][..], rest].concat())
}

/// Nothing forbidden on stdout or stderr, and `expected` (inert) on `stream`.
fn assert_inert(what: &str, r: &Ran, stream: &str, expected: &[&str]) {
    for c in FORBIDDEN {
        assert!(
            !r.stdout.contains(c) && !r.stderr.contains(c),
            "{what}: {c:?} reached the terminal: stdout {:?} stderr {:?}",
            r.stdout,
            r.stderr
        );
    }
    for e in expected {
        assert!(
            stream.contains(e),
            "{what}: {e:?} not shown: stdout {:?} stderr {:?}",
            r.stdout,
            r.stderr
        );
    }
}

#[test]
fn a_hostile_servers_text_is_inert_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "hostile.py", HOSTILE_SERVER);
    // The tab and newline of a text stay.
    let t = format!("x{SHOWN}\ty\nz");

    let r = client(&s, &["tools"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let title = format!("show{SHOWN} — Title{SHOWN}");
    assert_inert(
        "tools",
        &r,
        &r.stdout,
        &[&title, &t, &format!("x{SHOWN}\ty z")],
    );

    let r = client(&s, &["call", "show"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_inert("call", &r, &r.stdout, &[&format!("result{t}")]);
    let log = format!("[server info{SHOWN}] log{t}");
    let progress = format!("progress: 1/2 step{SHOWN}");
    assert_inert("call's log and progress", &r, &r.stderr, &[&log, &progress]);

    let r = client(&s, &["call", "fail"]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert_inert("a tool error", &r, &r.stderr, &[&format!("result{t}")]);

    let r = client(&s, &["call", "boom"]);
    assert_eq!(r.code, Some(3), "{}", r.stderr);
    assert_inert("a server error", &r, &r.stderr, &[&format!("error{t}")]);

    let r = client(&s, &["resources"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let resource = format!("a://r{SHOWN}  name{SHOWN} (text/plain{SHOWN}) — {t}");
    let template = format!("a://{{x}}{SHOWN}  tpl{SHOWN} — {t}");
    assert_inert("resources", &r, &r.stdout, &[&resource, &template]);

    let r = client(&s, &["read", "a://r"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_inert("read", &r, &r.stdout, &[&format!("contents{t}")]);

    let r = client(&s, &["prompts"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let prompt = format!("p{SHOWN} — {t}\n    arguments: arg{SHOWN}");
    assert_inert("prompts", &r, &r.stdout, &[&prompt]);

    let r = client(&s, &["prompt", "p"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let message = format!("[user{SHOWN}] message{t}");
    assert_inert("prompt", &r, &r.stdout, &[&t, &message]);

    let r = client(&s, &["complete", "--prompt", "p", "arg"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_inert(
        "complete",
        &r,
        &r.stdout,
        &[&format!("value{SHOWN}\nother")],
    );

    let r = client(&s, &["--timeout", "2", "listen"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // JSON escapes the C0 controls already; the rest are taken out.
    let update = r#"notifications/resources/updated {"uri":"a://\u001b]0;pwned\u0007\u001b[2J\r"}"#;
    assert_inert("listen", &r, &r.stdout, &[update]);
}

#[test]
fn json_output_keeps_a_hostile_servers_values_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "hostile.py", HOSTILE_SERVER);
    let h = "\x1b]0;pwned\x07\x1b[2J\u{202e}\u{9b}\u{200b}\r";
    let t = format!("x{h}\ty\nz");
    let tools = json_of(&client(&s, &["--json", "tools"]));
    assert_eq!(tools[0]["title"], Value::String(format!("Title{h}")));
    assert_eq!(tools[0]["description"], Value::String(t.clone()));
    let result = json_of(&client(&s, &["--json", "call", "show"]));
    assert_eq!(
        result["content"][0]["text"],
        Value::String(format!("result{t}"))
    );
    let read = json_of(&client(&s, &["--json", "read", "a://r"]));
    assert_eq!(
        read["contents"][0]["text"],
        Value::String(format!("contents{t}"))
    );
    let prompt = json_of(&client(&s, &["--json", "prompt", "p"]));
    assert_eq!(prompt["description"], Value::String(t));
}
