//! [`Outbound`]: what a running handler emits towards its client (progress and log
//! notifications, and server-to-client requests), queued as [`OutgoingMessage`] values for
//! the driver to drain, and the [`MessageSink`] a transport gives for a request's stream,
//! which the drain writes to; [`Queued`], the queue's rules as a plain value; and
//! [`ClientCall`], a server-to-client request awaiting its answer, as its asker holds it.
//!
//! A handler's context never writes to the transport: [`ToolContext::progress`],
//! [`ToolContext::log`] and [`ToolContext::input`] put a value in the request's queue, and
//! the driver (`driver.rs`) takes them out with [`Outbound::poll_outbound`] after every poll
//! of the handler's work, and once more after the work ends or is dropped. So what a call
//! emits is on its stream in the order it emitted it, and before its answer. Work that emits
//! from elsewhere (a thread the handler started) wakes the driver through the queue's waker.
//!
//! The queue is bounded in messages and in bytes ([`MAX_QUEUED`], [`MAX_QUEUED_BYTES`]). A
//! list change or resource update already queued is not queued again (at any time). At the
//! bound a progress notification replaces the last one queued for the same token (the
//! client sees the latest progress); a list change not yet queued is queued all the same (at
//! most one per list, so at most three past the bound: a client must not keep a stale
//! list); any other notification is dropped, and a server-to-client request is refused, which fails the handler's `input` with
//! `ClientRequestError::Unavailable` (nothing is left waiting for an answer). Responses never
//! enter this queue: the driver returns them.
//!
//! A session has a queue of its own for what belongs to no request (list changes, resource
//! updates, log messages of no request): a [`Queued`] in the session's state, under the same
//! bound and rules, behind the session's one lock (`engine/session_state.rs`).
//! `Listeners::handle_event` queues them, and the transport takes them with
//! `Session::poll_transmit` for the session's stream.
//!
//! A 2025-11-25 task's messages go to a relay ([`Outbound::relayed`]): the same queue, under
//! the same bound and rules, whose stream comes and goes. It holds what the task emits until
//! a `tasks/result` stream attaches ([`Outbound::attach`], or [`Outbound::redirect`] for a
//! stream another instance serves), and is drained to that stream, by the task's driver and
//! at the attach; a message the stream refuses waits, first, for the next drain.
//!
//! A server-to-client request is a value end to end (issue #27 item 1): [`AskClient::ask`]
//! enters it in the session's table (its state's, `engine/session_state.rs`) and queues it
//! ([`ClientCall::queue`]); the handler awaits the [`ClientCall`] it got, which holds the
//! answer's slot and the queue, not the session or the engine; the client's answer comes
//! back through `Engine::handle_response(now, ..)`, which takes the slot out of the table and
//! resolves the call. A call given up before its request left is withdrawn from the queue;
//! after, a `notifications/cancelled` for it is queued.
//!
//! [`ToolContext::progress`]: crate::context::ToolContext::progress
//! [`ToolContext::log`]: crate::context::ToolContext::log
//! [`ToolContext::input`]: crate::context::ToolContext::input

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Context;

use futures_channel::oneshot;
use futures_util::FutureExt as _;
use futures_util::task::AtomicWaker;
use serde_json::Value;

use crate::sync::CancellationToken;
use crate::wire::{ErrorObject, OutgoingMessage, RequestId};

/// The most messages one request's queue holds between two drains.
pub const MAX_QUEUED: usize = 256;

/// The most bytes (of notification parameters, as JSON) one request's queue holds between two
/// drains.
pub const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Where a request's stream is written: the transport's end of it.
///
/// Transports implement this: the stdio transport writes to stdout, the HTTP transport to the
/// request's SSE stream. `send` must not block; a full or closed sink returns `false` and the
/// message is dropped (progress and log messages are advisory). What a handler emits reaches
/// it through its request's [`Outbound`] queue, drained by the driver.
pub trait MessageSink: Send + Sync + 'static {
    /// Queues `message` for the peer.
    fn send(&self, message: OutgoingMessage) -> bool;
}

/// A sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl MessageSink for NullSink {
    fn send(&self, _message: OutgoingMessage) -> bool {
        false
    }
}

