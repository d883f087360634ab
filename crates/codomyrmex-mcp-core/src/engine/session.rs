//! Per-connection state: the legacy handshake, settled once and read without a lock, and
//! the session's mutable protocol state ([`SessionState`]: in-flight requests,
//! subscriptions, our own pending requests to the client, the session's own queue) behind
//! its one lock ([`StateLock`]).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde_json::Value;

use crate::sync::CancellationToken;

use super::policy::Gate;
pub(crate) use super::session_state::NotBegun;
use super::session_state::SessionState;
use crate::context::Principal;
use crate::outbound::{AskClient, ClientCall, Outbound, Weighed};
use crate::wire::{ErrorObject, LoggingLevel, OutgoingMessage, ProtocolVersion, RequestId};

/// The state of one connection (stdio) or one legacy session (HTTP).
///
/// Modern requests use a session only to track cancellation of in-flight requests; they never
/// read or change its handshake state.
///
/// What changes after the handshake is one `SessionState` behind one lock (issue #27
/// item 1): each input or event takes it once, for one short `&mut` call, never across an
/// `.await` or a call into user code. The handshake and the session's name are written once
/// and then read without a lock; the log level and the `notifications/initialized` flag are
/// atomics, single words tied to nothing else in the state, read by every legacy request's
/// scope with no lock.
pub struct Session {
    /// What `initialize` settled (version, client capabilities and info): written once, then
    /// only read, so read without a lock.
    handshake: OnceLock<Handshake>,
    /// The client's `logging/setLevel`, if any.
    log_level: LevelCell,
    /// Whether the client sent `notifications/initialized`.
    initialized_notified: AtomicBool,
    /// The session's mutable protocol state, behind its one lock: shared (not the session)
    /// with the calls that may ask the client, closed when the session ends.
    state: Arc<StateLock>,
    gate: Arc<Gate>,
    principal: Option<Principal>,
    /// A session for one stateless request: nothing can address its request by id, so the
    /// request is not entered in the in-flight table, and its state is the closed one all
    /// one-shot sessions share, which the session's methods do not lock (only a call that
    /// asks the client would, and is refused).
    one_shot: bool,
    /// The id clients address this session by (HTTP's `Mcp-Session-Id`), when it has one:
    /// 2025-11-25 task records name it, so another instance knows whose tasks they are.
    key: std::sync::OnceLock<String>,
    /// Distinct for every session of this process: names a session without a key.
    serial: u64,
}

/// The serial of the next session.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// A session's one lock around its [`SessionState`] (quinn's `ConnectionRef`): the session
/// holds it, and so, as an [`AskClient`], do the calls that may ask the client (a handler's
/// context, a 2025-11-25 task's link, weakly). It holds the state and nothing else: no
/// session, no engine, no handshake.
pub(crate) struct StateLock {
    state: Mutex<SessionState>,
}

impl StateLock {
    fn new(state: SessionState) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(state),
        })
    }

    /// The state, for one short `&mut` call.
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The closed state all one-shot sessions share: it enters, asks and queues nothing.
    fn shared_closed() -> Arc<Self> {
        static CLOSED: std::sync::LazyLock<Arc<StateLock>> =
            std::sync::LazyLock::new(|| StateLock::new(SessionState::closed()));
        CLOSED.clone()
    }
}

impl AskClient for StateLock {
    fn ask(&self, method: &'static str, params: Value, outbound: &Outbound) -> Option<ClientCall> {
        let (id, answer) = self.lock().enter_client_call()?;
        match ClientCall::queue(id, method, params, answer, outbound) {
            Ok(call) => Some(call),
            Err(id) => {
                self.lock().forget_client_call(&id);
                None
            }
        }
    }
}

/// The legacy handshake as `initialize` (or a restore) settled it.
struct Handshake {
    negotiated: ProtocolVersion,
    client_capabilities: Arc<Value>,
    client_info: Option<Value>,
}

/// An optional [`LoggingLevel`] in an atomic: `0` for none, else one more than its place in
/// severity order.
#[derive(Default)]
struct LevelCell(AtomicU8);

/// The levels in severity order: [`LevelCell`]'s code of one is one more than its index.
const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

impl LevelCell {
    fn get(&self) -> Option<LoggingLevel> {
        let code = self.0.load(Ordering::Acquire);
        LEVELS.get(usize::from(code).checked_sub(1)?).copied()
    }

