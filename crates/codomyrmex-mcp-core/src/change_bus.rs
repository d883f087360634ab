//! The change seam: [`ChangeBus`], how list changes and resource updates announced on one
//! server instance reach the clients of every other instance sharing the bus.
//!
//! What propagates is a [`ServerEvent`]: `tools`, `prompts` or `resources` list changed, or a
//! resource's contents updated (`uri`). A registry is static per process unless the
//! application changes it at run time, so "a change on another instance" is what that
//! instance announces: a tool, prompt or resource registered or removed while serving, or
//! [`McpResourceRegistry::notify_updated`](crate::resources::McpResourceRegistry::notify_updated).
//! Every instance relays the changes it hears to its own `subscriptions/listen` streams and
//! legacy sessions exactly as its own ([`Listeners::announce`](crate::engine::Listeners::announce));
//! they do not change its registries (each instance serves its own).
//!
//! The driver's bridge (`codomyrmex_mcp::runtime::spawn_change_bridge`) publishes this
//! instance's changes ([`Listeners::local_events`](crate::engine::Listeners::local_events)) with the
//! instance's name as `origin`, and announces what others publish. Delivery is best effort,
//! as the notifications themselves are: a change published while an instance is not
//! subscribed (Redis gone, reconnecting) is not replayed; clients that must not miss one
//! re-list after reconnecting.
//!
//! [`MemoryChangeBus`] is the in-process bus (tests, or several engines in one process).
//! Without a bus an engine relays only its own changes, as it always has.

use std::pin::Pin;

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::engine::ServerEvent;
use crate::sync::{Broadcast, Recv};

/// What a bus method returns: a boxed future, `Send`, borrowing the bus.
pub type ChangeBusFuture<'a, T> =
    Pin<Box<dyn std::future::Future<Output = Result<T, ChangeBusError>> + Send + 'a>>;

/// The changes published on a bus, each with the instance that published it.
pub type ChangeFeed = BoxStream<'static, (String, ServerEvent)>;

/// Why a bus operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeBusError {
    /// The bus cannot be reached.
    #[error("the change bus is unavailable: {0}")]
    Unavailable(String),
}

/// A change as it travels on a bus: JSON, `{"origin", "kind", "uri"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeMessage {
    /// The instance that announced it.
    pub origin: String,
    /// `tools`, `prompts`, `resources` (a list changed) or `updated` (a resource).
    pub kind: String,
    /// The updated resource, for `updated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
}

impl ChangeMessage {
    /// `event` announced by `origin`.
    pub fn new(origin: &str, event: &ServerEvent) -> Self {
        let (kind, uri) = match event {
            ServerEvent::ToolsListChanged => ("tools", None),
            ServerEvent::PromptsListChanged => ("prompts", None),
            ServerEvent::ResourcesListChanged => ("resources", None),
            ServerEvent::ResourceUpdated(uri) => ("updated", Some(uri.clone())),
            // Never published (the bridge publishes local changes, which are never log
            // messages), and read back as nothing.
            ServerEvent::Log { .. } => ("log", None),
        };
        Self {
            origin: origin.to_owned(),
            kind: kind.to_owned(),
            uri,
        }
    }

    /// The event; `None` for a kind this build does not know.
    pub fn event(&self) -> Option<ServerEvent> {
        Some(match (self.kind.as_str(), &self.uri) {
            ("tools", _) => ServerEvent::ToolsListChanged,
            ("prompts", _) => ServerEvent::PromptsListChanged,
            ("resources", _) => ServerEvent::ResourcesListChanged,
            ("updated", Some(uri)) => ServerEvent::ResourceUpdated(uri.clone()),
            _ => return None,
        })
    }
}

