//! Running a task: the link a tool's context uses for input, deciding whether a call
//! becomes a task, and driving its work in the background until it ends or expires.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::*;
use crate::McpErrorDetail;
use crate::context::{ClientRequestError, InputMode, InputRequest, Outbound, TaskInput};
use crate::engine::jobs::{Continuation, Round};
use crate::engine::mrtr::RoundTrip;
use crate::engine::policy::{Failure, HandlerKind, Ticket};
use crate::engine::results::Results;
use crate::engine::session::InFlight;
use crate::engine::session::Session;
use crate::engine::{Handled, Prepared, RequestScope, error};
use crate::invocation::{Detach, Invocation, JobHost};
use crate::outbound::AskClient;
use crate::registry::{BoxFuture, RegisteredTool, TaskSupport, ToolOutput};
use crate::sync::CancellationToken;
use crate::wire::{Era, ErrorCode, ErrorObject, OutgoingMessage, ProtocolVersion, RequestId};

/// What a tool running in (or towards) a task uses for input: [`InputMode::Task`].
pub(crate) struct TaskLink {
    pub(super) entry: Arc<TaskEntry>,
    /// 2026-07-28, before the call became a task: its multi round-trip round.
    pub(super) round: Option<Arc<RoundTrip>>,
    /// 2025-11-25: where server-to-client requests are entered: the session's state (its
    /// table of requests awaiting answers), held weakly (the task neither keeps the state
    /// alive nor holds the session).
    pub(super) requester: Option<std::sync::Weak<dyn AskClient>>,
    /// 2026-07-28: whether input parks the task (it is, or is about to be, a task).
    pub(super) parks: AtomicBool,
    pub(super) max_pending: usize,
}

impl TaskLink {
    /// [`ToolContext::start_task`](crate::ToolContext::start_task).
    pub(crate) fn start(&self) -> bool {
        self.parks.store(true, Ordering::Release);
        true
    }

    /// Whether input parks the task (2026-07-28 once it is a task).
    pub(crate) fn parks(&self) -> bool {
        self.requester.is_none() && self.parks.load(Ordering::Acquire)
    }

    pub(crate) fn task_id(&self) -> &str {
        &self.entry.id
    }

    /// The multi round-trip round of the call before it became a task.
    pub(crate) fn round(&self) -> Option<&Arc<RoundTrip>> {
        self.round.as_ref()
    }

    /// An answer the client gave during the multi round-trip phase.
    pub(super) fn answered(&self, key: &str) -> Option<Value> {
        self.round.as_ref()?.responses.get(key).cloned()
    }

    /// [`ToolContext::input`](crate::ToolContext::input) of a task.
    pub(super) async fn task_input(
        &self,
        key: &str,
        request: &InputRequest,
        declared: bool,
        outbound: &Outbound,
        cancel: &CancellationToken,
    ) -> Result<Value, ClientRequestError> {
        let capability = request.capability();
        if let Some(requester) = &self.requester {
            // 2025-11-25: a server-to-client request tagged with the task, while the task
            // reports `input_required`.
            if !declared {
                return Err(ClientRequestError::MissingCapability(capability));
            }
            let mut params = request.params();
            if let Value::Object(p) = &mut params {
                p.insert(
                    "_meta".into(),
                    json!({ META_RELATED_TASK: {"taskId": self.entry.id} }),
                );
            }
            let Some(calls) = requester.upgrade() else {
                // The session ended.
                return Err(ClientRequestError::Unavailable);
            };
            let _outstanding = self.entry.outstanding();
            let method = request.method();
            return crate::context::ask_client(&*calls, method, params, outbound, cancel).await;
        }
        if !self.parks() {
            // Not a task (yet): an ordinary multi round-trip round.
            let Some(round) = &self.round else {
                return Err(ClientRequestError::Unavailable);
            };
            if !declared {
                round.note_missing(capability);
                return Err(ClientRequestError::MissingCapability(capability));
            }
            if let Some(answer) = round.responses.get(key) {
                return Ok(answer.clone());
            }
            round.request(key, envelope(request));
            return Err(ClientRequestError::InputRequired);
        }
        if !declared {
            return Err(ClientRequestError::MissingCapability(capability));
        }
        if let Some(answer) = self.answered(key) {
            return Ok(answer);
        }
        match self
            .entry
            .register(key, envelope(request), self.max_pending)?
        {
            Asked::Answered(v) => Ok(v),
            Asked::Waiting(w) => w.wait(cancel).await,
        }
    }

