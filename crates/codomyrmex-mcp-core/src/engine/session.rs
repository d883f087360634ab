//! Per-connection state: the legacy handshake, in-flight requests and our own pending
//! requests to the client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde_json::Value;

use crate::sync::CancellationToken;

use super::policy::Gate;
use crate::context::Principal;
use crate::outbound::{ClientCalls, Outbound};
use crate::wire::{ErrorObject, LoggingLevel, OutgoingMessage, ProtocolVersion, RequestId};

/// The state of one connection (stdio) or one legacy session (HTTP).
///
/// Modern requests use a session only to track cancellation of in-flight requests; they never
/// read or change its handshake state.
pub struct Session {
    /// What `initialize` settled (version, client capabilities and info): written once, then
    /// only read, so read without a lock.
    handshake: OnceLock<Handshake>,
    /// The client's `logging/setLevel`, if any.
    log_level: LevelCell,
    /// Whether the client sent `notifications/initialized`.
    initialized_notified: AtomicBool,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Our requests to the client awaiting answers: handed (not the session) to the calls
    /// that may ask, resolved by `Engine::handle_response`, closed when the session ends.
    calls: OwnedCalls,
    /// The session's own queue (issue #27 item 1): what it hears that belongs to no request
    /// (list changes, subscribed resource updates, log messages of no request), queued as
    /// values by `Listeners::handle_event` and taken by the transport with
    /// [`poll_transmit`](Session::poll_transmit) for the session's own stream.
    transmit: Outbound,
    gate: Arc<Gate>,
    principal: Option<Principal>,
    /// The URIs subscribed to, each counted by the resource registry while it is held.
    subscriptions: Mutex<HashMap<String, Option<crate::resources::Subscriber>>>,
    /// A session for one stateless request: nothing can address its request by id, so the
    /// request is not entered in the in-flight table.
    one_shot: bool,
    /// The id clients address this session by (HTTP's `Mcp-Session-Id`), when it has one:
    /// 2025-11-25 task records name it, so another instance knows whose tasks they are.
    key: std::sync::OnceLock<String>,
    /// Distinct for every session of this process: names a session without a key.
    serial: u64,
}

/// The serial of the next session.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// The most requests one session may have in flight (running or waiting for a permit).
const MAX_IN_FLIGHT: usize = 1024;

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
                crate::wire::ErrorCode::INVALID_REQUEST,
                "Invalid request: a request with this id is already in progress",
            ),
            Self::Full => ErrorObject::new(
                crate::wire::ErrorCode::INVALID_REQUEST,
                format!("Too many requests in progress on this session (at most {MAX_IN_FLIGHT})"),
            ),
        }
    }
}

