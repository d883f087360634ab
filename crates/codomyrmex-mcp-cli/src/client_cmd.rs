//! `client`: connect to any MCP server over stdio or Streamable HTTP and list or call what it
//! offers.

use std::fmt::Write as _;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use codomyrmex_mcp::{ClientError, Era, McpClient};
use serde_json::{Value, json};

use crate::cli::{ClientAction, ClientArgs, EraArg};

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// A connection, and the server process behind it when we started one.
struct Connection {
    client: McpClient,
    child: Option<Child>,
}

struct Child {
    process: tokio::process::Child,
    stdin_pump: tokio::task::JoinHandle<()>,
}

impl Connection {
    /// Closes the server's stdin and gives it a moment to exit.
    async fn close(self) {
        let Some(mut child) = self.child else { return };
        drop(self.client);
        child.stdin_pump.abort();
        let _ = child.stdin_pump.await;
        if tokio::time::timeout(Duration::from_secs(5), child.process.wait())
            .await
            .is_err()
        {
            let _ = child.process.kill().await;
        }
    }
}

fn spawn_stdio(command: &str, era: Era) -> Result<Connection, String> {
    let words = shlex::split(command)
        .ok_or_else(|| format!("cannot split {command:?} into words (unbalanced quotes?)"))?;
    let Some((program, args)) = words.split_first() else {
        return Err("--stdio needs a command".into());
    };
    let mut process = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program:?}: {e}"))?;
    let (Some(mut stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
        return Err("the server's pipes are missing".into());
    };
    // The client writes into a pipe pumped to the server's stdin, so that closing the pump
    // closes the server's stdin.
    let (client_side, mut pump_side) = tokio::io::duplex(1 << 20);
    let stdin_pump = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut pump_side, &mut stdin).await;
    });
    let (_, client_write) = tokio::io::split(client_side);
    Ok(Connection {
        client: McpClient::connect(stdout, client_write, era),
        child: Some(Child {
            process,
            stdin_pump,
        }),
    })
}

fn connect(args: &ClientArgs) -> Result<Connection, String> {
    let era = match args.era {
        EraArg::Legacy => Era::Legacy,
        EraArg::Modern => Era::Modern,
    };
    match (&args.stdio, &args.http) {
        (Some(command), None) => spawn_stdio(command, era),
        (None, Some(url)) => {
            let endpoint = crate::http_client::parse_url(url)?;
            Ok(Connection {
                client: crate::http_client::connect(endpoint, args.token.clone(), era),
                child: None,
            })
        }
        _ => Err("give exactly one of --stdio CMD and --http URL".into()),
    }
}

/// What a command produced: text for stdout and whether it counts as a failure.
struct Outcome {
    text: String,
    failed: bool,
}

fn describe(e: &ClientError) -> String {
    match e {
        ClientError::Server(err) => format!(
            "the server answered with error {}: {}",
            err.code, err.message
        ),
        ClientError::Closed => {
            "the connection closed (did the server start? see its messages above)".into()
        }
        ClientError::Protocol(p) => format!("unexpected answer: {p}"),
        other => other.to_string(),
    }
}