impl NullSink {
    /// A shared null sink, so that a request without a stream need not allocate one: the
    /// sink a transport passes with a request whose answer is all it sends.
    ///
    /// One per thread: its reference count is written by every request that takes it, and
    /// one count for the whole process would move between the threads' caches on each.
    pub fn shared() -> Arc<dyn MessageSink> {
        thread_local! {
            static SHARED: Arc<dyn MessageSink> = Arc::new(NullSink);
        }
        // A thread whose own is gone (it is exiting) gets one of its own.
        SHARED
            .try_with(Arc::clone)
            .unwrap_or_else(|_| Arc::new(NullSink))
    }
}

/// One request's queue of emitted messages, bounded in messages and bytes, with the waker of
/// the driver that drains it, and the stream it is drained to. Cheap to clone (a reference
/// count); a closed queue (no allocation) takes nothing.
#[derive(Clone)]
pub struct Outbound(Option<Arc<Queue>>);

struct Queue {
    items: Mutex<Items>,
    waker: AtomicWaker,
    /// Where the queue is drained: a request's stream; `None` for a relay
    /// ([`relayed`](Outbound::relayed)), drained to the stream attached at the time
    /// ([`Items::attached`]).
    stream: Option<Arc<dyn MessageSink>>,
}

#[derive(Default)]
struct Items {
    queue: Queued,
    /// A relay's stream, while one is attached; without one, its messages wait.
    attached: Option<Arc<dyn MessageSink>>,
    /// A relay's drain is under way. A relay is drained by its work's driver and by the
    /// stream that attaches; one at a time, so that the messages leave in order.
    draining: bool,
}

/// A message with the bytes it counts for in a queue, weighed before the queue's lock is
/// taken (weighing serializes its parameters).
pub(crate) struct Weighed(OutgoingMessage, usize);

impl Weighed {
    /// `message`, weighed.
    pub(crate) fn new(message: OutgoingMessage) -> Self {
        let size = weight(&message);
        Self(message, size)
    }
}

/// A bounded queue of outgoing messages as a plain value: the bound and the per-kind rules
/// ([`push`](Self::push)) with `&mut self` methods and no lock. An [`Outbound`] holds one
/// behind its lock (a request's handler and its driver share it); a session's state holds
/// its own (`engine/session_state.rs`), under the session's one lock.
#[derive(Default)]
pub(crate) struct Queued {
    queued: VecDeque<(OutgoingMessage, usize)>,
    bytes: usize,
}

impl Queued {
    /// Queues `message` (a notification or a server-to-client request). A list change
    /// (`notifications/*/list_changed`) or a resource update already queued unsent takes no
    /// second place: the client reads the list, or the resource, once. At the bound a
    /// progress notification replaces the last one queued for its token; otherwise `false`,
    /// and the message is dropped (a request is refused).
    pub(crate) fn push(&mut self, message: Weighed) -> bool {
        let Weighed(message, size) = message;
        if coalesces(&message) && self.queued.iter().any(|(m, _)| m == &message) {
            return true;
        }
        let full =
            self.queued.len() >= MAX_QUEUED || self.bytes.saturating_add(size) > MAX_QUEUED_BYTES;
        if full && !is_list_change(&message) {
            let Some(token) = progress_token(&message) else {
                return false;
            };
            let Some(slot) = self
                .queued
                .iter()
                .rposition(|(m, _)| progress_token(m) == Some(token))
            else {
                return false;
            };
            let old = self.queued[slot].1;
            if self.bytes - old + size > MAX_QUEUED_BYTES {
                return false;
            }
            self.bytes = self.bytes - old + size;
            self.queued[slot] = (message, size);
        } else {
            self.bytes += size;
            self.queued.push_back((message, size));
        }
        true
    }

    /// The next queued message, if any, in the order it was pushed, with its weight.
    fn pop_weighed(&mut self) -> Option<(OutgoingMessage, usize)> {
        let (message, size) = self.queued.pop_front()?;
        self.bytes -= size;
        Some((message, size))
    }

    /// The next queued message, if any, in the order it was pushed.
    pub(crate) fn pop(&mut self) -> Option<OutgoingMessage> {
        self.pop_weighed().map(|(message, _)| message)
    }

