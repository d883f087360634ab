//! The MCP endpoint: POST, GET and DELETE, for both eras.

// Handlers return ready-made HTTP responses as their error type; they are cold paths.
#![allow(clippy::result_large_err)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{
    Extensions, HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, header,
};
use serde_json::Map;
use tokio::sync::mpsc;

use crate::engine::{
    Accepts, Delivery, Handled, JSON_MEDIA_TYPE, Refusal, RequestMeta, Respond, Route,
    STREAM_MEDIA_TYPE, Status, changes_session_record, check_post, check_stream,
    legacy_version_header, status_for,
};
use crate::runtime::Drive as _;
use crate::store::{EventId, EventStore, ReplayScope, StoreError};
use crate::wire::{Decoded, decode};
use crate::wire::{ErrorCode, ErrorObject, IncomingMessage, OutgoingMessage};
use crate::{MessageSink, NullSink, Principal};

use super::conn_timer::ConnTimer;
use super::limits::{SERVER_BUSY, with_retry_after};
use super::metrics::{Label, Served};
use super::refusals::{Reason, refused as marked};
use super::replay::LogSink;
use super::sessions::HttpSession;
use super::sse::{ChannelSink, SseBody};
use super::trace;
use super::{AppState, rpc_error};
use tracing::Instrument;

static SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
static LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

