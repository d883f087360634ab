//! Task-augmented tool calls and their outcome, in both eras' forms:
//!
//! - **2025-11-25** (experimental tasks): the call carries a `task` parameter and is answered
//!   at once with `{task}`; the outcome comes from the blocking `tasks/result`.
//! - **2026-07-28** (the `io.modelcontextprotocol/tasks` extension): the call declares the
//!   extension in its client capabilities, and the *server* decides: an ordinary result, or a
//!   `CreateTaskResult` (`resultType: "task"`). The outcome comes from polling `tasks/get`,
//!   whose `DetailedTask` inlines the result or error; input a parked task asks for
//!   (`inputRequests`) is answered by the client's handlers through `tasks/update`.
//!
//! Also `tasks/get`, `tasks/list` and `tasks/cancel`; `tasks/list` is 2025-11-25 only (the
//! 2026-07-28 extension has none). Not a task store: nothing here remembers tasks.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::proto::{self, InputRequest};
use super::{ClientError, McpClient};
use crate::Era;
use crate::engine::META_CLIENT_CAPABILITIES;
use crate::wire::ErrorObject;

use crate::engine::TASKS_EXTENSION;

/// Why [`McpClient::list_tasks`] fails in 2026-07-28, and what to do instead.
const NO_MODERN_LIST: &str = "the server speaks 2026-07-28, whose tasks extension has \
no tasks/list (SEP-2663 removed it): a task is known by the id its call returned; show, wait for \
or cancel one by that id (`tasks ID`, `tasks ID --result`, `tasks ID --cancel`), or list a \
2025-11-25 server's tasks with --era legacy";

/// The poll interval when the server names none, and the bounds on the one it names.
const DEFAULT_POLL: Duration = Duration::from_millis(500);
const MIN_POLL: Duration = Duration::from_millis(20);
const MAX_POLL: Duration = Duration::from_secs(5);

/// What a task-augmented call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskCall {
    /// The server answered at once (2026-07-28 servers may): the `CallToolResult`.
    Done(Value),
    /// A task was made: the task (`taskId`, `status`, ...).
    Task(Value),
}

impl McpClient {
    /// `params` declaring the tasks extension in their client capabilities (2026-07-28;
    /// unchanged in the legacy era, whose tasks are a server capability).
    pub(super) fn with_tasks(&self, mut params: Value) -> Value {
        if self.era() == Era::Legacy {
            return params;
        }
        let mut caps = self.capabilities().clone();
        if let Value::Object(c) = &mut caps {
            let ext = c.entry("extensions").or_insert_with(|| json!({}));
            if let Value::Object(e) = ext {
                e.insert(TASKS_EXTENSION.into(), json!({}));
            }
        }
        if let Value::Object(p) = &mut params {
            p.insert("_meta".into(), json!({ META_CLIENT_CAPABILITIES: caps }));
        }
        params
    }

