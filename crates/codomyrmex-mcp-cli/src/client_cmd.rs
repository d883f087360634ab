//! `client`: connect to any MCP server over stdio or Streamable HTTP, through the library's
//! [`McpClient`], and list, call, read, prompt, complete or listen to what it offers.
//!
//! Exit status (documented in `client --help` and the guide's docs/client.md): 0 success; 1
//! the tool reported an error; 2 usage; 3 a JSON-RPC error from the server; 4 the server could
//! not be started or reached, or the connection failed; 5 no answer within `--timeout`; 6 an
//! era or answer this client does not speak.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::client::{ClientHandlers, ClientOptions, EraPreference, TaskCall};
use codomyrmex_mcp::util::inert_text;
use serde_json::{Map, Value, json};

use crate::cli::{ClientAction, ClientArgs, EraArg};
use crate::client_failure::{Failure, Status};
use crate::client_input::{self, ServerSpec};

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// How long a stdio server gets to exit after its stdin closes, at most.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

fn usage(message: impl Into<String>) -> Failure {
    Failure {
        status: Status::Usage,
        message: message.into(),
    }
}

/// What a command produced: text for stdout and whether the tool reported an error.
struct Outcome {
    text: String,
    failed: bool,
}

fn server_spec(args: &ClientArgs) -> Result<ServerSpec, Failure> {
    let mut spec = match (&args.stdio, &args.http, &args.server) {
        (Some(command), None, None) => {
            ServerSpec::Stdio(client_input::stdio_command(command).map_err(usage)?)
        }
        (None, Some(url), None) => {
            ServerSpec::Http(codomyrmex_mcp::client::http::HttpTarget::new(url.clone()))
        }
        (None, None, Some(name)) => {
            client_input::from_mcp_json(&args.mcp_config, name).map_err(usage)?
        }
        _ => {
            return Err(usage(
                "give exactly one of --stdio CMD, --http URL and --server NAME",
            ));
        }
    };
    match &mut spec {
        ServerSpec::Stdio(command) => {
            for pair in &args.env {
                command
                    .env
                    .push(client_input::env_pair(pair).map_err(usage)?);
            }
            if let Some(dir) = &args.cwd {
                command.cwd = Some(dir.clone());
            }
            if !args.headers.is_empty()
                || args.token.is_some() && args.stdio.is_some()
                || args.oauth
                || args.cacert.is_some()
            {
                return Err(usage(
                    "--header, --token, --oauth and --cacert apply to HTTP servers only",
                ));
            }
        }
        ServerSpec::Http(target) => {
            for pair in &args.headers {
                target
                    .headers
                    .push(client_input::header_pair(pair).map_err(usage)?);
            }
            if args.token.is_some() {
                target.token.clone_from(&args.token);
            }
            if args.cacert.is_some() {
                target.ca_file.clone_from(&args.cacert);
            }
            if !args.env.is_empty() || args.cwd.is_some() {
                return Err(usage("--env and --cwd apply to stdio servers only"));
            }
        }
    }
    Ok(spec)
}

/// What the command-line client can answer: its working directory as the one root, and
/// elicitation at the terminal when stdin is one.
fn handlers() -> ClientHandlers {
    let mut handlers = ClientHandlers::new();
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        handlers = crate::client_elicit::handlers(handlers);
    }
    if let Ok(dir) = std::env::current_dir() {
        let uri = format!("file://{}", dir.display());
        handlers = handlers.roots(vec![json!({"uri": uri, "name": "cwd"})]);
    }
    handlers.logging(|params| {
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("info");
        let data = params.get("data").cloned().unwrap_or(Value::Null);
        let text = data
            .as_str()
            .map_or_else(|| data.to_string(), ToOwned::to_owned);
        eprintln!("[server {}] {}", inert_text(level), inert_text(&text));
    })
}

