//! `#[mcp_prompt]` and `#[mcp_resource]`: derived definitions, discovery, explicit
//! registration, and `prompts/get` / `resources/read` through a server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    ContentBlock, Era, FnRegistrationError, McpErrorDetail, McpPromptRegistry, McpResourceRegistry,
    McpServer, McpServerConfig, McpToolRegistry, PromptMessage, PromptResult, ToolContext,
    mcp_prompt, mcp_resource,
};
use serde_json::{Value, json};

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

#[mcp_prompt(description = "Greets, or refuses to.", title = "Greeting")]
async fn greet(cx: &ToolContext, name: String) -> Result<PromptResult, String> {
    let _ = cx.is_cancelled();
    if name.is_empty() {
        return Err("an empty name".into());
    }
    Ok(PromptResult {
        description: Some("A greeting".into()),
        messages: vec![PromptMessage::assistant(ContentBlock::text(format!(
            "Hello, {name}!"
        )))],
    })
}

/// The application's settings.
#[mcp_resource(
    uri = "config://app",
    name = "settings",
    mime_type = "application/json"
)]
fn settings() -> String {
    r#"{"debug":false}"#.into()
}

#[mcp_resource(uri = "data://bytes", description = "Some bytes")]
async fn bytes(_cx: ToolContext) -> Vec<u8> {
    vec![1, 2, 3]
}

/// A user's profile.
#[mcp_resource(
    uri_template = "users://{id}/profile/{section}",
    mime_type = "text/plain"
)]
async fn profile(section: String, id: String) -> Result<String, String> {
    if id == "0" {
        return Err("no user 0".into());
    }
    Ok(format!("{section} of user {id}"))
}

#[mcp_resource(uri_template = "raw://{key}", name = "raw")]
fn raw(key: String) -> Vec<ResourceContents> {
    vec![ResourceContents::Text {
        uri: format!("raw://{key}"),
        mime_type: None,
        text: key,
        meta: None,
    }]
}

fn not_annotated() {}

#[test]
fn functions_stay_callable() {
    assert_eq!(settings(), r#"{"debug":false}"#);
    assert_eq!(review("x".into(), None).len(), 1);
    assert_eq!(raw("k".into()).len(), 1);
}

#[test]
fn prompt_definitions_are_derived() {
    let registry = McpPromptRegistry::discovered().unwrap();
    assert_eq!(registry.names(), ["code.review", "greet"]);
    let listed = serde_json::to_value(registry_definitions(&registry)).unwrap();
    assert_eq!(
        listed,
        json!([
            {
                "name": "code.review",
                "description": "Asks for a code review.",
                "arguments": [
                    {"name": "code", "description": "The code to review", "required": true},
                    {"name": "focus", "description": "What to look at.", "required": false},
                ],
            },
            {
                "name": "greet",
                "title": "Greeting",
                "description": "Greets, or refuses to.",
                "arguments": [{"name": "name", "required": true}],
            },
        ])
    );
}

/// The definitions as `prompts/list` would show them, via a server.
fn registry_definitions(registry: &McpPromptRegistry) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let prompts = McpPromptRegistry::new();
    for name in registry.names() {
        match name.as_str() {
            "code.review" => prompts.register_prompt_fn(review).unwrap(),
            "greet" => prompts.register_prompt_fn(greet).unwrap(),
            other => panic!("unexpected prompt {other}"),
        }
    }
    let server = server(prompts, McpResourceRegistry::new());
    runtime.block_on(async {
        let client = connect(&server).await;
        let listed = client.request("prompts/list", json!({})).await.unwrap();
        listed["prompts"].as_array().unwrap().clone()
    })
}

#[test]
fn resource_definitions_are_derived() {
    let registry = McpResourceRegistry::discovered().unwrap();
    let resources = serde_json::to_value(registry.resources()).unwrap();
    assert_eq!(
        resources,
        json!([
            {"uri": "config://app", "name": "settings", "description": "The application's settings.", "mimeType": "application/json"},
            {"uri": "data://bytes", "name": "bytes", "description": "Some bytes"},
        ])
    );
    let mut templates = serde_json::to_value(registry.templates()).unwrap();
    templates
        .as_array_mut()
        .unwrap()
        .sort_by_key(|t| t["name"].as_str().unwrap().to_owned());
    assert_eq!(
        templates,
        json!([
            {"uriTemplate": "users://{id}/profile/{section}", "name": "profile", "description": "A user's profile.", "mimeType": "text/plain"},
            {"uriTemplate": "raw://{key}", "name": "raw"},
        ])
    );
}