fn json_response(status: StatusCode, message: &OutgoingMessage) -> Response<Body> {
    let mut resp = Response::new(Body::from(message.to_bytes()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(JSON_MEDIA_TYPE),
    );
    resp
}

fn accepted() -> Response<Body> {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::ACCEPTED;
    resp
}

fn sse_response(body: SseBody) -> Response<Body> {
    let mut resp = Response::new(Body::new(body));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(STREAM_MEDIA_TYPE),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

fn bad(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response<Body> {
    rpc_error(status, None, ErrorObject::new(code, message))
}

/// The HTTP status of a [`Status`] the core decided on: the one place they are mapped.
fn http_status(status: Status) -> StatusCode {
    match status {
        Status::Ok => StatusCode::OK,
        Status::BadRequest => StatusCode::BAD_REQUEST,
        Status::NotFound => StatusCode::NOT_FOUND,
        Status::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
        Status::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        Status::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        // A status added to the core and not mapped here yet.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// `message` with the status the core gives it on `route` ([`status_for`]).
fn answer(route: &Route, message: &OutgoingMessage) -> Response<Body> {
    refused(status_for(message, route), message)
}

/// `message` with `status`, as the core decided; retry later when it says unavailable.
fn refused(status: Status, message: &OutgoingMessage) -> Response<Body> {
    let response = json_response(http_status(status), message);
    if status == Status::Unavailable {
        with_retry_after(response, Duration::from_secs(1))
    } else {
        response
    }
}

/// A refusal by a rule of the protocol ([`Refusal`]), with its status.
fn refusal(r: Refusal) -> Response<Body> {
    refused(
        r.status,
        &OutgoingMessage::Error {
            id: None,
            error: r.error,
        },
    )
}

/// What a request's `Accept` headers allow, as the core reads them.
fn accepts(headers: &HeaderMap) -> Accepts {
    Accepts::of(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .map(HeaderValue::as_bytes),
    )
}

fn session_id(headers: &HeaderMap) -> Result<Option<&str>, Response<Body>> {
    match headers.get(&SESSION_HEADER) {
        None => Ok(None),
        Some(v) => v.to_str().map(|s| Some(s.trim_ascii())).map_err(|_| {
            bad(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Invalid Mcp-Session-Id header",
            )
        }),
    }
}

/// A request's body as the handler reads it: hyper's own, as the endpoint passes it on (no
/// box per request), or axum's, through the router.
pub(crate) trait RequestBody:
    http_body::Body<Data = axum::body::Bytes, Error: Into<axum::BoxError>> + Send + 'static
{
}

impl<B> RequestBody for B where
    B: http_body::Body<Data = axum::body::Bytes, Error: Into<axum::BoxError>> + Send + 'static
{
}

/// The body, within `max_body_bytes` and `request_timeout`. The deadline is on the
/// connection's timer when the server loop gave one ([`ConnTimer`]), else a tokio sleep.
async fn read_body(
    app: &AppState,
    body: impl RequestBody,
    timer: Option<&ConnTimer>,
) -> Result<axum::body::Bytes, Response<Body>> {
    let limit = app.config.max_body_bytes;
    let too_large = || {
        marked(
            bad(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::INVALID_REQUEST,
                format!("Request body exceeds the {limit}-byte limit"),
            ),
            Reason::BodyTooLarge,
            None,
        )
    };
    // A declared Content-Length over the limit is refused before any of it is read.
    if http_body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(too_large());
    }
    let timeout = app.config.request_timeout;
    let mut read = std::pin::pin!(async move {
        use http_body_util::BodyExt as _;
        http_body_util::Limited::new(body, limit)
            .collect()
            .await
            .map(http_body_util::Collected::to_bytes)
    });
    // A body that is here already (a call's usually comes with its head) is read with no
    // deadline set and no clock read; one still to come is waited for within the timeout.
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(read.as_mut().poll(cx))).await;
    let read = match (first, timer) {
        (std::task::Poll::Ready(r), _) => Some(r),
        (std::task::Poll::Pending, Some(timer)) => {
            let deadline = timer.after(timeout);
            tokio::select! {
                biased;
                r = read => Some(r),
                () = deadline => None,
            }
        }
        (std::task::Poll::Pending, None) => tokio::time::timeout(timeout, read).await.ok(),
    };
    match read {
        None => Err(marked(
            bad(
                StatusCode::REQUEST_TIMEOUT,
                ErrorCode::INVALID_REQUEST,
                "Request body was not received in time",
            ),
            Reason::BodyTimeout,
            None,
        )),
        Some(Err(_)) => Err(too_large()),
        Some(Ok(b)) => Ok(b),
    }
}

/// POST: one JSON-RPC message (or, in revisions that allow it, a batch).
pub(crate) async fn post(State(app): State<AppState>, req: Request<Body>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    serve_post(&app, &parts.headers, parts.extensions, body).await
}

/// [`post`] on a request's parts, owned: what [`Endpoint`](super::endpoint::Endpoint) boxes
/// without the router. Only the head's headers and extensions are kept: the future of every
/// call of a session is allocated and its first state copied, so it carries no more than it
/// needs (its size is held below glibc's per-thread cache limit by a test).
// Not an `async fn`, which would keep each argument twice in the future.
#[allow(clippy::manual_async_fn)]
pub(crate) fn serve_owned(
    app: Arc<AppState>,
    headers: HeaderMap,
    extensions: Extensions,
    body: impl RequestBody,
) -> impl Future<Output = Response<Body>> + Send + 'static {
    async move { serve_post(&app, &headers, extensions, body).await }
}

/// A POST, with the label of what it carried for the metrics.
async fn serve_post(
    app: &AppState,
    headers: &HeaderMap,
    extensions: Extensions,
    body: impl RequestBody,
) -> Response<Body> {
    let mut method = Label::NONE;
    let mut resp = post_message(app, headers, &extensions, body, &mut method).await;
    if resp.extensions().is_empty() {
        // The request's map, emptied, carries the label: no map is allocated for it.
        let mut reused = extensions;
        reused.clear();
        *resp.extensions_mut() = reused;
    }
    resp.extensions_mut().insert(Served(method));
    resp
}

/// The label of what a POST carried, for the metrics.
fn message_label(decoded: &Decoded) -> Label {
    match decoded {
        Decoded::Single(Ok(IncomingMessage::Request { method, .. }))
        | Decoded::Single(Ok(IncomingMessage::Notification { method, .. })) => {
            Label::of_method(method)
        }
        Decoded::Single(Ok(_)) => Label::RESPONSE,
        Decoded::Single(Err(_)) => Label::INVALID,
        _ => Label::BATCH,
    }
}

async fn post_message(
    app: &AppState,
    headers: &HeaderMap,
    extensions: &Extensions,
    body: impl RequestBody,
    label: &mut Label,
) -> Response<Body> {
    let accepts = accepts(headers);
    let content_type = headers.get(header::CONTENT_TYPE).map(HeaderValue::as_bytes);
    if let Err(r) = check_post(content_type, accepts) {
        return refusal(r);
    }
    // Decided in a plain function, the body in a scope of its own: what they read (the
    // body, the decoded message, the classification) is not kept in this future while the
    // answer is awaited.
    let answer = {
        let body = match read_body(app, body, extensions.get::<ConnTimer>()).await {
            Ok(b) => b,
            Err(resp) => return resp,
        };
        let sid = match session_id(headers) {
            Ok(s) => s,
            Err(resp) => return resp,
        };
        let principal = extensions.get::<Principal>();
        route_message(app, headers, accepts, sid, principal, &body, label)
    };
    answer.await
}

/// The route of a decoded POST, and the future that answers it. The core decides the route
/// and parses `_meta` once; this transport only maps the outcome onto HTTP (#14).
fn route_message<'a>(
    app: &'a AppState,
    headers: &'a HeaderMap,
    accepts: Accepts,
    sid: Option<&'a str>,
    principal: Option<&'a Principal>,
    body: &[u8],
    label: &mut Label,
) -> tracing::instrument::Instrumented<impl Future<Output = Response<Body>> + Send + use<'a>> {
    use futures_util::future::Either::{Left, Right};
    use std::future::ready;
    let decoded = decode(body);
    *label = message_label(&decoded);
    let delivery = Delivery::new(
        accepts.json,
        accepts.stream,
        app.config.always_sse,
        sid.is_some(),
    );
    let class = app.engine.classify(&decoded, delivery);
    let span = trace::request_span(
        label.name(),
        trace::trace_parent_from(headers, class.meta.traceparent.as_deref()).as_ref(),
    );
    let meta = class.meta;
    // In the request's span: what runs now (a stateless call's handling) runs in it, as what
    // runs when the answer is polled does.
    let entered = span.enter();
    let answer = match (class.route, decoded, sid) {
        (Route::Refuse { status, message }, ..) => Left(ready(refused(status, &message))),
        (Route::Accept, ..) => Left(ready(accepted())),
        (Route::Legacy, decoded, Some(sid)) => Right(Left(legacy(
            app, headers, delivery, sid, principal, decoded, meta,
        ))),
        (Route::Modern, Decoded::Single(Ok(message)), _) => Right(Right(Left(finish(modern(
            app,
            headers,
            delivery,
            message,
            meta,
            principal.cloned(),
        ))))),
        // Boxed, as every branch off a session's calls: the future of every POST is as
        // large as its largest branch, and it is moved and allocated on every call.
        (Route::Initialize, Decoded::Single(Ok(message)), _) => Right(Right(Right(Box::pin(
            initialize(app, message, meta, principal.cloned()),
        )))),
        _ => Left(ready(bad(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "Internal error",
        ))),
    };
    drop(entered);
    answer.instrument(span)
}

