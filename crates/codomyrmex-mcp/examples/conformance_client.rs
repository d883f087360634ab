//! The client the official conformance suite drives (`@modelcontextprotocol/conformance
//! client`): `cargo run --release --example conformance_client -- URL`, with the scenario in
//! `MCP_CONFORMANCE_SCENARIO` and the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (both
//! set by the suite). Every scenario is driven through [`McpClient`]; what a scenario checks
//! is the client's behaviour on the wire, so this program only does what a user of the
//! library would: negotiate, list, call, answer input.
//!
//! Authorization scenarios (`auth/*`) run through the client's OAuth support
//! (`client::oauth`), with what the suite passes in `MCP_CONFORMANCE_CONTEXT` (pre-registered
//! credentials, a `private_key_jwt` key, a workload JWT, an enterprise IdP's ID token);
//! DPoP is on whenever the authorization server offers it. What does not pass yet is listed
//! in `.ci/conformance-client-expected-failures.txt`.
//!
//! Skills scenarios (`sep-2640-client-*`) run as a host would through the client's skills
//! API: `no-prefetch` builds the registry from `skills/list` alone (no file is read); the
//! others load each listed skill (`SKILL.md`, verified) and then read its supporting files,
//! stopping at the first content that fails verification.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::oauth::{EnterpriseIdp, Es256Key, JwtBearer, OAuthConfig};
use codomyrmex_mcp::client::skills::SkillError;
use codomyrmex_mcp::client::{ClientError, ClientHandlers, ClientOptions, EraPreference};
use serde_json::{Map, Value, json};

/// An elicitation answer: accept, with every property's default filled in.
fn accept_with_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    if let Some(props) = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object)
    {
        for (name, prop) in props {
            if let Some(default) = prop.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    json!({"action": "accept", "content": content})
}

fn handlers() -> ClientHandlers {
    ClientHandlers::new()
        .elicitation(|params| async move { Ok(accept_with_defaults(&params)) })
        .sampling(|_| async {
            Ok(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "This is a sampled response from the conformance client"},
                "model": "conformance-client",
                "stopReason": "endTurn",
            }))
        })
        .roots(vec![json!({"uri": "file:///tmp", "name": "tmp"})])
}

/// Arguments for a tool, from its input schema: each required property gets a value of its
/// type (or its default).
fn arguments_for(tool: &Value) -> Value {
    let mut args = Map::new();
    let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let value = prop.get("default").cloned().unwrap_or_else(|| {
                match prop.get("type").and_then(Value::as_str) {
                    Some("integer") => json!(1),
                    Some("number") => json!(1.5),
                    Some("boolean") => json!(true),
                    Some("object") => json!({}),
                    Some("array") => json!([]),
                    _ => json!("us-west"),
                }
            });
            args.insert(name.clone(), value);
        }
    }
    Value::Object(args)
}

async fn call_every_tool(client: &McpClient) -> Result<(), ClientError> {
    for tool in client.list_tools().await? {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        client.call_tool(name, arguments_for(&tool)).await?;
    }
    Ok(())
}

async fn run(client: &McpClient, scenario: &str) -> Result<(), ClientError> {
    match scenario {
        "tools_call" => {
            client.list_tools().await?;
            client
                .call_tool("add_numbers", json!({"a": 5, "b": 3}))
                .await?;
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            client
                .call_tool(
                    "test_custom_headers",
                    json!({
                        "region": "us-west1", "priority": 42, "verbose": true, "debug": false,
                        "empty_val": "", "method_val": "tools/call", "float_val": 2.5,
                        "non_ascii_val": "café ☕", "whitespace_val": "  padded  ",
                        "leading_space_val": " leading", "trailing_space_val": "trailing ",
                        "internal_space_val": "us west 1", "control_char_val": "a\u{1}b",
                        "crlf_val": "line1\r\nline2", "tab_val": "\tindented", "query": "weather",
                    }),
                )
                .await?;
            client
                .call_tool(
                    "test_custom_headers_null",
                    json!({"region": "eu", "priority": 1, "verbose": null, "query": "q"}),
                )
                .await?;
        }
        "http-standard-headers" => {
            call_every_tool(client).await?;
            for r in client.list_resources().await? {
                if let Some(uri) = r.get("uri").and_then(Value::as_str) {
                    client.read_resource(uri).await?;
                }
            }
            for p in client.list_prompts().await? {
                if let Some(name) = p.get("name").and_then(Value::as_str) {
                    client.get_prompt(name, json!({})).await?;
                }
            }
        }
        "sep-2322-client-request-state" => {
            let tools = client.list_tools().await?;
            // Every tool, concurrently: input rounds of parallel calls must not mix.
            let calls = tools.iter().map(|tool| {
                let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
                client.call_tool(name, arguments_for(tool))
            });
            for r in futures_join(calls).await {
                r?;
            }
        }
        "json-schema-2020-12-preservation" => {
            // The focal tool's schema goes back verbatim: the client keeps schemas as JSON.
            let tools = client.list_tools().await?;
            let schema = tools
                .iter()
                .find(|t| t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))
                .and_then(|t| t.get("inputSchema").cloned())
                .unwrap_or_else(|| json!({}));
            client
                .call_tool("json_schema_echo", json!({"schema": schema}))
                .await?;
        }
        "json-schema-ref-no-deref" | "initialize" => {
            client.list_tools().await?;
        }
        _ => call_every_tool(client).await?,
    }
    Ok(())
}

