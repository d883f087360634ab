//! Serving the merged catalogue: each mounted tool and prompt becomes one of the gateway's
//! own, whose handler forwards the call to its upstream under the upstream's local name,
//! with the upstream's timeout and concurrency limit.
//!
//! The gateway is an ordinary `McpServer` (both eras, every limit of `serve`); what comes back
//! from an upstream is checked like any input: a result that is not a `CallToolResult` the
//! gateway can relay becomes a failure naming the upstream, and an upstream's transport error
//! is reported as the upstream being unavailable, without its details (which may name hosts,
//! paths or credentials). Resources and templates are read through under their local URIs
//! ([`super::uri`]: `NAMESPACE+scheme:...`, `ui://NAMESPACE/...`), the contents renamed back,
//! their text, bytes and `_meta` untouched; tools and resources keep their `_meta` (an app's
//! `_meta.ui`, its links renamed by the catalogue). Skills are served from [`Registries::skills`]
//! ([`super::skills`]), and a called bare upstream tool name resolves through
//! [`Registries::bare_names`] ([`super::apps`]). Calls, prompts and reads all go
//! through [`forward`] and so across the era bridge ([`super::bridge`]: the upstream's
//! requests for sampling, elicitation and roots, its progress and log messages). Restarts
//! and health checks are the supervisor's ([`super::supervise`]).

use std::sync::Arc;

use codomyrmex_mcp::client::ClientError;
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    ContentBlock, McpErrorDetail, McpPromptRegistry, McpResourceRegistry, McpToolRegistry,
    McpToolResult, ToolContext, ToolDefinition,
};
use codomyrmex_mcp::{PromptArgument, PromptDefinition, PromptMessage, PromptResult};
use codomyrmex_mcp::{
    ResourceDefinition, ResourceError, ResourceRequest, ResourceTemplateDefinition,
};
use codomyrmex_mcp::{ToolOutput, ToolRegistration, ToolSettings};
use serde_json::{Map, Value};

use super::apps::BareNames;
use super::bridge::{self, Bridged, Live};
use super::catalog::{Catalogue, Entry};
use super::uri::{local_uri, split_local_uri};

/// The longest upstream error message relayed to a client.
const MAX_RELAYED_MESSAGE: usize = 500;
/// How much longer than its upstream's timeout a mounted tool's own deadline is.
const TOOL_TIMEOUT_MARGIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The gateway's registries, which [`mount`] fills and [`unmount`] empties.
#[derive(Clone)]
pub struct Registries {
    /// Tools.
    pub tools: Arc<McpToolRegistry>,
    /// Prompts.
    pub prompts: Arc<McpPromptRegistry>,
    /// Resources and templates.
    pub resources: Arc<McpResourceRegistry>,
    /// Skills, as [`super::skills::mirror`] read them.
    pub skills: Arc<codomyrmex_mcp::skills::McpSkillRegistry>,
    /// The mounted tools by their upstream names: the tool registry's resolver.
    pub bare_names: Arc<BareNames>,
}

/// Removes what `catalogue` mounted: its upstream went down. Clients hear of the change as
/// of any registry change (`list_changed`, `subscriptions/listen`).
pub fn unmount(catalogue: &Catalogue, r: &Registries) {
    for (local, entry) in &catalogue.tools {
        if r.tools.unregister(local) {
            r.bare_names.remove(&entry.upstream_name, local);
        }
    }
    for local in catalogue.skills.keys() {
        r.skills.remove(local);
    }
    for local in catalogue.prompts.keys() {
        r.prompts.remove(local);
    }
    for local in catalogue.resources.keys().chain(catalogue.templates.keys()) {
        r.resources.remove(local);
    }
}

