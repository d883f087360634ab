//! `tools/list` and `tools/call`: paging the registry, handing a call out as an
//! [`Invocation`], and mapping its output onto `CallToolResult`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::wire::EncodedResult;
use crate::wire::encoded::ToolResult;
use crate::wire::{ContentBlock, ErrorObject, OutgoingMessage, RequestId};

impl Engine {
    /// `tools/list`: a page encoded once per protocol version and cursor, and reused (its
    /// bytes shared) until the registry changes.
    pub(super) fn list_tools(
        &self,
        id: RequestId,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        let after = match cursor(params) {
            Ok(after) => after,
            Err(error) => {
                return OutgoingMessage::Error {
                    id: Some(id),
                    error,
                };
            }
        };
        let key = (scope.version, after);
        // Read before the page is built: a change that lands while it is built makes the
        // entry stale at once, never a stale page look current.
        let generation = self.shared.registry.generation();
        let result = match self.shared.tool_pages.get(&key, generation) {
            Some(page) => page,
            None => {
                let page = self.encode_tool_page(key.1.as_deref(), scope).into_shared();
                self.shared.tool_pages.put(key, generation, &page);
                page
            }
        };
        OutgoingMessage::Encoded { id, result }
    }

    /// The `tools/list` page after `after`, built and encoded for the request's version.
    pub(super) fn encode_tool_page(
        &self,
        after: Option<&str>,
        scope: &RequestScope,
    ) -> EncodedResult {
        let (tools, next) = self
            .shared
            .registry
            .page(after, self.shared.config.page_size);
        let tools = self.with_task_support(tools, scope);
        let mut obj = Map::new();
        obj.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        self.encode_finished(self.cacheable(obj, scope), scope)
    }

    pub(super) fn call_tool(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let mut params = params;
        let Some(Value::String(name)) = params.remove("name") else {
            return error(
                &id,
                ErrorObject::invalid_params("tools/call: name must be a string"),
            );
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a,
            Some(_) => {
                return error(
                    &id,
                    ErrorObject::invalid_params("tools/call: arguments must be an object"),
                );
            }
        };
        let Some(tool) = self.shared.registry.lookup(&name) else {
            let shown: String = name.chars().take(128).collect();
            return error(
                &id,
                ErrorObject::invalid_params(format!("Unknown tool: {shown}")),
            );
        };
        let task = match self.task_plan(&tool, &name, &scope, &mut params) {
            Ok(t) => t,
            Err(e) => return error(&id, e),
        };
        let prepared =
            match self.prepare(session, &id, "tools/call", &name, &mut params, &scope, sink) {
                Ok(p) => p,
                Err(e) => return error(&id, e),
            };
        let kind = if task.is_some() {
            HandlerKind::Task
        } else {
            HandlerKind::Tool
        };
        let ticket = match self
            .shared
            .policy
            .admit(session.gate(), kind, &name, scope.now.mono)
        {
            Ok(t) => t,
            Err(refusal) => {
                let output = ToolOutput::failure(invoke::tool_refusal(&name, refusal));
                return Handled::Reply(self.tool_response(id, &tool, &name, output, &scope));
            }
        };
        if let Some(plan) = task {
            return self.call_tool_as_task(
                session, id, tool, name, arguments, prepared, scope, plan, ticket,
            );
        }
        let engine = self.clone();
        let session = session.clone();
        let Prepared {
            guard,
            context,
            round,
            cancel,
        } = prepared;
        let timeout = self.tool_timeout(&tool, &name);
        let blocking = tool.settings.blocking;
        let run = tool.clone().invoke_owned(arguments, context);
        let invocation = Invocation::new(
            HandlerKind::Tool,
            name.clone(),
            Some(timeout),
            cancel,
            ticket,
            run,
            move |outcome| {
                let _guard = guard;
                let output = match outcome {
                    Ok(output) => output,
                    Err(None) => return None,
                    Err(Some(failure)) => ToolOutput::failure(invoke::tool_failure(&name, failure)),
                };
                Some(
                    match engine.round_outcome(&session, "tools/call", &name, round.as_deref()) {
                        Some(input_required) => engine.respond(id, input_required, &scope),
                        None => engine.tool_response(id, &tool, &name, output, &scope),
                    },
                )
            },
        );
        Handled::Invoke(invocation.blocking(blocking))
    }

