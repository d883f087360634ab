//! Server-side changes that clients may hear about: list changes and resource updates.

use tokio::sync::{broadcast, watch};

use crate::resources::ResourceEvent;

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
}

/// A stream of [`ServerEvent`]s, from [`Engine::events`](super::Engine::events).
pub struct EventStream {
    pub(crate) tools: watch::Receiver<u64>,
    pub(crate) prompts: Option<watch::Receiver<u64>>,
    pub(crate) resources: Option<watch::Receiver<u64>>,
    pub(crate) updates: Option<broadcast::Receiver<ResourceEvent>>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

async fn changed(rx: &mut Option<watch::Receiver<u64>>) -> bool {
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
            tokio::select! {
                r = self.tools.changed() => {
                    if r.is_err() {
                        return None;
                    }
                    return Some(ServerEvent::ToolsListChanged);
                }
                true = changed(&mut self.prompts) => return Some(ServerEvent::PromptsListChanged),
                true = changed(&mut self.resources) => return Some(ServerEvent::ResourcesListChanged),
                u = updates => match u {
                    Ok(ResourceEvent::Updated(uri)) => return Some(ServerEvent::ResourceUpdated(uri)),
                    // A slow listener skipped some updates; keep going with the newest.
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => {
                        self.updates = None;
                        continue;
                    }
                },
            }
        }
    }
}