/// The gateway's tools, prompts, resources and templates, from the catalogue; returns what
/// could not be mounted.
pub fn mount(catalogue: &Catalogue, live: &[Option<Arc<Live>>], r: &Registries) -> Vec<String> {
    let (tools, prompts) = (&*r.tools, &*r.prompts);
    let mut refused = Vec::new();
    for (local, entry) in &catalogue.tools {
        let Some(Some(upstream)) = live.get(entry.upstream) else {
            continue;
        };
        match mount_tool(local, entry, upstream.clone(), tools) {
            Ok(()) => r.bare_names.insert(&entry.upstream_name, local),
            Err(e) => refused.push(format!("{}: tool {local:?}: {e}", upstream.name)),
        }
    }
    for (local, entry) in &catalogue.prompts {
        let Some(Some(upstream)) = live.get(entry.upstream) else {
            continue;
        };
        if !mount_prompt(local, entry, upstream.clone(), prompts) {
            refused.push(format!("{}: prompt {local:?} is taken", upstream.name));
        }
    }
    for (local, entry) in &catalogue.resources {
        let Some(Some(upstream)) = live.get(entry.upstream) else {
            continue;
        };
        let d = &entry.definition;
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut definition =
            ResourceDefinition::new(local, text("name").unwrap_or_else(|| local.clone()));
        if let Some(t) = text("description") {
            definition = definition.with_description(t);
        }
        if let Some(t) = text("mimeType") {
            definition = definition.with_mime_type(t);
        }
        definition.title = text("title");
        definition.size = d.get("size").and_then(Value::as_u64);
        if let Some(Value::Object(meta)) = d.get("_meta") {
            definition.meta = Some(meta.clone());
        }
        let reader = reader(upstream.clone());
        if let Err(e) = r.resources.add(definition, reader) {
            refused.push(format!("{}: resource {local:?}: {e}", upstream.name));
        }
    }
    for (local, entry) in &catalogue.templates {
        let Some(Some(upstream)) = live.get(entry.upstream) else {
            continue;
        };
        let d = &entry.definition;
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut definition =
            ResourceTemplateDefinition::new(local, text("name").unwrap_or_else(|| local.clone()));
        if let Some(t) = text("description") {
            definition = definition.with_description(t);
        }
        if let Some(t) = text("mimeType") {
            definition = definition.with_mime_type(t);
        }
        let reader = reader(upstream.clone());
        if let Err(e) =
            r.resources
                .add_template(definition, reader, std::collections::BTreeMap::new())
        {
            refused.push(format!("{}: template {local:?}: {e}", upstream.name));
        }
    }
    refused
}

/// What a forwarded read returns.
type ReadFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<ResourceContents>, ResourceError>> + Send>,
>;

/// A reader that reads the local URI's upstream URI from `upstream`, and names the contents
/// by local URIs again.
fn reader(upstream: Arc<Live>) -> impl Fn(ResourceRequest) -> ReadFuture + Send + Sync + 'static {
    move |request: ResourceRequest| {
        let upstream = upstream.clone();
        Box::pin(async move { forward_read(&upstream, &request.uri, request.context).await })
    }
}

async fn forward_read(
    upstream: &Live,
    local: &str,
    context: ToolContext,
) -> Result<Vec<ResourceContents>, ResourceError> {
    let failed = |m: String| ResourceError::Failed(m);
    let Some((namespace, uri)) = split_local_uri(local).filter(|(n, _)| *n == upstream.name) else {
        return Err(ResourceError::NotFound(local.to_owned()));
    };
    let namespace = namespace.to_owned();
    let namespace = namespace.as_str();
    let params = serde_json::json!({"uri": uri});
    let result = forward(upstream, "resources/read", params, context)
        .await
        .map_err(|d| failed(d.error_message))?;
    let contents: Vec<ResourceContents> = result
        .get("contents")
        .cloned()
        .and_then(|c| serde_json::from_value(c).ok())
        .ok_or_else(|| {
            failed(format!(
                "upstream {namespace} sent contents the gateway cannot relay"
            ))
        })?;
    contents
        .into_iter()
        .map(|c| {
            let rename = |u: String| {
                local_uri(namespace, &u).ok_or_else(|| {
                    failed(format!(
                        "upstream {namespace} named contents without a URI scheme"
                    ))
                })
            };
            Ok(match c {
                ResourceContents::Text {
                    uri,
                    mime_type,
                    text,
                    meta,
                } => ResourceContents::Text {
                    uri: rename(uri)?,
                    mime_type,
                    text,
                    meta,
                },
                ResourceContents::Blob {
                    uri,
                    mime_type,
                    blob,
                    meta,
                } => ResourceContents::Blob {
                    uri: rename(uri)?,
                    mime_type,
                    blob,
                    meta,
                },
            })
        })
        .collect()
}

fn mount_tool(
    local: &str,
    entry: &Entry,
    upstream: Arc<Live>,
    tools: &McpToolRegistry,
) -> Result<(), String> {
    let definition = tool_definition(local, &entry.definition)?;
    let upstream_of = upstream.clone();
    let name = entry.upstream_name.clone();
    let handler = move |arguments: Map<String, Value>, context: ToolContext| {
        let upstream = upstream.clone();
        let name = name.clone();
        async move { forward_call(&upstream, &name, arguments, context).await }
    };
    tools
        .register_tool(
            ToolRegistration::new(definition, handler).with_settings(tool_settings(&upstream_of)),
        )
        .map_err(|e| e.to_string())
}