    /// The deadline of a call to `tool`: its own setting, else the per-name one, else
    /// `tool_timeout`.
    pub(super) fn tool_timeout(&self, tool: &RegisteredTool, name: &str) -> Duration {
        tool.settings
            .timeout
            .or_else(|| self.shared.config.tool_timeouts.get(name).copied())
            .unwrap_or(self.shared.config.tool_timeout)
    }

    /// Maps a tool's output onto `CallToolResult`.
    pub(super) fn call_tool_result(
        &self,
        tool: &RegisteredTool,
        output: ToolOutput,
        _scope: &RequestScope,
    ) -> ToolResult {
        let ToolOutput { result, content } = output;
        if result.is_failure() {
            let detail = result.error().cloned().unwrap_or_else(|| {
                McpErrorDetail::new("InternalError", "the tool failed without detail")
            });
            let mut text = format!("{}: {}", detail.error_type, detail.error_message);
            if let Some(details) = &detail.error_details
                && let Ok(d) = serde_json::to_string(details)
            {
                text.push_str("\nDetails: ");
                text.push_str(&d);
            }
            let content = content.unwrap_or_else(|| vec![ContentBlock::text(text)]);
            let structured = if tool.definition.output_schema.is_none() {
                serde_json::to_value(&detail).ok()
            } else {
                None
            };
            return ToolResult {
                content,
                structured,
                is_error: true,
            };
        }
        // Taken apart: the data moves into `structuredContent` rather than being copied.
        let parts = result.into_parts();
        let blocks = match content {
            Some(blocks) => blocks,
            None => {
                let mut blocks = Vec::with_capacity(2);
                if let Some(data) = &parts.data {
                    blocks.push(ContentBlock::text(
                        serde_json::to_string(data).unwrap_or_default(),
                    ));
                }
                if let Some(explanation) = parts.explanation {
                    blocks.push(ContentBlock::text(explanation));
                }
                blocks
            }
        };
        ToolResult {
            content: blocks,
            structured: parts.data.map(Value::Object),
            is_error: false,
        }
    }
}

/// `tools/list` pages as encoded for a protocol version and a cursor, kept while the registry's
/// change counter ([`McpToolRegistry::generation`](crate::registry::McpToolRegistry)) stays
/// where it was when each page was built. Bounded: cursors come from clients, so past
/// [`ToolPages::MAX`] entries the cache starts over.
#[derive(Default)]
pub(super) struct ToolPages {
    pages: std::sync::Mutex<ToolPageMap>,
}

/// A page by (version, cursor): the registry generation it was built at, and the page.
type ToolPageMap =
    std::collections::HashMap<(ProtocolVersion, Option<String>), (u64, EncodedResult)>;

impl ToolPages {
    /// The most pages kept.
    const MAX: usize = 64;

    fn lock(&self) -> std::sync::MutexGuard<'_, ToolPageMap> {
        self.pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The page for `key`, if it was built at `generation`.
    fn get(
        &self,
        key: &(ProtocolVersion, Option<String>),
        generation: u64,
    ) -> Option<EncodedResult> {
        match self.lock().get(key) {
            Some((built, page)) if *built == generation => Some(page.clone()),
            _ => None,
        }
    }

    fn put(&self, key: (ProtocolVersion, Option<String>), generation: u64, page: &EncodedResult) {
        let mut pages = self.lock();
        if pages.len() >= Self::MAX && !pages.contains_key(&key) {
            pages.clear();
        }
        pages.insert(key, (generation, page.clone()));
    }
}

#[cfg(test)]
mod tool_pages_tests {
    use super::*;

    fn list(engine: &Engine, version: &str) -> Value {
        serde_json::from_slice(&list_bytes(engine, version)).unwrap()
    }