/// A 2026-07-28 message, up to what must be awaited.
fn modern<'a>(
    app: &'a AppState,
    headers: &HeaderMap,
    delivery: Delivery,
    message: IncomingMessage,
    meta: RequestMeta,
    principal: Option<Principal>,
) -> Next<'a> {
    let IncomingMessage::Request { id, method, params } = &message else {
        return Next::Respond(accepted());
    };
    let id = id.clone();
    let empty = Map::new();
    let p = params.as_ref().unwrap_or(&empty);
    // The mirrored headers are this transport's: checked against the `_meta` parsed once.
    if meta.names_version()
        && let Err(e) = super::headers::validate_with(
            headers,
            method,
            p,
            meta.protocol_version.get().map(String::as_str),
            app.engine.registry(),
        )
    {
        return Next::Respond(json_response(
            StatusCode::BAD_REQUEST,
            &OutgoingMessage::Error {
                id: Some(id),
                error: e,
            },
        ));
    }
    let respond = match app.engine.respond_as(&message, &meta, delivery, None) {
        Ok(r) => r,
        Err(Route::Refuse { status, message }) => return Next::Respond(refused(status, &message)),
        Err(_) => return Next::Respond(accepted()),
    };
    let listen = respond == Respond::Listen;
    let session = app.engine.new_stateless_session().with_principal(principal);
    if matches!(respond, Respond::Stream | Respond::Listen) {
        let (tx, rx) = mpsc::channel(256);
        let sink: Arc<dyn MessageSink> = Arc::new(ChannelSink(tx));
        // Driven by the response body: in this request's span all the same.
        let handled =
            trace::in_current_span(app.engine.handle_classified(&session, message, meta, &sink));
        // A subscription is no call: it ends with the server's streams, not its calls.
        let handled = if listen {
            handled
        } else {
            app.drain.watch(id, handled)
        };
        return Next::Respond(match handled {
            Handled::Nothing => accepted(),
            Handled::Reply(m) => answer(&Route::Modern, &m),
            work => {
                let work = crate::runtime::drive(work);
                let body = SseBody::drive(work, rx, Some(app.config.keep_alive));
                // A subscription never ends on its own: it ends with the server.
                let body = if listen {
                    body.until(&app.shutdown)
                } else {
                    body
                };
                sse_response(body)
            }
        });
    }
    let sink = NullSink::shared();
    let handled = app.engine.handle_classified(&session, message, meta, &sink);
    match handled {
        Handled::Nothing => Next::Respond(accepted()),
        Handled::Reply(m) => Next::Respond(answer(&Route::Modern, &m)),
        // Awaited by the POST's future: if the client disconnects, hyper drops it, which
        // cancels the tool.
        work => Next::Answer(&Route::Modern, Box::pin(app.drain.answer(id, work))),
    }
}