    /// Puts a message taken with [`pop_weighed`](Self::pop_weighed) back first.
    fn unpop(&mut self, message: OutgoingMessage, size: usize) {
        self.bytes += size;
        self.queued.push_front((message, size));
    }

    /// Takes server-to-client request `id` back out, if it is still queued.
    fn withdraw(&mut self, id: &RequestId) -> bool {
        let Some(at) = self.queued.iter().position(
            |(m, _)| matches!(m, OutgoingMessage::Request { id: queued, .. } if queued == id),
        ) else {
            return false;
        };
        if let Some((_, size)) = self.queued.remove(at) {
            self.bytes -= size;
        }
        true
    }

    /// How many messages are queued.
    pub(crate) fn len(&self) -> usize {
        self.queued.len()
    }
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("open", &self.0.is_some())
            .field("queued", &self.queued())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bytes a message counts for: its parameters as JSON, and its method.
fn weight(message: &OutgoingMessage) -> usize {
    match message {
        OutgoingMessage::Notification { method, params }
        | OutgoingMessage::Request { method, params, .. } => {
            method.len() + serde_json::to_vec(params).map_or(usize::MAX / 2, |v| v.len())
        }
        _ => 0,
    }
}

/// Whether `message` is a list change: queued even at the bound (a client that missed one
/// would hold a stale list), which takes at most one place per list, since it coalesces.
fn is_list_change(message: &OutgoingMessage) -> bool {
    matches!(message, OutgoingMessage::Notification { method, .. } if method.ends_with("/list_changed"))
}

/// Whether `message` is a change notice that one queued copy stands for: a list change, or a
/// resource update (of the same URI, so equal as a whole).
fn coalesces(message: &OutgoingMessage) -> bool {
    matches!(
        message,
        OutgoingMessage::Notification { method, .. }
            if method.ends_with("/list_changed") || *method == "notifications/resources/updated"
    )
}

/// The progress token of a `notifications/progress`, if `message` is one.
fn progress_token(message: &OutgoingMessage) -> Option<&Value> {
    match message {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params,
        } => params.get("progressToken"),
        _ => None,
    }
}

impl Outbound {
    /// A queue drained to `stream`.
    pub(crate) fn to(stream: Arc<dyn MessageSink>) -> Self {
        Self::with(Some(stream))
    }

    fn with(stream: Option<Arc<dyn MessageSink>>) -> Self {
        Self(Some(Arc::new(Queue {
            items: Mutex::new(Items::default()),
            waker: AtomicWaker::new(),
            stream,
        })))
    }

    /// A relay: a queue whose stream comes and goes, a 2025-11-25 task's (its messages wait
    /// for a `tasks/result` stream to [`attach`](Self::attach)). The same queue, under the
    /// same bound and rules, as a request's: a request it cannot hold is refused, never
    /// dropped once queued. Drained, while a stream is attached, to that stream; a message
    /// the stream refuses stays first in the queue for the next drain.
    pub(crate) fn relayed() -> Self {
        Self::with(None)
    }

    /// Drains a relay to `stream` from now on (until another attaches), starting with what
    /// it holds: for a `tasks/result` read on another instance. A queue with a stream of its
    /// own ignores it.
    pub(crate) fn redirect(&self, stream: Arc<dyn MessageSink>) {
        let Some(queue) = &self.0 else {
            return;
        };
        if queue.stream.is_some() {
            return;
        }
        lock(&queue.items).attached = Some(stream);
        self.drain();
    }

    /// [`redirect`](Self::redirect) until the returned guard drops: for the `tasks/result`
    /// that reads the relay's task on this instance.
    pub(crate) fn attach(&self, stream: Arc<dyn MessageSink>) -> Attached {
        self.redirect(stream.clone());
        Attached {
            queue: self.clone(),
            stream,
        }
    }

    /// The queue of a request that emits nothing (no progress token, no log level, or no
    /// server): takes nothing, allocates nothing.
    pub(crate) fn closed() -> Self {
        Self(None)
    }

    /// Whether the queue takes messages (it is not [`closed`](Self::closed)).
    pub(crate) fn is_open(&self) -> bool {
        self.0.is_some()
    }

