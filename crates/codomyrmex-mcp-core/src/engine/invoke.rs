//! How the outcome of a policed invocation reads on the wire, per handler kind, and
//! `completion/complete`, whose completers leave the engine as [`Invocation`]s like every other
//! handler.
//!
//! A tool's refusal or failure is a tool-level failure (`isError: true` with an
//! `McpErrorDetail`); every other kind answers with a JSON-RPC error. No message carries panic
//! text: a panic is logged here and reported as an internal error.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::jobs::Continuation;
use super::policy::{Failure, HandlerKind, Refusal};
use super::{Engine, Handled, RequestScope, Session, error};
use crate::invocation::Invocation;
use crate::resources::Completer;
use crate::wire::{ErrorObject, OutgoingMessage, RequestId};

/// Completion values returned in one response; `total` and `hasMore` tell the rest.
const MAX_COMPLETIONS: usize = 100;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The JSON-RPC error for a resource read, prompt or completion that was not admitted.
pub(super) fn refusal_error(refusal: Refusal) -> ErrorObject {
    match refusal {
        Refusal::RateLimited(retry_after) => ErrorObject::internal(format!(
            "Rate limit exceeded; retry in {} ms",
            millis(retry_after)
        ))
        .with_data(json!({"retryAfterMs": millis(retry_after)})),
        Refusal::Overloaded => ErrorObject::internal(
            "Server overloaded: too many requests are in progress; retry later",
        ),
    }
}

pub(super) use crate::registry::{timeout_error, tool_failure, tool_refusal};

/// The `-32603` error for a non-tool handler that timed out or panicked. `what` names the
/// work ("Prompt greet"); it must hold nothing secret.
pub(super) fn failure_error(kind: HandlerKind, what: &str, failure: Failure) -> ErrorObject {
    match failure {
        Failure::TimedOut(limit) => ErrorObject::internal(format!(
            "{what} did not finish within {} ms",
            limit.as_millis()
        )),
        Failure::Panicked => {
            tracing::error!(?kind, "{what}: handler panicked");
            ErrorObject::internal(format!("{what} failed with an internal error"))
        }
    }
}

/// Which completer a `completion/complete` names.
enum Target<'a> {
    Prompt(&'a str),
    Template(&'a str),
}

impl Engine {
    /// `completion/complete`: the completer runs on the blocking pool (completers are plain
    /// functions, so a slow one must not stall a runtime worker) under the execution policy.
    pub(super) fn complete_argument(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: &Map<String, Value>,
        scope: RequestScope,
    ) -> Handled {
        let (target, arg_name, partial, context) = match parse_completion(params) {
            Ok(p) => p,
            Err(e) => return error(&id, e),
        };
        let found = match target {
            Target::Prompt(name) => self
                .shared
                .prompts
                .as_ref()
                .and_then(|p| p.completer(name, arg_name))
                .filter(|_| {
                    self.shared
                        .access
                        .permits(session, crate::authz::Kind::Prompt, name)
                })
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!(
                        "Unknown prompt: {}",
                        name.chars().take(128).collect::<String>()
                    ))
                }),
            Target::Template(uri) => self
                .shared
                .resources
                .as_ref()
                .and_then(|r| r.completer(uri, arg_name))
                .filter(|_| self.shared.access.permits_uri(session, uri))
                .ok_or_else(|| ErrorObject::invalid_params("Unknown resource template")),
        };
        let completer: Completer = match found {
            Err(e) => return error(&id, e),
            Ok(None) => {
                return Handled::Reply(self.shared.results.respond(
                    id,
                    Ok(completion(Vec::new())),
                    &scope,
                ));
            }
            Ok(Some(c)) => c,
        };
        let name = match target {
            Target::Prompt(n) | Target::Template(n) => n,
        };
        let ticket = match self.shared.policy.admit(
            session.gate(),
            HandlerKind::Completer,
            name,
            scope.now.mono,
        ) {
            Ok(t) => t,
            Err(refusal) => return error(&id, refusal_error(refusal)),
        };
        let guard = match session.begin_request(id.clone()) {
            Ok(guard) => guard,
            Err(refused) => return error(&id, refused.error()),
        };
        let partial = partial.to_owned();
        let cancel = guard.token();
        // A plain function: the driver runs it on a blocking thread, so a slow one does not
        // stall a runtime worker.
        let work = async move { completer(&partial, &context) };
        let timeout = self.shared.config.tool_timeout;
        let invocation = Invocation::new(
            HandlerKind::Completer,
            name,
            Some(timeout),
            cancel,
            ticket,
            work,
            Continuation::Completer { id, scope, guard }.into_job(),
            self.host(),
        );
        Handled::Invoke(invocation.blocking(true))
    }

    /// The answer to a `completion/complete` whose completer ended with `values`.
    pub(super) fn finish_completion(
        &self,
        id: RequestId,
        scope: &RequestScope,
        values: Result<Vec<String>, Option<Failure>>,
    ) -> Option<OutgoingMessage> {
        let result = match values {
            Ok(values) => Ok(completion(values)),
            Err(None) => return None,
            Err(Some(failure)) => Err(failure_error(HandlerKind::Completer, "Completion", failure)),
        };
        Some(self.shared.results.respond(id, result, scope))
    }
}

/// `{"completion": {...}}` for `values`, at most [`MAX_COMPLETIONS`] of them.
fn completion(values: Vec<String>) -> Value {
    let total = values.len();
    let shown: Vec<String> = values.into_iter().take(MAX_COMPLETIONS).collect();
    json!({"completion": {"values": shown, "total": total, "hasMore": total > MAX_COMPLETIONS}})
}

type Parsed<'a> = (Target<'a>, &'a str, &'a str, BTreeMap<String, String>);

fn parse_completion(params: &Map<String, Value>) -> Result<Parsed<'_>, ErrorObject> {
    let reference = params
        .get("ref")
        .and_then(Value::as_object)
        .ok_or_else(|| ErrorObject::invalid_params("completion/complete: ref must be an object"))?;
    let argument = params
        .get("argument")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ErrorObject::invalid_params("completion/complete: argument must be an object")
        })?;
    let (Some(arg_name), Some(partial)) = (
        argument.get("name").and_then(Value::as_str),
        argument.get("value").and_then(Value::as_str),
    ) else {
        return Err(ErrorObject::invalid_params(
            "completion/complete: argument needs name and value strings",
        ));
    };
    let context: BTreeMap<String, String> = params
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let field = |key: &str| {
        reference
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let target = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => Target::Prompt(field("name")),
        Some("ref/resource") => Target::Template(field("uri")),
        _ => {
            return Err(ErrorObject::invalid_params(
                "completion/complete: ref.type must be ref/prompt or ref/resource",
            ));
        }
    };
    Ok((target, arg_name, partial, context))
}