// ANCHOR: skills
/// A Skills scenario: list the skills (the registry a host builds, reading no file); unless
/// the scenario is about prefetching, load each skill and read its files, each verified.
async fn run_skills(client: &McpClient, scenario: &str) -> Result<(), SkillError> {
    let listing = client.list_skills().await?;
    for bad in &listing.invalid {
        eprintln!(
            "conformance_client: skill left out: {}: {}",
            bad.uri, bad.reason
        );
    }
    if scenario.ends_with("no-prefetch") {
        return Ok(());
    }
    for skill in listing.skills {
        let files: Vec<String> = skill
            .resources
            .files()
            .unwrap_or_default()
            .iter()
            .filter(|f| f.uri != skill.uri)
            .map(|f| f.uri.clone())
            .collect();
        let mut session = client.open_skill(skill)?;
        session.load().await?;
        for uri in files {
            session.read(&uri).await?;
        }
    }
    Ok(())
}
// ANCHOR_END: skills

/// Runs futures concurrently (no extra dependency for a join).
async fn futures_join<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futures {
        set.push(Box::pin(f));
    }
    let mut out = Vec::with_capacity(set.len());
    // Polls every future to completion together.
    let mut pending: Vec<_> = set.into_iter().map(Some).collect();
    let mut results: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (slot, result) in pending.iter_mut().zip(results.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    out.extend(results.into_iter().flatten());
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let preference = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .ok()
        .as_deref()
    {
        Some(v) if v.starts_with("2026") => EraPreference::Modern,
        Some(_) => EraPreference::Legacy,
        None => EraPreference::Auto,
    };
    let options = ClientOptions {
        handlers: handlers(),
        info: json!({"name": "codomyrmex-mcp-conformance-client", "version": codomyrmex_mcp::VERSION}),
        request_timeout: Some(Duration::from_secs(25)),
        ..ClientOptions::default()
    };
    // Authorization: registration by metadata document URL or dynamically, or the
    // pre-registered credentials the suite passes in MCP_CONFORMANCE_CONTEXT.
    let mut oauth = OAuthConfig::new("http://localhost:3000/callback");
    oauth.client_name = "codomyrmex-mcp-conformance-client".into();
    oauth.client_metadata_url = Some("https://conformance-test.local/client-metadata.json".into());
    if let Some(context) = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str::<Value>(&c).ok())
    {
        oauth.client_id = context
            .get("client_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        oauth.client_secret = context
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned);
        oauth.client_credentials = scenario.contains("client-credentials");
        let text = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_owned);
        // private_key_jwt (auth/client-credentials-jwt).
        if let Some(pem) = text("private_key_pem") {
            let alg = text("signing_algorithm").unwrap_or_else(|| "ES256".into());
            match Es256Key::from_pkcs8_pem(&pem, &alg) {
                Ok(key) => oauth.client_key = Some(key),
                Err(e) => eprintln!("conformance_client: {e}"),
            }
        }
        // Workload identity federation (auth/wif-jwt-bearer).
        if let Some(jwt) = text("valid_jwt") {
            oauth.jwt_bearer = Some(JwtBearer::Assertion(Arc::new(move || Ok(jwt.clone()))));
        }
        // Enterprise-managed authorization (auth/enterprise-managed-authorization).
        if let (Some(token_endpoint), Some(client_id), Some(id_token)) = (
            text("idp_token_endpoint"),
            text("idp_client_id"),
            text("idp_id_token"),
        ) {
            oauth.jwt_bearer = Some(JwtBearer::Enterprise(EnterpriseIdp {
                token_endpoint,
                client_id,
                client_secret: None,
                id_token: Arc::new(move || Ok(id_token.clone())),
            }));
        }
    }
    let client = match McpClient::connect_http_oauth(HttpTarget::new(url), oauth, options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("conformance_client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = async {
        client
            .negotiate(preference, Duration::from_secs(25))
            .await
            .map_err(|e| e.to_string())?;
        if scenario.starts_with("sep-2640-client-") {
            return run_skills(&client, &scenario)
                .await
                .map_err(|e| e.to_string());
        }
        run(&client, &scenario).await.map_err(|e| e.to_string())
    }
    .await;
    client.close(Duration::from_secs(5)).await;
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}