    /// Queues `message` (a notification or a server-to-client request) and wakes the driver.
    /// A list change (`notifications/*/list_changed`) or a resource update already queued
    /// unsent takes no second place: the client reads the list, or the resource, once. At the
    /// bound a progress notification replaces the last one queued for its token; otherwise
    /// `false`, and the message is dropped (a request is refused).
    pub(crate) fn push(&self, message: OutgoingMessage) -> bool {
        let Some(queue) = &self.0 else {
            return false;
        };
        let message = Weighed::new(message);
        if !lock(&queue.items).queue.push(message) {
            return false;
        }
        queue.waker.wake();
        true
    }

    /// Takes server-to-client request `id` back out of the queue, if it has not left yet.
    fn withdraw(&self, id: &RequestId) -> bool {
        let Some(queue) = &self.0 else {
            return false;
        };
        lock(&queue.items).queue.withdraw(id)
    }

    /// The next queued message, if any, in the order it was pushed: the one poll a driver
    /// drains the queue through.
    pub fn poll_outbound(&self) -> Option<OutgoingMessage> {
        let queue = self.0.as_ref()?;
        lock(&queue.items).queue.pop()
    }

    /// Registers the task to wake when something is queued (the driver, while it polls the
    /// handler's work).
    pub fn register(&self, cx: &Context<'_>) {
        if let Some(queue) = &self.0 {
            queue.waker.register(cx.waker());
        }
    }

    /// Drains everything queued to the request's stream, in order. A message the stream
    /// refuses is dropped (notifications are advisory).
    pub fn drain(&self) {
        let Some(queue) = &self.0 else {
            return;
        };
        let Some(stream) = &queue.stream else {
            return queue.relay();
        };
        while let Some(message) = self.poll_outbound() {
            stream.send(message);
        }
    }

    /// How many messages are queued now.
    pub fn queued(&self) -> usize {
        self.0.as_ref().map_or(0, |q| lock(&q.items).queue.len())
    }
}

impl Queue {
    /// Drains a relay to its attached stream, in order, one drain at a time; a message the
    /// stream refuses goes back first in the queue, where it waits for the next drain (a
    /// request that left the handler is never lost on the way).
    fn relay(&self) {
        {
            let mut items = lock(&self.items);
            if items.draining || items.attached.is_none() {
                return;
            }
            items.draining = true;
        }
        loop {
            let next = {
                let mut guard = lock(&self.items);
                let items = &mut *guard;
                let next = items.attached.as_ref().and_then(|stream| {
                    let (message, size) = items.queue.pop_weighed()?;
                    Some((message, size, stream.clone()))
                });
                match next {
                    Some(next) => next,
                    None => {
                        items.draining = false;
                        return;
                    }
                }
            };
            let (message, size, stream) = next;
            if !stream.send(message.clone()) {
                let mut items = lock(&self.items);
                items.queue.unpop(message, size);
                items.draining = false;
                return;
            }
        }
    }
}

/// A stream attached to a relay ([`Outbound::attach`]): detached when dropped, unless
/// another attached since.
pub(crate) struct Attached {
    queue: Outbound,
    stream: Arc<dyn MessageSink>,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let Some(queue) = &self.queue.0 else {
            return;
        };
        let mut items = lock(&queue.items);
        if items
            .attached
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &self.stream))
        {
            items.attached = None;
        }
    }
}

/// Where a handler's server-to-client requests are entered and queued: a session's state,
/// behind its one lock (`engine/session.rs`'s `StateLock`, over
/// `engine/session_state.rs`). A handler's context and a 2025-11-25 task hold it, not the
/// session: it names no session and no engine.
pub(crate) trait AskClient: Send + Sync + 'static {
    /// Enters request `method` in the session's table of requests awaiting answers and
    /// queues it on `outbound`, as a value: the driver writes it to the request's stream.
    /// `None` (and nothing waits) when it cannot go: the session ended, its table is full, or
    /// the queue refused it (closed, or at its bound).
    fn ask(&self, method: &'static str, params: Value, outbound: &Outbound) -> Option<ClientCall>;
}

/// How a [`ClientCall`] ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answered {
    /// The client's result.
    Result(Value),
    /// The client's JSON-RPC error.
    Error(ErrorObject),
    /// The session ended before the client answered.
    Gone,
    /// The asker's request was cancelled first.
    Cancelled,
}