fn connect(spec: &ServerSpec, args: &ClientArgs) -> Result<McpClient, Failure> {
    let options = ClientOptions {
        handlers: handlers(),
        ..ClientOptions::default()
    };
    match spec {
        ServerSpec::Stdio(command) => Ok(McpClient::spawn(command, options)?),
        ServerSpec::Http(target) => {
            codomyrmex_mcp::client::http::parse_url(&target.url).map_err(usage)?;
            if args.oauth {
                let oauth = crate::client_oauth::config(args, Duration::from_secs(args.timeout))
                    .map_err(usage)?;
                return Ok(McpClient::connect_http_oauth(
                    target.clone(),
                    oauth,
                    options,
                )?);
            }
            Ok(McpClient::connect_http(target.clone(), options)?)
        }
    }
}

/// `client ...`.
pub async fn run(args: ClientArgs) -> ExitCode {
    let started = Instant::now();
    let timeout = Duration::from_secs(args.timeout);
    let result = async {
        let spec = server_spec(&args)?;
        let client = connect(&spec, &args)?;
        // A load test's --timeout bounds each call; --calls or --duration end it.
        let outcome = if matches!(args.action, ClientAction::Load { .. }) {
            Ok(act(&client, &args, timeout).await)
        } else {
            tokio::time::timeout(timeout, act(&client, &args, timeout)).await
        };
        // The deadline holds for the shutdown too: what is left of it, at most the grace.
        let left = timeout
            .saturating_sub(started.elapsed())
            .min(SHUTDOWN_GRACE);
        client.close(left).await;
        match outcome {
            Ok(r) => r,
            Err(_)
                if matches!(
                    args.action,
                    ClientAction::Listen | ClientAction::Subscribe { .. }
                ) =>
            {
                Ok(Outcome {
                    text: String::new(),
                    failed: false,
                })
            }
            Err(_) => Err(Failure {
                status: Status::Timeout,
                message: format!("no answer within {} s", args.timeout),
            }),
        }
    }
    .await;
    // What the server sent is made inert here, where it reaches the terminal: messages and
    // human-readable text always, `--json` output never (its escapes are inert already and
    // its values stay exact).
    let shown = |text: &str| -> String {
        if args.json {
            text.to_owned()
        } else {
            inert_text(text).into_owned()
        }
    };
    match result {
        Err(f) => {
            eprintln!("codomyrmex-mcp client: {}", inert_text(&f.message));
            ExitCode::from(f.status as u8)
        }
        Ok(out) if out.failed => {
            eprint!("{}", shown(&out.text));
            ExitCode::from(Status::ToolError as u8)
        }
        Ok(out) => {
            crate::emit(&shown(&out.text));
            ExitCode::from(Status::Ok as u8)
        }
    }
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string());
    s.push('\n');
    s
}

fn era_preference(era: EraArg) -> EraPreference {
    match era {
        EraArg::Auto => EraPreference::Auto,
        EraArg::Legacy => EraPreference::Legacy,
        EraArg::Modern => EraPreference::Modern,
    }
}