async fn initialize(
    app: &AppState,
    message: IncomingMessage,
    meta: RequestMeta,
    principal: Option<Principal>,
) -> Response<Body> {
    let session = app.engine.new_session().with_principal(principal);
    let sink = NullSink::shared();
    let handled = app.engine.handle_classified(&session, message, meta, &sink);
    let Handled::Reply(m) = handled else {
        return bad(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::INTERNAL_ERROR,
            "Internal error",
        );
    };
    if !matches!(
        m,
        OutgoingMessage::Response { .. } | OutgoingMessage::Encoded { .. }
    ) {
        return answer(&Route::Initialize, &m);
    }
    match app.sessions.insert(session).await {
        // Only when every session has a call in flight or an open stream: idle ones make room.
        Err(e @ (StoreError::Full | StoreError::Contended)) => {
            let reason = if e == StoreError::Full {
                Reason::SessionsBusy
            } else {
                Reason::SessionsContended
            };
            marked(
                with_retry_after(
                    bad(
                        StatusCode::SERVICE_UNAVAILABLE,
                        SERVER_BUSY,
                        "Too many sessions in use; try again later",
                    ),
                    Duration::from_secs(1),
                ),
                reason,
                None,
            )
        }
        Err(e) => store_unavailable(app, &e),
        Ok((sid, _)) => {
            let mut resp = json_response(StatusCode::OK, &m);
            if let Ok(v) = HeaderValue::from_str(&sid) {
                resp.headers_mut().insert(SESSION_HEADER.clone(), v);
            }
            resp
        }
    }
}

/// A message of a 2025-11-25 session.
// Not an `async fn`, which would keep each argument twice in the future.
#[allow(clippy::manual_async_fn)]
fn legacy<'a>(
    app: &'a AppState,
    headers: &'a HeaderMap,
    delivery: Delivery,
    sid: &'a str,
    principal: Option<&'a Principal>,
    decoded: Decoded,
    meta: RequestMeta,
) -> impl Future<Output = Response<Body>> + Send + use<'a> {
    async move {
        let session = match app.sessions.get(sid, principal).await {
            Ok(Some(s)) => s,
            Ok(None) => return session_not_found(),
            Err(e) => return store_unavailable(app, &e),
        };
        finish(in_session(app, headers, delivery, session, decoded, meta)).await
    }
}

/// What a message comes to before anything is awaited.
enum Next<'a> {
    /// The response, at once.
    Respond(Response<Body>),
    /// The engine's answer, sent as JSON with the status its route gives it when it is ready.
    Answer(
        &'static Route,
        crate::platform::BoxFuture<'a, Option<OutgoingMessage>>,
    ),
    /// A path that waits on the session store or the other instances first: boxed, since
    /// it is rare and the future of every call would otherwise be as large.
    Later(std::pin::Pin<Box<dyn Future<Output = Response<Body>> + Send + 'a>>),
}