/// `client ...`.
pub async fn run(args: ClientArgs) -> ExitCode {
    let connection = match connect(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("codomyrmex-mcp client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let timeout = Duration::from_secs(args.timeout);
    let outcome = tokio::time::timeout(timeout, act(&connection.client, &args)).await;
    connection.close().await;
    match outcome {
        Err(_) => {
            eprintln!("codomyrmex-mcp client: no answer within {} s", args.timeout);
            ExitCode::FAILURE
        }
        Ok(Err(e)) => {
            eprintln!("codomyrmex-mcp client: {e}");
            ExitCode::FAILURE
        }
        Ok(Ok(out)) => {
            if out.failed {
                eprint!("{}", out.text);
                ExitCode::FAILURE
            } else {
                crate::emit(&out.text);
                ExitCode::SUCCESS
            }
        }
    }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    s.push('\n');
    s
}

async fn act(client: &McpClient, args: &ClientArgs) -> Result<Outcome, String> {
    client.initialize().await.map_err(|e| describe(&e))?;
    let ok = |text| {
        Ok(Outcome {
            text,
            failed: false,
        })
    };
    match &args.action {
        ClientAction::Tools => {
            let tools = client.list_tools().await.map_err(|e| describe(&e))?;
            if args.json {
                ok(pretty(&Value::Array(tools)))
            } else {
                ok(render_tools(&tools))
            }
        }
        ClientAction::Call { name, args: raw } => {
            let arguments = parse_arguments(raw)?;
            let result = client
                .call_tool(name, arguments)
                .await
                .map_err(|e| describe(&e))?;
            let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
            let text = if args.json {
                pretty(&result)
            } else {
                render_call(&result)
            };
            Ok(Outcome { text, failed })
        }
        ClientAction::Resources => {
            let resources = list_all(client, "resources/list", "resources").await?;
            let templates =
                list_all(client, "resources/templates/list", "resourceTemplates").await?;
            if args.json {
                ok(pretty(
                    &json!({"resources": resources, "resourceTemplates": templates}),
                ))
            } else {
                ok(render_resources(&resources, &templates))
            }
        }
        ClientAction::Read { uri } => {
            let result = client
                .request("resources/read", json!({"uri": uri}))
                .await
                .map_err(|e| describe(&e))?;
            if args.json {
                ok(pretty(&result))
            } else {
                ok(render_read(&result))
            }
        }
        ClientAction::Prompts => {
            let prompts = list_all(client, "prompts/list", "prompts").await?;
            if args.json {
                ok(pretty(&Value::Array(prompts)))
            } else {
                ok(render_prompts(&prompts))
            }
        }
    }
}

/// `--args`: a JSON object, or `@FILE`.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    let text = match raw.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the arguments file {path}: {e}"))?,
        None => raw.to_owned(),
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("--args must be a JSON object, e.g. '{\"path\": \"README.md\"}'".into()),
        Err(e) => Err(format!("--args is not valid JSON: {e}")),
    }
}

/// Every item of a paginated list; a server without the feature has none.
async fn list_all(client: &McpClient, method: &str, key: &str) -> Result<Vec<Value>, String> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor
            .as_ref()
            .map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let page = match client.request(method, params).await {
            Ok(p) => p,
            Err(ClientError::Server(e)) if e.code == METHOD_NOT_FOUND => return Ok(items),
            Err(e) => return Err(describe(&e)),
        };
        if let Some(list) = page.get(key).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if Some(c) != cursor.as_deref() => cursor = Some(c.to_owned()),
            _ => return Ok(items),
        }
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return one_of(values.iter());
    }
    if let Some(value) = schema.get("const") {
        return one_of(std::iter::once(value));
    }
    let labels: Vec<String> = match schema.get("type") {
        Some(Value::String(t)) => return t.clone(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(ToOwned::to_owned)
            .collect(),
        _ => {
            let options = ["anyOf", "oneOf"]
                .into_iter()
                .find_map(|key| schema.get(key).and_then(Value::as_array));
            let options: Vec<&Value> = options
                .into_iter()
                .flatten()
                .filter(|o| o.get("type") != Some(&json!("null")))
                .collect();
            // A choice of constants (a Rust enum): list the values.
            let constants: Option<Vec<&Value>> = options.iter().map(|o| o.get("const")).collect();
            if let Some(constants) = constants.filter(|c| !c.is_empty()) {
                return one_of(constants.into_iter());
            }
            options.into_iter().map(type_of).collect()
        }
    };
    let mut unique: Vec<String> = Vec::with_capacity(labels.len());
    for label in labels {
        if !unique.contains(&label) {
            unique.push(label);
        }
    }
    // Every JSON type (`serde_json::Value`, spelled out) is "any".
    let everything = ["object", "array", "string", "number", "boolean"]
        .iter()
        .all(|t| unique.iter().any(|u| u == t));
    if unique.is_empty() || everything || unique.iter().any(|u| u == "any") {
        "any".into()
    } else {
        unique.join(" or ")
    }
}

fn one_of<'a>(values: impl Iterator<Item = &'a Value>) -> String {
    let names: Vec<String> = values
        .map(|v| v.as_str().map_or_else(|| v.to_string(), ToOwned::to_owned))
        .collect();
    format!("one of {}", names.join(", "))
}