async fn act(client: &McpClient, args: &ClientArgs, timeout: Duration) -> Result<Outcome, Failure> {
    // The probe gets the whole budget: a server that never answers is the timeout's to report.
    client.negotiate(era_preference(args.era), timeout).await?;
    let ok = |text| {
        Ok(Outcome {
            text,
            failed: false,
        })
    };
    let show =
        |v: &Value, human: fn(&Value) -> String| if args.json { pretty(v) } else { human(v) };
    match &args.action {
        ClientAction::Tools => {
            let tools = client.list_tools().await?;
            ok(if args.json {
                pretty(&Value::Array(tools))
            } else {
                render_tools(&tools)
            })
        }
        ClientAction::Call {
            name,
            pairs,
            args: raw,
            task,
            ttl,
        } => {
            let arguments = tool_arguments(client, name, pairs, raw.as_deref(), false).await?;
            if *task {
                let ttl = ttl.map(Duration::from_secs);
                return match client
                    .call_tool_as_task(name, Value::Object(arguments), ttl)
                    .await?
                {
                    TaskCall::Task(task) => ok(show(&task, render_task)),
                    TaskCall::Done(result) => Ok(Outcome {
                        failed: result.get("isError").and_then(Value::as_bool) == Some(true),
                        text: show(&result, render_call),
                    }),
                };
            }
            // Progress on stderr (a bar on a terminal), never with --json.
            let progress = (!args.json).then(crate::client_progress::for_call);
            let options = progress
                .as_ref()
                .map(|p| p.options.clone())
                .unwrap_or_default();
            let result = client
                .call_tool_with(name, Value::Object(arguments), &options)
                .await;
            drop(progress);
            let result = result?;
            let failed = result.get("isError").and_then(Value::as_bool) == Some(true);
            Ok(Outcome {
                text: show(&result, render_call),
                failed,
            })
        }
        ClientAction::Resources => {
            let resources = optional(client.list_resources().await)?;
            let templates = optional(client.list_resource_templates().await)?;
            ok(if args.json {
                pretty(&json!({"resources": resources, "resourceTemplates": templates}))
            } else {
                render_resources(&resources, &templates)
            })
        }
        ClientAction::Templates => {
            let templates = optional(client.list_resource_templates().await)?;
            ok(if args.json {
                pretty(&Value::Array(templates))
            } else {
                render_resources(&[], &templates)
            })
        }
        ClientAction::Skills => ok(crate::client_skills::list(client, args.json).await?),
        ClientAction::Skill { name } => {
            ok(crate::client_skills::show(client, name, args.json).await?)
        }
        ClientAction::Read { uri } => {
            let result = client.read_resource(uri).await?;
            ok(show(&result, render_read))
        }
        ClientAction::Subscribe { uri } => {
            if client.era() == codomyrmex_mcp::Era::Modern {
                // 2026-07-28: resource updates come on the stream of `subscriptions/listen`.
                let params = json!({"notifications": {"resourceSubscriptions": [uri]}});
                return listen_on(client, params, args.json).await;
            }
            client.subscribe(uri).await?;
            eprintln!(
                "subscribed to {}; printing updates until --timeout",
                inert_text(uri)
            );
            listen(client, args.json).await
        }
        ClientAction::Prompts => {
            let prompts = optional(client.list_prompts().await)?;
            ok(if args.json {
                pretty(&Value::Array(prompts))
            } else {
                render_prompts(&prompts)
            })
        }
        ClientAction::Prompt {
            name,
            pairs,
            args: raw,
        } => {
            let arguments = client_input::arguments(pairs, raw.as_deref(), None).map_err(usage)?;
            let result = client.get_prompt(name, Value::Object(arguments)).await?;
            ok(show(&result, render_prompt))
        }
        ClientAction::Complete {
            prompt,
            resource,
            argument,
            value,
        } => {
            let reference = match (prompt, resource) {
                (Some(p), _) => json!({"type": "ref/prompt", "name": p}),
                (None, Some(r)) => json!({"type": "ref/resource", "uri": r}),
                (None, None) => return Err(usage("give --prompt NAME or --resource URI")),
            };
            let result = client.complete(reference, argument, value, None).await?;
            ok(show(&result, |r| {
                let values: Vec<&str> = r
                    .pointer("/completion/values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if values.is_empty() {
                    "(no completions)\n".into()
                } else {
                    format!("{}\n", values.join("\n"))
                }
            }))
        }
        ClientAction::Ping => {
            client.ping().await?;
            ok(if args.json {
                "{}\n".into()
            } else {
                "ok\n".into()
            })
        }
        ClientAction::Tasks {
            id: Some(id),
            result: true,
            ..
        } => {
            let result = client.task_result(id).await?;
            Ok(Outcome {
                failed: result.get("isError").and_then(Value::as_bool) == Some(true),
                text: show(&result, render_call),
            })
        }
        ClientAction::Tasks {
            id: Some(id),
            cancel: true,
            ..
        } => {
            let answer = client.cancel_task(id).await?;
            ok(if args.json {
                pretty(&answer)
            } else {
                format!("cancelled {id}\n")
            })
        }
        ClientAction::Tasks { id: Some(id), .. } => {
            let task = client.get_task(id).await?;
            ok(show(&task, render_task))
        }
        ClientAction::Tasks { id: None, .. } => {
            let tasks = optional(client.list_tasks().await)?;
            ok(if args.json {
                pretty(&Value::Array(tasks))
            } else if tasks.is_empty() {
                "(no tasks)\n".into()
            } else {
                tasks
                    .iter()
                    .map(|t| {
                        format!(
                            "{}  {}\n",
                            str_of(t, "taskId").unwrap_or("?"),
                            str_of(t, "status").unwrap_or("?")
                        )
                    })
                    .collect()
            })
        }
        ClientAction::Load {
            name,
            pairs,
            args: raw,
            calls,
            duration,
            concurrency,
            rate,
        } => {
            let arguments = tool_arguments(client, name, pairs, raw.as_deref(), true).await?;
            let plan = crate::client_load::Plan {
                calls: *calls,
                duration: duration.map(Duration::from_secs),
                concurrency: *concurrency,
                rate: *rate,
                call_timeout: timeout,
            };
            let report =
                crate::client_load::run(client, name, Value::Object(arguments), &plan).await;
            crate::emit(&if args.json {
                pretty(&report.to_json())
            } else {
                inert_text(&report.render()).into_owned()
            });
            Ok(Outcome {
                text: String::new(),
                failed: report.failed() > 0,
            })
        }
        ClientAction::Listen => {
            if client.era() == codomyrmex_mcp::Era::Modern {
                // 2026-07-28: notifications come on the stream of `subscriptions/listen`.
                let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}});
                return listen_on(client, params, args.json).await;
            }
            listen(client, args.json).await
        }
    }
}