/// A server-to-client request asked and not yet answered, as its asker holds it: the
/// request's id, the answer's slot and the queue it went out on; no session, no engine.
/// Dropped unanswered (the handler stopped waiting, or its call was cancelled), it takes
/// the request back out of the queue if it has not left, or else queues
/// `notifications/cancelled` for it.
pub(crate) struct ClientCall {
    id: RequestId,
    answer: oneshot::Receiver<Result<Value, ErrorObject>>,
    outbound: Outbound,
    answered: bool,
}

impl std::fmt::Debug for ClientCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCall").field("id", &self.id).finish()
    }
}

impl ClientCall {
    /// Queues request `method` with `id` on `outbound`, its answer to arrive through
    /// `answer`: the call its asker awaits. `Err` (with the id, to take out of the table
    /// again) when the queue refuses it.
    pub(crate) fn queue(
        id: RequestId,
        method: &'static str,
        params: Value,
        answer: oneshot::Receiver<Result<Value, ErrorObject>>,
        outbound: &Outbound,
    ) -> Result<Self, RequestId> {
        let request = OutgoingMessage::Request {
            id: id.clone(),
            method,
            params,
        };
        if !outbound.push(request) {
            return Err(id);
        }
        Ok(Self {
            id,
            answer,
            outbound: outbound.clone(),
            answered: false,
        })
    }

    /// The request's id.
    #[cfg(test)]
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Waits for the answer, or for `cancel`.
    pub(crate) async fn answer(mut self, cancel: &CancellationToken) -> Answered {
        let answer = &mut self.answer;
        let answered = futures_util::select_biased! {
            () = cancel.cancelled().fuse() => return Answered::Cancelled,
            r = answer.fuse() => r,
        };
        self.answered = true;
        match answered {
            Ok(Ok(v)) => Answered::Result(v),
            Ok(Err(e)) => Answered::Error(e),
            // The table dropped its slot: the session ended.
            Err(_) => Answered::Gone,
        }
    }
}

