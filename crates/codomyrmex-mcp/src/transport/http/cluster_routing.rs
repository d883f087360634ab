//! The cluster layer's work for live sessions (see [`cluster`](super::cluster), which holds
//! the stores and the writers): opening a session's streams in the event store and feeding
//! them back as SSE ([`feed`]), who delivers a session's notifications, relaying a task's
//! requests, routing a client's message to the instance whose call it is for ([`route`]) and
//! handing what was routed here to the session ([`Delivery`]). Its own module so that the
//! session table (`sessions.rs`) can hold the stores without depending on this.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use serde_json::json;

use crate::engine::{Engine, cancelled_request, relayed_task};
use crate::store::{
    BusHandler, BusMessage, EventId, Replay, ReplayScope, Routed, StoreError, StoredEvent,
    StreamWriter,
};
use crate::wire::{Decoded, decode};
use crate::wire::{ErrorObject, IncomingMessage, OutgoingMessage, RequestId};
use crate::{MessageSink, NullSink};

use super::cluster::{NOTIFIER_GONE_AFTER, ReaderGuard, Shared, WRITER_GONE, claim_key, now_ms};
use super::sessions::{HttpSession, SessionTable};

impl Shared {
    /// Opens a new stream of `session` for the response to request `id`. With a bus, the
    /// store records this instance as its writer: if this instance goes away before it
    /// answers, readers elsewhere get an error response for `id` ([`WRITER_GONE`]) and the
    /// stream ends, instead of waiting for an answer that cannot come.
    pub(crate) async fn open(
        &self,
        session: &HttpSession,
        id: &RequestId,
    ) -> Result<u64, StoreError> {
        let owner = session.owner();
        let scope = ReplayScope {
            session: session.id(),
            principal: owner.as_deref(),
        };
        let Some(bus) = &self.bus else {
            return self.events.open_stream(scope).await;
        };
        let epitaph = OutgoingMessage::Error {
            id: Some(id.clone()),
            error: ErrorObject::internal(WRITER_GONE),
        }
        .to_bytes();
        self.events
            .open_stream_by(scope, StreamWriter::new(bus.instance(), &epitaph))
            .await
    }

    /// Makes this instance the one that delivers `session`'s notifications (list changes,
    /// resource updates), and tells the others, which stop: one `PUBLISH`. Called when this
    /// instance takes the session live from its record and when the client opens a GET
    /// stream here, so the instance its client last came to delivers them, once.
    pub(crate) async fn take_notifications(&self, session: &HttpSession) {
        let Some(bus) = &self.bus else {
            return;
        };
        session.set_notifies(true);
        let taken = BusMessage::NotificationsTaken {
            instance: bus.instance().to_owned(),
        };
        if let Err(e) = bus.broadcast(session.id(), taken).await {
            // The others go on delivering too: the client may see a change twice.
            self.store_error(&e);
        }
    }

    /// For a reader of `session`'s standalone stream here, after a wait with no event: when
    /// the instance that took the session's notifications no longer listens on the bus (it
    /// died) at two looks [`NOTIFIER_GONE_AFTER`] apart or more, this one takes them back,
    /// so the client's open GET stream gets them again. `silent_since` is when the reader
    /// first found it silent (a live instance whose subscription dropped renews it at once).
    async fn look_at_notifier(
        &self,
        session: &HttpSession,
        silent_since: &mut Option<tokio::time::Instant>,
    ) {
        let (Some(bus), Some(notifier)) = (&self.bus, session.notifier()) else {
            *silent_since = None;
            return;
        };
        match bus.listens(&notifier).await {
            Ok(false) => match *silent_since {
                None => *silent_since = Some(tokio::time::Instant::now()),
                Some(since) if since.elapsed() >= NOTIFIER_GONE_AFTER => {
                    *silent_since = None;
                    tracing::info!(
                        instance = %notifier,
                        "the instance delivering a session's notifications is gone; taking them"
                    );
                    self.take_notifications(session).await;
                }
                Some(_) => {}
            },
            Ok(true) => *silent_since = None,
            Err(e) => self.store_error(&e),
        }
    }