    fn set(&self, level: Option<LoggingLevel>) {
        let code = level
            .and_then(|l| LEVELS.iter().position(|x| *x == l))
            .and_then(|i| u8::try_from(i + 1).ok())
            .unwrap_or(0);
        self.0.store(code, Ordering::Release);
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("negotiated", &self.negotiated())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

/// A request's place in its session's in-flight table, as the request's job holds it: the
/// request's cancellation token, and no session (issue #27 item 1: a running job holds ids
/// and data). Dropped, however the request ends, it cancels the token, which ends the table
/// entry: the session never counts or cancels an ended entry, lets a new request take its
/// id, and sweeps ended entries out when it needs the room ([`SessionState::begin_request`]).
pub(crate) struct InFlight {
    token: CancellationToken,
}

impl InFlight {
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // Cancelling on drop stops work the tool spawned with the context's token, and ends
        // the request's entry in its session's table.
        self.token.cancel();
    }
}

impl Session {
    /// A session for one stateless request (see [`Engine::new_stateless_session`]).
    ///
    /// [`Engine::new_stateless_session`]: super::Engine::new_stateless_session
    pub(crate) fn one_shot(gate: Arc<Gate>) -> Self {
        Self::build(gate, true)
    }

    /// A session whose handlers run `n` at once, with as many waiting (tests).
    #[cfg(test)]
    pub(crate) fn new(n: usize) -> Self {
        Self::with_gate(Arc::new(super::policy::bounded(n, n)))
    }

    /// A session admitting handlers through `gate`.
    pub(crate) fn with_gate(gate: Arc<Gate>) -> Self {
        Self::build(gate, false)
    }

    /// A session admitting through `gate`; a one-shot session (one stateless request) never
    /// asks its client and has no stream of its own, so it allocates no state: it shares the
    /// closed one.
    fn build(gate: Arc<Gate>, one_shot: bool) -> Self {
        Self {
            handshake: OnceLock::new(),
            log_level: LevelCell::default(),
            initialized_notified: AtomicBool::new(false),
            state: if one_shot {
                StateLock::shared_closed()
            } else {
                StateLock::new(SessionState::new())
            },
            gate,
            principal: None,
            one_shot,
            key: std::sync::OnceLock::new(),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Subscribes to a resource's updates (legacy `resources/subscribe`), counted at
    /// `registry` while the session holds it (until it unsubscribes or ends). `false` when
    /// the session holds too many subscriptions, or too many bytes of them. A one-shot
    /// session, which ends with its one request before any update could reach it, holds
    /// none and says it does.
    pub(crate) fn subscribe(
        &self,
        uri: &str,
        registry: Option<&Arc<crate::resources::McpResourceRegistry>>,
    ) -> bool {
        self.one_shot || self.state.lock().subscribe(uri, registry)
    }

    /// Ends a subscription.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        if self.one_shot {
            return;
        }
        let gone = self.state.lock().unsubscribe(uri);
        // Its registry hears of it outside the lock.
        drop(gone);
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        !self.one_shot && self.state.lock().is_subscribed(uri)
    }

    /// Names the session by the id clients address it with (HTTP's `Mcp-Session-Id`); set
    /// once, later calls are ignored. 2025-11-25 tasks shared through a task store are listed
    /// and found by it from any instance.
    pub fn set_key(&self, key: &str) {
        let _ = self.key.set(key.to_owned());
    }

    /// Distinct for every session of this process.
    pub(crate) fn serial(&self) -> u64 {
        self.serial
    }

    /// The id set with [`set_key`](Self::set_key), if any.
    pub fn key(&self) -> Option<&str> {
        self.key.get().map(String::as_str)
    }

    /// Attaches the authenticated caller (HTTP).
    pub fn with_principal(mut self: Arc<Self>, principal: Option<Principal>) -> Arc<Self> {
        if let Some(s) = Arc::get_mut(&mut self) {
            s.principal = principal;
        }
        self
    }

    /// The legacy protocol version negotiated by `initialize`, if any.
    pub fn negotiated(&self) -> Option<ProtocolVersion> {
        self.handshake.get().map(|h| h.negotiated)
    }

    /// Whether the client sent `notifications/initialized`.
    pub fn initialized_notified(&self) -> bool {
        self.initialized_notified.load(Ordering::Acquire)
    }

    /// The client's `clientInfo` from `initialize`.
    pub fn client_info(&self) -> Option<Value> {
        self.handshake.get().and_then(|h| h.client_info.clone())
    }

