//! Server-side changes that clients may hear about: list changes, resource updates, and log
//! messages that belong to no request.

use futures_util::FutureExt as _;

use crate::sync::{Changes, Receiver, Recv};

use crate::resources::ResourceEvent;
use crate::wire::LoggingLevel;

/// Something that changed on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The set of tools changed.
    ToolsListChanged,
    /// The set of prompts changed.
    PromptsListChanged,
    /// The set of resources or templates changed.
    ResourcesListChanged,
    /// A resource's contents changed.
    ResourceUpdated(String),
    /// A log message related to no request ([`Listeners::log_to_sessions`](super::Listeners::log_to_sessions)):
    /// for the 2025-11-25 sessions that set a log level at or below `level`. Never on a
    /// `subscriptions/listen` stream (2026-07-28 logging is request-scoped), and never
    /// carried between instances.
    Log {
        /// Its severity.
        level: LoggingLevel,
        /// The `notifications/message` params.
        params: serde_json::Value,
    },
}

/// A stream of [`ServerEvent`]s, from [`Listeners::events`](super::Listeners::events).
pub struct EventStream {
    pub(crate) tools: Changes,
    pub(crate) prompts: Option<Changes>,
    pub(crate) resources: Option<Changes>,
    pub(crate) updates: Option<Receiver<ResourceEvent>>,
    /// Changes announced by other instances ([`Listeners::announce`](super::Listeners::announce)).
    pub(crate) remote: Option<Receiver<ServerEvent>>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

async fn changed(rx: &mut Option<Changes>) -> bool {
    match rx {
        Some(r) => {
            if r.changed().await.is_ok() {
                true
            } else {
                *rx = None;
                false
            }
        }
        None => std::future::pending().await,
    }
}

impl EventStream {
    /// The next event; `None` when every source has closed.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        loop {
            let updates = async {
                match &mut self.updates {
                    Some(u) => u.recv().await,
                    None => std::future::pending().await,
                }
            };
            let remote = async {
                match &mut self.remote {
                    Some(r) => r.recv().await,
                    None => std::future::pending().await,
                }
            };
            let got = futures_util::select! {
                r = self.tools.changed().fuse() => {
                    if r.is_err() {
                        return None;
                    }
                    return Some(ServerEvent::ToolsListChanged);
                }
                p = changed(&mut self.prompts).fuse() => if p { return Some(ServerEvent::PromptsListChanged) } else { None },
                r = changed(&mut self.resources).fuse() => if r { return Some(ServerEvent::ResourcesListChanged) } else { None },
                u = updates.fuse() => Some(u),
                r = remote.fuse() => match r {
                    Recv::Value(event) => return Some(event),
                    Recv::Lagged(_) => None,
                    Recv::Closed => {
                        self.remote = None;
                        None
                    }
                },
            };
            match got {
                Some(Recv::Value(ResourceEvent::Updated(uri))) => {
                    return Some(ServerEvent::ResourceUpdated(uri));
                }
                // For whoever forwards subscriptions (a gateway), not for clients.
                Some(Recv::Value(
                    ResourceEvent::Subscribed(_) | ResourceEvent::Unsubscribed(_),
                )) => continue,
                // A slow listener skipped some updates; keep going with the newest.
                Some(Recv::Lagged(_)) | None => continue,
                Some(Recv::Closed) => self.updates = None,
            }
        }
    }
}
