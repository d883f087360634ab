//! [`SessionState`]: all of a session's protocol state that changes after the handshake, as
//! one value (issue #27 item 1, "mutable protocol state has one owner"): the requests in
//! flight, the resource subscriptions, the server-to-client requests awaiting their answers
//! (with the ids they get), and the session's own queue of messages that belong to no
//! request. Its methods take `&mut self`; it holds no lock and does no I/O, like
//! quinn-proto's `Connection`. The session keeps it behind its one lock (`session.rs`,
//! `StateLock`), as quinn's async crate keeps its `Connection` in the one `Mutex` its
//! streams share (`ConnectionRef`): each input or event takes the lock once, for one short
//! `&mut` call, never across an `.await` or a call into user code.
//!
//! No method needs the time: a server-to-client request's timeout is its asker's deadline
//! (the request's cancellation), which the driver keeps.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use futures_channel::oneshot;
use serde_json::Value;

use crate::outbound::{Queued, Weighed};
use crate::resources::{McpResourceRegistry, Subscriber};
use crate::sync::CancellationToken;
use crate::wire::{ErrorCode, ErrorObject, OutgoingMessage, RequestId};

/// The most requests one session may have in flight (running or waiting for a permit).
pub(super) const MAX_IN_FLIGHT: usize = 1024;

/// The size at which a session's in-flight table is first swept of ended entries. Each sweep
/// sets the next at twice what it left (at least this, at most [`MAX_IN_FLIGHT`]), so the
/// table stays about as large as what is really in flight, and a sweep costs a constant per
/// request: a session of many sequential calls keeps a table of this size, not of
/// [`MAX_IN_FLIGHT`] entries grown (and rehashed) on the way. Small: until it is swept, an
/// ended entry keeps its token allocated, and a server of many sequential sessions would
/// otherwise hold that many dead tokens per session, spread over memory, in the caches
/// every request goes through.
const SWEEP_AT: usize = 8;

/// The most resource subscriptions one legacy session may hold.
pub(super) const MAX_SUBSCRIPTIONS: usize = 4096;

/// The most bytes of subscribed URIs one legacy session may hold.
const MAX_SUBSCRIPTION_BYTES: usize = 1024 * 1024;

/// The most server-to-client requests awaiting an answer at once, per session.
pub(crate) const MAX_PENDING_CLIENT_REQUESTS: usize = 1024;

/// Where a server-to-client request's answer arrives.
pub(super) type Slot = oneshot::Sender<Result<Value, ErrorObject>>;

/// Where its asker waits for a server-to-client request's answer.
pub(super) type Answer = oneshot::Receiver<Result<Value, ErrorObject>>;

/// Why a request could not begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotBegun {
    /// A request with this id is already in flight.
    Duplicate,
    /// The session has [`MAX_IN_FLIGHT`] requests in flight.
    Full,
}

impl NotBegun {
    /// The error the client gets.
    pub(crate) fn error(self) -> ErrorObject {
        match self {
            Self::Duplicate => ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                "Invalid request: a request with this id is already in progress",
            ),
            Self::Full => ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("Too many requests in progress on this session (at most {MAX_IN_FLIGHT})"),
            ),
        }
    }
}

/// A session's mutable protocol state (see the module's documentation).
pub(crate) struct SessionState {
    /// `false` once the session ended, and for the state one-shot sessions share: nothing
    /// more is entered, asked or queued, and nothing waits.
    open: bool,
    /// The requests in flight, by id, with their cancellation tokens. A request's job holds
    /// its token (`InFlight`), which it cancels however the request ends; an entry whose
    /// token is cancelled has ended, and is swept out as the table grows ([`SWEEP_AT`]).
    in_flight: HashMap<RequestId, CancellationToken>,
    /// The in-flight table's size at which its ended entries are next swept out
    /// ([`SWEEP_AT`]).
    sweep_at: usize,
    /// The URIs subscribed to, each counted by the resource registry while it is held.
    subscriptions: HashMap<String, Option<Subscriber>>,
    /// Our requests to the client awaiting answers, by id: the slots their answers go to.
    client_calls: HashMap<RequestId, Slot>,
    /// The number in the next server-to-client request's id.
    next_client_call: u64,
    /// `{prefix}-` in the ids of server-to-client requests, once set.
    client_call_prefix: Option<String>,
    /// The session's own queue: what it hears that belongs to no request (list changes,
    /// subscribed resource updates, log messages of no request), for the session's stream.
    transmit: Queued,
}