/// The most resource subscriptions one legacy session may hold.
const MAX_SUBSCRIPTIONS: usize = 4096;
/// The most bytes of subscribed URIs one legacy session may hold.
const MAX_SUBSCRIPTION_BYTES: usize = 1024 * 1024;

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A request's place in its session's in-flight table, as the request's job holds it: the
/// request's cancellation token, and no session (issue #27 item 1: a running job holds ids
/// and data). Dropped, however the request ends, it cancels the token, which ends the table
/// entry: the session never counts or cancels an ended entry, lets a new request take its
/// id, and sweeps ended entries out when it needs the room ([`Session::begin_request`]).
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
    /// asks its client and has no stream of its own, so it allocates no table and no queue.
    fn build(gate: Arc<Gate>, one_shot: bool) -> Self {
        Self {
            handshake: OnceLock::new(),
            log_level: LevelCell::default(),
            initialized_notified: AtomicBool::new(false),
            in_flight: Mutex::new(HashMap::new()),
            calls: OwnedCalls(if one_shot {
                ClientCalls::shared_closed()
            } else {
                Arc::new(ClientCalls::new())
            }),
            transmit: if one_shot {
                Outbound::closed()
            } else {
                Outbound::polled()
            },
            gate,
            principal: None,
            subscriptions: Mutex::new(HashMap::new()),
            one_shot,
            key: std::sync::OnceLock::new(),
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Subscribes to a resource's updates (legacy `resources/subscribe`), counted at
    /// `registry` while the session holds it (until it unsubscribes or ends). `false` when
    /// the session holds too many subscriptions, or too many bytes of them.
    pub(crate) fn subscribe(
        &self,
        uri: &str,
        registry: Option<&Arc<crate::resources::McpResourceRegistry>>,
    ) -> bool {
        let mut subs = lock(&self.subscriptions);
        if subs.contains_key(uri) {
            return true;
        }
        let bytes: usize = subs.keys().map(String::len).sum();
        if subs.len() >= MAX_SUBSCRIPTIONS || bytes + uri.len() > MAX_SUBSCRIPTION_BYTES {
            return false;
        }
        subs.insert(uri.to_owned(), registry.map(|r| r.note_subscribed(uri)));
        true
    }

    /// Ends a subscription.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        let gone = lock(&self.subscriptions).remove(uri);
        // Its registry hears of it outside the lock.
        drop(gone);
    }

    /// Whether the session subscribed to `uri`.
    pub fn is_subscribed(&self, uri: &str) -> bool {
        lock(&self.subscriptions).contains_key(uri)
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
        lock(&self.in_flight)
            .values()
            .filter(|t| !t.is_cancelled())
            .count()
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
        if self.one_shot {
            return Ok(InFlight { token });
        }
        let mut map = lock(&self.in_flight);
        if map.get(&id).is_some_and(|t| !t.is_cancelled()) {
            return Err(NotBegun::Duplicate);
        }
        if map.len() >= MAX_IN_FLIGHT {
            map.retain(|_, t| !t.is_cancelled());
        }
        if map.len() >= MAX_IN_FLIGHT && !map.contains_key(&id) {
            return Err(NotBegun::Full);
        }
        map.insert(id, token.clone());
        Ok(InFlight { token })
    }

    /// Cancels an in-flight request. Returns whether it was found (and had not ended).
    pub fn cancel(&self, id: &RequestId) -> bool {
        match lock(&self.in_flight).get(id) {
            Some(t) if !t.is_cancelled() => {
                t.cancel();
                true
            }
            _ => false,
        }
    }

    /// Whether a request with this id is in flight here (neither ended nor cancelled).
    pub fn is_in_flight(&self, id: &RequestId) -> bool {
        lock(&self.in_flight)
            .get(id)
            .is_some_and(|t| !t.is_cancelled())
    }

    /// Whether a server-to-client request with this id awaits its answer here (sent, not
    /// answered, and its asker still waiting).
    pub fn awaits_client_response(&self, id: &RequestId) -> bool {
        self.calls.0.awaits(id)
    }

    /// The next message for the session's own stream (stdio's output, HTTP's GET stream):
    /// quinn's `poll_transmit`. What `Listeners::handle_event` queued, in order, list changes
    /// coalesced; `None` when nothing is queued.
    pub fn poll_transmit(&self) -> Option<OutgoingMessage> {
        self.transmit.poll_outbound()
    }

    /// The session's own queue.
    pub(crate) fn transmit(&self) -> &Outbound {
        &self.transmit
    }

    /// The table a call that may ask the client holds (not the session).
    pub(crate) fn client_calls(&self) -> &Arc<ClientCalls> {
        &self.calls.0
    }

    /// Makes the ids of this session's server-to-client requests `srv-{prefix}-{n}` rather
    /// than `srv-{n}`, so that instances serving one session never reuse an id. Set once;
    /// `false` when a prefix was set already.
    pub fn set_request_id_prefix(&self, prefix: &str) -> bool {
        self.calls.0.set_prefix(prefix)
    }

    /// Cancels everything in flight (the connection is closing).
    pub fn cancel_all(&self) {
        for t in lock(&self.in_flight).values() {
            t.cancel();
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
        self.calls.0.resolve(id, outcome)
    }
}

/// A session's [`ClientCalls`], as the session owns it: when the session ends, the calls
/// still waiting for their client's answer end ([`ClientCalls::close`]): no answer can reach
/// them now.
struct OwnedCalls(Arc<ClientCalls>);

impl Drop for OwnedCalls {
    fn drop(&mut self) {
        self.0.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpServerConfig;
    use crate::context::MessageSink;
    use crate::engine::Engine;
    use crate::registry::McpToolRegistry;
    use crate::schema::JsonObject;
    use crate::test_runtime::{advance, idle, run, spawn};

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