    /// Calls a tool as a task: `ttl` asks a 2025-11-25 server to keep it that long (a
    /// 2026-07-28 server picks its own).
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl: Option<Duration>,
    ) -> Result<TaskCall, ClientError> {
        let mut params = json!({"name": name, "arguments": arguments});
        match self.era() {
            Era::Legacy => {
                let mut task = Map::new();
                if let Some(ttl) = ttl {
                    let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
                    task.insert("ttl".into(), json!(ms));
                }
                params["task"] = Value::Object(task);
                let result = self.request("tools/call", params).await?;
                match result.get("task") {
                    Some(task) if task.is_object() => Ok(TaskCall::Task(task.clone())),
                    _ => Ok(TaskCall::Done(result)),
                }
            }
            Era::Modern => {
                let mut result = self.request("tools/call", self.with_tasks(params)).await?;
                if result.get("resultType").and_then(Value::as_str) == Some("task") {
                    if let Value::Object(r) = &mut result {
                        r.remove("resultType");
                    }
                    return Ok(TaskCall::Task(result));
                }
                Ok(TaskCall::Done(result))
            }
        }
    }

    /// `tasks/get` (both eras' task forms share the method; on 2026-07-28 the request
    /// declares the tasks extension).
    pub async fn get_task(&self, task_id: &str) -> Result<Value, ClientError> {
        self.request("tasks/get", self.with_tasks(json!({"taskId": task_id})))
            .await
    }

    /// `tasks/list` (2025-11-25 experimental tasks). The 2026-07-28 tasks extension has no
    /// list (SEP-2663 removed it: a task is known by the id its call returned), so in that era
    /// this is [`ClientError::Era`] without asking the server.
    pub async fn list_tasks(&self) -> Result<Vec<Value>, ClientError> {
        if self.era() == Era::Modern {
            return Err(ClientError::Era(NO_MODERN_LIST.into()));
        }
        self.list_all("tasks/list", "tasks").await
    }

    /// `tasks/cancel`.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Value, ClientError> {
        self.request("tasks/cancel", self.with_tasks(json!({"taskId": task_id})))
            .await
    }

    /// `tasks/update` (2026-07-28): answers a parked task's `inputRequests`.
    pub async fn update_task(
        &self,
        task_id: &str,
        input_responses: Map<String, Value>,
    ) -> Result<(), ClientError> {
        self.request(
            "tasks/update",
            self.with_tasks(json!({"taskId": task_id, "inputResponses": input_responses})),
        )
        .await
        .map(|_| ())
    }

    /// The outcome of a task: what the call would have returned (a `CallToolResult`), or
    /// the error it ended with. Waits for the task to end; on 2026-07-28 it polls, and
    /// answers input the task asks for with the client's handlers, at most
    /// [`MAX_INPUT_ROUNDS`](proto::MAX_INPUT_ROUNDS) times.
    pub async fn task_result(&self, task_id: &str) -> Result<Value, ClientError> {
        if self.era() == Era::Legacy {
            return self
                .request("tasks/result", json!({"taskId": task_id}))
                .await;
        }
        let mut rounds = 0usize;
        loop {
            let task = self.get_task(task_id).await?;
            match task.get("status").and_then(Value::as_str) {
                Some("completed") => {
                    return task.get("result").cloned().ok_or_else(|| {
                        ClientError::Protocol("a completed task without a result".into())
                    });
                }
                Some("failed") => {
                    let error = task
                        .get("error")
                        .cloned()
                        .and_then(|e| serde_json::from_value::<ErrorObject>(e).ok());
                    return match (error, task.get("result")) {
                        (Some(e), _) => Err(ClientError::Server(e)),
                        // A tool error is a result with isError.
                        (None, Some(r)) => Ok(r.clone()),
                        (None, None) => Err(ClientError::Protocol("the task failed".into())),
                    };
                }
                Some("cancelled") => {
                    return Err(ClientError::Protocol(format!(
                        "task {task_id} was cancelled"
                    )));
                }
                Some("input_required") => {
                    let mut responses = Map::new();
                    let requests = task
                        .get("inputRequests")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    proto::input_requests_within_bound(requests.len())
                        .map_err(|why| ClientError::Protocol(format!("task {task_id}: {why}")))?;
                    for (key, request) in requests {
                        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
                        let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                        let answer = self
                            .shared
                            .handlers
                            .answer(InputRequest::classify(method, params))
                            .await
                            .map_err(|e| {
                                ClientError::Protocol(format!(
                                    "task {task_id} asked for {method}, which this client cannot answer: {}",
                                    e.message
                                ))
                            })?;
                        responses.insert(key, answer);
                    }
                    if !responses.is_empty() {
                        // A task that keeps asking cannot keep the client busy forever.
                        rounds += 1;
                        if rounds > proto::MAX_INPUT_ROUNDS {
                            return Err(ClientError::Protocol(format!(
                                "task {task_id} still asked for input after {} rounds",
                                proto::MAX_INPUT_ROUNDS
                            )));
                        }
                        self.update_task(task_id, responses).await?;
                        continue;
                    }
                }
                Some(_) | None => {}
            }
            let poll = task
                .get("pollIntervalMs")
                .and_then(Value::as_u64)
                .map_or(DEFAULT_POLL, Duration::from_millis)
                .clamp(MIN_POLL, MAX_POLL);
            tokio::time::sleep(poll).await;
        }
    }
}