impl Drop for ClientCall {
    fn drop(&mut self) {
        if self.answered || self.outbound.withdraw(&self.id) {
            return;
        }
        self.outbound.push(OutgoingMessage::Notification {
            method: "notifications/cancelled",
            params: serde_json::json!({
                "requestId": self.id,
                "reason": "the server no longer needs the answer",
            }),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    // A second thread, to see its sink: the core's own code never spawns one.
    #[allow(clippy::disallowed_methods)]
    fn each_thread_shares_a_null_sink_of_its_own() {
        let here = NullSink::shared();
        assert!(Arc::ptr_eq(&here, &NullSink::shared()));
        let there = std::thread::spawn(NullSink::shared).join().unwrap();
        assert!(!Arc::ptr_eq(&here, &there));
    }

    fn progress(token: &str, n: u64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params: json!({"progressToken": token, "progress": n}),
        }
    }

    fn log(n: u64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/message",
            params: json!({"level": "info", "data": n}),
        }
    }

    /// At the bound a log message is dropped, and a progress notification replaces the last
    /// queued one of its token: the client still gets the latest progress.
    #[test]
    fn the_queue_is_bounded_and_progress_is_coalesced_at_the_bound() {
        let out = Outbound::to(NullSink::shared());
        for n in 0..MAX_QUEUED as u64 {
            assert!(out.push(log(n)));
        }
        assert!(
            !out.push(log(9999)),
            "a log message past the bound is dropped"
        );
        assert_eq!(out.queued(), MAX_QUEUED);
        // Make room for one progress notification, then fill again.
        out.poll_outbound();
        assert!(out.push(progress("p", 1)));
        assert!(out.push(progress("p", 2)), "coalesced into the queued one");
        assert!(
            !out.push(progress("q", 1)),
            "no progress of token q to coalesce"
        );
        assert_eq!(out.queued(), MAX_QUEUED);
        let last = std::iter::from_fn(|| out.poll_outbound()).last().unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&last.to_bytes()).unwrap()["params"]["progress"],
            2
        );
        assert_eq!(out.queued(), 0);
    }

    /// Bytes bound the queue as well as messages.
    #[test]
    fn the_queue_is_bounded_in_bytes() {
        let out = Outbound::to(NullSink::shared());
        let big = "x".repeat(64 * 1024);
        let mut kept = 0;
        for _ in 0..MAX_QUEUED {
            if out.push(OutgoingMessage::Notification {
                method: "notifications/message",
                params: json!({"data": big}),
            }) {
                kept += 1;
            }
        }
        assert!(
            kept < MAX_QUEUED && kept * big.len() <= MAX_QUEUED_BYTES,
            "{kept}"
        );
    }

    fn roots_request(id: &RequestId) -> impl Fn(&OutgoingMessage) -> bool + '_ {
        move |m| matches!(m, OutgoingMessage::Request { id: i, method: "roots/list", .. } if i == id)
    }

    /// A request queued as a call's (`ClientCall::queue`), with where its answer arrives.
    fn asked(n: u64, out: &Outbound) -> (Result<ClientCall, RequestId>, Slot) {
        let (tx, rx) = oneshot::channel();
        let id = RequestId::String(format!("srv-{n}"));
        (ClientCall::queue(id, "roots/list", json!({}), rx, out), tx)
    }

    /// Where a call's answer arrives.
    type Slot = oneshot::Sender<Result<Value, ErrorObject>>;

    /// A request asked is a value in the queue; a call given up before its request left
    /// takes the request back out (the client never sees it, so no cancel is queued), and
    /// its slot hears that nobody waits for the answer.
    #[test]
    fn a_call_given_up_before_its_request_left_is_withdrawn() {
        let out = Outbound::to(NullSink::shared());
        let (call, slot) = asked(1, &out);
        let call = call.expect("queued");
        assert_eq!(out.queued(), 1);
        drop(call);
        assert_eq!(out.queued(), 0, "withdrawn, and no cancel queued");
        assert!(slot.is_canceled(), "nothing waits");
    }

    /// Given up after its request left, a call queues `notifications/cancelled` for it.
    #[test]
    fn a_call_given_up_after_its_request_left_is_cancelled_at_the_client() {
        let out = Outbound::to(NullSink::shared());
        let (call, _slot) = asked(1, &out);
        let call = call.expect("queued");
        let id = call.id().clone();
        assert!(out.poll_outbound().as_ref().is_some_and(roots_request(&id)));
        drop(call);
        let cancel = out.poll_outbound().expect("a cancel");
        let wire: Value = serde_json::from_slice(&cancel.to_bytes()).unwrap();
        assert_eq!(wire["method"], "notifications/cancelled");
        assert_eq!(wire["params"]["requestId"], json!(id));
    }

    /// A closed queue, or one at its bound, refuses a request: the id comes back, to be
    /// taken out of the table, and nothing is queued. An answer reaches the call; a slot
    /// dropped unanswered (the session ended) answers `Gone`.
    #[test]
    fn a_request_that_cannot_go_is_refused_and_a_dropped_slot_answers_gone() {
        let (refused, _) = asked(1, &Outbound::closed());
        assert_eq!(refused.err(), Some(RequestId::String("srv-1".into())));
        let out = Outbound::to(NullSink::shared());
        for n in 0..MAX_QUEUED as u64 {
            assert!(out.push(log(n)));
        }
        let (refused, _) = asked(2, &out);
        assert!(refused.is_err(), "at the bound");
        assert_eq!(out.queued(), MAX_QUEUED);
        let out = Outbound::to(NullSink::shared());
        let cancel = crate::sync::CancellationToken::new();
        let (call, slot) = asked(3, &out);
        assert!(slot.send(Ok(json!(7))).is_ok());
        let answered = futures_executor::block_on(call.expect("queued").answer(&cancel));
        assert_eq!(answered, Answered::Result(json!(7)));
        let (call, slot) = asked(4, &out);
        drop(slot);
        let answered = futures_executor::block_on(call.expect("queued").answer(&cancel));
        assert_eq!(answered, Answered::Gone);
    }

    /// A closed queue takes nothing.
    #[test]
    fn a_closed_queue_takes_nothing() {
        let out = Outbound::closed();
        assert!(!out.push(log(1)));
        assert!(out.poll_outbound().is_none());
    }
}
