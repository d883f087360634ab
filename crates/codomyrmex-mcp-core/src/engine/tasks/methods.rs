//! The `tasks/*` methods of both eras, and the tasks capability.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use crate::context::MessageSink;
use crate::engine::session::Session;
use crate::engine::{Engine, Handled, RequestScope, error};
use crate::registry::TaskSupport;
use crate::wire::{Era, ErrorObject, ProtocolVersion, RequestId};

impl Engine {
    /// Sends what 2025-11-25 task `task_id` of `session` sends the client (its
    /// server-to-client requests and notifications) to `sink` from now on: the stream of a
    /// `tasks/result` another instance serves for it. `false` when this engine does not run
    /// that task for that session.
    pub fn relay_task(
        &self,
        session: &Arc<Session>,
        task_id: &str,
        sink: Arc<dyn MessageSink>,
    ) -> bool {
        let Some(entry) = self
            .shared
            .tasks
            .get(task_id)
            .filter(|t| t.owner.admits(Era::Legacy, session))
        else {
            return false;
        };
        entry.relay.redirect(sink);
        true
    }

    /// `tasks/*` requests of both eras. Each reads its task's record through the
    /// [`TaskStore`](crate::task_store::TaskStore) trait, from the default in-memory store or
    /// a shared one alike.
    pub(in crate::engine) fn handle_tasks(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        // A server with no task-supporting tool (and no task left) offers no tasks methods.
        let served = self.shared.registry.supports_tasks() || self.shared.tasks.len() > 0;
        match scope.era {
            _ if !served => error(&id, ErrorObject::method_not_found(method)),
            Era::Modern => self.modern_tasks(session, id, method, params, scope),
            Era::Legacy if scope.version != ProtocolVersion::V2025_11_25 => {
                error(&id, ErrorObject::method_not_found(method))
            }
            Era::Legacy if matches!(method, "tasks/get" | "tasks/cancel" | "tasks/result") => {
                self.legacy_tasks(session, id, method, params, scope, sink)
            }
            Era::Legacy if method == "tasks/list" => self.legacy_list(session, id, params),
            Era::Legacy => error(&id, ErrorObject::method_not_found(method)),
        }
    }

    /// The tasks capability of `version`, added to `capabilities` when a tool supports tasks:
    /// `extensions["io.modelcontextprotocol/tasks"]` on 2026-07-28, `tasks` on 2025-11-25.
    pub(in crate::engine) fn with_task_capabilities(
        &self,
        capabilities: Value,
        version: ProtocolVersion,
    ) -> Value {
        let Value::Object(mut caps) = capabilities else {
            return capabilities;
        };
        if !self.shared.registry.supports_tasks() {
            return Value::Object(caps);
        }
        match version {
            ProtocolVersion::V2026_07_28 => {
                let extensions = caps
                    .entry("extensions")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(e) = extensions {
                    e.insert(TASKS_EXTENSION.into(), json!({}));
                }
            }
            ProtocolVersion::V2025_11_25 => {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
            _ => {}
        }
        Value::Object(caps)
    }

    /// Adds `execution.taskSupport` to a 2025-11-25 `tools/list` page.
    pub(in crate::engine) fn with_task_support(
        &self,
        tools: Vec<Value>,
        scope: &RequestScope,
    ) -> Vec<Value> {
        if scope.version != ProtocolVersion::V2025_11_25 {
            return tools;
        }
        tools
            .into_iter()
            .map(|mut t| {
                let support = t
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|n| self.shared.registry.lookup(n))
                    .map(|tool| tool.settings.task_support)
                    .unwrap_or_default();
                if support != TaskSupport::Forbidden
                    && let Value::Object(obj) = &mut t
                {
                    obj.insert("execution".into(), json!({"taskSupport": support.as_str()}));
                }
                t
            })
            .collect()
    }
}

/// The `inputResponses` of a `tasks/update`: an object of result objects.
pub(super) fn input_responses(
    params: &Map<String, Value>,
) -> Result<&Map<String, Value>, ErrorObject> {
    let Some(Value::Object(responses)) = params.get("inputResponses") else {
        return Err(ErrorObject::invalid_params(
            "tasks/update: inputResponses must be an object",
        ));
    };
    if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
        let key: String = key.chars().take(64).collect();
        return Err(ErrorObject::invalid_params(format!(
            "inputResponses[{key:?}] must be the result object of its request"
        )));
    }
    Ok(responses)
}