/// What a session's state let go of when it closed, to be dropped once the lock is released:
/// the slots of the requests still awaiting their client (their askers then hear that the
/// session ended) and the subscriptions (the resource registry hears of the last ones).
#[must_use = "dropped after the state's lock is released"]
pub(crate) struct Closed {
    _client_calls: HashMap<RequestId, Slot>,
    _subscriptions: HashMap<String, Option<Subscriber>>,
    _in_flight: HashMap<RequestId, CancellationToken>,
}

impl SessionState {
    /// An open session's state, empty.
    pub(super) fn new() -> Self {
        Self {
            open: true,
            in_flight: HashMap::new(),
            sweep_at: SWEEP_AT,
            subscriptions: HashMap::new(),
            client_calls: HashMap::new(),
            next_client_call: 1,
            client_call_prefix: None,
            transmit: Queued::default(),
        }
    }

    /// A closed state: what one-shot sessions share (one stateless request: nothing can
    /// address it, it never asks its client, and it has no stream of its own).
    pub(super) fn closed() -> Self {
        Self {
            open: false,
            ..Self::new()
        }
    }

    /// Enters request `id` in flight with its `token`; refused if the id is in flight already
    /// or the session has [`MAX_IN_FLIGHT`] requests in flight. Entries of requests that
    /// ended (their tokens cancelled) do not count: they are swept out from [`SWEEP_AT`]
    /// entries on, and always before a full table refuses. A closed state enters nothing.
    pub(super) fn begin_request(
        &mut self,
        id: RequestId,
        token: &CancellationToken,
    ) -> Result<(), NotBegun> {
        if !self.open {
            return Ok(());
        }
        let map = &mut self.in_flight;
        // `sweep_at` is at most MAX_IN_FLIGHT: a full table is always swept first.
        if map.len() >= self.sweep_at {
            map.retain(|_, t| !t.is_cancelled());
            self.sweep_at = (2 * map.len()).clamp(SWEEP_AT, MAX_IN_FLIGHT);
        }
        let full = map.len() >= MAX_IN_FLIGHT;
        // One lookup: this runs on every request of a session.
        match map.entry(id) {
            Entry::Occupied(e) if !e.get().is_cancelled() => Err(NotBegun::Duplicate),
            Entry::Occupied(mut e) => {
                e.insert(token.clone());
                Ok(())
            }
            Entry::Vacant(_) if full => Err(NotBegun::Full),
            Entry::Vacant(e) => {
                e.insert(token.clone());
                Ok(())
            }
        }
    }

    /// Cancels request `id` (`notifications/cancelled`). Returns whether it was in flight.
    pub(super) fn cancel(&mut self, id: &RequestId) -> bool {
        match self.in_flight.get(id) {
            Some(t) if !t.is_cancelled() => {
                t.cancel();
                true
            }
            _ => false,
        }
    }

    /// Cancels every request in flight (the connection is closing).
    pub(super) fn cancel_all(&mut self) {
        for t in self.in_flight.values() {
            t.cancel();
        }
    }

    /// Whether request `id` is in flight (neither ended nor cancelled).
    pub(super) fn is_in_flight(&self, id: &RequestId) -> bool {
        self.in_flight.get(id).is_some_and(|t| !t.is_cancelled())
    }