/// Tools as readable text: name, title, description and arguments.
pub fn render_tools(tools: &[Value]) -> String {
    let mut out = String::new();
    if tools.is_empty() {
        out.push_str("(no tools)\n");
    }
    for tool in tools {
        let name = str_of(tool, "name").unwrap_or("?");
        match str_of(tool, "title") {
            Some(title) => {
                let _ = writeln!(out, "{name} — {title}");
            }
            None => {
                let _ = writeln!(out, "{name}");
            }
        }
        if let Some(d) = str_of(tool, "description") {
            let _ = writeln!(out, "    {d}");
        }
        let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(props) = schema.get("properties").and_then(Value::as_object)
            && !props.is_empty()
        {
            out.push_str("    arguments:\n");
            for (arg, s) in props {
                let req = if required.contains(&arg.as_str()) {
                    ", required"
                } else {
                    ""
                };
                let _ = write!(out, "      {arg} ({}{req})", type_of(s));
                if let Some(d) = str_of(s, "description") {
                    let _ = write!(out, " — {}", d.replace('\n', " "));
                }
                out.push('\n');
            }
        }
        if tool.pointer("/annotations/readOnlyHint") == Some(&json!(false)) {
            out.push_str("    (changes things)\n");
        }
        out.push('\n');
    }
    out
}

