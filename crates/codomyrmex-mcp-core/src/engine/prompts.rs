//! `prompts/get` (`prompts/list` pages: `list_pages.rs`).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::jobs::{Continuation, Round};
use super::policy::Failure;
use super::*;
use crate::authz::Kind;
use crate::context::MessageSink;
use crate::prompts::PromptResult;
use crate::schema::McpErrorDetail;
use crate::wire::{ErrorObject, RequestId};

impl Engine {
    pub(super) fn get_prompt(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        mut params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let Some(Value::String(name)) = params.remove("name") else {
            return error(
                &id,
                ErrorObject::invalid_params("prompts/get: name must be a string"),
            );
        };
        let Some(prompt) = self
            .shared
            .prompts
            .as_ref()
            .and_then(|p| p.lookup(&name))
            .filter(|_| self.shared.access.permits(session, Kind::Prompt, &name))
        else {
            let shown: String = name.chars().take(128).collect();
            return error(
                &id,
                ErrorObject::invalid_params(format!("Unknown prompt: {shown}")),
            );
        };
        let arguments = match params.remove("arguments") {
            None | Some(Value::Null) => std::collections::BTreeMap::new(),
            Some(Value::Object(a)) => {
                let mut out = std::collections::BTreeMap::new();
                for (k, v) in a {
                    match v {
                        Value::String(s) => {
                            out.insert(k, s);
                        }
                        _ => {
                            return error(
                                &id,
                                ErrorObject::invalid_params(format!(
                                    "prompts/get: argument {k:?} must be a string"
                                )),
                            );
                        }
                    }
                }
                out
            }
            Some(_) => {
                return error(
                    &id,
                    ErrorObject::invalid_params("prompts/get: arguments must be an object"),
                );
            }
        };
        if let Err(message) = prompt.check_arguments(&arguments) {
            return error(&id, ErrorObject::invalid_params(message));
        }
        let prepared = match self.prepare(
            session,
            &id,
            "prompts/get",
            &name,
            &mut params,
            &scope,
            sink,
        ) {
            Ok(p) => p,
            Err(e) => return error(&id, e),
        };
        let ticket = match self.shared.policy.admit(
            session.gate(),
            HandlerKind::Prompt,
            &name,
            scope.now.mono,
        ) {
            Ok(t) => t,
            Err(refusal) => return error(&id, invoke::refusal_error(refusal)),
        };
        let Prepared {
            guard,
            context,
            round,
            cancel,
        } = prepared;
        let outbound = context.outbound();
        let request = crate::prompts::PromptRequest { arguments, context };
        // The handler is called inside the work, so a panic while it builds its future is
        // caught too.
        let render = async move { prompt.handler.get(request).await };
        let timeout = self.shared.config.tool_timeout;
        let job = Continuation::Prompt {
            id,
            name: name.clone(),
            scope,
            round,
            guard,
        };
        Handled::Invoke(
            Invocation::new(
                HandlerKind::Prompt,
                name,
                Some(timeout),
                cancel,
                ticket,
                render,
                job.into_job(),
                self.host(),
            )
            .emitting(outbound),
        )
    }

    /// The answer to a `prompts/get` whose handler ended at `now` with `got`.
    pub(super) fn finish_prompt(
        &self,
        now: Timestamp,
        id: RequestId,
        name: &str,
        scope: &RequestScope,
        round: Option<Round>,
        got: Result<Result<PromptResult, McpErrorDetail>, Option<Failure>>,
    ) -> Option<OutgoingMessage> {
        if matches!(got, Err(None)) {
            return None;
        }
        let outcome = self.round_outcome(now, "prompts/get", name, round.as_ref());
        let result = match (outcome, got) {
            (Some(r), _) => r,
            (None, Err(None)) => return None,
            (None, Err(Some(failure))) => Err(invoke::failure_error(
                HandlerKind::Prompt,
                &format!("Prompt {name}"),
                failure,
            )),
            (None, Ok(Ok(rendered))) => match serde_json::to_value(rendered) {
                Ok(v) => return Some(self.shared.results.respond_capped(id, v, scope)),
                Err(_) => Err(ErrorObject::internal("Prompt result could not be encoded")),
            },
            (None, Ok(Err(detail))) => Err(ErrorObject::internal(detail.error_message)),
        };
        Some(self.shared.results.respond(id, result, scope))
    }
}