    /// For a 2025-11-25 `tasks/result` answered on `stream` here (0, the standalone stream,
    /// when it is answered as JSON; the core says which task it waits for,
    /// [`relayed_task`]): asks every instance (one `PUBLISH`,
    /// [`BusMessage::RelayTask`]) that the one running the task send what the task sends
    /// the client (its sampling, elicitation and roots requests) to that stream, in the
    /// store, whose SSE responses on any instance carry them; the client's answers then
    /// reach the task through the bus like any other. Any other message asks nothing.
    pub(crate) async fn ask_task_relay(
        &self,
        session: &HttpSession,
        message: &IncomingMessage,
        stream: u64,
    ) {
        let (Some(bus), Some(task)) = (&self.bus, relayed_task(message)) else {
            return;
        };
        let ask = BusMessage::RelayTask {
            instance: bus.instance().to_owned(),
            task: task.to_owned(),
            stream,
        };
        if let Err(e) = bus.broadcast(session.id(), ask).await {
            // The task's requests then wait for a `tasks/result` on its own instance.
            self.store_error(&e);
        }
    }

    /// Where a GET with `last` (its `Last-Event-ID`, if any) starts: the replay after it, or
    /// the end of the standalone stream (created if the session has no history yet). The
    /// session's notifications are delivered from here from now on.
    pub(crate) async fn start(
        &self,
        session: &HttpSession,
        last: Option<EventId>,
    ) -> Result<Replay, StoreError> {
        self.take_notifications(session).await;
        let owner = session.owner();
        let scope = ReplayScope {
            session: session.id(),
            principal: owner.as_deref(),
        };
        if let Some(after) = last {
            return self.events.replay_after(after, scope).await;
        }
        let end = EventId {
            stream: 0,
            seq: u64::MAX,
        };
        match self.events.replay_after(end, scope).await {
            Err(StoreError::UnknownStream) => {
                self.events.open_stream(scope).await?;
                self.events.replay_after(end, scope).await
            }
            other => other,
        }
    }
}

/// An event as the SSE response sends it.
fn frame(e: &StoredEvent) -> Bytes {
    let mut out = Vec::with_capacity(e.data.len() + 40);
    out.extend_from_slice(format!("id: {}\nevent: message\ndata: ", e.id).as_bytes());
    out.extend_from_slice(&e.data);
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

struct Follow {
    shared: Arc<Shared>,
    session: String,
    owner: Option<String>,
    after: EventId,
    buffer: VecDeque<StoredEvent>,
    closed: bool,
    /// For the standalone stream (0): the session, whose notifier the reader looks after.
    standalone: Option<Arc<HttpSession>>,
    /// When the notifier was first seen not listening, since it last was.
    silent_since: Option<tokio::time::Instant>,
    _reader: ReaderGuard,
}

/// The events of a stream after `first` (already read: its events come first), then as they
/// are appended on any instance, until the stream closes. Ends early when the store fails or
/// what follows was evicted (the client resumes, and is told).
pub(crate) fn feed(
    shared: &Arc<Shared>,
    session: &Arc<HttpSession>,
    after: EventId,
    first: Replay,
) -> BoxStream<'static, Bytes> {
    let state = Follow {
        shared: shared.clone(),
        session: session.id().to_owned(),
        owner: session.owner(),
        after,
        closed: first.closed,
        buffer: first.events.into(),
        standalone: (after.stream == 0).then(|| session.clone()),
        silent_since: None,
        _reader: session.store_reader(),
    };
    futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(e) = st.buffer.pop_front() {
                st.after = e.id;
                return Some((frame(&e), st));
            }
            if st.closed {
                return None;
            }
            let scope = ReplayScope {
                session: &st.session,
                principal: st.owner.as_deref(),
            };
            if let Err(e) = st.shared.events.wait_after(st.after, scope).await {
                tracing::debug!(error = %e, "an SSE stream ends: its store failed");
                return None;
            }
            match st.shared.events.replay_after(st.after, scope).await {
                Ok(r) if r.events.is_empty() && !r.closed => {
                    if let Some(http) = &st.standalone {
                        st.shared.look_at_notifier(http, &mut st.silent_since).await;
                    }
                }
                Ok(r) => {
                    st.closed = r.closed;
                    st.buffer.extend(r.events);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "an SSE stream ends: its store failed");
                    return None;
                }
            }
        }
    })
    .boxed()
}

/// A client's answer or notification, as its JSON-RPC bytes, to route.
fn encode(message: &IncomingMessage) -> BusMessage {
    let value = match message {
        IncomingMessage::Response { id, result } => {
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        }
        IncomingMessage::Error { id, error } => {
            json!({"jsonrpc": "2.0", "id": id, "error": error})
        }
        IncomingMessage::Notification { method, params } => {
            json!({"jsonrpc": "2.0", "method": method, "params": params})
        }
        IncomingMessage::Request { id, method, params } => {
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        }
    };
    BusMessage::Client(value.to_string().into_bytes())
}