/// A `CallToolResult` as readable text: its content blocks as the model reads them (text as
/// text, not JSON-escaped), or its `structuredContent` pretty-printed when the only text is
/// that structure's JSON (the default rendering of a structured result).
fn render_call(result: &Value) -> String {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if !is_error && let Some(structured) = result.get("structuredContent") {
        let only_json = match blocks {
            [] => true,
            [block] => str_of(block, "text")
                .and_then(|t| serde_json::from_str::<Value>(t).ok())
                .is_some_and(|v| &v == structured),
            _ => false,
        };
        if only_json {
            return pretty(structured);
        }
    }
    let mut out = String::new();
    if is_error {
        out.push_str("tool error: ");
    }
    for block in blocks {
        out.push_str(&render_block(block));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn render_block(block: &Value) -> String {
    match str_of(block, "type") {
        Some("text") => str_of(block, "text").unwrap_or("").to_owned(),
        Some("image" | "audio") => format!(
            "[{} {}, {} base64 characters]",
            str_of(block, "type").unwrap_or(""),
            str_of(block, "mimeType").unwrap_or("?"),
            str_of(block, "data").map_or(0, str::len)
        ),
        Some("resource_link") => format!("[link {}]", str_of(block, "uri").unwrap_or("?")),
        Some("resource") => block
            .get("resource")
            .map_or_else(String::new, render_contents),
        _ => block.to_string(),
    }
}

fn render_contents(c: &Value) -> String {
    match (str_of(c, "text"), str_of(c, "blob")) {
        (Some(text), _) => text.to_owned(),
        (None, Some(blob)) => format!(
            "[binary {}, {} base64 characters]",
            str_of(c, "mimeType").unwrap_or("application/octet-stream"),
            blob.len()
        ),
        (None, None) => c.to_string(),
    }
}

fn render_read(result: &Value) -> String {
    let mut out = String::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push_str(&render_contents(c));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn render_resources(resources: &[Value], templates: &[Value]) -> String {
    let mut out = String::new();
    if resources.is_empty() && templates.is_empty() {
        return "(no resources)\n".into();
    }
    for r in resources {
        let _ = write!(
            out,
            "{}  {}",
            str_of(r, "uri").unwrap_or("?"),
            str_of(r, "name").unwrap_or("")
        );
        if let Some(m) = str_of(r, "mimeType") {
            let _ = write!(out, " ({m})");
        }
        if let Some(d) = str_of(r, "description") {
            let _ = write!(out, " — {d}");
        }
        out.push('\n');
    }
    if !templates.is_empty() {
        out.push_str("templates:\n");
        for t in templates {
            let _ = write!(
                out,
                "  {}  {}",
                str_of(t, "uriTemplate").unwrap_or("?"),
                str_of(t, "name").unwrap_or("")
            );
            if let Some(d) = str_of(t, "description") {
                let _ = write!(out, " — {d}");
            }
            out.push('\n');
        }
    }
    out
}

fn render_prompts(prompts: &[Value]) -> String {
    if prompts.is_empty() {
        return "(no prompts)\n".into();
    }
    let mut out = String::new();
    for p in prompts {
        let _ = write!(out, "{}", str_of(p, "name").unwrap_or("?"));
        if let Some(d) = str_of(p, "description") {
            let _ = write!(out, " — {d}");
        }
        out.push('\n');
        let args: Vec<String> = p
            .get("arguments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| {
                let name = str_of(a, "name").unwrap_or("?");
                if a.get("required").and_then(Value::as_bool) == Some(true) {
                    format!("{name} (required)")
                } else {
                    name.to_owned()
                }
            })
            .collect();
        if !args.is_empty() {
            let _ = writeln!(out, "    arguments: {}", args.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments("{\"a\": 1}").unwrap(), json!({"a": 1}));
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{nope").is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("args.json");
        std::fs::write(&f, "{\"path\": \"x\"}").unwrap();
        assert_eq!(
            parse_arguments(&format!("@{}", f.display())).unwrap(),
            json!({"path": "x"})
        );
        assert!(parse_arguments("@/nonexistent/args.json").is_err());
    }

    #[test]
    fn tools_render_with_their_arguments() {
        let tools = vec![json!({
            "name": "t.x", "title": "X", "description": "Does x.",
            "inputSchema": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "description": "The a."},
                "b": {"type": ["integer", "null"]},
                "c": {"enum": ["p", "q"]},
                "d": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "e": {"anyOf": [
                    {"oneOf": [{"type": "string", "const": "text"}, {"type": "string", "const": "base64"}]},
                    {"type": "null"}
                ]},
                "f": {"anyOf": [
                    {"type": "object"}, {"type": "array"}, {"type": "string"},
                    {"type": "number"}, {"type": "boolean"}, {"type": "null"}
                ]},
                "g": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string"}, {"type": "integer"}]}
            }},
            "annotations": {"readOnlyHint": false}
        })];
        let text = render_tools(&tools);
        assert!(
            text.starts_with("t.x — X\n    Does x.\n    arguments:\n"),
            "{text}"
        );
        assert!(
            text.contains("      a (string, required) — The a.\n"),
            "{text}"
        );
        assert!(text.contains("      b (integer)\n"), "{text}");
        assert!(text.contains("      c (one of p, q)\n"), "{text}");
        assert!(text.contains("      d (boolean)\n"), "{text}");
        assert!(text.contains("      e (one of text, base64)\n"), "{text}");
        assert!(text.contains("      f (any)\n"), "{text}");
        assert!(text.contains("      g (integer or string)\n"), "{text}");
        assert!(text.contains("(changes things)"), "{text}");
        assert_eq!(render_tools(&[]), "(no tools)\n");
    }

    #[test]
    fn call_results_render_structured_content_or_text() {
        let r = json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}});
        assert_eq!(render_call(&r), "{\n  \"a\": 1\n}\n");
        // Text that is more than the structure's JSON prints as it is.
        let source = "fn main() {\n    println!(\"hi\");\n}\n";
        let r = json!({"content": [{"type": "text", "text": source}], "structuredContent": {"content": source}});
        assert_eq!(render_call(&r), source);
        let r = json!({"content": [{"type": "text", "text": "out\n"}, {"type": "text", "text": "[exit code 0]"}], "structuredContent": {"a": 1}});
        assert_eq!(render_call(&r), "out\n[exit code 0]\n");
        let r = json!({"content": [{"type": "text", "text": "NOT_FOUND: x"}], "isError": true});
        assert_eq!(render_call(&r), "tool error: NOT_FOUND: x\n");
        let r = json!({"content": [{"type": "image", "mimeType": "image/png", "data": "AAAA"}]});
        assert_eq!(render_call(&r), "[image image/png, 4 base64 characters]\n");
    }

    #[test]
    fn resources_and_prompts_render() {
        let text = render_resources(
            &[json!({"uri": "a://1", "name": "one", "mimeType": "text/plain"})],
            &[json!({"uriTemplate": "a://{x}", "name": "tpl", "description": "T"})],
        );
        assert_eq!(
            text,
            "a://1  one (text/plain)\ntemplates:\n  a://{x}  tpl — T\n"
        );
        assert_eq!(render_resources(&[], &[]), "(no resources)\n");
        let text = render_prompts(&[
            json!({"name": "p", "description": "P", "arguments": [{"name": "g", "required": true}, {"name": "h"}]}),
        ]);
        assert_eq!(text, "p — P\n    arguments: g (required), h\n");
        let r = json!({"contents": [{"uri": "a", "text": "hello"}, {"uri": "b", "blob": "AAAA", "mimeType": "image/png"}]});
        assert_eq!(
            render_read(&r),
            "hello\n[binary image/png, 4 base64 characters]\n"
        );
    }
}
