//! The conformance fixture server: every tool, resource and prompt the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`) looks for, for protocol revisions
//! 2025-11-25 and 2026-07-28.
//!
//! ```text
//! cargo run --release --example everything -- --stdio
//! cargo run --release --example everything -- --http 127.0.0.1:3000   # serves /mcp
//! ```
//!
//! Every fixture is written against the crate's era-neutral API: a tool that needs input from
//! the client calls [`ToolContext::input`], which is a server-to-client request under
//! 2025-11-25 and an `InputRequiredResult` round trip under 2026-07-28.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use codomyrmex_mcp::PromptRequest;
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    ClientRequestError, ContentBlock, InputRequest, LoggingLevel, McpErrorDetail,
    McpPromptRegistry, McpResourceRegistry, McpServer, McpServerConfig, McpToolRegistry,
    PromptArgument, PromptDefinition, PromptMessage, PromptResult, ResourceDefinition,
    ResourceTemplateDefinition, TaskSupport, ToolContext, ToolDefinition, ToolRegistration,
    ToolSettings,
};
use codomyrmex_mcp::{Completer, ResourceRequest};
use codomyrmex_mcp::{IntoToolHandler, ToolHandler, ToolOutput};
use serde_json::{Map, Value, json};

/// A 1x1 PNG (one teal pixel).
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mNQaDgAAAIkAWHj6Uk8AAAAAElFTkSuQmCC";
/// A WAV file: 8 kHz, mono, 16-bit, four samples.
const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAOgDAAAY/A==";

/// A tool that can be added and removed to trigger `tools/list_changed`.
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// A prompt that can be added and removed to trigger `prompts/list_changed`.
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

type Outcome = Result<ToolOutput, ClientRequestError>;

fn text(t: impl Into<String>) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

/// Folds a client-request failure into the tool's output. Under 2026-07-28 an
/// `InputRequired` never reaches the client: the engine answers `InputRequiredResult`.
fn finish(outcome: Outcome) -> ToolOutput {
    outcome.unwrap_or_else(|e| ToolOutput::failure(e.into()))
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

fn string_arg(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    })
}

fn form_schema(field: &str, kind: &str) -> Value {
    json!({
        "type": "object",
        "properties": {field: {"type": kind}},
        "required": [field],
    })
}

/// An elicitation request without the optional `mode`, as the suite spells them.
fn elicit(message: &str, requested_schema: Value) -> InputRequest {
    InputRequest::Elicit(json!({"message": message, "requestedSchema": requested_schema}))
}

fn sample(prompt: &str, max_tokens: u32) -> InputRequest {
    InputRequest::Sample(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens,
    }))
}

/// A field of an accepted elicitation's content, as text.
fn elicited(answer: &Value, field: &str) -> String {
    match answer.get("content").and_then(|c| c.get(field)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "unknown".into(),
    }
}

/// The text of a sampling answer (`CreateMessageResult`).
fn sampled(answer: &Value) -> String {
    let content = answer.get("content");
    content
        .and_then(|c| c.get("text"))
        .or_else(|| {
            content
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find_map(|b| b.get("text")))
        })
        .and_then(Value::as_str)
        .unwrap_or("no response")
        .to_owned()
}

fn elicitation_summary(answer: &Value) -> String {
    let action = answer
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("action={action}, content={content}")
}

// ----- tools of 2025-11-25 (also served under 2026-07-28) -----

async fn tool_with_logging(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    cx.log(LoggingLevel::Info, "Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LoggingLevel::Info, "Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LoggingLevel::Info, "Tool execution completed");
    text("Tool with logging executed successfully")
}

async fn tool_with_progress(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.progress(
            step,
            Some(100.0),
            Some(&format!("Completed step {step} of 100")),
        );
    }
    text("Progress reporting completed")
}

fn error_handling(_: Map<String, Value>) -> ToolOutput {
    let message = "This tool intentionally returns an error for testing";
    ToolOutput {
        content: Some(vec![ContentBlock::text(message)]),
        ..ToolOutput::failure(McpErrorDetail::new("ToolError", message))
    }
}

async fn reconnection(_: Map<String, Value>, _cx: ToolContext) -> ToolOutput {
    tokio::time::sleep(Duration::from_millis(100)).await;
    text(
        "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
    )
}

