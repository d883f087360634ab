//! [`MessageBus`]: how a message reaches the instance whose call it is for, when several
//! instances serve one 2025-11-25 session.
//!
//! A tool waiting on a server-to-client request (sampling, elicitation, roots) lives on the
//! instance that runs it; the client's answer, or a `notifications/cancelled` for a call, may
//! reach any instance. The instance that sends a server-to-client request first *claims* its
//! id (the claim names the instance and expires); an instance that receives an answer it is
//! not waiting for *routes* it to the claim's owner. A cancellation names the client's own
//! request, which no claim records: it is *broadcast* to every instance, and the one running
//! the call cancels it. Each instance *subscribes* once with the handler that delivers what
//! was routed to it.
//!
//! What travels is a [`BusMessage`]: a client's message for the instance whose call it is
//! for, or one of the store-level messages instances tell each other (a session ended, who
//! delivers a session's notifications, a task's relay). Typed values, never JSON-RPC
//! methods of their own; a bus that crosses processes carries them as
//! [`BusMessage::to_bytes`].
//!
//! What it is not: a queue. A message routed to an instance that died is not delivered,
//! as the answer to a request on a dead instance could not be; the sender learns it
//! ([`StoreError::OwnerGone`]) and tells its client. One whose claim expired is nobody's. A single
//! instance needs no bus: the HTTP transport then routes nothing. [`MemoryBus`] joins
//! instances in one process (tests, embedded clusters).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{StoreError, StoreFuture, ready};

/// What one instance sends others about a session.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusMessage {
    /// A client's message (an answer to a server-to-client request, or a cancellation), as
    /// the JSON-RPC bytes the client sent: for the instance running the call it is for.
    Client(Vec<u8>),
    /// The session ended on the sending instance (a `DELETE`, an eviction): the others drop
    /// their live state.
    SessionEnded,
    /// `instance` delivers the session's notifications (list changes, resource updates) from
    /// now on: the others stop, so its client gets each once.
    NotificationsTaken {
        /// The instance that took them.
        instance: String,
    },
    /// `instance` answers a 2025-11-25 `tasks/result` for `task` on `stream` of the session:
    /// the instance running the task sends what the task sends the client (its sampling,
    /// elicitation and roots requests) to that stream, in the event store.
    RelayTask {
        /// The instance serving the `tasks/result`.
        instance: String,
        /// The task.
        task: String,
        /// The stream it is answered on (0: the standalone stream).
        stream: u64,
    },
}

impl BusMessage {
    /// The bytes a bus between processes carries: a tag byte, then what the message holds.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Self::Client(bytes) => [b"c".as_slice(), bytes].concat(),
            Self::SessionEnded => b"e".to_vec(),
            Self::NotificationsTaken { instance } => [b"t", instance.as_bytes()].concat(),
            Self::RelayTask {
                instance,
                task,
                stream,
            } => {
                let body = serde_json::to_vec(&(instance, task, stream)).unwrap_or_default();
                [b"r".as_slice(), &body].concat()
            }
        }
    }

    /// The message [`to_bytes`](Self::to_bytes) made; `None` for bytes it did not make.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (tag, rest) = bytes.split_first()?;
        match tag {
            b'c' => Some(Self::Client(rest.to_vec())),
            b'e' if rest.is_empty() => Some(Self::SessionEnded),
            b't' => Some(Self::NotificationsTaken {
                instance: std::str::from_utf8(rest).ok()?.to_owned(),
            }),
            b'r' => {
                let (instance, task, stream) =
                    serde_json::from_slice::<(String, String, u64)>(rest).ok()?;
                Some(Self::RelayTask {
                    instance,
                    task,
                    stream,
                })
            }
            _ => None,
        }
    }
}

/// A message routed to this instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    /// The session it belongs to.
    pub session: String,
    /// The message.
    pub message: BusMessage,
}

/// Where an instance's routed messages go: the HTTP transport hands them to the session's
/// engine. Called on the bus's own task: it must not block.
pub trait BusHandler: Send + Sync {
    /// Delivers one message.
    fn deliver(&self, routed: Routed);
}

/// Routing between the instances that share a store.
///
/// The contract ([`contract::message_bus`](super::contract::message_bus) checks it):
/// - `claim(session, key)` records this instance as the owner of `key` for `ttl_ms`; a key
///   another instance holds is refused ([`StoreError::Exists`]).
/// - `route(session, key, message)` delivers `message` to the owner's handler and returns
///   `true`, or returns `false` when no live claim exists (the message is not delivered),
///   or fails with [`StoreError::OwnerGone`] when the claim's owner no longer listens.
/// - `release` forgets this instance's claim; `broadcast` delivers to every subscribed
///   instance, this one included.
pub trait MessageBus: Send + Sync + std::fmt::Debug {
    /// This instance's name on the bus: unique among the instances sharing it.
    fn instance(&self) -> &str;

