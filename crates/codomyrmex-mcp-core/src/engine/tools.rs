//! `tools/call`: handing a call out as an [`Invocation`], and mapping its output onto
//! `CallToolResult` (`tools/list` pages: `list_pages.rs`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::jobs::{Continuation, Round};
use super::policy::Failure;
use super::*;
use crate::context::MessageSink;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::wire::{ErrorObject, RequestId};

impl Engine {
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
        // A name no tool is registered under may stand for one (the registry's resolver);
        // from here on the call is a call of that tool, under its registered name, which
        // the authorization policy judges as if it had been called so.
        // A registered name is its own resolution: one lookup, no resolver.
        let (name, tool) = match self.shared.registry.lookup(&name) {
            Some(tool) => (name, Some(tool)),
            None => {
                let name = match self.resolved(session, name) {
                    Ok(name) => name,
                    Err(e) => return error(&id, e),
                };
                let tool = self.shared.registry.lookup(&name);
                (name, tool)
            }
        };
        let Some(tool) = tool.filter(|_| {
            self.shared
                .access
                .permits(session, crate::authz::Kind::Tool, &name)
        }) else {
            let shown: String = name.chars().take(128).collect();
            return error(
                &id,
                ErrorObject::invalid_params(format!("Unknown tool: {shown}")),
            );
        };
        let task = match self.shared.tasks.plan(&tool, &name, &scope, &mut params) {
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
                return Handled::Reply(
                    self.shared
                        .results
                        .tool_response(id, &tool, &name, output, &scope),
                );
            }
        };
        if let Some(plan) = task {
            return self.shared.tasks.call(
                session,
                id,
                tool,
                name,
                arguments,
                prepared,
                scope,
                plan,
                ticket,
                self.host(),
            );
        }
        let Prepared {
            guard,
            context,
            round,
            cancel,
        } = prepared;
        let timeout = self.tool_timeout(&tool, &name);
        let blocking = tool.settings.blocking;
        let outbound = context.outbound();
        let run = tool.clone().invoke_owned(arguments, context);
        let job = Continuation::Tool {
            id,
            tool,
            name: name.clone(),
            scope,
            round,
            guard,
        };
        let invocation = Invocation::new(
            HandlerKind::Tool,
            name,
            Some(timeout),
            cancel,
            ticket,
            run,
            job.into_job(),
            self.host(),
        );
        Handled::Invoke(invocation.blocking(blocking).emitting(outbound))
    }

    /// The registered name a call of unregistered `name` goes to: the resolver's one
    /// candidate the caller may use, or `name` itself (then unknown); an error when several
    /// remain.
    fn resolved(&self, session: &Arc<Session>, name: String) -> Result<String, ErrorObject> {
        Ok(match self.shared.registry.resolve(&name) {
            crate::registry::resolve::Resolution::Tool(resolved) => resolved,
            crate::registry::resolve::Resolution::Ambiguous(candidates) => {
                let candidates: Vec<String> = candidates
                    .into_iter()
                    .filter(|c| {
                        self.shared
                            .access
                            .permits(session, crate::authz::Kind::Tool, c)
                    })
                    .collect();
                match candidates.as_slice() {
                    [] => name,
                    [one] => one.clone(),
                    _ => {
                        let shown: String = name.chars().take(128).collect();
                        return Err(ErrorObject::invalid_params(format!(
                            "Ambiguous tool: {shown} is served by {}; call one of them",
                            candidates.join(", ")
                        ))
                        .with_data(serde_json::json!({"candidates": candidates})));
                    }
                }
            }
            crate::registry::resolve::Resolution::Unknown => name,
        })
    }

    /// The answer to a `tools/call` whose handler ended at `now` with `outcome`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_tool_call(
        &self,
        now: Timestamp,
        id: RequestId,
        tool: &RegisteredTool,
        name: &str,
        scope: &RequestScope,
        round: Option<Round>,
        outcome: Result<ToolOutput, Option<Failure>>,
    ) -> Option<OutgoingMessage> {
        let output = match outcome {
            Ok(output) => output,
            Err(None) => return None,
            Err(Some(failure)) => ToolOutput::failure(invoke::tool_failure(name, failure)),
        };
        Some(
            match self.round_outcome(now, "tools/call", name, round.as_ref()) {
                Some(input_required) => self.shared.results.respond(id, input_required, scope),
                None => self
                    .shared
                    .results
                    .tool_response(id, tool, name, output, scope),
            },
        )
    }

    /// The deadline of a call to `tool`: its own setting, else the per-name one, else
    /// `tool_timeout`.
    pub(super) fn tool_timeout(&self, tool: &RegisteredTool, name: &str) -> Duration {
        tool.settings
            .timeout
            .or_else(|| self.shared.config.tool_timeouts.get(name).copied())
            .unwrap_or(self.shared.config.tool_timeout)
    }
}