async fn sampling(args: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    let prompt = args.get("prompt").and_then(Value::as_str).unwrap_or("");
    finish(
        async {
            let answer = cx.input("sampling", sample(prompt, 100)).await?;
            Ok(text(format!("LLM response: {}", sampled(&answer))))
        }
        .await,
    )
}

async fn elicitation(args: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    let message = args.get("message").and_then(Value::as_str).unwrap_or("");
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    });
    finish(
        async {
            let answer = cx.input("elicitation", elicit(message, schema)).await?;
            Ok(text(format!(
                "User response: {}",
                elicitation_summary(&answer)
            )))
        }
        .await,
    )
}

async fn elicitation_defaults(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
        "required": [],
    });
    finish(
        async {
            let request = elicit("Please review the form; every field has a default", schema);
            let answer = cx.input("elicitation", request).await?;
            Ok(text(format!(
                "Elicitation completed: {}",
                elicitation_summary(&answer)
            )))
        }
        .await,
    )
}

async fn elicitation_enums(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    let titled = |prefix: &str| {
        ["First", "Second", "Third"]
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"const": format!("value{}", i + 1), "title": format!("{t} {prefix}")}))
            .collect::<Vec<_>>()
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Pick one",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Pick one (titled)",
                "oneOf": titled("Option"),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Pick one (legacy enumNames)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Pick several",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Pick several (titled)",
                "minItems": 1,
                "maxItems": 3,
                "items": {"anyOf": titled("Choice")},
            },
        },
        "required": [],
    });
    finish(
        async {
            let request = elicit("Please choose from the enum fields", schema);
            let answer = cx.input("elicitation", request).await?;
            Ok(text(format!(
                "Elicitation completed: {}",
                elicitation_summary(&answer)
            )))
        }
        .await,
    )
}

fn json_schema_2020_12(args: Map<String, Value>) -> ToolOutput {
    text(format!(
        "JSON Schema 2020-12 tool called with: {}",
        Value::Object(args)
    ))
}

fn json_schema_2020_12_input() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"},
                },
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {
            "properties": {"contactMethod": {"const": "phone"}},
            "required": ["contactMethod"],
        },
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

// ----- tools of 2026-07-28 -----

async fn missing_capability(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            if cx.client_capabilities().get("sampling").is_none() {
                // Refused without asking: the server answers MissingRequiredClientCapability.
                cx.input("sampling", sample("ping", 1)).await?;
            }
            Ok(text("Success"))
        }
        .await,
    )
}

async fn streaming_elicitation(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    cx.progress(50.0, Some(100.0), Some("Halfway"));
    cx.log(LoggingLevel::Info, "Streaming in progress");
    text("Streaming complete")
}

async fn logging_tool(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    cx.log(LoggingLevel::Info, "Diagnostic trace logging activated");
    text("Logging evaluated")
}

async fn ir_elicitation(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let request = elicit("What is your name?", form_schema("name", "string"));
            let answer = cx.input("user_name", request).await?;
            Ok(text(format!("Hello, {}!", elicited(&answer, "name"))))
        }
        .await,
    )
}

async fn ir_sampling(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let request = sample("What is the capital of France?", 100);
            let answer = cx.input("capital_question", request).await?;
            Ok(text(format!("Sampling result: {}", sampled(&answer))))
        }
        .await,
    )
}

fn root_count(answer: &Value) -> usize {
    answer
        .get("roots")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

async fn ir_list_roots(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let answer = cx.input("client_roots", InputRequest::ListRoots).await?;
            let uris: Vec<&str> = answer
                .get("roots")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|r| r.get("uri").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            Ok(text(format!(
                "Found {} root(s): {}",
                root_count(&answer),
                uris.join(", ")
            )))
        }
        .await,
    )
}

async fn ir_request_state(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            if cx.request_state().is_none() {
                cx.set_request_state(json!({"kind": "request-state"}));
            }
            let request = elicit("Please confirm", form_schema("ok", "boolean"));
            let answer = cx.input("confirm", request).await?;
            let state_ok = cx
                .request_state()
                .is_some_and(|s| s["kind"] == "request-state");
            Ok(if state_ok {
                text(format!(
                    "state-ok: requestState validated (confirmed: {})",
                    elicited(&answer, "ok")
                ))
            } else {
                ToolOutput::failure(McpErrorDetail::new(
                    "StateError",
                    "requestState was missing on the final round",
                ))
            })
        }
        .await,
    )
}

