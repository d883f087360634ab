//! [`Tasks`]' `tasks/*` methods of both eras, each reading its task's record through the
//! [`TaskStore`](crate::task_store::TaskStore) (`shared.rs`), and the tasks capability.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use std::time::Duration;

use super::shared::*;
use crate::context::MessageSink;
use crate::engine::jobs::output;
use crate::engine::results::Results;
use crate::engine::session::Session;
use crate::engine::{Handled, RequestScope, error};
use crate::invocation::JobHost;
use crate::platform::Timestamp;
use crate::registry::TaskSupport;
use crate::task_store::{TaskRecord, TaskStoreError};
use crate::wire::{Era, ErrorObject, ProtocolVersion, RequestId};

impl Tasks {
    /// Sends what 2025-11-25 task `task_id` of `session` sends the client (its
    /// server-to-client requests and notifications) to `sink` from now on: the stream of a
    /// `tasks/result` another instance serves for it. `false` when this engine does not run
    /// that task for that session.
    pub(in crate::engine) fn relay(
        &self,
        session: &Arc<Session>,
        task_id: &str,
        sink: Arc<dyn MessageSink>,
    ) -> bool {
        let Some(entry) = self.live(task_id, Era::Legacy, session, None) else {
            return false;
        };
        entry.relay.redirect(sink);
        true
    }

    /// The task `task_id` this instance runs, if `session` may see it in `era` and it has not
    /// expired by `now` (by the store's clock when `None`).
    fn live(
        &self,
        task_id: &str,
        era: Era,
        session: &Session,
        now: Option<std::time::Instant>,
    ) -> Option<Arc<TaskEntry>> {
        match now {
            Some(now) => self.store.get_at(task_id, now),
            None => self.store.get(task_id),
        }
        .filter(|t| t.owner.admits(era, session))
    }