/// A mounted tool's settings: the upstream's own timeout bounds the call; the gateway's only
/// bounds a call whose upstream ignores it (per tool: a reload may add an upstream with a
/// longer one).
pub(super) fn tool_settings(upstream: &Live) -> ToolSettings {
    ToolSettings {
        timeout: Some(upstream.timeout() + TOOL_TIMEOUT_MARGIN),
        ..ToolSettings::default()
    }
}

/// A listed tool's definition (`d`) under its local name: its input schema, title,
/// description and annotations (an MCP upstream's, or an OpenAPI operation's).
pub(super) fn tool_definition(local: &str, d: &Value) -> Result<ToolDefinition, String> {
    let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_owned);
    let input_schema = match d.get("inputSchema") {
        Some(s @ Value::Object(_)) => s.clone(),
        _ => return Err("no inputSchema object".into()),
    };
    let mut definition = ToolDefinition::new(local, input_schema);
    if let Some(t) = text("title") {
        definition = definition.with_title(t);
    }
    if let Some(t) = text("description") {
        definition = definition.with_description(t);
    }
    if let Some(Ok(a)) = d
        .get("annotations")
        .map(|a| serde_json::from_value(a.clone()))
    {
        definition = definition.with_annotations(a);
    }
    // An app's `_meta.ui` (its links renamed by the catalogue), and whatever else it carries.
    if let Some(Value::Object(meta)) = d.get("_meta") {
        for (key, value) in meta {
            definition = definition.with_meta(key.clone(), value.clone());
        }
    }
    Ok(definition)
}

/// Calls `name` on `upstream` within its limits, carrying its requests for input across the
/// era bridge, and turns the answer into the gateway's.
async fn forward_call(
    upstream: &Live,
    name: &str,
    arguments: Map<String, Value>,
    context: ToolContext,
) -> ToolOutput {
    let params = serde_json::json!({"name": name, "arguments": arguments});
    match forward(upstream, "tools/call", params, context).await {
        Ok(result) => relay_result(&upstream.name, result),
        Err(detail) => ToolOutput::failure(detail),
    }
}

/// Sends `method` to `upstream` within its timeout, carrying its requests for input across
/// the era bridge (the one way calls, prompts and reads go); the upstream's result, or a
/// failure naming the upstream and none of its transport's details.
async fn forward(
    upstream: &Live,
    method: &'static str,
    params: Value,
    context: ToolContext,
) -> Result<Value, McpErrorDetail> {
    let timer = upstream.stats.call(method);
    let answer = forward_timed(upstream, method, params, context).await;
    let error = match &answer {
        Err(detail) => Some(super::observe::error_kind(&detail.error_type)),
        Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => Some("tool_error"),
        Ok(_) => None,
    };
    timer.done(error);
    answer
}

/// [`forward`]'s work, which it counts.
async fn forward_timed(
    upstream: &Live,
    method: &'static str,
    mut params: Value,
    context: ToolContext,
) -> Result<Value, McpErrorDetail> {
    // The gateway's span is the parent of the upstream's ([`super::trace`]).
    if let (Some(tp), Some(p)) = (
        super::trace::upstream_traceparent(context.meta()),
        params.as_object_mut(),
    ) && let Some(meta) = p
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    {
        meta.insert("traceparent".into(), Value::String(tp));
    }
    let Some(client) = upstream.client() else {
        return Err(unavailable(&upstream.name));
    };
    let timed_out = || {
        McpErrorDetail::new(
            "UPSTREAM_TIMEOUT",
            format!(
                "upstream {} did not answer within {} s",
                upstream.name,
                upstream.timeout().as_secs()
            ),
        )
    };
    // Lent pinned: see `UpstreamPolicy::within`.
    let call = std::pin::pin!(bridge::call(upstream, client, method, params, context));
    match upstream.policy.within(&TOKIO, call).await {
        Err(_) | Ok(Bridged::Final(Err(ClientError::Timeout(_)))) => Err(timed_out()),
        // The engine answers input-required; this is not sent.
        Ok(Bridged::AskedClient) => Err(McpErrorDetail::new(
            "InputRequired",
            "input from the client is required",
        )),
        Ok(Bridged::Failed(detail)) => Err(detail),
        Ok(Bridged::Final(Err(ClientError::Server(e)))) => Err(McpErrorDetail::new(
            "UPSTREAM_ERROR",
            format!(
                "upstream {} refused the request: {}",
                upstream.name,
                relayed(&e.message)
            ),
        )),
        Ok(Bridged::Final(Err(_))) => Err(unavailable(&upstream.name)),
        Ok(Bridged::Final(Ok(result))) => Ok(result),
    }
}

fn unavailable(upstream: &str) -> McpErrorDetail {
    McpErrorDetail::new(
        "UPSTREAM_UNAVAILABLE",
        format!("upstream {upstream} is not reachable"),
    )
}