async fn ir_multiple_inputs(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let answers = cx
                .input_all(vec![
                    (
                        "user_name".into(),
                        elicit("What is your name?", form_schema("name", "string")),
                    ),
                    ("greeting".into(), sample("Generate a greeting", 50)),
                    ("client_roots".into(), InputRequest::ListRoots),
                ])
                .await?;
            let [name, greeting, roots] = answers.as_slice() else {
                return Ok(ToolOutput::failure(McpErrorDetail::new(
                    "InternalError",
                    "expected three answers",
                )));
            };
            Ok(text(format!(
                "Name: {}; Greeting: {}; Roots: {}",
                elicited(name, "name"),
                sampled(greeting),
                root_count(roots)
            )))
        }
        .await,
    )
}

async fn ir_multi_round(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let step1 = elicit("Step 1: What is your name?", form_schema("name", "string"));
            let name = elicited(&cx.input("step1", step1).await?, "name");
            let step2 = elicit(
                "Step 2: What is your favorite color?",
                form_schema("color", "string"),
            );
            let color = elicited(&cx.input("step2", step2).await?, "color");
            Ok(text(format!(
                "Multi-round complete for {name} who likes {color}"
            )))
        }
        .await,
    )
}

async fn ir_tampered_state(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    // The engine seals `requestState` with an HMAC and rejects a tampered one (-32602)
    // before the tool runs again.
    finish(
        async {
            let request = elicit("Please confirm", form_schema("ok", "boolean"));
            cx.input("confirm", request).await?;
            Ok(text("integrity-ok: state verified"))
        }
        .await,
    )
}

async fn ir_capabilities(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let caps = cx.client_capabilities();
            let mut wanted = Vec::new();
            if caps.get("elicitation").is_some() {
                wanted.push((
                    "elicit_input".to_owned(),
                    elicit("Elicitation input", form_schema("value", "string")),
                ));
            }
            if caps.get("sampling").is_some() {
                wanted.push(("sample_input".to_owned(), sample("Sample request", 50)));
            }
            if wanted.is_empty() {
                return Ok(text("No supported capabilities declared"));
            }
            let keys: Vec<String> = wanted.iter().map(|(k, _)| k.clone()).collect();
            cx.input_all(wanted).await?;
            Ok(text(format!(
                "capabilities-ok: received {}",
                keys.join(",")
            )))
        }
        .await,
    )
}

fn custom_header(args: Map<String, Value>) -> ToolOutput {
    let region = args.get("region").and_then(Value::as_str).unwrap_or("");
    let query = args.get("query").and_then(Value::as_str).unwrap_or("");
    text(format!("Query {query:?} routed to region {region:?}"))
}

fn dynamic_tool(_: Map<String, Value>) -> ToolOutput {
    text("A dynamically registered tool")
}

/// Adds the dynamic tool if absent, removes it otherwise: either way the list changes.
fn toggle_tool(tools: &McpToolRegistry) -> Result<(), String> {
    if tools.unregister(DYNAMIC_TOOL) {
        return Ok(());
    }
    let definition = ToolDefinition::new(DYNAMIC_TOOL, no_args())
        .with_description("Appears and disappears with test_trigger_tool_change");
    tools
        .register_tool(ToolRegistration::new(definition, dynamic_tool))
        .map_err(|e| e.to_string())
}

fn toggle_prompt(prompts: &McpPromptRegistry) {
    if prompts.remove(DYNAMIC_PROMPT) {
        return;
    }
    prompts.add(
        PromptDefinition::new(
            DYNAMIC_PROMPT,
            "Appears and disappears with test_trigger_prompt_change",
        ),
        |_: PromptRequest| async {
            Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text("A dynamic prompt"))],
            })
        },
    );
}

// ----- tasks (the io.modelcontextprotocol/tasks extension; experimental on 2025-11-25) -----

fn greet(args: Map<String, Value>) -> ToolOutput {
    let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
    text(format!("Hello, {name}!"))
}

/// Sleeps `seconds` (at most ten minutes), then reports. A task for clients that take one.
async fn slow_compute(args: Map<String, Value>, _cx: ToolContext) -> ToolOutput {
    let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
    let label = args.get("label").and_then(Value::as_str).unwrap_or("job");
    tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 600.0))).await;
    text(format!("Computed {label} in {seconds} s"))
}