    /// `tasks/*` requests of both eras. Each reads its task's record through the
    /// [`TaskStore`](crate::task_store::TaskStore) trait, from the default in-memory store or
    /// a shared one alike.
    /// `host` is where a store read's outcome goes back.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::engine) fn handle(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
        sink: &Arc<dyn MessageSink>,
        host: Arc<dyn JobHost>,
    ) -> Handled {
        // A server with no task-supporting tool (and no task left) offers no tasks methods.
        let served = self.registry.supports_tasks() || self.store.len() > 0;
        match scope.era {
            _ if !served => error(&id, ErrorObject::method_not_found(method)),
            Era::Modern => self.modern(session, id, method, params, scope, host),
            Era::Legacy if scope.version != ProtocolVersion::V2025_11_25 => {
                error(&id, ErrorObject::method_not_found(method))
            }
            Era::Legacy if matches!(method, "tasks/get" | "tasks/cancel" | "tasks/result") => {
                self.legacy(session, id, method, params, scope, sink, host)
            }
            Era::Legacy if method == "tasks/list" => self.legacy_list(session, id, params, host),
            Era::Legacy => error(&id, ErrorObject::method_not_found(method)),
        }
    }

    /// The tasks capability of `version`, added to `capabilities` when a tool supports tasks:
    /// `extensions["io.modelcontextprotocol/tasks"]` on 2026-07-28, `tasks` on 2025-11-25.
    pub(in crate::engine) fn with_capabilities(
        &self,
        capabilities: Value,
        version: ProtocolVersion,
    ) -> Value {
        let Value::Object(mut caps) = capabilities else {
            return capabilities;
        };
        if !self.registry.supports_tasks() {
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
    pub(in crate::engine) fn with_support(
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
                    .and_then(|n| self.registry.lookup(n))
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

impl Tasks {
    /// The answer to a `tasks/*` request whose store read ended at `now` with `outcome`.
    pub(in crate::engine) fn finish_store_read(
        &self,
        now: Timestamp,
        job: StoreRead,
        outcome: crate::invocation::Outcome,
        results: &Results,
    ) -> Option<OutgoingMessage> {
        let (id, failure) = match job {
            StoreRead::Modern { id, scope } => match output(outcome) {
                Ok(result) => return Some(results.respond(id, result, &scope)),
                Err(failure) => (id, failure),
            },
            StoreRead::Legacy { id, guard } => {
                drop(guard);
                match output(outcome) {
                    Ok(answer) => return answer,
                    Err(failure) => (id, failure),
                }
            }
            StoreRead::List {
                id,
                session,
                key,
                principal,
                after,
                size,
            } => match output(outcome) {
                Ok(stored) => {
                    return Some(
                        self.list_page(now, id, session, &key, &principal, after, size, stored),
                    );
                }
                Err(failure) => (id, failure),
            },
        };
        store_failed(id, failure?)
    }
}

impl Tasks {
    fn wall_ms(&self) -> u64 {
        wall_ms(self.time.wall())
    }

    /// The driver's handle on these tasks in a shared
    /// [`TaskStore`](crate::task_store::TaskStore); `None` when the engine keeps its tasks to
    /// itself (no store configured).
    pub(in crate::engine) fn sync(&self) -> Option<TaskSync> {
        self.store.sync()
    }

    /// 2026-07-28 `tasks/get`, `tasks/update` and `tasks/cancel`, for clients that declare the
    /// extension (`tasks/result` and `tasks/list` do not exist there), of a task this instance
    /// runs or, with a shared store, another one does. One path for both: the record is read
    /// through the [`TaskStore`] in a [`Wait`]; what acts on the work (delivering answers,
    /// stopping it) goes to the live task when this instance runs it, else through the store.
    fn modern(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
        host: Arc<dyn JobHost>,
    ) -> Handled {
        if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") {
            return error(&id, ErrorObject::method_not_found(method));
        }
        if !declares_extension(&scope.client_capabilities) {
            return error(
                &id,
                missing_extension(&format!("{method} needs the {TASKS_EXTENSION} extension")),
            );
        }
        let Some(task_id) = params.get("taskId").and_then(Value::as_str) else {
            return error(&id, ErrorObject::invalid_params("taskId must be a string"));
        };
        let task_id = task_id.to_owned();
        // Checked once the task is found, as an unknown task is the first thing to hear of.
        let mut update = Map::new();
        if let Some(r) = params.get("inputResponses") {
            update.insert("inputResponses".into(), r.clone());
        }
        let live = self.live(&task_id, Era::Modern, session, Some(scope.now.mono));
        let tasks = self.store.clone();
        let store = tasks.records();
        let principal = session.principal().map(|p| p.subject);
        let method = method.to_owned();
        let deadline = self.store_deadline();
        let now = wall_ms(scope.now.wall);
        let job = StoreRead::Modern {
            id,
            scope: scope.clone(),
        };
        store_wait(host, job, deadline, async move {
            let result: Result<Value, ErrorObject> = async {
                if let Some(entry) = &live {
                    tasks.write_ahead(&store, entry).await?;
                }
                let record = store
                    .get(&task_id, now)
                    .await
                    .map_err(|e| unavailable(&e))?
                    .filter(|r| admits(r, Era::Modern, &principal, None))
                    .ok_or_else(not_found)?;
                Ok(match method.as_str() {
                    "tasks/get" => Value::Object(render(&record, true)),
                    "tasks/update" => {
                        let responses = super::methods::input_responses(&update)?;
                        match &live {
                            Some(entry) => {
                                entry.update(responses);
                            }
                            None => {
                                store
                                    .deliver(&task_id, responses.clone())
                                    .await
                                    .map_err(|e| unavailable(&e))?;
                            }
                        }
                        json!({})
                    }
                    // Idempotent: cancelling a finished task is acknowledged too.
                    _ => {
                        match &live {
                            Some(entry) => {
                                let _ = entry.cancel();
                            }
                            None => {
                                store
                                    .cancel(&task_id, now)
                                    .await
                                    .map_err(|e| unavailable(&e))?;
                            }
                        }
                        json!({})
                    }
                })
            }
            .await;
            result
        })
    }

    /// 2025-11-25 `tasks/get`, `tasks/cancel` and the blocking `tasks/result` of a task this
    /// instance runs or, with a shared store, another one does. One path for both, as for
    /// [`modern`](Self::modern): the record is read through the [`TaskStore`] in a
    /// [`Wait`]. `tasks/result` waits for the record to end; while it waits, a task this
    /// instance runs relays its server-to-client requests to this request's stream (those of
    /// a task another instance runs stay with the owner's stream).
    #[allow(clippy::too_many_arguments)]
    fn legacy(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
        sink: &Arc<dyn MessageSink>,
        host: Arc<dyn JobHost>,
    ) -> Handled {
        let Some(task_id) = params.get("taskId").and_then(Value::as_str) else {
            return error(&id, ErrorObject::invalid_params("taskId must be a string"));
        };
        let task_id = task_id.to_owned();
        let live = self.live(&task_id, Era::Legacy, session, Some(scope.now.mono));
        let tasks = self.store.clone();
        let store = tasks.records();
        let key = tasks.session_key(session);
        let (guard, relay) = if method == "tasks/result" {
            match session.begin_request(id.clone()) {
                Ok(guard) => (Some(guard), Some(sink.clone())),
                Err(refused) => return error(&id, refused.error()),
            }
        } else {
            (None, None)
        };
        let principal = session.principal().map(|p| p.subject);
        // The injected clock, read for each store read after a wait.
        let time = self.time.clone();
        let wall = move || wall_ms(time.wall());
        // `tasks/result` waits for the task to end, which it does within the longest TTL;
        // each read within the lease.
        let deadline = if method == "tasks/result" {
            self.store.config.ttl + self.store_deadline()
        } else {
            self.store_deadline()
        };
        let method = method.to_owned();
        let cancel = guard.as_ref().map(|g| g.token());
        let job = StoreRead::Legacy {
            id: id.clone(),
            guard,
        };
        store_wait(host, job, deadline, async move {
            let _relay = live.as_ref().zip(relay).map(|(t, s)| t.relay.attach(s));
            let result = async {
                let (store, task_id, principal, live) = (&store, &task_id, &principal, &live);
                let key = &key;
                let tasks = &tasks;
                let read = |now| async move {
                    if let Some(entry) = live {
                        tasks.write_ahead(store, entry).await?;
                    }
                    store
                        .get(task_id, now)
                        .await
                        .map_err(|e| unavailable(&e))?
                        .filter(|r| admits(r, Era::Legacy, principal, key.as_deref()))
                        .ok_or_else(not_found)
                };
                let mut changes = live.as_ref().map(|t| t.changed.subscribe());
                let mut record = read(wall()).await?;
                match method.as_str() {
                    "tasks/get" => Ok(Value::Object(render(&record, false))),
                    "tasks/cancel" => {
                        if record.status.is_terminal() {
                            return Err(ErrorObject::invalid_params(format!(
                                "Cannot cancel task: already in terminal status '{}'",
                                record.status.as_str()
                            )));
                        }
                        let after = match live {
                            Some(entry) => {
                                let _ = entry.cancel();
                                read(wall()).await?
                            }
                            None => store
                                .cancel(task_id, wall())
                                .await
                                .map_err(|e| unavailable(&e))?
                                .ok_or_else(not_found)?,
                        };
                        Ok(Value::Object(render(&after, false)))
                    }
                    _ => loop {
                        if let Some(outcome) = final_of(&record) {
                            break outcome;
                        }
                        // Woken by the store, or by the live task (whose shared record the
                        // driver writes later).
                        let changed = store.changed(task_id, record.updated_at);
                        let live_changed = async {
                            match changes.as_mut() {
                                Some(c) => {
                                    let _ = c.changed().await;
                                }
                                None => std::future::pending().await,
                            }
                        };
                        let cancelled = async {
                            match &cancel {
                                Some(c) => c.cancelled().await,
                                None => std::future::pending().await,
                            }
                        };
                        futures_util::select_biased! {
                            () = cancelled.fuse() => return Err(ErrorObject::internal("cancelled")),
                            r = changed.fuse() => r.map_err(|e| unavailable(&e))?,
                            () = live_changed.fuse() => {}
                        }
                        record = read(wall()).await?;
                    },
                }
            }
            .await;
            if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                return None;
            }
            Some(match result {
                Ok(result) => OutgoingMessage::Response { id, result },
                Err(error) => OutgoingMessage::Error {
                    id: Some(id),
                    error,
                },
            })
        })
    }

    /// 2025-11-25 `tasks/list`: the store's records of the session (which other instances
    /// may serve too), with this instance's own tasks as it holds them now, by creation time
    /// then order of creation on their owner. The cursor is the last task's `createdAt`
    /// milliseconds, `seq` and id.
    fn legacy_list(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: &Map<String, Value>,
        host: Arc<dyn JobHost>,
    ) -> Handled {
        // `None` only without entropy, when no task was created either.
        let key = self.store.session_key(session).unwrap_or_default();
        let store = self.store.records();
        let after = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => {
                match crate::engine::decode_cursor(c).and_then(|c| {
                    let mut parts = c.splitn(3, ':');
                    let ms = parts.next()?.parse::<u64>().ok()?;
                    let seq = parts.next()?.parse::<u64>().ok()?;
                    Some((ms, seq, parts.next()?.to_owned()))
                }) {
                    Some(a) => Some(a),
                    None => return error(&id, ErrorObject::invalid_params("Invalid cursor")),
                }
            }
            Some(_) => return error(&id, ErrorObject::invalid_params("Invalid cursor")),
        };
        let size = self.page_size.max(1);
        let now = self.wall_ms();
        let job = StoreRead::List {
            id,
            session: session.serial(),
            key: key.clone(),
            principal: session.principal().map(|p| p.subject),
            after,
            size,
        };
        store_wait(host, job, self.store_deadline(), async move {
            store.list(&key, now).await
        })
    }

    /// A `tasks/list` page, once the store answered with `stored` (at `now`): the session's
    /// records, with this instance's own tasks as it holds them then.
    #[allow(clippy::too_many_arguments)]
    fn list_page(
        &self,
        now: Timestamp,
        id: RequestId,
        session: u64,
        key: &str,
        principal: &Option<String>,
        after: Option<(u64, u64, String)>,
        size: usize,
        stored: Result<Vec<TaskRecord>, TaskStoreError>,
    ) -> OutgoingMessage {
        let stored = match stored {
            Ok(r) => r,
            Err(e) => {
                return OutgoingMessage::Error {
                    id: Some(id),
                    error: unavailable(&e),
                };
            }
        };
        let tasks = &self.store;
        let poll = tasks.config.poll_interval;
        let mut records: Vec<TaskRecord> = stored
            .into_iter()
            .filter(|r| admits(r, Era::Legacy, principal, Some(key)))
            .map(|r| match tasks.get(&r.id) {
                Some(local) => local.record("", poll, 0),
                None => r,
            })
            .collect();
        // After the store answered: the local tasks as they are then.
        for local in tasks.list(session, principal, now.mono) {
            if !records.iter().any(|r| r.id == local.id) {
                records.push(local.record("", poll, 0));
            }
        }
        let order = |r: &TaskRecord| (r.created_at, r.seq, r.id.clone());
        records.sort_by_key(order);
        let mut rest = records
            .into_iter()
            .filter(|r| after.as_ref().is_none_or(|a| order(r) > *a));
        let page: Vec<TaskRecord> = rest.by_ref().take(size).collect();
        let mut obj = Map::new();
        obj.insert(
            "tasks".into(),
            Value::Array(
                page.iter()
                    .map(|r| Value::Object(render(r, false)))
                    .collect(),
            ),
        );
        if rest.next().is_some()
            && let Some(last) = page.last()
        {
            obj.insert(
                "nextCursor".into(),
                json!(crate::engine::encode_cursor(&format!(
                    "{}:{}:{}",
                    last.created_at, last.seq, last.id
                ))),
            );
        }
        OutgoingMessage::Response {
            id,
            result: Value::Object(obj),
        }
    }

    /// How long one read of the shared store may take: its lease (a record read later than
    /// that may already be stale).
    fn store_deadline(&self) -> Duration {
        self.store
            .shared
            .as_ref()
            .map_or(Duration::from_secs(10), |s| s.lease)
    }
}