/// The response `next` comes to.
// Not an `async fn`, which would keep each argument twice in the future.
#[allow(clippy::manual_async_fn)]
fn finish(next: Next<'_>) -> impl Future<Output = Response<Body>> + Send + use<'_> {
    async move {
        match next {
            Next::Respond(resp) => resp,
            Next::Answer(route, work) => match work.await {
                Some(m) => answer(route, &m),
                None => accepted(),
            },
            Next::Later(future) => future.await,
        }
    }
}

/// A message of the live `session`, up to what must be awaited (in a plain function, so
/// that the message and what it is read into are not kept in the call's future).
fn in_session<'a>(
    app: &'a AppState,
    headers: &HeaderMap,
    delivery: Delivery,
    session: Arc<HttpSession>,
    decoded: Decoded,
    meta: RequestMeta,
) -> Next<'a> {
    // The core judges the header (2025-11-25, "Protocol Version Header").
    let version = headers
        .get(&super::headers::PROTOCOL_VERSION)
        .map(HeaderValue::as_bytes);
    if let Err(r) = legacy_version_header(version) {
        return Next::Respond(refusal(r));
    }
    let standalone = &session.standalone_sink;
    let message = match decoded {
        Decoded::Single(Ok(m)) => m,
        // Batches (2025-03-26 and earlier) and invalid messages: answered as JSON.
        other => {
            return Next::Answer(
                &Route::Legacy,
                app.engine
                    .handle_decoded(&session.session, other, standalone)
                    .into_message(),
            );
        }
    };
    let IncomingMessage::Request { id, .. } = &message else {
        // An answer or cancellation for a call on another instance goes there.
        if let Some(shared) = app.sessions.shared() {
            return Next::Later(Box::pin(routed_elsewhere(
                app, shared, session, message, meta,
            )));
        }
        app.engine
            .handle_classified(&session.session, message, meta, standalone);
        return Next::Respond(accepted());
    };
    let id = id.clone();
    let respond = app
        .engine
        .respond_as(&message, &meta, delivery, Some(&session.session));
    if let Some(shared) = app.sessions.shared() {
        if respond == Ok(Respond::Stream) {
            return Next::Later(Box::pin(async move {
                shared_stream(app, shared, &session, message, meta, id).await
            }));
        }
        // Answered as JSON: what it relays goes out on the standalone stream (stream 0).
        return Next::Later(Box::pin(async move {
            shared.ask_task_relay(&session, &message, 0).await;
            finish(json_answer(app, session, message, meta, id)).await
        }));
    }
    if respond == Ok(Respond::Stream) {
        return Next::Respond(session_stream(app, &session, message, meta, id));
    }
    json_answer(app, session, message, meta, id)
}

/// A session's request answered as JSON: the engine's answer once its work ends (and, for a
/// request that changed the session's record, once the record is stored).
fn json_answer<'a>(
    app: &'a AppState,
    session: Arc<HttpSession>,
    message: IncomingMessage,
    meta: RequestMeta,
    id: crate::wire::RequestId,
) -> Next<'a> {
    let sets_level = changes_session_record(&message);
    let handled =
        app.engine
            .handle_classified(&session.session, message, meta, &session.standalone_sink);
    let answer = Box::pin(app.drain.answer(id, handled));
    if !sets_level {
        return Next::Answer(&Route::Legacy, answer);
    }
    Next::Later(Box::pin(async move {
        if let Err(e) = app.sessions.persist(&session).await {
            // Set here all the same; only other instances would miss it.
            tracing::warn!(error = %e, "could not store a session's log level");
            app.metrics.store_error();
        }
        finish(Next::Answer(&Route::Legacy, answer)).await
    }))
}

/// A message that is no request, in a session other instances share: an answer or a
/// cancellation for a call on another instance goes there; anything else is handled here.
async fn routed_elsewhere(
    app: &AppState,
    shared: &Arc<super::cluster::Shared>,
    session: Arc<HttpSession>,
    message: IncomingMessage,
    meta: RequestMeta,
) -> Response<Body> {
    match super::cluster_routing::route(shared, &session, &message).await {
        Ok(true) => return accepted(),
        Ok(false) => {}
        Err(StoreError::OwnerGone) => {
            return bad(
                StatusCode::GONE,
                ErrorCode::INVALID_REQUEST,
                "The instance that asked for this answer is gone, and its call with it; \
                 retry the call",
            );
        }
        Err(e) => return store_unavailable(app, &e),
    }
    app.engine
        .handle_classified(&session.session, message, meta, &session.standalone_sink);
    accepted()
}