/// Fails with a tool error after about a second.
async fn failing_job(_: Map<String, Value>, _cx: ToolContext) -> ToolOutput {
    tokio::time::sleep(Duration::from_secs(1)).await;
    ToolOutput::failure(McpErrorDetail::new(
        "JobFailed",
        "The job failed, as it always does",
    ))
}

/// Panics shortly after starting: a protocol-level failure (the task ends `failed`).
async fn protocol_error_job(_: Map<String, Value>, _cx: ToolContext) -> ToolOutput {
    tokio::time::sleep(Duration::from_millis(200)).await;
    panic!("protocol_error_job always panics");
}

/// Runs as a task at once and asks the user to confirm: the task waits in `input_required`.
async fn confirm_delete(args: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    let file = args
        .get("filename")
        .and_then(Value::as_str)
        .unwrap_or("file")
        .to_owned();
    cx.start_task();
    finish(
        async {
            let request = elicit(
                &format!("Delete {file}?"),
                form_schema("confirm", "boolean"),
            );
            let answer = cx.input("confirm", request).await?;
            let confirmed = answer.get("action").and_then(Value::as_str) == Some("accept")
                && answer.get("content").and_then(|c| c.get("confirm")) == Some(&json!(true));
            Ok(text(if confirmed {
                format!("Deleted {file}")
            } else {
                format!("Kept {file}")
            }))
        }
        .await,
    )
}

/// Runs as a task at once and asks two questions together: both are pending at once.
async fn multi_input(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    cx.start_task();
    finish(
        async {
            let answers = cx
                .input_all(vec![
                    (
                        "first".into(),
                        elicit("First: your name?", form_schema("name", "string")),
                    ),
                    (
                        "second".into(),
                        elicit("Second: confirm?", form_schema("confirm", "boolean")),
                    ),
                ])
                .await?;
            let names: Vec<String> = answers.iter().map(|a| elicited(a, "name")).collect();
            Ok(text(format!("Both answered: {}", names.join(", "))))
        }
        .await,
    )
}

/// Asks for the user's name by multi round-trip first, then runs on as a task.
async fn tool_with_task(_: Map<String, Value>, cx: ToolContext) -> ToolOutput {
    finish(
        async {
            let request = elicit("What is your name?", form_schema("name", "string"));
            let name = elicited(&cx.input("user_name", request).await?, "name");
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok(text(format!("Hello, {name}! (from a task)")))
        }
        .await,
    )
}

/// A task fixture: name, description, input schema, task support and handler.
type TaskFixture = (
    &'static str,
    &'static str,
    Value,
    TaskSupport,
    Arc<dyn ToolHandler>,
);