    /// The `result` bytes of a `tools/list` answer, as written.
    fn list_bytes(engine: &Engine, version: &str) -> Vec<u8> {
        let session = engine.new_session();
        let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
        if version != "2026-07-28" {
            let init = IncomingMessage::Request {
                id: RequestId::from(0),
                method: "initialize".into(),
                params: json!({"protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}})
                .as_object()
                .cloned(),
            };
            let _ = engine.handle(&session, init, &sink);
        }
        let params = if version == "2026-07-28" {
            json!({"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
        } else {
            json!({})
        };
        let request = IncomingMessage::Request {
            id: RequestId::from(1),
            method: "tools/list".into(),
            params: params.as_object().cloned(),
        };
        match engine.handle(&session, request, &sink) {
            Handled::Reply(OutgoingMessage::Encoded { result, .. }) => result.to_vec(),
            other => panic!("an encoded reply expected: {other:?}"),
        }
    }

    /// The page as encoded afresh, not read from the cache.
    fn fresh(engine: &Engine, version: &str) -> Vec<u8> {
        let version = ProtocolVersion::parse(version).unwrap();
        let scope = RequestScope {
            era: version.era(),
            version,
            client_capabilities: crate::context::no_capabilities(),
            log_level: None,
            progress_token: None,
            now: engine.now(),
        };
        engine.encode_tool_page(None, &scope).to_vec()
    }

    fn names(page: &Value) -> Vec<String> {
        page["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn tool(registry: &McpToolRegistry, name: &str) {
        registry
            .register(
                name,
                json!({"type": "object"}),
                |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({})) },
            )
            .unwrap();
    }

    #[test]
    fn a_reused_page_follows_every_registry_change_in_each_era() {
        let registry = Arc::new(McpToolRegistry::new());
        tool(&registry, "a");
        let engine = Engine::new(McpServerConfig::default(), registry.clone());
        for version in ["2026-07-28", "2025-11-25", "2024-11-05"] {
            assert_eq!(names(&list(&engine, version)), ["a"], "{version}");
        }
        let modern = list(&engine, "2026-07-28");
        assert_eq!(modern, list(&engine, "2026-07-28"));
        assert!(modern.get("ttlMs").is_some());
        assert!(list(&engine, "2025-11-25").get("ttlMs").is_none());
        tool(&registry, "b");
        for version in ["2026-07-28", "2025-11-25", "2024-11-05"] {
            assert_eq!(names(&list(&engine, version)), ["a", "b"], "{version}");
        }
        assert!(registry.unregister("a"));
        for version in ["2026-07-28", "2025-11-25", "2024-11-05"] {
            assert_eq!(names(&list(&engine, version)), ["b"], "{version}");
        }
    }

    #[test]
    fn a_cached_page_is_the_fresh_encoding_until_the_registry_changes() {
        let registry = Arc::new(McpToolRegistry::new());
        tool(&registry, "a");
        let engine = Engine::new(McpServerConfig::default(), registry.clone());
        for version in ["2026-07-28", "2025-11-25"] {
            let first = list_bytes(&engine, version);
            // The second answer comes from the cache: the same bytes as a fresh encoding,
            // and as the value path's (the old `finish_result`, then serde_json).
            assert_eq!(list_bytes(&engine, version), first, "{version}");
            assert_eq!(fresh(&engine, version), first, "{version}");
            let value: Value = serde_json::from_slice(&first).unwrap();
            assert_eq!(serde_json::to_vec(&value).unwrap(), first, "{version}");
            assert_eq!(
                value.get("resultType").is_some(),
                version == "2026-07-28",
                "{version}"
            );
            assert_eq!(
                value["_meta"][META_SERVER_INFO].is_object(),
                version == "2026-07-28",
                "{version}"
            );
        }
        let before = list_bytes(&engine, "2026-07-28");
        tool(&registry, "b");
        let after = list_bytes(&engine, "2026-07-28");
        assert_ne!(after, before);
        assert_eq!(after, fresh(&engine, "2026-07-28"));
        assert_eq!(names(&serde_json::from_slice(&after).unwrap()), ["a", "b"]);
    }

    #[test]
    fn the_cache_stays_bounded_whatever_cursors_clients_send() {
        let pages = ToolPages::default();
        for i in 0..10 * ToolPages::MAX {
            let key = (ProtocolVersion::LATEST_MODERN, Some(format!("c{i}")));
            pages.put(key, 0, &EncodedResult::of(&json!({})));
        }
        assert!(pages.lock().len() <= ToolPages::MAX);
    }
}