    /// [`ToolContext::input_all`](crate::ToolContext::input_all) of a parked task: every
    /// request is pending at once, and the task waits for all answers.
    pub(super) async fn task_input_all(
        &self,
        requests: Vec<(String, InputRequest)>,
        capabilities: &Value,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, ClientRequestError> {
        if let Some((_, r)) = requests
            .iter()
            .find(|(_, r)| capabilities.get(r.capability()).is_none())
        {
            return Err(ClientRequestError::MissingCapability(r.capability()));
        }
        let mut asked = Vec::with_capacity(requests.len());
        for (key, request) in &requests {
            asked.push(match self.answered(key) {
                Some(v) => Asked::Answered(v),
                None => self
                    .entry
                    .register(key, envelope(request), self.max_pending)?,
            });
        }
        let mut answers = Vec::with_capacity(asked.len());
        for a in asked {
            answers.push(match a {
                Asked::Answered(v) => v,
                Asked::Waiting(w) => w.wait(cancel).await?,
            });
        }
        Ok(answers)
    }
}

impl TaskInput for TaskLink {
    fn start(&self) -> bool {
        TaskLink::start(self)
    }
    fn parks(&self) -> bool {
        TaskLink::parks(self)
    }
    fn task_id(&self) -> &str {
        TaskLink::task_id(self)
    }
    fn round(&self) -> Option<&Arc<RoundTrip>> {
        TaskLink::round(self)
    }
    fn input<'a>(
        &'a self,
        key: &'a str,
        request: &'a InputRequest,
        declared: bool,
        outbound: &'a Outbound,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>> {
        Box::pin(self.task_input(key, request, declared, outbound, cancel))
    }
    fn input_all<'a>(
        &'a self,
        requests: Vec<(String, InputRequest)>,
        capabilities: &'a Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Value>, ClientRequestError>> {
        Box::pin(self.task_input_all(requests, capabilities, cancel))
    }
}

/// An input request as `inputRequests` carries it.
pub(super) fn envelope(request: &InputRequest) -> Value {
    json!({"method": request.method(), "params": request.params()})
}

/// A call that may become a task, decided before the tool runs.
pub(in crate::engine) struct TaskPlan {
    pub(super) reservation: Reservation,
    pub(super) ttl: Duration,
}

/// A task's work as the engine takes it back ([`Engine::complete`](crate::engine::Engine::complete),
/// [`Engine::detach`](crate::engine::Engine::detach)):
/// data only, owned by the invocation until its outcome comes back.
pub(in crate::engine) struct TaskJob {
    id: RequestId,
    tool: Arc<RegisteredTool>,
    name: String,
    scope: RequestScope,
    /// 2026-07-28, before the call became a task: its round.
    round: Option<Round>,
    entry: Arc<TaskEntry>,
    link: Arc<TaskLink>,
    /// The request's own token (the work runs under a child of the task's).
    request_cancel: CancellationToken,
    /// The request's in-flight entry, until the call becomes a task or ends.
    guard: Option<InFlight>,
    /// The task's reserved place, until it is committed or given back.
    plan: Option<TaskPlan>,
    /// Whether the answer went out as a task: the outcome then goes into the task.
    detached: bool,
}

/// A call that may have become a task and ended before it first waited: it is answered as
/// the call it still was, with `output`, unless its round asks the client for input first
/// (the engine's, which owns rounds).
pub(in crate::engine) struct TaskEnd {
    pub(in crate::engine) id: RequestId,
    pub(in crate::engine) tool: Arc<RegisteredTool>,
    pub(in crate::engine) name: String,
    pub(in crate::engine) scope: RequestScope,
    pub(in crate::engine) round: Option<Round>,
    pub(in crate::engine) output: ToolOutput,
}