fn register_task_tools(tools: &McpToolRegistry) -> Result<(), String> {
    let fixtures: [TaskFixture; 7] = [
        (
            "greet",
            "Greets synchronously",
            string_arg("name", "Who to greet"),
            TaskSupport::Forbidden,
            greet.into_handler(),
        ),
        (
            "slow_compute",
            "Sleeps for `seconds`, then reports; runs as a task when it can",
            json!({
                "type": "object",
                "properties": {
                    "seconds": {"type": "number", "minimum": 0},
                    "label": {"type": "string"},
                },
            }),
            TaskSupport::Optional,
            slow_compute.into_handler(),
        ),
        (
            "failing_job",
            "Fails with a tool error after a second; runs only as a task",
            no_args(),
            TaskSupport::Required,
            failing_job.into_handler(),
        ),
        (
            "protocol_error_job",
            "Fails with a protocol error (a panic)",
            no_args(),
            TaskSupport::Optional,
            protocol_error_job.into_handler(),
        ),
        (
            "confirm_delete",
            "Asks the user to confirm a deletion, as a task",
            string_arg("filename", "The file to delete"),
            TaskSupport::Optional,
            confirm_delete.into_handler(),
        ),
        (
            "multi_input",
            "Asks two questions at once, as a task",
            no_args(),
            TaskSupport::Optional,
            multi_input.into_handler(),
        ),
        (
            "test_tool_with_task",
            "Asks for a name by multi round-trip, then runs on as a task",
            no_args(),
            TaskSupport::Required,
            tool_with_task.into_handler(),
        ),
    ];
    for (name, description, schema, task_support, handler) in fixtures {
        let definition = ToolDefinition::new(name, schema).with_description(description);
        let settings = ToolSettings {
            task_support,
            ..ToolSettings::default()
        };
        tools
            .register_tool(ToolRegistration::new(definition, handler).with_settings(settings))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

// ----- assembly -----

struct Fixtures {
    tools: Arc<McpToolRegistry>,
    resources: Arc<McpResourceRegistry>,
    prompts: Arc<McpPromptRegistry>,
}

fn register_tools(
    tools: &Arc<McpToolRegistry>,
    prompts: &Arc<McpPromptRegistry>,
) -> Result<(), String> {
    macro_rules! tool {
        ($name:expr, $description:expr, $schema:expr, $handler:expr) => {
            tools
                .register_tool(ToolRegistration::new(
                    ToolDefinition::new($name, $schema).with_description($description),
                    $handler,
                ))
                .map_err(|e| e.to_string())?
        };
    }
    let content = |blocks: fn() -> Vec<ContentBlock>| move |_: Map<String, Value>| blocks();

    tool!(
        "test_simple_text",
        "Returns a simple text block",
        no_args(),
        content(|| vec![ContentBlock::text(
            "This is a simple text response for testing."
        )])
    );
    tool!(
        "test_image_content",
        "Returns an image block",
        no_args(),
        content(|| vec![ContentBlock::image(PNG_BASE64, "image/png")])
    );
    tool!(
        "test_audio_content",
        "Returns an audio block",
        no_args(),
        content(|| vec![ContentBlock::audio(WAV_BASE64, "audio/wav")])
    );
    tool!(
        "test_embedded_resource",
        "Returns an embedded resource",
        no_args(),
        content(|| vec![ContentBlock::embedded(ResourceContents::Text {
            uri: "test://embedded-resource".into(),
            mime_type: Some("text/plain".into()),
            text: "This is an embedded resource content.".into(),
            meta: None,
        })])
    );
    tool!(
        "test_multiple_content_types",
        "Returns text, an image and an embedded resource",
        no_args(),
        content(|| vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG_BASE64, "image/png"),
            ContentBlock::embedded(ResourceContents::Text {
                uri: "test://mixed-content-resource".into(),
                mime_type: Some("application/json".into()),
                text: json!({"test": "data", "value": 123}).to_string(),
                meta: None,
            }),
        ])
    );
    tool!(
        "test_tool_with_logging",
        "Sends three log messages while it runs",
        no_args(),
        tool_with_logging
    );
    tool!(
        "test_tool_with_progress",
        "Reports progress 0, 50 and 100 of 100",
        no_args(),
        tool_with_progress
    );
    tool!(
        "test_error_handling",
        "Always fails with a tool error",
        no_args(),
        error_handling
    );
    tool!(
        "test_reconnection",
        "Runs briefly so a client can exercise SSE resumption",
        no_args(),
        reconnection
    );
    tool!(
        "test_sampling",
        "Asks the client's model to complete a prompt",
        string_arg("prompt", "The prompt to send to the LLM"),
        sampling
    );
    tool!(
        "test_elicitation",
        "Asks the user for input",
        string_arg("message", "The message to show the user"),
        elicitation
    );
    tool!(
        "test_elicitation_sep1034_defaults",
        "Elicitation whose fields all have defaults (SEP-1034)",
        no_args(),
        elicitation_defaults
    );
    tool!(
        "test_elicitation_sep1330_enums",
        "Elicitation with every enum schema variant (SEP-1330)",
        no_args(),
        elicitation_enums
    );
    tool!(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        json_schema_2020_12_input(),
        json_schema_2020_12
    );
    tool!(
        "test_missing_capability",
        "Needs the sampling capability; fails with -32021 without it",
        no_args(),
        missing_capability
    );
    tool!(
        "test_streaming_elicitation",
        "Streams notifications before its result, never a request",
        no_args(),
        streaming_elicitation
    );
    tool!(
        "test_logging_tool",
        "Logs only when the request asks for a log level",
        no_args(),
        logging_tool
    );
    tool!(
        "test_input_required_result_elicitation",
        "Asks for the user's name (elicitation)",
        no_args(),
        ir_elicitation
    );
    tool!(
        "test_input_required_result_sampling",
        "Asks the client's model a question (sampling)",
        no_args(),
        ir_sampling
    );
    tool!(
        "test_input_required_result_list_roots",
        "Asks for the client's roots",
        no_args(),
        ir_list_roots
    );
    tool!(
        "test_input_required_result_request_state",
        "Round-trips requestState",
        no_args(),
        ir_request_state
    );
    tool!(
        "test_input_required_result_multiple_inputs",
        "Asks for three inputs at once",
        no_args(),
        ir_multiple_inputs
    );
    tool!(
        "test_input_required_result_multi_round",
        "Asks for input over two rounds",
        no_args(),
        ir_multi_round
    );
    tool!(
        "test_input_required_result_tampered_state",
        "Rejects a tampered requestState",
        no_args(),
        ir_tampered_state
    );
    tool!(
        "test_input_required_result_capabilities",
        "Asks only for inputs the client declared",
        no_args(),
        ir_capabilities
    );
    tool!(
        "test_custom_header",
        "Routes by a parameter mirrored in the Mcp-Param-Region header",
        json!({
            "type": "object",
            "properties": {
                "region": {
                    "type": "string",
                    "description": "Where to run the query",
                    "x-mcp-header": "Region",
                },
                "query": {"type": "string", "description": "The query"},
            },
            "required": ["region"],
        }),
        custom_header
    );
    let registry = tools.clone();
    tool!(
        "test_trigger_tool_change",
        "Adds or removes a tool, notifying listeners",
        no_args(),
        move |_: Map<String, Value>| match toggle_tool(&registry) {
            Ok(()) => text("Mutation triggered"),
            Err(e) => ToolOutput::failure(McpErrorDetail::new("InternalError", e)),
        }
    );
    let registry = prompts.clone();
    tool!(
        "test_trigger_prompt_change",
        "Adds or removes a prompt, notifying listeners",
        no_args(),
        move |_: Map<String, Value>| {
            toggle_prompt(&registry);
            text("Mutation triggered")
        }
    );
    register_task_tools(tools)
}

