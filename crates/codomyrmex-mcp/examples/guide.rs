//! The guide's server (docs/, the mdBook): every sample of the chapters on writing a server
//! is a part of this file, included between its `ANCHOR` comments, so each one compiles with
//! `cargo test` and `cargo clippy --all-targets`.
//!
//! ```text
//! cargo run --example guide                              # stdio
//! cargo run --example guide -- --http 127.0.0.1:8080     # Streamable HTTP at /mcp
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::Completer;
use codomyrmex_mcp::PromptRequest;
use codomyrmex_mcp::{
    ContentBlock, InputRequest, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpServer,
    McpServerConfig, McpToolRegistry, PromptArgument, PromptDefinition, PromptMessage,
    PromptResult, TaskSupport, ToolContext, ToolDefinition, ToolRegistration, ToolSettings,
    mcp_prompt, mcp_resource, mcp_tool,
};
use codomyrmex_mcp::{IntoToolHandler, ToolOutput};
use serde_json::{Map, Value, json};

// ANCHOR: tool
/// Adds two numbers.
#[mcp_tool(name = "math.add", read_only)]
fn add(a: i64, #[arg(default = 1)] b: i64) -> i64 {
    a + b
}
// ANCHOR_END: tool

// ANCHOR: tool_context
/// Counts down, reporting progress, and stops early when the call is cancelled.
#[mcp_tool(name = "countdown")]
async fn countdown(cx: &ToolContext, from: u32) -> Result<String, McpErrorDetail> {
    for left in (0..from).rev() {
        if cx.is_cancelled() {
            return Err(McpErrorDetail::new("Cancelled", "the client cancelled"));
        }
        cx.progress(f64::from(from - left), Some(f64::from(from)), None);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(format!("counted down from {from}"))
}
// ANCHOR_END: tool_context

// ANCHOR: resource
/// The application's settings.
#[mcp_resource(
    uri = "config://app",
    name = "settings",
    mime_type = "application/json"
)]
fn settings() -> String {
    r#"{"debug":false}"#.into()
}

/// A user's profile: one resource per `id`, read through the URI template.
#[mcp_resource(uri_template = "users://{id}/profile", mime_type = "text/plain")]
async fn profile(id: String) -> Result<String, String> {
    match id.as_str() {
        "0" => Err("no user 0".into()),
        _ => Ok(format!("the profile of user {id}")),
    }
}
// ANCHOR_END: resource

// ANCHOR: prompt
/// Asks for a code review.
#[mcp_prompt(name = "code.review")]
fn review(
    #[arg(description = "The code to review")] code: String,
    /// What to look at.
    focus: Option<String>,
) -> Vec<PromptMessage> {
    let focus = focus.unwrap_or_else(|| "anything".into());
    vec![PromptMessage::user(ContentBlock::text(format!(
        "Review {code} for {focus}"
    )))]
}
// ANCHOR_END: prompt

// ANCHOR: completion
/// A prompt whose `language` argument the client can complete (`completion/complete`).
fn register_translate(prompts: &McpPromptRegistry) -> bool {
    let languages: Completer = Arc::new(|partial: &str, _: &BTreeMap<String, String>| {
        ["english", "esperanto", "estonian", "french"]
            .iter()
            .filter(|language| language.starts_with(partial))
            .map(|language| (*language).to_owned())
            .collect()
    });
    prompts.add_with_completion(
        PromptDefinition::new("translate", "Translates a text")
            .with_argument(PromptArgument::required("language", "The target language")),
        |req: PromptRequest| async move {
            let language = req.arguments.get("language").cloned().unwrap_or_default();
            Ok::<_, McpErrorDetail>(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text(format!(
                    "Translate the text into {language}"
                )))],
            })
        },
        BTreeMap::from([("language".to_owned(), languages)]),
    )
}
// ANCHOR_END: completion

// ANCHOR: input
/// Asks the user to confirm before it "deletes" anything. In 2025-11-25 this is a
/// server-to-client `elicitation/create`; in 2026-07-28 the call ends with an input request
/// and runs again with the answer, so nothing irreversible happens before the last question.
#[mcp_tool(name = "files.delete")]
async fn delete(cx: &ToolContext, path: String) -> Result<String, McpErrorDetail> {
    let schema = json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean"}},
        "required": ["confirm"],
    });
    let answer = cx
        .input(
            "confirm",
            InputRequest::form(&format!("Delete {path}?"), schema),
        )
        .await
        .map_err(|e| McpErrorDetail::new("InputFailed", e.to_string()))?;
    let accepted = answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer.pointer("/content/confirm") == Some(&json!(true));
    Ok(if accepted {
        format!("deleted {path}")
    } else {
        format!("kept {path}")
    })
}
// ANCHOR_END: input

// ANCHOR: task
/// A long job: a client that takes tasks gets a task id at once and polls for the result.
async fn long_job(args: Map<String, Value>, _cx: ToolContext) -> ToolOutput {
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 60.0))).await;
    ToolOutput::content(vec![ContentBlock::text(format!("done after {seconds} s"))])
}

fn register_long_job(tools: &McpToolRegistry) -> Result<(), String> {
    let definition = ToolDefinition::new(
        "long_job",
        json!({"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}}}),
    )
    .with_description("Sleeps, then reports; runs as a task when the client takes one");
    let settings = ToolSettings {
        task_support: TaskSupport::Optional,
        ..ToolSettings::default()
    };
    tools
        .register_tool(
            ToolRegistration::new(definition, long_job.into_handler()).with_settings(settings),
        )
        .map_err(|e| e.to_string())
}
// ANCHOR_END: task

// ANCHOR: server
/// Every tool, resource and prompt above, in one server.
fn server() -> Result<McpServer, String> {
    // `discovered()` holds every `#[mcp_tool]` (`#[mcp_resource]`, `#[mcp_prompt]`) linked in.
    let tools = McpToolRegistry::discovered().map_err(|e| e.to_string())?;
    register_long_job(&tools)?;
    let resources = McpResourceRegistry::discovered().map_err(|e| e.to_string())?;
    let prompts = McpPromptRegistry::discovered().map_err(|e| e.to_string())?;
    if !register_translate(&prompts) {
        return Err("the prompt `translate` is registered twice".into());
    }
    let config = McpServerConfig::new("guide", "1.0.0");
    Ok(McpServer::new(config, Arc::new(tools))
        .with_resources(Arc::new(resources))
        .with_prompts(Arc::new(prompts)))
}
// ANCHOR_END: server

// ANCHOR: main
#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = match server() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("guide: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = match args.as_slice() {
        // stdio: the client starts this program and speaks on its stdin and stdout.
        [] => server.serve_stdio().await.map_err(|e| e.to_string()),
        // Streamable HTTP at http://ADDR/mcp, with the safe defaults (loopback only, ...).
        [flag, addr] if flag == "--http" => match addr.parse() {
            Ok(bind) => {
                let config = codomyrmex_mcp::transport::http::HttpConfig {
                    bind,
                    ..Default::default()
                };
                server.serve_http(config).await.map_err(|e| e.to_string())
            }
            Err(e) => Err(format!("invalid address {addr:?}: {e}")),
        },
        _ => Err("usage: guide [--http ADDR]".into()),
    };
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("guide: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
// ANCHOR_END: main