/// At most [`MAX_RELAYED_MESSAGE`] characters of an upstream's message.
fn relayed(message: &str) -> String {
    let mut out: String = message.chars().take(MAX_RELAYED_MESSAGE).collect();
    if out.len() < message.len() {
        out.push('…');
    }
    out
}

/// An upstream's `CallToolResult` as the gateway's output: its content blocks, its
/// `structuredContent`, and `isError` as a failure.
fn relay_result(upstream: &str, result: Value) -> ToolOutput {
    let malformed = |why: &str| {
        ToolOutput::failure(McpErrorDetail::new(
            "UPSTREAM_MALFORMED",
            format!("upstream {upstream} sent a result the gateway cannot relay: {why}"),
        ))
    };
    let Value::Object(mut result) = result else {
        return malformed("not an object");
    };
    let content: Vec<ContentBlock> = match result.remove("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(c) => match serde_json::from_value(c) {
            Ok(c) => c,
            Err(_) => return malformed("its content is not a list of content blocks"),
        },
    };
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if is_error {
        let text: String = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        // The engine renders a failure the handler did not write as `CODE: message` text plus
        // the detail as `structuredContent`; content written here would be sent as written,
        // without the code, so the upstream's text travels in the message.
        return ToolOutput::failure(McpErrorDetail::new("UPSTREAM_TOOL_ERROR", relayed(&text)));
    }
    match result.remove("structuredContent") {
        Some(Value::Object(data)) => ToolOutput {
            result: McpToolResult::success_value(Value::Object(data)),
            content: Some(content),
        },
        None | Some(Value::Null) => ToolOutput::content(content),
        Some(_) => malformed("its structuredContent is not an object"),
    }
}

fn mount_prompt(
    local: &str,
    entry: &Entry,
    upstream: Arc<Live>,
    prompts: &McpPromptRegistry,
) -> bool {
    let d = &entry.definition;
    let description = d
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut definition = PromptDefinition::new(local, description);
    for arg in d
        .get("arguments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = arg.get("name").and_then(Value::as_str) else {
            continue;
        };
        let about = arg
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        definition = definition.with_argument(
            if arg.get("required").and_then(Value::as_bool) == Some(true) {
                PromptArgument::required(name, about)
            } else {
                PromptArgument::optional(name, about)
            },
        );
    }
    let name = entry.upstream_name.clone();
    prompts.add(definition, move |request: codomyrmex_mcp::PromptRequest| {
        let upstream = upstream.clone();
        let name = name.clone();
        async move { forward_prompt(&upstream, &name, request).await }
    })
}

async fn forward_prompt(
    upstream: &Live,
    name: &str,
    request: codomyrmex_mcp::PromptRequest,
) -> Result<PromptResult, McpErrorDetail> {
    let arguments: Map<String, Value> = request
        .arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let params = serde_json::json!({"name": name, "arguments": arguments});
    let result = forward(upstream, "prompts/get", params, request.context).await?;
    let malformed = || {
        McpErrorDetail::new(
            "UPSTREAM_MALFORMED",
            format!(
                "upstream {} sent a prompt the gateway cannot relay",
                upstream.name
            ),
        )
    };
    let mut messages = Vec::new();
    for m in result
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(malformed)?
    {
        let content: ContentBlock = m
            .get("content")
            .cloned()
            .and_then(|c| serde_json::from_value(c).ok())
            .ok_or_else(malformed)?;
        messages.push(match m.get("role").and_then(Value::as_str) {
            Some("assistant") => PromptMessage::assistant(content),
            Some("user") => PromptMessage::user(content),
            _ => return Err(malformed()),
        });
    }
    Ok(PromptResult {
        description: result
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An upstream's calls are admitted by its policy: at most `max_concurrent` in flight,
    /// the rest wait (cancellably) until a turn is back; a cancelled wait answers as a
    /// closed call.
    #[tokio::test]
    async fn an_upstreams_calls_wait_for_their_turn() {
        let limits = codomyrmex_mcp::policy::UpstreamLimits::new(1, Duration::from_secs(1));
        let up = Live::new("u".into(), limits);
        let first = up
            .admit(&ToolContext::detached())
            .await
            .ok()
            .expect("a free turn");
        let cancelled = ToolContext::detached();
        let waiting = up.admit(&cancelled);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut waiting)
                .await
                .is_err(),
            "the second call waits while the first holds the turn"
        );
        cancelled.cancellation_token().cancel();
        assert!(
            matches!(waiting.await, Err(Bridged::Final(Err(ClientError::Closed)))),
            "a cancelled wait ends"
        );
        drop(first);
        assert!(
            up.admit(&ToolContext::detached()).await.is_ok(),
            "the turn is back"
        );
    }
}