/// A session's request answered as a resumable stream: the work runs on its own, so a
/// dropped connection loses nothing; the client can resume with Last-Event-ID.
fn session_stream(
    app: &AppState,
    session: &HttpSession,
    message: IncomingMessage,
    meta: RequestMeta,
    id: crate::wire::RequestId,
) -> Response<Body> {
    let log = session.open_stream();
    let sink: Arc<dyn MessageSink> = Arc::new(LogSink(log.clone()));
    let handled = app
        .engine
        .handle_classified(&session.session, message, meta, &sink);
    let handled = app.drain.watch(id, handled);
    // Nothing was evicted from a stream this new: a failure would only end the body.
    let events = log.follow_from_start();
    let prime = log.prime(Duration::from_millis(1000));
    match handled {
        Handled::Nothing => {
            log.close();
            return accepted();
        }
        Handled::Reply(m) => {
            log.append(&m);
            log.close();
        }
        work => {
            let work = crate::runtime::drive(work);
            let log = log.clone();
            tokio::spawn(
                async move {
                    if let Some(m) = work.await {
                        log.append(&m);
                    }
                    log.close();
                }
                .in_current_span(),
            );
        }
    }
    sse_response(SseBody::follow(
        Some(prime),
        events,
        Some(app.config.keep_alive),
    ))
}

/// GET: the standalone SSE stream of a legacy session, or a resumption with `Last-Event-ID`.
/// Modern clients have no GET: `405`.
pub(crate) async fn get(State(app): State<AppState>, req: Request<Body>) -> Response<Body> {
    let mut resp = get_stream(&app, req).await;
    resp.extensions_mut().insert(Served(Label::GET));
    resp
}

async fn get_stream(app: &AppState, req: Request<Body>) -> Response<Body> {
    let headers = req.headers();
    let principal = req.extensions().get::<Principal>();
    let sid = match session_id(headers) {
        Ok(Some(s)) => s.to_owned(),
        Ok(None) => return method_not_allowed(),
        Err(resp) => return resp,
    };
    let session = match app.sessions.get(&sid, principal).await {
        Ok(Some(s)) => s,
        Ok(None) => return session_not_found(),
        Err(e) => return store_unavailable(app, &e),
    };
    if let Err(r) = check_stream(accepts(headers)) {
        return refusal(r);
    }
    let last = headers
        .get(&LAST_EVENT_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<EventId>().ok());
    if let Some(shared) = app.sessions.shared() {
        return shared_get(app, shared, &session, last).await;
    }
    let Some(after) = last else {
        let events = session.standalone.follow();
        return sse_response(
            SseBody::follow(None, events, Some(app.config.keep_alive)).until(&app.shutdown),
        );
    };
    let owner = session.owner();
    let scope = ReplayScope {
        session: session.id(),
        principal: owner.as_deref(),
    };
    let store = app.sessions.events();
    // What is retained after the id, through the store; then the same log, live, from the
    // last event replayed (so nothing is lost or repeated in between).
    let replayed = match EventStore::replay_after(&**store, after, scope).await {
        Ok(r) => r,
        // What followed this id is no longer retained: replaying the rest would silently
        // skip events.
        Err(StoreError::Evicted) => return gone(),
        Err(StoreError::UnknownStream) => {
            return bad(
                StatusCode::NOT_FOUND,
                ErrorCode::INVALID_REQUEST,
                "Unknown event stream",
            );
        }
        Err(e) => return store_unavailable(app, &e),
    };
    let from = replayed.events.last().map_or(after.seq, |e| e.id.seq);
    let events = match store.log(scope, after.stream).map(|log| log.attach(from)) {
        Ok(Ok(events)) => events,
        // Evicted between the replay and now.
        Ok(Err(_)) | Err(StoreError::Evicted) => return gone(),
        Err(e) => return store_unavailable(app, &e),
    };
    let mut prefix = Vec::new();
    for e in &replayed.events {
        prefix.extend_from_slice(&e.data);
    }
    let prefix = (!prefix.is_empty()).then(|| axum::body::Bytes::from(prefix));
    sse_response(SseBody::follow(prefix, events, Some(app.config.keep_alive)).until(&app.shutdown))
}