/// Where instances announce changes to each other.
///
/// The contract ([`contract::change_bus`]): every subscriber (on any handle of one bus)
/// receives each change published after it subscribed, in publishing order per publisher,
/// with its origin; a subscriber that falls far behind may skip changes, never block the
/// publisher.
pub trait ChangeBus: Send + Sync + std::fmt::Debug {
    /// Announces `event` from instance `origin`.
    fn publish<'a>(&'a self, origin: &'a str, event: &'a ServerEvent) -> ChangeBusFuture<'a, ()>;

    /// The changes published from now on; the feed ends when the bus connection is lost
    /// (subscribe again).
    fn subscribe(&self) -> ChangeBusFuture<'_, ChangeFeed>;
}

/// The in-process [`ChangeBus`]: a bounded broadcast.
#[derive(Debug)]
pub struct MemoryChangeBus {
    changes: Broadcast<(String, ServerEvent)>,
}

impl Default for MemoryChangeBus {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryChangeBus {
    /// A bus keeping up to 1024 changes for slow subscribers.
    pub fn new() -> Self {
        Self {
            changes: Broadcast::new(1024),
        }
    }
}

impl ChangeBus for MemoryChangeBus {
    fn publish<'a>(&'a self, origin: &'a str, event: &'a ServerEvent) -> ChangeBusFuture<'a, ()> {
        self.changes.send((origin.to_owned(), event.clone()));
        Box::pin(std::future::ready(Ok(())))
    }

    fn subscribe(&self) -> ChangeBusFuture<'_, ChangeFeed> {
        let rx = self.changes.subscribe();
        let feed = futures_util::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Recv::Value(v) => return Some((v, rx)),
                    Recv::Lagged(_) => continue,
                    Recv::Closed => return None,
                }
            }
        });
        Box::pin(std::future::ready(Ok(Box::pin(feed) as ChangeFeed)))
    }
}

/// The contract every [`ChangeBus`] keeps, as async test functions that panic on a violation.
pub mod contract {
    // Test code for implementations, not for input: a violation is meant to panic.
    #![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

    use futures_util::StreamExt as _;

    use super::{ChangeBus, ServerEvent};

    /// `a` and `b` are two handles of one bus (two connections, say): what either publishes,
    /// a subscriber on the other receives, in order, with its origin.
    pub async fn change_bus(a: &dyn ChangeBus, b: &dyn ChangeBus) {
        let mut on_b = b.subscribe().await.unwrap();
        let mut on_a = a.subscribe().await.unwrap();
        let events = [
            ServerEvent::ToolsListChanged,
            ServerEvent::ResourceUpdated("file:///a%20b?x=1".into()),
            ServerEvent::PromptsListChanged,
            ServerEvent::ResourcesListChanged,
        ];
        for e in &events {
            a.publish("instance-a", e).await.unwrap();
        }
        for e in &events {
            assert_eq!(
                on_b.next().await,
                Some(("instance-a".to_owned(), e.clone()))
            );
            assert_eq!(
                on_a.next().await,
                Some(("instance-a".to_owned(), e.clone()))
            );
        }
        b.publish("instance-b", &ServerEvent::ToolsListChanged)
            .await
            .unwrap();
        assert_eq!(
            on_a.next().await,
            Some(("instance-b".to_owned(), ServerEvent::ToolsListChanged))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_in_memory_bus_keeps_the_contract() {
        let bus = MemoryChangeBus::new();
        futures_executor::block_on(contract::change_bus(&bus, &bus));
    }

    #[test]
    fn messages_round_trip_and_unknown_kinds_are_ignored() {
        let e = ServerEvent::ResourceUpdated("mem://x".into());
        let m = ChangeMessage::new("a", &e);
        let json = serde_json::to_string(&m).unwrap();
        let back: ChangeMessage = serde_json::from_str(&json).unwrap();
        assert_eq!(back.event(), Some(e));
        let odd: ChangeMessage = serde_json::from_str(r#"{"origin":"a","kind":"future"}"#).unwrap();
        assert_eq!(odd.event(), None);
    }
}