    /// The number of requests in flight (neither ended nor cancelled).
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
            .values()
            .filter(|t| !t.is_cancelled())
            .count()
    }

    /// Subscribes to `uri`'s updates (legacy `resources/subscribe`), counted at `registry`
    /// while the session holds it. `false` when the session holds too many subscriptions, or
    /// too many bytes of them, or has ended.
    pub(super) fn subscribe(
        &mut self,
        uri: &str,
        registry: Option<&Arc<McpResourceRegistry>>,
    ) -> bool {
        let subs = &mut self.subscriptions;
        if subs.contains_key(uri) {
            return true;
        }
        let bytes: usize = subs.keys().map(String::len).sum();
        if !self.open
            || subs.len() >= MAX_SUBSCRIPTIONS
            || bytes + uri.len() > MAX_SUBSCRIPTION_BYTES
        {
            return false;
        }
        subs.insert(uri.to_owned(), registry.map(|r| r.note_subscribed(uri)));
        true
    }

    /// Ends the subscription to `uri`. What it returns is dropped once the lock is released
    /// (its registry hears of it then).
    #[must_use = "dropped after the state's lock is released"]
    pub(super) fn unsubscribe(&mut self, uri: &str) -> Option<Subscriber> {
        self.subscriptions.remove(uri).flatten()
    }

    /// Whether the session subscribed to `uri`.
    pub(super) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.contains_key(uri)
    }

    /// Makes the ids of server-to-client requests `srv-{prefix}-{n}`. Set once; `false` when
    /// a prefix was set already.
    pub(super) fn set_client_call_prefix(&mut self, prefix: &str) -> bool {
        if self.client_call_prefix.is_some() {
            return false;
        }
        self.client_call_prefix = Some(format!("{prefix}-"));
        true
    }

    /// Enters a server-to-client request in the table of those awaiting answers: its id
    /// (`srv-{n}`, or `srv-{prefix}-{n}`) and where its asker waits for the answer. `None`
    /// (and nothing is entered) when the session ended or the table is full, after the
    /// entries whose askers stopped waiting left.
    pub(super) fn enter_client_call(&mut self) -> Option<(RequestId, Answer)> {
        if !self.open {
            return None;
        }
        let table = &mut self.client_calls;
        if table.len() >= MAX_PENDING_CLIENT_REQUESTS {
            table.retain(|_, tx| !tx.is_canceled());
        }
        if table.len() >= MAX_PENDING_CLIENT_REQUESTS {
            return None;
        }
        let n = self.next_client_call;
        self.next_client_call += 1;
        let prefix = self.client_call_prefix.as_deref().unwrap_or("");
        let id = RequestId::String(format!("srv-{prefix}{n}"));
        let (tx, rx) = oneshot::channel();
        table.insert(id.clone(), tx);
        Some((id, rx))
    }

    /// Takes request `id` out of the table again: its queue refused it.
    pub(super) fn forget_client_call(&mut self, id: &RequestId) {
        self.client_calls.remove(id);
    }

    /// Takes out the slot of request `id`'s answer, for the client's answer to be sent
    /// through once the lock is released. `None` if nothing awaits it (unknown, answered
    /// already, or the session ended).
    pub(super) fn take_client_call(&mut self, id: &RequestId) -> Option<Slot> {
        self.client_calls.remove(id)
    }

    /// Whether request `id` awaits its answer (asked, not answered, its asker still waiting).
    pub(super) fn awaits_client_response(&self, id: &RequestId) -> bool {
        self.client_calls
            .get(id)
            .is_some_and(|tx| !tx.is_canceled())
    }

    /// Queues `message` on the session's own queue, under the queue's bound and per-kind
    /// rules (`outbound.rs`, [`Queued::push`]); `false` when it is dropped, or the session
    /// has ended.
    pub(super) fn queue(&mut self, message: Weighed) -> bool {
        self.open && self.transmit.push(message)
    }

    /// Queues the update of resource `uri` that `message` makes, if the session subscribed
    /// to `uri`; a session that did not never has it built or weighed.
    pub(super) fn queue_update(
        &mut self,
        uri: &str,
        message: impl FnOnce() -> OutgoingMessage,
    ) -> bool {
        self.is_subscribed(uri) && self.queue(Weighed::new(message()))
    }

    /// The next message for the session's own stream, in the order queued.
    pub(super) fn poll_transmit(&mut self) -> Option<OutgoingMessage> {
        self.transmit.pop()
    }

    /// The session ended: nothing more is entered, asked or queued; what was queued is
    /// dropped; the requests awaiting their client, the subscriptions and the in-flight
    /// entries are handed back, to be dropped once the lock is released (the askers then
    /// hear that the session ended; running requests keep their own tokens, which
    /// [`cancel_all`](Self::cancel_all) cancels).
    pub(super) fn close(&mut self) -> Closed {
        self.open = false;
        self.transmit = Queued::default();
        Closed {
            _client_calls: std::mem::take(&mut self.client_calls),
            _subscriptions: std::mem::take(&mut self.subscriptions),
            _in_flight: std::mem::take(&mut self.in_flight),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(uri: &str) -> impl FnOnce() -> OutgoingMessage + '_ {
        move || OutgoingMessage::Notification {
            method: "notifications/resources/updated",
            params: json!({"uri": uri}),
        }
    }

    fn answer_now(rx: Answer) -> Option<Result<Result<Value, ErrorObject>, oneshot::Canceled>> {
        futures_util::FutureExt::now_or_never(rx)
    }

    /// The in-flight table: a duplicate id is refused while its request runs, a cancelled
    /// or ended entry is neither counted nor cancelled again, and its id may be taken anew.
    #[test]
    fn requests_begin_once_and_are_cancelled_once() {
        let mut s = SessionState::new();
        let (a, b) = (CancellationToken::new(), CancellationToken::new());
        assert_eq!(s.begin_request(RequestId::from(1), &a), Ok(()));
        assert_eq!(
            s.begin_request(RequestId::from(1), &b),
            Err(NotBegun::Duplicate)
        );
        assert_eq!(s.begin_request(RequestId::from(2), &b), Ok(()));
        assert_eq!(s.in_flight(), 2);
        assert!(s.cancel(&RequestId::from(1)));
        assert!(a.is_cancelled() && !b.is_cancelled());
        assert!(!s.cancel(&RequestId::from(1)), "once");
        assert!(!s.cancel(&RequestId::from(3)), "unknown");
        assert!(!s.is_in_flight(&RequestId::from(1)));
        assert!(s.is_in_flight(&RequestId::from(2)));
        assert_eq!(s.in_flight(), 1);
        let again = CancellationToken::new();
        assert_eq!(s.begin_request(RequestId::from(1), &again), Ok(()));
        s.cancel_all();
        assert!(b.is_cancelled() && again.is_cancelled());
        assert_eq!(s.in_flight(), 0);
    }

    /// At [`MAX_IN_FLIGHT`] a new request is refused, unless an entry has ended: ended
    /// entries are swept out for it.
    #[test]
    fn the_in_flight_table_is_bounded_and_ended_entries_make_room() {
        let mut s = SessionState::new();
        let tokens: Vec<CancellationToken> = (0..MAX_IN_FLIGHT)
            .map(|_| CancellationToken::new())
            .collect();
        for (n, t) in tokens.iter().enumerate() {
            assert_eq!(s.begin_request(RequestId::from(n as i64), t), Ok(()));
        }
        let late = CancellationToken::new();
        assert_eq!(
            s.begin_request(RequestId::from(-1), &late),
            Err(NotBegun::Full)
        );
        tokens[7].cancel();
        assert_eq!(s.begin_request(RequestId::from(-1), &late), Ok(()));
        assert_eq!(s.in_flight(), MAX_IN_FLIGHT);
    }

    /// Ended entries go long before the table is full: sequential calls keep it at
    /// [`SWEEP_AT`] entries, and with requests really in flight it stays within twice their
    /// number, those requests kept.
    #[test]
    fn ended_entries_are_swept_long_before_the_table_is_full() {
        let mut s = SessionState::new();
        let end_one = |s: &mut SessionState, n: i64| {
            let t = CancellationToken::new();
            assert_eq!(s.begin_request(RequestId::from(n), &t), Ok(()));
            t.cancel();
        };
        for n in 0..10_000 {
            end_one(&mut s, n);
            assert!(s.in_flight.len() <= SWEEP_AT, "{n}: {}", s.in_flight.len());
        }
        assert!(
            s.in_flight.capacity() < 4 * SWEEP_AT,
            "{}",
            s.in_flight.capacity()
        );
        let live: Vec<CancellationToken> = (0..100)
            .map(|n| {
                let t = CancellationToken::new();
                assert_eq!(s.begin_request(RequestId::from(-1 - n), &t), Ok(()));
                t
            })
            .collect();
        for n in 10_000..20_000 {
            end_one(&mut s, n);
            assert!(
                s.in_flight.len() <= 2 * live.len(),
                "{n}: {}",
                s.in_flight.len()
            );
        }
        assert_eq!(s.in_flight(), live.len());
        assert!(s.is_in_flight(&RequestId::from(-1)));
        // Once they end, the next sweeps bring the table back down.
        for t in &live {
            t.cancel();
        }
        for n in 20_000..21_000 {
            end_one(&mut s, n);
        }
        assert!(s.in_flight.len() <= SWEEP_AT, "{}", s.in_flight.len());
    }

    /// A subscription is held once; the session's queue takes a resource update only for a
    /// URI subscribed to, once while it is queued; unsubscribed, the update is not queued.
    #[test]
    fn updates_are_queued_for_subscribed_uris_only() {
        let mut s = SessionState::new();
        assert!(s.subscribe("x://a", None));
        assert!(s.subscribe("x://a", None), "again: held once");
        assert!(s.queue_update("x://a", update("x://a")));
        assert!(s.queue_update("x://a", update("x://a")), "coalesced");
        let mut built = false;
        let not_subscribed = s.queue_update("x://b", || {
            built = true;
            update("x://b")()
        });
        assert!(!not_subscribed && !built, "not subscribed: not even built");
        assert!(s.poll_transmit().is_some());
        assert!(s.poll_transmit().is_none(), "one update queued");
        assert!(s.unsubscribe("x://a").is_none(), "no registry counted it");
        assert!(!s.is_subscribed("x://a"));
        assert!(!s.queue_update("x://a", update("x://a")));
    }

    /// Subscriptions are bounded in bytes as well as in number.
    #[test]
    fn subscriptions_are_bounded_in_bytes() {
        let mut s = SessionState::new();
        let long = "x".repeat(600 * 1024);
        assert!(s.subscribe(&format!("a://{long}"), None));
        assert!(!s.subscribe(&format!("b://{long}"), None), "past the bytes");
        assert!(s.subscribe("c://short", None));
    }

    /// Server-to-client requests get distinct ids (with the prefix once set), wait in the
    /// table until answered or forgotten, and the table is bounded: at the bound, entries
    /// whose askers stopped waiting leave first.
    #[test]
    fn client_calls_are_entered_answered_and_bounded() {
        let mut s = SessionState::new();
        let (first, rx) = s.enter_client_call().expect("room");
        assert_eq!(first, RequestId::String("srv-1".into()));
        assert!(s.awaits_client_response(&first));
        assert!(s.set_client_call_prefix("i2"));
        assert!(!s.set_client_call_prefix("i3"), "set once");
        let (second, gone) = s.enter_client_call().expect("room");
        assert_eq!(second, RequestId::String("srv-i2-2".into()));
        let slot = s.take_client_call(&first).expect("waiting");
        assert!(slot.send(Ok(json!(1))).is_ok());
        assert_eq!(answer_now(rx), Some(Ok(Ok(json!(1)))));
        assert!(!s.awaits_client_response(&first), "answered once");
        assert!(s.take_client_call(&first).is_none());
        drop(gone);
        assert!(
            !s.awaits_client_response(&second),
            "its asker stopped waiting"
        );
        s.forget_client_call(&second);
        let mut held = Vec::new();
        for _ in 0..MAX_PENDING_CLIENT_REQUESTS {
            held.push(s.enter_client_call().expect("room"));
        }
        assert!(s.enter_client_call().is_none(), "full");
        drop(held.pop());
        assert!(
            s.enter_client_call().is_some(),
            "a given-up entry made room"
        );
    }

    /// Closing fails every request awaiting its client (its asker hears the session ended),
    /// lets go of the subscriptions and what was queued, and refuses what comes after; the
    /// in-flight requests were cancelled by `cancel_all`, through the same state.
    #[test]
    fn closing_ends_everything_that_waits() {
        let mut s = SessionState::new();
        let tokens: Vec<CancellationToken> = (0..3).map(|_| CancellationToken::new()).collect();
        for (n, t) in tokens.iter().enumerate() {
            s.begin_request(RequestId::from(n as i64), t).unwrap();
        }
        let asked: Vec<(RequestId, Answer)> =
            (0..3).map(|_| s.enter_client_call().unwrap()).collect();
        assert!(s.subscribe("x://a", None));
        assert!(s.queue(Weighed::new(update("x://a")())));
        s.cancel_all();
        let closed = s.close();
        assert!(tokens.iter().all(CancellationToken::is_cancelled));
        drop(closed);
        for (id, rx) in asked {
            assert!(!s.awaits_client_response(&id));
            assert_eq!(answer_now(rx), Some(Err(oneshot::Canceled)), "{id}");
        }
        assert!(!s.is_subscribed("x://a"));
        assert!(s.poll_transmit().is_none(), "the queue was let go");
        assert!(s.enter_client_call().is_none(), "nothing more is asked");
        assert!(!s.subscribe("x://b", None));
        assert!(!s.queue(Weighed::new(update("x://a")())));
        let late = CancellationToken::new();
        assert_eq!(s.begin_request(RequestId::from(9), &late), Ok(()));
        assert_eq!(s.in_flight(), 0, "nothing more is entered");
    }

    /// One id may name a client's request in flight and one of our requests to the client at
    /// once (each side numbers its own): a cancel reaches only the request in flight, an
    /// answer only our request.
    #[test]
    fn an_id_in_both_tables_names_two_requests() {
        let mut s = SessionState::new();
        let (cancelled, _waits) = s.enter_client_call().expect("room");
        let theirs = CancellationToken::new();
        assert_eq!(s.begin_request(cancelled.clone(), &theirs), Ok(()));
        assert!(s.cancel(&cancelled));
        assert!(theirs.is_cancelled());
        assert!(
            s.awaits_client_response(&cancelled),
            "our request still waits"
        );
        let (answered, rx) = s.enter_client_call().expect("room");
        let running = CancellationToken::new();
        assert_eq!(s.begin_request(answered.clone(), &running), Ok(()));
        let slot = s.take_client_call(&answered).expect("waiting");
        assert!(slot.send(Ok(json!({}))).is_ok());
        assert_eq!(answer_now(rx), Some(Ok(Ok(json!({})))));
        assert!(s.is_in_flight(&answered), "the client's request still runs");
        assert!(!running.is_cancelled());
    }

    /// The state one-shot sessions share enters, asks and queues nothing.
    #[test]
    fn a_closed_state_holds_nothing() {
        let mut s = SessionState::closed();
        assert_eq!(
            s.begin_request(RequestId::from(1), &CancellationToken::new()),
            Ok(())
        );
        assert!(!s.is_in_flight(&RequestId::from(1)));
        assert!(s.enter_client_call().is_none());
        assert!(!s.queue(Weighed::new(update("x://a")())));
        assert!(!s.subscribe("x://a", None));
    }
}