/// The arguments of a call to `name`: `pairs` converted by the tool's input schema (the tools
/// are listed for it, and when `check` asks that the tool exist), with the JSON of `raw`.
pub(crate) async fn tool_arguments(
    client: &McpClient,
    name: &str,
    pairs: &[String],
    raw: Option<&str>,
    check: bool,
) -> Result<Map<String, Value>, Failure> {
    let schema = if pairs.is_empty() && !check {
        json!({})
    } else {
        let tools = client.list_tools().await?;
        let Some(tool) = tools
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
        else {
            return Err(usage(format!("the server has no tool {name:?}")));
        };
        tool.get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({}))
    };
    client_input::arguments(pairs, raw, Some(&schema)).map_err(usage)
}

/// `subscriptions/listen` with `params`, printing what its stream carries.
async fn listen_on(client: &McpClient, params: Value, json: bool) -> Result<Outcome, Failure> {
    tokio::select! {
        r = client.request("subscriptions/listen", params) => {
            r?;
            Ok(Outcome { text: String::new(), failed: false })
        }
        out = listen(client, json) => out,
    }
}

/// A list a server without the feature answers with method-not-found: empty.
fn optional(r: Result<Vec<Value>, ClientError>) -> Result<Vec<Value>, Failure> {
    match r {
        Err(ClientError::Server(e)) if e.code == METHOD_NOT_FOUND => Ok(Vec::new()),
        other => Ok(other?),
    }
}

/// Prints notifications as they come, until the connection ends (or the timeout).
async fn listen(client: &McpClient, json: bool) -> Result<Outcome, Failure> {
    while let Some(n) = client.next_notification().await {
        let line = if json {
            format!("{n}\n")
        } else {
            let method = str_of(&n, "method").unwrap_or("?");
            let params = n.get("params").cloned().unwrap_or(Value::Null);
            inert_text(&format!("{method} {params}")).into_owned() + "\n"
        };
        crate::emit(&line);
    }
    Err(ClientError::Closed.into())
}

/// A task: its id and status (and status message).
fn render_task(task: &Value) -> String {
    let mut out = format!(
        "{}  {}",
        str_of(task, "taskId").unwrap_or("?"),
        str_of(task, "status").unwrap_or("?")
    );
    if let Some(m) = str_of(task, "statusMessage") {
        let _ = write!(out, " — {m}");
    }
    out.push('\n');
    out
}

fn render_prompt(result: &Value) -> String {
    let mut out = String::new();
    if let Some(d) = str_of(result, "description") {
        let _ = writeln!(out, "{d}\n");
    }
    for m in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = str_of(m, "role").unwrap_or("?");
        let content = m.get("content").map_or_else(String::new, render_block);
        let _ = writeln!(out, "[{role}] {content}");
    }
    out
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
