//! `resources/read`, `resources/list`, `resources/templates/list` and the legacy
//! `resources/subscribe`/`unsubscribe`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::jobs::{Continuation, Round};
use super::policy::Failure;
use super::*;
use crate::context::MessageSink;
use crate::resources::ResourceError;
use crate::wire::ResourceContents;
use crate::wire::{Era, ErrorCode, ErrorObject, RequestId};

impl Engine {
    pub(super) fn read_resource(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        mut params: Map<String, Value>,
        scope: RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let Some(Value::String(uri)) = params.remove("uri") else {
            return error(
                &id,
                ErrorObject::invalid_params("resources/read: uri must be a string"),
            );
        };
        if !self.shared.access.permits_uri(session, &uri) {
            let denied = crate::resources::ResourceError::NotFound(uri.clone());
            return error(&id, self.resource_error(&uri, denied, &scope));
        }
        if let Some(reply) = self.read_skill_file(&id, &uri, &scope) {
            return reply;
        }
        let Some(resources) = self.shared.resources.clone() else {
            return error(&id, ErrorObject::method_not_found("resources/read"));
        };
        let prepared = match self.prepare(
            session,
            &id,
            "resources/read",
            &uri,
            &mut params,
            &scope,
            sink,
        ) {
            Ok(p) => p,
            Err(e) => return error(&id, e),
        };
        let ticket = match self.shared.policy.admit(
            session.gate(),
            HandlerKind::Resource,
            &uri,
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
        let timeout = self.shared.config.tool_timeout;
        let outbound = context.outbound();
        let read = {
            let uri = uri.clone();
            async move { resources.read(&uri, context).await }
        };
        let job = Continuation::Resource {
            id,
            uri: uri.clone(),
            scope,
            round,
            guard,
        };
        Handled::Invoke(
            Invocation::new(
                HandlerKind::Resource,
                uri,
                Some(timeout),
                cancel,
                ticket,
                read,
                job.into_job(),
                self.host(),
            )
            .emitting(outbound),
        )
    }

    /// The answer to a `resources/read` whose handler ended at `now` with `read`.
    pub(super) fn finish_read(
        &self,
        now: Timestamp,
        id: RequestId,
        uri: &str,
        scope: &RequestScope,
        round: Option<Round>,
        read: Result<Result<Vec<ResourceContents>, ResourceError>, Option<Failure>>,
    ) -> Option<OutgoingMessage> {
        if matches!(read, Err(None)) {
            return None;
        }
        let outcome = self.round_outcome(now, "resources/read", uri, round.as_ref());
        let result = match (outcome, read) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(input_required)), _) => Ok(input_required),
            (None, Err(None)) => return None,
            (None, Err(Some(failure))) => Err(invoke::failure_error(
                HandlerKind::Resource,
                "Reading the resource",
                failure,
            )),
            (None, Ok(Ok(contents))) => {
                let mut obj = Map::new();
                obj.insert(
                    "contents".into(),
                    serde_json::to_value(contents).unwrap_or_else(|_| json!([])),
                );
                let result = self.shared.results.cacheable(obj, scope);
                return Some(self.shared.results.respond_capped(id, result, scope));
            }
            (None, Ok(Err(e))) => Err(self.resource_error(uri, e, scope)),
        };
        Some(self.shared.results.respond(id, result, scope))
    }

    pub(super) fn resource_error(
        &self,
        uri: &str,
        e: ResourceError,
        scope: &RequestScope,
    ) -> ErrorObject {
        let shown: String = uri.chars().take(512).collect();
        match e {
            ResourceError::NotFound(_) => {
                let code = if scope.era == Era::Modern {
                    ErrorCode::INVALID_PARAMS
                } else {
                    ErrorCode::LEGACY_RESOURCE_NOT_FOUND
                };
                ErrorObject::new(code, "Resource not found").with_data(json!({"uri": shown}))
            }
            ResourceError::AccessDenied(reason) => {
                ErrorObject::invalid_params(format!("Access denied: {reason}"))
                    .with_data(json!({"uri": shown}))
            }
            ResourceError::Failed(reason) => ErrorObject::internal(reason),
        }
    }

    /// `resources/list`: answered at once, or, when the registry has listers (user code that
    /// may walk a directory, panic or hang), through an [`Invocation`] under the execution
    /// policy like every other handler: admitted, with a permit, a deadline and an unwind
    /// guard, cancellable by `notifications/cancelled`.
    pub(super) fn list_resources(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: &Map<String, Value>,
        scope: RequestScope,
    ) -> Handled {
        let Some(resources) = &self.shared.resources else {
            return error(&id, ErrorObject::method_not_found("resources/list"));
        };
        let after = match cursor(params) {
            Ok(after) => after,
            Err(e) => return error(&id, e),
        };
        let size = self.shared.config.page_size;
        if !resources.has_listers() {
            return Handled::Reply(self.list_page(
                id,
                ListKind::Resources,
                params,
                &scope,
                self.shared.access.grant(session),
            ));
        }
        let ticket = match self.shared.policy.admit(
            session.gate(),
            HandlerKind::ResourceList,
            "resources/list",
            scope.now.mono,
        ) {
            Ok(t) => t,
            Err(refusal) => return error(&id, invoke::refusal_error(refusal)),
        };
        let guard = match session.begin_request(id.clone()) {
            Ok(guard) => guard,
            Err(refused) => return error(&id, refused.error()),
        };
        let cancel = guard.token();
        let skills = self.shared.skills.clone();
        let listed = resources.page_listed(after.clone(), size);
        let (engine, grant) = (self.clone(), self.shared.access.grant(session));
        let page = async move {
            let page = listed.await;
            let (items, next) =
                skills::with_skill_mds(skills.as_deref(), after.as_deref(), size, page);
            (
                engine
                    .shared
                    .access
                    .allowed_items(grant, "resources", items),
                next,
            )
        };
        Handled::Invoke(Invocation::new(
            HandlerKind::ResourceList,
            "resources/list",
            Some(self.shared.config.tool_timeout),
            cancel,
            ticket,
            page,
            Continuation::ResourceList { id, scope, guard }.into_job(),
            self.host(),
        ))
    }

    /// The answer to a `resources/list` whose listers ended with `page`.
    pub(super) fn finish_resource_list(
        &self,
        id: RequestId,
        scope: &RequestScope,
        page: Result<(Vec<Value>, Option<String>), Option<Failure>>,
    ) -> Option<OutgoingMessage> {
        let result = match page {
            Ok((items, next)) => {
                Ok(self
                    .shared
                    .results
                    .page_result("resources", items, next, scope))
            }
            Err(None) => return None,
            Err(Some(failure)) => Err(invoke::failure_error(
                HandlerKind::ResourceList,
                "Listing resources",
                failure,
            )),
        };
        Some(self.shared.results.respond(id, result, scope))
    }

    pub(super) fn subscribe(
        &self,
        session: &Session,
        params: &Map<String, Value>,
        on: bool,
    ) -> Result<Value, ErrorObject> {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(ErrorObject::invalid_params("uri must be a string"));
        };
        if on && !self.shared.access.permits_uri(session, uri) {
            return Err(ErrorObject::new(
                ErrorCode::LEGACY_RESOURCE_NOT_FOUND,
                "Resource not found",
            )
            .with_data(json!({"uri": uri.chars().take(512).collect::<String>()})));
        }
        if on {
            if !session.subscribe(uri, self.shared.resources.as_ref()) {
                return Err(ErrorObject::invalid_params(
                    "Too many resource subscriptions",
                ));
            }
        } else {
            session.unsubscribe(uri);
        }
        Ok(json!({}))
    }
}
