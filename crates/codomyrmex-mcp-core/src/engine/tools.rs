//! `tools/list` and `tools/call`: paging the registry, handing a call out as an
//! [`Invocation`], and mapping its output onto `CallToolResult`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::wire::{ContentBlock, ErrorObject, OutgoingMessage, RequestId};

impl Engine {
    pub(super) fn list_tools(
        &self,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Result<Value, ErrorObject> {
        let after = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(
                decode_cursor(c).ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
            ),
            Some(_) => return Err(ErrorObject::invalid_params("Invalid cursor")),
        };
        let key = (scope.version, after);
        // Read before the page is built: a change that lands while it is built makes the
        // entry stale at once, never a stale page look current.
        let generation = self.shared.registry.generation();
        if let Some(page) = self.shared.tool_pages.get(&key, generation) {
            return Ok(page);
        }
        let (tools, next) = self
            .shared
            .registry
            .page(key.1.as_deref(), self.shared.config.page_size);
        let tools = self.with_task_support(tools, scope);
        let mut obj = Map::new();
        obj.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        let page = self.cacheable(obj, scope);
        self.shared.tool_pages.put(key, generation, &page);
        Ok(page)
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
                let result = self.call_tool_result(&tool, output, &scope);
                return Handled::Reply(self.respond(id, Ok(result), &scope));
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
                let result =
                    match engine.round_outcome(&session, "tools/call", &name, round.as_deref()) {
                        Some(Err(e)) => {
                            return Some(OutgoingMessage::Error {
                                id: Some(id),
                                error: e,
                            });
                        }
                        Some(Ok(input_required)) => input_required,
                        None => {
                            let result = engine.call_tool_result(&tool, output, &scope);
                            engine.cap_tool_result(&tool, &name, result, &scope)
                        }
                    };
                Some(OutgoingMessage::Response {
                    id,
                    result: engine.finish_result(result, &scope),
                })
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
    ) -> Value {
        let ToolOutput { result, content } = output;
        let mut obj = Map::new();
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
            let blocks = content.unwrap_or_else(|| vec![ContentBlock::text(text)]);
            obj.insert("content".into(), blocks_value(blocks));
            if tool.definition.output_schema.is_none()
                && let Ok(v) = serde_json::to_value(&detail)
            {
                obj.insert("structuredContent".into(), v);
            }
            obj.insert("isError".into(), json!(true));
            return Value::Object(obj);
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
        obj.insert("content".into(), blocks_value(blocks));
        if let Some(data) = parts.data {
            obj.insert("structuredContent".into(), Value::Object(data));
        }
        Value::Object(obj)
    }
}

/// `tools/list` pages as built for a protocol version and a cursor, kept while the registry's
/// change counter ([`McpToolRegistry::generation`](crate::registry::McpToolRegistry)) stays
/// where it was when each page was built. Bounded: cursors come from clients, so past
/// [`ToolPages::MAX`] entries the cache starts over.
#[derive(Default)]
pub(super) struct ToolPages {
    pages: std::sync::Mutex<ToolPageMap>,
}

/// A page by (version, cursor): the registry generation it was built at, and the page.
type ToolPageMap = std::collections::HashMap<(ProtocolVersion, Option<String>), (u64, Value)>;

impl ToolPages {
    /// The most pages kept.
    const MAX: usize = 64;

    fn lock(&self) -> std::sync::MutexGuard<'_, ToolPageMap> {
        self.pages
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The page for `key`, if it was built at `generation`.
    fn get(&self, key: &(ProtocolVersion, Option<String>), generation: u64) -> Option<Value> {
        match self.lock().get(key) {
            Some((built, page)) if *built == generation => Some(page.clone()),
            _ => None,
        }
    }

    fn put(&self, key: (ProtocolVersion, Option<String>), generation: u64, page: &Value) {
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
            Handled::Reply(OutgoingMessage::Response { result, .. }) => result,
            other => panic!("a reply expected: {other:?}"),
        }
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
    fn the_cache_stays_bounded_whatever_cursors_clients_send() {
        let pages = ToolPages::default();
        for i in 0..10 * ToolPages::MAX {
            let key = (ProtocolVersion::LATEST_MODERN, Some(format!("c{i}")));
            pages.put(key, 0, &json!({}));
        }
        assert!(pages.lock().len() <= ToolPages::MAX);
    }
}