    /// The number of requests running now (neither ended nor cancelled).
    pub fn in_flight(&self) -> usize {
        if self.one_shot {
            return 0;
        }
        self.state.lock().in_flight()
    }

    /// Who the session's client authenticated as (see [`with_principal`](Self::with_principal)),
    /// if anyone: what authorization and `requestState` binding use.
    pub fn principal(&self) -> Option<Principal> {
        self.principal.clone()
    }

    /// The principal, borrowed (authorization asks it on every request).
    pub(crate) fn principal_ref(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The admission bound this session's handlers run under.
    pub(crate) fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The negotiated version with the client's capabilities and log level, read together
    /// (`None` before `initialize`). The HTTP transport writes them into the session's record.
    pub fn negotiated_scope(&self) -> Option<(ProtocolVersion, Arc<Value>, Option<LoggingLevel>)> {
        let h = self.handshake.get()?;
        Some((
            h.negotiated,
            h.client_capabilities.clone(),
            self.log_level.get(),
        ))
    }

    /// Whether the client declared any of `names` among its capabilities (`initialize`'s
    /// `capabilities`; `false` before it).
    pub fn has_any_client_capability(&self, names: &[&str]) -> bool {
        self.handshake
            .get()
            .is_some_and(|h| names.iter().any(|n| h.client_capabilities.get(n).is_some()))
    }

    /// The minimum level of log messages that belong to no request, as the client set it
    /// with `logging/setLevel` (2025-11-25 and earlier); `None` until it does.
    pub fn log_level(&self) -> Option<LoggingLevel> {
        self.log_level.get()
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.set(Some(level));
    }

    /// Records the handshake. `false` if the session was already initialised.
    pub(crate) fn initialize(
        &self,
        version: ProtocolVersion,
        capabilities: Value,
        client_info: Option<Value>,
    ) -> bool {
        self.handshake
            .set(Handshake {
                negotiated: version,
                client_capabilities: Arc::new(capabilities),
                client_info,
            })
            .is_ok()
    }

    /// Rebuilds the handshake of a legacy session that another server instance opened, from
    /// the record it stored: the negotiated version, the client's capabilities and info and
    /// the log level, as if `initialize` and `notifications/initialized` had arrived here.
    /// `false` (and nothing changes) if this session was already initialised.
    pub fn restore(
        &self,
        version: ProtocolVersion,
        capabilities: Value,
        client_info: Option<Value>,
        log_level: Option<LoggingLevel>,
    ) -> bool {
        if !self.initialize(version, capabilities, client_info) {
            return false;
        }
        // A restored session is not shared yet: nothing reads it between the handshake and
        // these.
        self.log_level.set(log_level);
        self.mark_initialized();
        true
    }

    pub(crate) fn mark_initialized(&self) {
        self.initialized_notified.store(true, Ordering::Release);
    }

    /// Registers an in-flight request; refused if the id is already in flight or the session
    /// has too many. Entries of requests that ended (their [`InFlight`] dropped, which
    /// cancels the token) do not count: they are swept out when the table needs the room.
    pub(crate) fn begin_request(&self, id: RequestId) -> Result<InFlight, NotBegun> {
        let token = CancellationToken::new();
        if !self.one_shot {
            self.state.lock().begin_request(id, &token)?;
        }
        Ok(InFlight { token })
    }

    /// Cancels an in-flight request. Returns whether it was found (and had not ended).
    pub fn cancel(&self, id: &RequestId) -> bool {
        !self.one_shot && self.state.lock().cancel(id)
    }

    /// Whether a request with this id is in flight here (neither ended nor cancelled).
    pub fn is_in_flight(&self, id: &RequestId) -> bool {
        !self.one_shot && self.state.lock().is_in_flight(id)
    }

    /// Whether a server-to-client request with this id awaits its answer here (sent, not
    /// answered, and its asker still waiting).
    pub fn awaits_client_response(&self, id: &RequestId) -> bool {
        !self.one_shot && self.state.lock().awaits_client_response(id)
    }

    /// The next message for the session's own stream (stdio's output, HTTP's GET stream):
    /// quinn's `poll_transmit`. What `Listeners::handle_event` queued, in order, list changes
    /// coalesced; `None` when nothing is queued.
    pub fn poll_transmit(&self) -> Option<OutgoingMessage> {
        if self.one_shot {
            return None;
        }
        self.state.lock().poll_transmit()
    }

    /// Queues `message` on the session's own queue, for [`poll_transmit`](Self::poll_transmit).
    /// `false` if it is not queued.
    pub(crate) fn transmit(&self, message: OutgoingMessage) -> bool {
        if self.one_shot {
            return false;
        }
        let message = Weighed::new(message);
        self.state.lock().queue(message)
    }

    /// Queues the update of resource `uri` that `message` makes, only if the session
    /// subscribed to `uri`: the check, and for a subscriber the building, weighing and
    /// queueing, under one lock. `false` if it is not queued.
    pub(crate) fn transmit_update(
        &self,
        uri: &str,
        message: impl FnOnce() -> OutgoingMessage,
    ) -> bool {
        if self.one_shot {
            return false;
        }
        self.state.lock().queue_update(uri, message)
    }

    /// Where a call that may ask the client enters its requests: the session's state, not
    /// the session.
    pub(crate) fn asker(&self) -> Arc<dyn AskClient> {
        self.state.clone()
    }

    /// [`asker`](Self::asker), held weakly (by a 2025-11-25 task, which must not keep the
    /// session's state alive).
    pub(crate) fn weak_asker(&self) -> std::sync::Weak<dyn AskClient> {
        let state: Arc<dyn AskClient> = self.state.clone();
        Arc::downgrade(&state)
    }

    /// Makes the ids of this session's server-to-client requests `srv-{prefix}-{n}` rather
    /// than `srv-{n}`, so that instances serving one session never reuse an id. Set once;
    /// `false` when a prefix was set already.
    pub fn set_request_id_prefix(&self, prefix: &str) -> bool {
        !self.one_shot && self.state.lock().set_client_call_prefix(prefix)
    }

    /// Cancels everything in flight (the connection is closing).
    pub fn cancel_all(&self) {
        if !self.one_shot {
            self.state.lock().cancel_all();
        }
    }

    /// Hands the client's answer to request `id` to the call that asked, if one still waits
    /// (from `Engine::handle_response`, the one way an answer comes back in). `false` if no
    /// call waits for it: unknown, already answered, or given up by the call that asked.
    pub(crate) fn resolve_client_request(
        &self,
        id: &RequestId,
        outcome: Result<Value, ErrorObject>,
    ) -> bool {
        let waiting = if self.one_shot {
            None
        } else {
            self.state.lock().take_client_call(id)
        };
        // The answer is sent once the lock is released.
        match waiting {
            Some(tx) => tx.send(outcome).is_ok(),
            None => {
                tracing::debug!(%id, "a response matched no pending request");
                false
            }
        }
    }
}

impl Drop for Session {
    /// The session ended: the calls still waiting for their client's answer end (no answer
    /// can reach them now), its subscriptions end, and nothing more is asked or queued,
    /// through the state the calls hold.
    fn drop(&mut self) {
        if self.one_shot {
            return;
        }
        let closed = self.state.lock().close();
        // What the state let go of is dropped once the lock is released.
        drop(closed);
    }
}

#[cfg(test)]
mod tests {
    use super::super::session_state::{MAX_IN_FLIGHT, MAX_SUBSCRIPTIONS};
    use super::*;
    use crate::config::McpServerConfig;
    use crate::context::MessageSink;
    use crate::engine::Engine;
    use crate::registry::McpToolRegistry;
    use crate::schema::JsonObject;
    use crate::test_runtime::{advance, idle, run, spawn};
    use std::sync::{Mutex, MutexGuard, PoisonError};

    fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        m.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handshake is settled once, without a lock: a second `initialize` or a restore of
    /// an initialised session changes nothing; the log level (kept in an atomic) reads back
    /// as set, every level and none.
    #[test]
    fn the_handshake_is_settled_once_and_the_log_level_reads_back() {
        let s = Session::new(1);
        assert_eq!(s.negotiated_scope(), None);
        assert!(!s.has_any_client_capability(&["roots"]));
        assert!(s.initialize(
            ProtocolVersion::V2025_11_25,
            serde_json::json!({"roots": {}}),
            Some(serde_json::json!({"name": "a"})),
        ));
        assert!(!s.initialize(ProtocolVersion::V2025_06_18, serde_json::json!({}), None));
        assert!(!s.restore(
            ProtocolVersion::V2025_06_18,
            serde_json::json!({}),
            None,
            Some(LoggingLevel::Error),
        ));
        assert_eq!(s.negotiated(), Some(ProtocolVersion::V2025_11_25));
        assert!(s.has_any_client_capability(&["roots"]));
        assert_eq!(s.client_info(), Some(serde_json::json!({"name": "a"})));
        assert!(!s.initialized_notified());
        assert_eq!(s.log_level(), None);
        for level in LEVELS {
            s.set_log_level(level);
            assert_eq!(s.log_level(), Some(level));
            assert_eq!(s.negotiated_scope().map(|n| n.2), Some(Some(level)));
        }
        let restored = Session::new(1);
        assert!(restored.restore(
            ProtocolVersion::V2025_06_18,
            serde_json::json!({}),
            None,
            Some(LoggingLevel::Notice),
        ));
        assert!(restored.initialized_notified());
        assert_eq!(restored.log_level(), Some(LoggingLevel::Notice));
        let cell = LevelCell::default();
        cell.set(Some(LoggingLevel::Emergency));
        cell.set(None);
        assert_eq!(cell.get(), None);
    }