impl Tasks {
    /// Decides whether a `tools/call` may become a task, or the error it deserves (`-32021`
    /// for a required-task tool without the extension on 2026-07-28; `-32601` on 2025-11-25
    /// for a forbidden-task tool called as a task, or a required-task tool called without).
    /// Removes the 2025-11-25 `task` parameter, which 2026-07-28 ignores.
    pub(in crate::engine) fn plan(
        &self,
        tool: &RegisteredTool,
        name: &str,
        scope: &RequestScope,
        params: &mut Map<String, Value>,
    ) -> Result<Option<TaskPlan>, ErrorObject> {
        let requested = params.remove("task").filter(|t| !t.is_null());
        let support = tool.settings.task_support;
        let store = &self.store;
        // Only the refusals name the tool.
        let shown = || name.chars().take(128).collect::<String>();
        match scope.era {
            Era::Modern => {
                if support == TaskSupport::Forbidden {
                    return Ok(None);
                }
                if !declares_extension(&scope.client_capabilities) {
                    if support == TaskSupport::Required {
                        return Err(missing_extension(&format!(
                            "Tool {} runs only as a task: declare the {TASKS_EXTENSION} extension",
                            shown()
                        )));
                    }
                    return Ok(None);
                }
                // A full store: the call runs synchronously.
                Ok(store.reserve(scope.now.mono).map(|reservation| TaskPlan {
                    reservation,
                    ttl: store.config.ttl,
                }))
            }
            // Earlier revisions have no tasks and ignore the parameter.
            Era::Legacy if scope.version != ProtocolVersion::V2025_11_25 => Ok(None),
            Era::Legacy => match (requested, support) {
                (None, TaskSupport::Required) => Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "Tool {} must be called as a task (the task parameter)",
                        shown()
                    ),
                )),
                (None, _) => Ok(None),
                (Some(_), TaskSupport::Forbidden) => Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("Tool {} does not support task-augmented calls", shown()),
                )),
                (Some(Value::Object(task)), _) => {
                    let ttl = match task.get("ttl") {
                        None | Some(Value::Null) => store.config.ttl,
                        Some(t) => {
                            let ms = t.as_u64().ok_or_else(|| {
                                ErrorObject::invalid_params(
                                    "tools/call: task.ttl must be a non-negative integer",
                                )
                            })?;
                            Duration::from_millis(ms)
                                .max(Duration::from_secs(1))
                                .min(store.config.ttl)
                        }
                    };
                    let reservation = store
                        .reserve(scope.now.mono)
                        .ok_or_else(|| ErrorObject::internal("Too many tasks; try again later"))?;
                    Ok(Some(TaskPlan { reservation, ttl }))
                }
                (Some(_), _) => Err(ErrorObject::invalid_params(
                    "tools/call: task must be an object",
                )),
            },
        }
    }

    /// Runs a `tools/call` that may become a task (see the module docs); its outcome goes
    /// back to `host`.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn call(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        tool: Arc<RegisteredTool>,
        name: String,
        arguments: Map<String, Value>,
        prepared: Prepared,
        scope: RequestScope,
        plan: TaskPlan,
        ticket: Ticket,
        host: Arc<dyn JobHost>,
    ) -> Handled {
        let Some(task_id) = self.store.random_id() else {
            return error(&id, ErrorObject::internal("Could not create a task"));
        };
        let legacy = scope.era == Era::Legacy;
        let entry = Arc::new(
            TaskEntry::new(
                task_id,
                plan.reservation.seq,
                plan.ttl,
                Owner::of(scope.era, session).keyed(self.store.session_key(session)),
                scope.now,
                self.time.clone(),
            )
            .tracked(self.store.tracking()),
        );
        let Prepared {
            guard,
            context,
            round,
            cancel: request_cancel,
        } = prepared;
        let link = Arc::new(TaskLink {
            entry: entry.clone(),
            round: round.as_ref().map(|r| r.trip.clone()),
            requester: legacy.then(|| session.weak_asker()),
            parks: AtomicBool::new(false),
            max_pending: self.store.config.max_pending_inputs,
        });
        let relay = legacy.then(|| entry.relay.clone());
        let context = context.rebind(entry.cancel.clone(), relay, InputMode::Task(link.clone()));
        // The tool's own timeout, if it has one; the task's TTL bounds the rest (the store's
        // timers). A child token: a timeout stops this run without marking the task cancelled.
        let timeout = tool
            .settings
            .timeout
            .or_else(|| self.tool_timeouts.get(&name).copied());
        let run_cancel = entry.cancel.child_token();
        let outbound = context.outbound();
        let work = {
            let tool = tool.clone();
            async move { Some(tool.run(arguments, context).await) }
        };
        let blocking = tool.settings.blocking;
        let timers = self.store.timers();
        // Built now, awaited only if the answer goes out as a task: a lazy write of the
        // task's record to the shared store (no engine in it).
        let publish = self.sync().map(|sync| {
            let id = entry.id.clone();
            Box::pin(async move { sync.publish(&id).await }) as BoxFuture<'static, ()>
        });
        let mut job = TaskJob {
            id,
            tool,
            name: name.clone(),
            scope,
            round,
            entry,
            link,
            request_cancel,
            guard: Some(guard),
            plan: Some(plan),
            detached: legacy,
        };
        let reply = legacy.then(|| {
            if let Some(plan) = job.plan.take() {
                plan.reservation.commit(job.entry.clone(), &self.store);
            }
            job.guard = None;
            let task = job.entry.json(&self.store.config, false);
            OutgoingMessage::Response {
                id: job.id.clone(),
                result: json!({"task": task}),
            }
        });
        let invocation = Invocation::new(
            HandlerKind::Task,
            name,
            timeout,
            run_cancel,
            ticket,
            work,
            Continuation::Task(Box::new(job)).into_job(),
            host,
        )
        .blocking(blocking)
        .publishing(publish)
        .emitting(outbound);
        let detach = match reply {
            Some(reply) => Detach::Now(reply),
            None => Detach::OnFirstPending,
        };
        Handled::Invoke(invocation.detached(detach, timers))
    }

    /// A call that may become a task, whose work waited at its first poll: it becomes a
    /// task, and its `CreateTaskResult` is the answer; `None` when the request was cancelled
    /// first (it never becomes a task).
    pub(in crate::engine) fn detach(
        &self,
        job: &mut TaskJob,
        results: &Results,
    ) -> Option<OutgoingMessage> {
        // Read before the guard goes, which cancels the request's token.
        let cancelled = job.request_cancel.is_cancelled();
        job.guard = None;
        if cancelled {
            // Cancelled before it became a task: it never will.
            job.entry.cancel.cancel();
            return None;
        }
        job.link.start();
        if let Some(plan) = job.plan.take() {
            plan.reservation.commit(job.entry.clone(), &self.store);
        }
        job.detached = true;
        let mut task = job.entry.json(&self.store.config, false);
        task.insert("resultType".into(), json!("task"));
        Some(results.respond(job.id.clone(), Ok(Value::Object(task)), &job.scope))
    }

    /// How a task's work ended: recorded in the task once its answer went out (`None`: nothing
    /// to send, as for a call cancelled before it became a task), else answered as the call
    /// it still was ([`TaskEnd`]).
    pub(in crate::engine) fn finish(
        &self,
        job: TaskJob,
        outcome: Result<Option<ToolOutput>, Option<Failure>>,
        results: &Results,
    ) -> Option<TaskEnd> {
        let TaskJob {
            id,
            tool,
            name,
            scope,
            round,
            entry,
            guard,
            plan,
            detached,
            ..
        } = job;
        drop(guard);
        let output = match outcome {
            Ok(output) => Some(output),
            Err(Some(Failure::TimedOut(t))) => Some(Some(ToolOutput::failure(
                crate::engine::invoke::timeout_error(&name, t),
            ))),
            Err(Some(_)) => Some(None),
            Err(None) => None,
        };
        if detached {
            self.record_outcome(&entry, output, &tool, &name, &scope, results);
            return None;
        }
        drop(plan);
        // Finished (or cancelled) before it first waited: answered as a call.
        let output = output?;
        let output = output.unwrap_or_else(|| {
            ToolOutput::failure(McpErrorDetail::new(
                "InternalError",
                format!("Tool {name} failed with an internal error"),
            ))
        });
        Some(TaskEnd {
            id,
            tool,
            name,
            scope,
            round,
            output,
        })
    }

    /// Records how a task's work ended: its result (a tool failure included), an internal
    /// error (`None`: it panicked), or, when it was stopped (`outcome` `None`), a
    /// cancellation, unless the task already ended (expired or cancelled by request).
    fn record_outcome(
        &self,
        entry: &Arc<TaskEntry>,
        outcome: Option<Option<ToolOutput>>,
        tool: &RegisteredTool,
        name: &str,
        scope: &RequestScope,
        results: &Results,
    ) {
        match outcome {
            Some(Some(output)) => {
                // Encoded once for the cap and the size kept; the record holds the value.
                let (result, encoded) = results.capped_tool_result(tool, name, output, scope);
                let bytes = encoded.len();
                drop(encoded);
                let result = result.into_value();
                let is_error = result.get("isError") == Some(&Value::Bool(true));
                let message = is_error.then(|| failure_message(&result));
                let value = results.finish_result(result, scope);
                if entry.finish(Outcome::Result { value, is_error }, message) {
                    self.store.retain(entry, bytes);
                }
            }
            Some(None) => {
                entry.finish(
                    Outcome::Error(ErrorObject::internal(format!(
                        "Tool {name} failed with an internal error"
                    ))),
                    Some("The tool failed with an internal error".into()),
                );
            }
            None => {
                entry.finish(Outcome::Cancelled, Some("The task was cancelled.".into()));
            }
        }
    }
}

/// A short diagnostic for a failed 2025-11-25 task: the first text of the tool's error.
pub(super) fn failure_message(result: &Value) -> String {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find_map(|b| b.get("text").and_then(Value::as_str)))
        .unwrap_or("the tool reported an error");
    let short: String = text.chars().take(256).collect();
    format!("Tool execution failed: {short}")
}