fn register_resources(resources: &McpResourceRegistry) -> Result<(), String> {
    let e = |e: codomyrmex_mcp::ResourceRegistrationError| e.to_string();
    resources
        .add_text(
            ResourceDefinition::new("test://static-text", "static-text")
                .with_description("A static text resource")
                .with_mime_type("text/plain"),
            "This is the content of the static text resource.",
        )
        .map_err(e)?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(PNG_BASE64)
        .map_err(|e| e.to_string())?;
    resources
        .add_blob(
            ResourceDefinition::new("test://static-binary", "static-binary")
                .with_description("A static binary resource (a PNG image)")
                .with_mime_type("image/png"),
            &png,
        )
        .map_err(e)?;
    resources
        .add_text(
            ResourceDefinition::new("test://watched-resource", "watched-resource")
                .with_description("A resource clients can subscribe to")
                .with_mime_type("text/plain"),
            "Watched resource content",
        )
        .map_err(e)?;
    let ids: Completer = Arc::new(|partial: &str, _: &BTreeMap<String, String>| {
        ["1", "2", "3", "42", "123"]
            .iter()
            .filter(|v| v.starts_with(partial))
            .map(|v| (*v).to_owned())
            .collect()
    });
    resources
        .add_template(
            ResourceTemplateDefinition::new("test://template/{id}/data", "template")
                .with_description("Data for an id, substituted into the URI")
                .with_mime_type("application/json"),
            |req: ResourceRequest| async move {
                let id = req.variables.get("id").cloned().unwrap_or_default();
                let body =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                Ok(vec![ResourceContents::Text {
                    uri: req.uri,
                    mime_type: Some("application/json".into()),
                    text: body.to_string(),
                    meta: None,
                }])
            },
            BTreeMap::from([("id".to_owned(), ids)]),
        )
        .map_err(e)?;
    Ok(())
}

fn prompt_text(t: impl Into<String>) -> Result<PromptResult, McpErrorDetail> {
    Ok(PromptResult {
        description: None,
        messages: vec![PromptMessage::user(ContentBlock::text(t))],
    })
}