    /// One stream, as a transport writes it: what the engine sends on its own and the answers.
    #[derive(Default)]
    struct Stream(Mutex<Vec<Value>>);

    impl MessageSink for Stream {
        fn send(&self, message: OutgoingMessage) -> bool {
            let wire = serde_json::from_slice(&message.to_bytes()).unwrap();
            lock(&self.0).push(wire);
            true
        }
    }

    impl Stream {
        fn taken(&self) -> Vec<Value> {
            std::mem::take(&mut *lock(&self.0))
        }
    }

    /// The order the transports rely on: what a call emits before its answer (here progress
    /// notifications) is on the stream before the answer, on the virtual clock with the call
    /// waiting between the two.
    #[test]
    fn what_a_call_emits_is_on_its_stream_before_its_answer() {
        run(async {
            let registry = McpToolRegistry::new();
            registry
                .register(
                    "slow",
                    serde_json::json!({"type": "object"}),
                    |_: JsonObject, cx: crate::context::ToolContext| async move {
                        cx.progress(1.0, Some(2.0), None);
                        crate::test_runtime::sleep(std::time::Duration::from_secs(5)).await;
                        cx.progress(2.0, Some(2.0), None);
                        crate::schema::McpToolResult::success(None)
                    },
                )
                .unwrap();
            let engine = Engine::new(McpServerConfig::default(), Arc::new(registry));
            let session = engine.new_session();
            let stream = Arc::new(Stream::default());
            let sink: Arc<dyn MessageSink> = stream.clone();
            let send = |msg: Value| {
                engine
                    .handle_decoded(
                        &session,
                        crate::wire::jsonrpc::decode(msg.to_string().as_bytes()),
                        &sink,
                    )
                    .into_message()
            };
            send(
                serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"t","version":"0"}}}),
            )
            .await;
            send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"})).await;
            let call = send(
                serde_json::json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                "params":{"name":"slow","arguments":{},"_meta":{"progressToken":"p"}}}),
            );
            let write = stream.clone();
            let call = spawn(async move {
                if let Some(answer) = call.await {
                    write.send(answer);
                }
            });
            idle().await;
            assert_eq!(lock(&stream.0).len(), 1, "the first progress, at once");
            advance(std::time::Duration::from_secs(5)).await;
            assert!(call.is_finished());
            let written = stream.taken();
            let order: Vec<Value> = written
                .iter()
                .map(|m| m.get("method").cloned().unwrap_or_else(|| m["id"].clone()))
                .collect();
            assert_eq!(
                order,
                vec![
                    serde_json::json!("notifications/progress"),
                    serde_json::json!("notifications/progress"),
                    serde_json::json!(7),
                ],
                "{written:?}"
            );
        });
    }

    /// Closing a session as the transports do (`cancel_all`, then the last `Arc` goes)
    /// cancels every request in flight and ends every call waiting for its client, through
    /// the one state: the calls of requests, and a 2025-11-25 task's (which holds the state
    /// weakly) alike; the state a call still holds then asks nothing more, and the resource
    /// registry hears the session's subscriptions end.
    #[test]
    fn closing_a_session_cancels_its_requests_and_ends_its_calls() {
        use crate::outbound::Answered;
        use crate::resources::{McpResourceRegistry, ResourceEvent};
        use crate::sync::Recv;
        let registry = Arc::new(McpResourceRegistry::new());
        let mut events = registry.subscribe_updates();
        let session = Arc::new(Session::new(1));
        let guards: Vec<InFlight> = (0..3)
            .map(|n| session.begin_request(RequestId::from(n)).expect("room"))
            .collect();
        let out = Outbound::to(crate::context::NullSink::shared());
        let asker = session.asker();
        let task = session.weak_asker();
        let mut calls: Vec<ClientCall> = (0..2)
            .map(|_| asker.ask("roots/list", serde_json::json!({}), &out))
            .collect::<Option<_>>()
            .expect("asked");
        let task = task.upgrade().expect("the state lives");
        calls.push(
            task.ask("sampling/createMessage", serde_json::json!({}), &out)
                .expect("asked"),
        );
        assert!(session.subscribe("x://1", Some(&registry)));
        assert_eq!(
            futures_executor::block_on(events.recv()),
            Recv::Value(ResourceEvent::Subscribed("x://1".into()))
        );
        session.cancel_all();
        assert!(guards.iter().all(|g| g.token().is_cancelled()));
        assert_eq!(session.in_flight(), 0);
        drop(session);
        let never = CancellationToken::new();
        for call in calls {
            let answered = futures_util::FutureExt::now_or_never(call.answer(&never));
            assert_eq!(answered, Some(Answered::Gone));
        }
        assert_eq!(
            futures_executor::block_on(events.recv()),
            Recv::Value(ResourceEvent::Unsubscribed("x://1".into()))
        );
        assert!(
            asker
                .ask("roots/list", serde_json::json!({}), &out)
                .is_none()
        );
        assert!(
            task.ask("roots/list", serde_json::json!({}), &out)
                .is_none()
        );
    }

    #[test]
    fn the_in_flight_table_is_bounded() {
        // Issue #13 (an unbounded buffer): requests past the concurrency limit wait, each in
        // the table with its arguments, and streamed legacy calls hold no HTTP slot.
        let s = Arc::new(Session::new(1));
        let mut guards = Vec::new();
        for n in 0..MAX_IN_FLIGHT as i64 {
            guards.push(s.begin_request(RequestId::from(n)).expect("room"));
        }
        assert_eq!(
            s.begin_request(RequestId::from(-1)).err(),
            Some(NotBegun::Full)
        );
        assert_eq!(
            s.begin_request(RequestId::from(0)).err(),
            Some(NotBegun::Duplicate)
        );
        guards.pop();
        assert!(s.begin_request(RequestId::from(-1)).is_ok(), "room again");
    }

    #[test]
    fn subscriptions_are_bounded_in_bytes() {
        // Issue #13 (an unbounded buffer): 4096 subscriptions, each as long as a message may
        // be, held gigabytes per session.
        let s = Session::new(1);
        let mut kept = 0;
        for i in 0..MAX_SUBSCRIPTIONS {
            let uri = format!("file:///{i}/{}", "x".repeat(8 * 1024));
            if s.subscribe(&uri, None) {
                kept += uri.len();
            }
        }
        assert!(kept <= 1024 * 1024, "{kept} bytes of subscriptions");
    }

    /// The registry hears `Unsubscribed` when the last session subscribed to a URI
    /// unsubscribes or ends, and not before (a gateway forwards it to the URI's upstream).
    #[test]
    fn the_last_subscriber_leaving_is_told() {
        use crate::resources::{McpResourceRegistry, ResourceEvent};
        use crate::sync::Recv;
        let registry = Arc::new(McpResourceRegistry::new());
        let mut events = registry.subscribe_updates();
        let mut next = || futures_executor::block_on(events.recv());
        let (a, b) = (Session::new(1), Session::new(1));
        assert!(a.subscribe("x://1", Some(&registry)));
        assert!(
            a.subscribe("x://1", Some(&registry)),
            "again: no second count"
        );
        assert!(b.subscribe("x://1", Some(&registry)));
        assert!(b.subscribe("x://2", Some(&registry)));
        for uri in ["x://1", "x://1", "x://2"] {
            assert_eq!(next(), Recv::Value(ResourceEvent::Subscribed(uri.into())));
        }
        a.unsubscribe("x://1");
        a.unsubscribe("x://1");
        // b still holds x://1: the next event is of b's end, x://1 and x://2 in some order.
        drop(b);
        let mut gone = vec![next(), next()];
        gone.sort_by_key(|e| format!("{e:?}"));
        assert_eq!(
            gone,
            vec![
                Recv::Value(ResourceEvent::Unsubscribed("x://1".into())),
                Recv::Value(ResourceEvent::Unsubscribed("x://2".into())),
            ]
        );
    }
}