#[test]
fn explicit_registration_registers_one_function() {
    let prompts = McpPromptRegistry::new();
    prompts.register_prompt_fn(greet).unwrap();
    assert_eq!(prompts.names(), ["greet"]);
    assert_eq!(
        prompts.register_prompt_fn(greet),
        Err(FnRegistrationError::DuplicatePrompt("greet".into()))
    );
    assert!(matches!(
        prompts.register_prompt_fn(not_annotated),
        Err(FnRegistrationError::NotAnnotated {
            attribute: "mcp_prompt",
            ..
        })
    ));

    let resources = McpResourceRegistry::new();
    resources.register_resource_fn(settings).unwrap();
    resources.register_resource_fn(profile).unwrap();
    assert_eq!(resources.resources().len(), 1);
    assert_eq!(resources.templates().len(), 1);
    assert!(matches!(
        resources.register_resource_fn(settings),
        Err(FnRegistrationError::Resource(_))
    ));
    assert!(matches!(
        resources.register_resource_fn(not_annotated),
        Err(FnRegistrationError::NotAnnotated {
            attribute: "mcp_resource",
            ..
        })
    ));
}

fn server(prompts: McpPromptRegistry, resources: McpResourceRegistry) -> McpServer {
    McpServer::new(
        McpServerConfig::new("macro-prompts-resources", "1.0.0"),
        Arc::new(McpToolRegistry::new()),
    )
    .with_prompts(Arc::new(prompts))
    .with_resources(Arc::new(resources))
}

async fn connect(server: &McpServer) -> McpClient {
    let client = McpClient::in_memory(server, Era::Legacy);
    client.initialize().await.unwrap();
    client
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_get_renders_through_a_server() {
    let server = server(
        McpPromptRegistry::discovered().unwrap(),
        McpResourceRegistry::discovered().unwrap(),
    );
    let client = connect(&server).await;
    let review = client
        .request(
            "prompts/get",
            json!({"name": "code.review", "arguments": {"code": "fn f() {}", "focus": "style"}}),
        )
        .await
        .unwrap();
    assert_eq!(
        review["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Review fn f() {} for style"}}])
    );
    let greeting = client
        .request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .await
        .unwrap();
    assert_eq!(greeting["description"], "A greeting");
    assert_eq!(greeting["messages"][0]["role"], "assistant");
    assert_eq!(greeting["messages"][0]["content"]["text"], "Hello, Ada!");

    let refused = client
        .request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": ""}}),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    let missing = client
        .request(
            "prompts/get",
            json!({"name": "code.review", "arguments": {}}),
        )
        .await;
    assert!(missing.is_err(), "{missing:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn resources_read_through_a_server() {
    let server = server(
        McpPromptRegistry::new(),
        McpResourceRegistry::discovered().unwrap(),
    );
    let client = connect(&server).await;
    let read = |uri: &'static str| {
        let client = &client;
        async move {
            client
                .request("resources/read", json!({"uri": uri}))
                .await
                .map(|v| v["contents"].clone())
        }
    };
    assert_eq!(
        read("config://app").await.unwrap(),
        json!([{"uri": "config://app", "mimeType": "application/json", "text": r#"{"debug":false}"#}])
    );
    assert_eq!(
        read("data://bytes").await.unwrap(),
        json!([{"uri": "data://bytes", "blob": "AQID"}])
    );
    assert_eq!(
        read("users://7/profile/bio").await.unwrap(),
        json!([{"uri": "users://7/profile/bio", "mimeType": "text/plain", "text": "bio of user 7"}])
    );
    assert_eq!(
        read("raw://k1").await.unwrap(),
        json!([{"uri": "raw://k1", "text": "k1"}])
    );
    let failed = read("users://0/profile/bio").await;
    assert!(failed.is_err(), "{failed:?}");
}

#[test]
fn errors_convert() {
    let detail: McpErrorDetail = "x".into();
    assert_eq!(detail.error_message, "x");
}