fn register_prompts(prompts: &McpPromptRegistry) -> Result<(), String> {
    let mut ok = true;
    ok &= prompts.add(
        PromptDefinition::new("test_simple_prompt", "A prompt without arguments"),
        |_: PromptRequest| async { prompt_text("This is a simple prompt for testing.") },
    );
    let suggestions: Completer = Arc::new(|partial: &str, _: &BTreeMap<String, String>| {
        ["paris", "park", "party", "hello", "world"]
            .iter()
            .filter(|v| v.starts_with(partial))
            .map(|v| (*v).to_owned())
            .collect()
    });
    ok &= prompts.add_with_completion(
        PromptDefinition::new("test_prompt_with_arguments", "A prompt with two arguments")
            .with_argument(PromptArgument::required("arg1", "First test argument"))
            .with_argument(PromptArgument::required("arg2", "Second test argument")),
        |req: PromptRequest| async move {
            let arg = |k: &str| req.arguments.get(k).cloned().unwrap_or_default();
            prompt_text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            ))
        },
        BTreeMap::from([
            ("arg1".to_owned(), suggestions.clone()),
            ("arg2".to_owned(), suggestions),
        ]),
    );
    ok &= prompts.add(
        PromptDefinition::new(
            "test_prompt_with_embedded_resource",
            "A prompt that embeds a resource",
        )
        .with_argument(PromptArgument::required(
            "resourceUri",
            "URI of the resource to embed",
        )),
        |req: PromptRequest| async move {
            let uri = req
                .arguments
                .get("resourceUri")
                .cloned()
                .unwrap_or_default();
            Ok(PromptResult {
                description: None,
                messages: vec![
                    PromptMessage::user(ContentBlock::embedded(ResourceContents::Text {
                        uri,
                        mime_type: Some("text/plain".into()),
                        text: "Embedded resource content for testing.".into(),
                        meta: None,
                    })),
                    PromptMessage::user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ],
            })
        },
    );
    ok &= prompts.add(
        PromptDefinition::new("test_prompt_with_image", "A prompt with an image"),
        |_: PromptRequest| async {
            Ok(PromptResult {
                description: None,
                messages: vec![
                    PromptMessage::user(ContentBlock::image(PNG_BASE64, "image/png")),
                    PromptMessage::user(ContentBlock::text("Please analyze the image above.")),
                ],
            })
        },
    );
    ok &= prompts.add(
        PromptDefinition::new(
            "test_input_required_result_prompt",
            "A prompt that asks the user for context first",
        ),
        |req: PromptRequest| async move {
            let request = elicit(
                "What context should the prompt use?",
                form_schema("context", "string"),
            );
            let answer = req.context.input("user_context", request).await?;
            prompt_text(format!(
                "Prompt with context: {}",
                elicited(&answer, "context")
            ))
        },
    );
    if ok {
        Ok(())
    } else {
        Err("a prompt name was registered twice".into())
    }
}

fn fixtures() -> Result<Fixtures, String> {
    let f = Fixtures {
        tools: Arc::new(McpToolRegistry::new()),
        resources: Arc::new(McpResourceRegistry::new()),
        prompts: Arc::new(McpPromptRegistry::new()),
    };
    register_tools(&f.tools, &f.prompts)?;
    register_resources(&f.resources)?;
    register_prompts(&f.prompts)?;
    Ok(f)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let http: Option<std::net::SocketAddr> = match args.as_slice() {
        [] => None,
        [flag] if flag == "--stdio" => None,
        [flag, addr] if flag == "--http" => match addr.parse() {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("everything: invalid address {addr:?}: {e}");
                return std::process::ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: everything [--stdio | --http ADDR]");
            return std::process::ExitCode::from(2);
        }
    };
    let f = match fixtures() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("everything: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // A conformance subject must not be throttled.
    let config = McpServerConfig::new("codomyrmex-everything", codomyrmex_mcp::VERSION)
        .with_rate_limit(None);
    let server = McpServer::new(config, f.tools)
        .with_resources(f.resources)
        .with_prompts(f.prompts);
    let outcome = match http {
        None => server.serve_stdio().await.map_err(|e| e.to_string()),
        Some(bind) => {
            let config = codomyrmex_mcp::transport::http::HttpConfig {
                bind,
                rate_limit: None,
                health: codomyrmex_mcp::transport::http::HealthAccess::Public,
                ..Default::default()
            };
            server.serve_http(config).await.map_err(|e| e.to_string())
        }
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("everything: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