/// Sends a client's answer or cancellation that this instance has no call for to the
/// instance that has; `Ok(true)` when it went there (the caller is done with it), `Ok(false)`
/// when it is this instance's (or nobody's) to handle.
pub(crate) async fn route(
    shared: &Shared,
    session: &HttpSession,
    message: &IncomingMessage,
) -> Result<bool, StoreError> {
    let Some(bus) = &shared.bus else {
        return Ok(false);
    };
    let local = &session.session;
    match message {
        IncomingMessage::Response { id, .. } | IncomingMessage::Error { id: Some(id), .. } => {
            let key = claim_key(id);
            if local.awaits_client_response(id) {
                // Answered here: the claim is no longer needed (it expires anyway).
                if let Err(e) = bus.release(session.id(), &key).await {
                    shared.store_error(&e);
                }
                return Ok(false);
            }
            bus.route(session.id(), &key, encode(message), now_ms())
                .await
        }
        IncomingMessage::Notification { .. } => match cancelled_request(message) {
            Some(id) if !local.is_in_flight(&id) => {
                bus.broadcast(session.id(), encode(message)).await?;
                Ok(true)
            }
            _ => Ok(false),
        },
        _ => Ok(false),
    }
}

/// Hands messages routed to this instance to the session's engine: only a session this
/// instance holds live can have the call they are for.
pub(crate) struct Delivery {
    pub(crate) sessions: Weak<SessionTable>,
    pub(crate) engine: Engine,
}

impl Delivery {
    /// Another instance serves a `tasks/result` for a task of `http`'s session: if it runs
    /// here, what it sends the client goes to that instance's stream, through the store.
    fn relay_task(
        &self,
        table: &SessionTable,
        http: &HttpSession,
        from: &str,
        task: &str,
        stream: u64,
    ) {
        let Some(shared) = table.shared() else {
            return;
        };
        if Some(from) == shared.bus.as_ref().map(|b| b.instance()) {
            // This instance's own `tasks/result`: the engine relays to it already.
            return;
        }
        let sink: Arc<dyn MessageSink> = if stream == 0 {
            http.standalone_sink.clone()
        } else {
            Arc::new(shared.sink(http.id(), http.owner(), stream, false))
        };
        if self.engine.relay_task(&http.session, task, sink) {
            tracing::debug!(
                task,
                stream,
                "relaying a task's requests to another instance"
            );
        }
    }
}

impl BusHandler for Delivery {
    fn deliver(&self, routed: Routed) {
        let Some(table) = self.sessions.upgrade() else {
            return;
        };
        let bytes = match routed.message {
            BusMessage::SessionEnded => {
                table.ended_elsewhere(&routed.session);
                return;
            }
            BusMessage::NotificationsTaken { instance } => {
                let mine = table
                    .shared()
                    .and_then(|s| s.bus.as_ref())
                    .is_some_and(|bus| bus.instance() == instance);
                if !mine {
                    table.taken_elsewhere(&routed.session, Some(instance));
                }
                return;
            }
            BusMessage::RelayTask {
                instance,
                task,
                stream,
            } => {
                if let Some(http) = table.live(&routed.session) {
                    self.relay_task(&table, &http, &instance, &task, stream);
                }
                return;
            }
            BusMessage::Client(bytes) => bytes,
            // `BusMessage` is the core's and non-exhaustive: a kind this build does not know.
            _ => {
                tracing::debug!("ignored a bus message of a kind this build does not know");
                return;
            }
        };
        let Some(http) = table.live(&routed.session) else {
            return;
        };
        let Decoded::Single(Ok(message)) = decode(&bytes) else {
            tracing::debug!("ignored a routed message that does not decode");
            return;
        };
        if let IncomingMessage::Response { id, .. } | IncomingMessage::Error { id: Some(id), .. } =
            &message
            && !http.session.awaits_client_response(id)
        {
            tracing::debug!(%id, "a routed answer matched no pending request");
            return;
        }
        if let (
            IncomingMessage::Response { id, .. } | IncomingMessage::Error { id: Some(id), .. },
            Some(shared),
            Ok(rt),
        ) = (
            &message,
            table.shared(),
            tokio::runtime::Handle::try_current(),
        ) && let Some(bus) = shared.bus.clone()
        {
            // Answered: the claim is no longer needed (it expires anyway).
            let (session, key, shared) = (routed.session.clone(), claim_key(id), shared.clone());
            rt.spawn(async move {
                if let Err(e) = bus.release(&session, &key).await {
                    shared.store_error(&e);
                }
            });
        }
        let sink = NullSink::shared();
        let _ = self.engine.handle(&http.session, message, &sink);
    }
}