/// A legacy POST stream through the external event store ([`super::cluster`]): the work
/// runs on its own and appends to the store, and the response reads the store back, as a
/// resumption on another instance would.
async fn shared_stream(
    app: &AppState,
    shared: &Arc<super::cluster::Shared>,
    session: &Arc<HttpSession>,
    message: IncomingMessage,
    meta: RequestMeta,
    id: crate::wire::RequestId,
) -> Response<Body> {
    let stream = match shared.open(session, &id).await {
        Ok(n) => n,
        Err(e) => return store_unavailable(app, &e),
    };
    shared.ask_task_relay(session, &message, stream).await;
    let sink = shared.sink(session.id(), session.owner(), stream, true);
    let dyn_sink: Arc<dyn MessageSink> = Arc::new(sink.clone());
    let handled = app
        .engine
        .handle_classified(&session.session, message, meta, &dyn_sink);
    drop(dyn_sink);
    match app.drain.watch(id, handled) {
        Handled::Nothing => {
            drop(sink);
            return accepted();
        }
        Handled::Reply(m) => {
            tokio::spawn(async move { sink.finish(m).await });
        }
        work => {
            let work = crate::runtime::drive(work);
            tokio::spawn(
                async move {
                    if let Some(m) = work.await {
                        sink.finish(m).await;
                    }
                }
                .in_current_span(),
            );
        }
    }
    let start = EventId { stream, seq: 0 };
    let first = crate::store::Replay {
        stream,
        events: Vec::new(),
        closed: false,
        last_seq: 0,
    };
    let prime = axum::body::Bytes::from(format!("id: {start}\nretry: 1000\ndata: \n\n"));
    let feed = super::cluster_routing::feed(shared, session, start, first);
    sse_response(SseBody::feed(
        Some(prime),
        feed,
        Some(app.config.keep_alive),
    ))
}

/// A legacy GET through the external event store: a resumption after `last` on whichever
/// instance, or the standalone stream from now on.
async fn shared_get(
    app: &AppState,
    shared: &Arc<super::cluster::Shared>,
    session: &Arc<HttpSession>,
    last: Option<EventId>,
) -> Response<Body> {
    let first = match shared.start(session, last).await {
        Ok(r) => r,
        Err(StoreError::Evicted) => return gone(),
        Err(StoreError::UnknownStream) => {
            return bad(
                StatusCode::NOT_FOUND,
                ErrorCode::INVALID_REQUEST,
                "Unknown event stream",
            );
        }
        Err(e) => return store_unavailable(app, &e),
    };
    let after = last.unwrap_or(EventId {
        stream: 0,
        seq: first.last_seq,
    });
    let feed = super::cluster_routing::feed(shared, session, after, first);
    sse_response(SseBody::feed(None, feed, Some(app.config.keep_alive)).until(&app.shutdown))
}

/// `503` with `Retry-After`: the session store failed. Never `404`, which would make the
/// client drop a session that may still exist.
/// `503` for a failed session store; the refusal log names the error.
fn store_unavailable(app: &AppState, e: &StoreError) -> Response<Body> {
    app.metrics.store_error();
    marked(
        with_retry_after(
            bad(
                StatusCode::SERVICE_UNAVAILABLE,
                SERVER_BUSY,
                "The session store is unavailable; try again later",
            ),
            Duration::from_secs(1),
        ),
        Reason::SessionStore,
        Some(e.to_string()),
    )
}

fn session_not_found() -> Response<Body> {
    bad(
        StatusCode::NOT_FOUND,
        ErrorCode::INVALID_REQUEST,
        "Session not found",
    )
}

/// `410 Gone`: a resumption from an event id whose successors were evicted from the replay
/// history. The session itself lives on.
fn gone() -> Response<Body> {
    bad(
        StatusCode::GONE,
        ErrorCode::INVALID_REQUEST,
        "The events after this Last-Event-ID are no longer retained; the stream cannot be resumed",
    )
}

/// DELETE: ends a legacy session.
pub(crate) async fn delete(State(app): State<AppState>, req: Request<Body>) -> Response<Body> {
    let mut resp = end_session(&app, req).await;
    resp.extensions_mut().insert(Served(Label::DELETE));
    resp
}

async fn end_session(app: &AppState, req: Request<Body>) -> Response<Body> {
    let principal = req.extensions().get::<Principal>();
    match session_id(req.headers()) {
        Ok(Some(sid)) => match app.sessions.remove(sid, principal).await {
            Ok(true) => {
                let mut resp = Response::new(Body::empty());
                *resp.status_mut() = StatusCode::NO_CONTENT;
                resp
            }
            Ok(false) => session_not_found(),
            Err(e) => store_unavailable(app, &e),
        },
        Ok(None) => method_not_allowed(),
        Err(resp) => resp,
    }
}

pub(crate) fn method_not_allowed() -> Response<Body> {
    let mut resp = bad(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::INVALID_REQUEST,
        "Method not allowed: this endpoint accepts POST (and GET/DELETE with an Mcp-Session-Id)",
    );
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    resp
}