    /// Starts delivering this instance's messages to `handler` (replacing an earlier one).
    fn subscribe<'a>(&'a self, handler: Arc<dyn BusHandler>) -> StoreFuture<'a, ()>;

    /// Records this instance as the owner of `key` of `session` for `ttl_ms` milliseconds
    /// from `now` (wall-clock milliseconds).
    fn claim<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        now: u64,
        ttl_ms: u64,
    ) -> StoreFuture<'a, ()>;

    /// Forgets this instance's claim of `key` of `session`.
    fn release<'a>(&'a self, session: &'a str, key: &'a str) -> StoreFuture<'a, ()>;

    /// Delivers `message` to the owner of `key` of `session`; `false` when nobody owns it
    /// at `now`; [`StoreError::OwnerGone`] when its owner no longer listens.
    fn route<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        message: BusMessage,
        now: u64,
    ) -> StoreFuture<'a, bool>;

    /// Delivers `message` of `session` to every instance.
    fn broadcast<'a>(&'a self, session: &'a str, message: BusMessage) -> StoreFuture<'a, ()>;

    /// Whether instance `name` listens on the bus now: `false` once it stopped (it died, or
    /// lost its subscription and has not renewed it yet, so a caller that acts on `false`
    /// looks twice, a moment apart). A bus that cannot tell keeps the default, `true`.
    fn listens<'a>(&'a self, name: &'a str) -> StoreFuture<'a, bool> {
        let _ = name;
        ready(Ok(true))
    }

    /// Whether this instance hears every message now: `None` while what is sent to it may be
    /// lost (its subscription is down), else a number that changes whenever it may have
    /// missed some (its subscription was lost and renewed since). The HTTP transport trusts
    /// a live session it validated at the same epoch (a `DELETE` elsewhere would have
    /// reached it), and checks its record again otherwise. A bus that loses nothing keeps
    /// the default, `Some(0)`.
    fn epoch(&self) -> Option<u64> {
        Some(0)
    }
}

#[derive(Default)]
struct Hub {
    /// `(session, key)` → owner and expiry.
    claims: HashMap<(String, String), (String, u64)>,
    handlers: HashMap<String, Arc<dyn BusHandler>>,
}

/// An in-process [`MessageBus`]: [`MemoryBus::new`] is the shared hub, [`MemoryBus::join`]
/// one instance on it.
#[derive(Clone)]
pub struct MemoryBus {
    name: String,
    hub: Arc<Mutex<Hub>>,
}

impl std::fmt::Debug for MemoryBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBus")
            .field("instance", &self.name)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryBus {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBus {
    /// A new hub, joined as instance `0`.
    pub fn new() -> Self {
        Self {
            name: "0".to_owned(),
            hub: Arc::default(),
        }
    }

    /// Another instance `name` on the same hub.
    pub fn join(&self, name: &str) -> Self {
        Self {
            name: name.to_owned(),
            hub: self.hub.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl MessageBus for MemoryBus {
    fn instance(&self) -> &str {
        &self.name
    }

    fn subscribe<'a>(&'a self, handler: Arc<dyn BusHandler>) -> StoreFuture<'a, ()> {
        self.lock().handlers.insert(self.name.clone(), handler);
        ready(Ok(()))
    }

    fn claim<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        now: u64,
        ttl_ms: u64,
    ) -> StoreFuture<'a, ()> {
        let mut hub = self.lock();
        let k = (session.to_owned(), key.to_owned());
        let out = match hub.claims.get(&k) {
            Some((owner, expires)) if *expires > now && *owner != self.name => {
                Err(StoreError::Exists)
            }
            _ => {
                hub.claims
                    .insert(k, (self.name.clone(), now.saturating_add(ttl_ms)));
                Ok(())
            }
        };
        ready(out)
    }

    fn release<'a>(&'a self, session: &'a str, key: &'a str) -> StoreFuture<'a, ()> {
        let mut hub = self.lock();
        let k = (session.to_owned(), key.to_owned());
        if hub
            .claims
            .get(&k)
            .is_some_and(|(owner, _)| *owner == self.name)
        {
            hub.claims.remove(&k);
        }
        ready(Ok(()))
    }

    fn route<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        message: BusMessage,
        now: u64,
    ) -> StoreFuture<'a, bool> {
        let handler = {
            let hub = self.lock();
            hub.claims
                .get(&(session.to_owned(), key.to_owned()))
                .filter(|(_, expires)| *expires > now)
                .map(|(owner, _)| hub.handlers.get(owner).cloned())
        };
        // Delivered outside the lock: the handler may use the bus.
        let out = match handler {
            None => Ok(false),
            Some(None) => Err(StoreError::OwnerGone),
            Some(Some(h)) => {
                h.deliver(Routed {
                    session: session.to_owned(),
                    message,
                });
                Ok(true)
            }
        };
        ready(out)
    }

    fn listens<'a>(&'a self, name: &'a str) -> StoreFuture<'a, bool> {
        ready(Ok(self.lock().handlers.contains_key(name)))
    }

    fn broadcast<'a>(&'a self, session: &'a str, message: BusMessage) -> StoreFuture<'a, ()> {
        let handlers: Vec<Arc<dyn BusHandler>> = self.lock().handlers.values().cloned().collect();
        for h in handlers {
            h.deliver(Routed {
                session: session.to_owned(),
                message: message.clone(),
            });
        }
        ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::BusMessage;

    #[test]
    fn every_bus_message_survives_its_bytes() {
        let messages = [
            BusMessage::Client(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()),
            BusMessage::SessionEnded,
            BusMessage::NotificationsTaken {
                instance: "i\n\"7\u{e9}".into(),
            },
            BusMessage::RelayTask {
                instance: "i1".into(),
                task: "t\n\"x".into(),
                stream: u64::MAX,
            },
        ];
        for m in messages {
            assert_eq!(BusMessage::from_bytes(&m.to_bytes()), Some(m));
        }
        for junk in [&b""[..], b"x", b"e!", b"r[1]", b"t\xff"] {
            assert_eq!(BusMessage::from_bytes(junk), None, "{junk:?}");
        }
    }
}
