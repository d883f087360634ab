//! What one connection to an upstream is asked to tell the gateway: updates of the resources
//! the gateway mounts from it and of the URIs the gateway's clients subscribe to under its
//! namespace (a URI of one of its templates, say, which no listing names), and, from a
//! 2026-07-28 upstream, its list changes.
//!
//! - A 2025-11-25 upstream that declares `resources.subscribe` gets one `resources/subscribe`
//!   per URI (after a refusal, no more).
//! - A 2026-07-28 upstream gets one `subscriptions/listen` stream, which also asks for its
//!   list changes. It is opened anew, with every URI, when the set changes, and reopened with
//!   backoff (1 s doubling to 30 s; a stream that stayed open 30 s starts again at 1 s)
//!   whenever it ends while the connection lives. Once a reopened stream is acknowledged,
//!   [`Subscriptions::reopened`] says so: what changed while no stream was open was said on
//!   none, so the supervisor reads the lists again.
//!
//! A URI [`remove`](Subscriptions::remove)d is unsubscribed: `resources/unsubscribe`, or
//! the listen stream opened anew without it.
//!
//! At most [`MAX_SUBSCRIPTIONS`] URIs per connection. Not here: relaying the updates (the
//! supervisor does, [`super::supervise`]) and deciding what to subscribe to.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::client::CallOptions;
use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::policy::UpstreamPolicy;
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::util::inert_text;
use serde_json::json;
use tokio::sync::watch;

use super::bridge::AbortOnDrop;

/// The most URIs of one upstream the gateway subscribes to (one request each, or the size
/// of one `subscriptions/listen` filter).
pub const MAX_SUBSCRIPTIONS: usize = 100;
/// The first wait before a closed listen stream is reopened, doubled each time up to
/// [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait before reopening; a stream that stayed open this long resets the wait.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one `subscriptions/listen` request may stay open.
const LISTEN_FOR: Duration = Duration::from_secs(365 * 24 * 3600);

/// One connection's subscriptions at its upstream; dropping it ends its listen stream.
pub struct Subscriptions {
    client: Arc<McpClient>,
    namespace: String,
    /// The upstream's policy: a subscription's deadline is its calls' deadline.
    policy: Arc<UpstreamPolicy>,
    /// A 2025-11-25 upstream that declares `resources.subscribe` and has not refused one.
    per_uri: bool,
    /// The upstream URIs subscribed to (or listened for).
    uris: BTreeSet<String>,
    /// A 2026-07-28 upstream's listen stream: its task and the URIs it listens for.
    listener: Option<(AbortOnDrop<()>, watch::Sender<Vec<String>>)>,
    /// Set when the stream was reopened after it ended; taken on its acknowledgment.
    gap: Arc<AtomicBool>,
}

impl Subscriptions {
    /// The subscriptions of a new connection to the upstream `namespace`; `subscribe`: it
    /// declared `resources.subscribe`. Nothing is asked before the first [`add`](Self::add).
    pub fn new(
        client: Arc<McpClient>,
        namespace: &str,
        policy: Arc<UpstreamPolicy>,
        subscribe: bool,
    ) -> Self {
        Self {
            per_uri: subscribe && client.era() == Era::Legacy,
            client,
            namespace: namespace.to_owned(),
            policy,
            uris: BTreeSet::new(),
            listener: None,
            gap: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Subscribes to the upstream URIs `uris` not subscribed yet, up to [`MAX_SUBSCRIPTIONS`];
    /// the first call opens a 2026-07-28 upstream's listen stream (with these URIs).
    pub async fn add(&mut self, uris: Vec<String>) {
        let mut grew = false;
        for uri in uris {
            if self.uris.contains(&uri) {
                continue;
            }
            if self.uris.len() >= MAX_SUBSCRIPTIONS {
                tracing::warn!(upstream = %self.namespace, uri = %inert_text(&uri), "too many resource subscriptions at this upstream; not subscribed");
                break;
            }
            if self.per_uri {
                let why = match self
                    .policy
                    .within(&TOKIO, self.client.subscribe(&uri))
                    .await
                {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some("no answer in time".to_owned()),
                };
                if let Some(why) = why {
                    // Not asked again for the others.
                    tracing::warn!(upstream = %self.namespace, uri = %inert_text(&uri), error = %inert_text(&why), "resources/subscribe failed; no further subscriptions");
                    self.per_uri = false;
                }
            }
            self.uris.insert(uri);
            grew = true;
        }
        let all = || self.uris.iter().cloned().collect::<Vec<_>>();
        match &self.listener {
            Some((_, uris)) if grew => {
                uris.send_replace(all());
            }
            Some(_) => {}
            None if self.client.era() == Era::Modern => {
                let (tx, rx) = watch::channel(all());
                let task = tokio::spawn(keep_listening(
                    self.client.clone(),
                    self.namespace.clone(),
                    rx,
                    self.gap.clone(),
                ));
                self.listener = Some((AbortOnDrop(task), tx));
            }
            None => {}
        }
    }

    /// Unsubscribes from the upstream URI `uri`, if subscribed.
    pub async fn remove(&mut self, uri: &str) {
        if !self.uris.remove(uri) {
            return;
        }
        if self.per_uri {
            let why = match self
                .policy
                .within(&TOKIO, self.client.unsubscribe(uri))
                .await
            {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("no answer in time".to_owned()),
            };
            if let Some(why) = why {
                tracing::warn!(upstream = %self.namespace, uri = %inert_text(uri), error = %inert_text(&why), "resources/unsubscribe failed");
            }
        }
        if let Some((_, uris)) = &self.listener {
            uris.send_replace(self.uris.iter().cloned().collect());
        }
    }

    /// Whether the listen stream was reopened after it ended, told once: call it when the
    /// upstream acknowledges a stream (`notifications/subscriptions/acknowledged`).
    pub fn reopened(&self) -> bool {
        self.gap.swap(false, Ordering::AcqRel)
    }
}

/// Keeps a `subscriptions/listen` stream open to `client` for the URIs `uris` says (its list
/// changes too): opened anew when they change, reopened with backoff when it ends (`gap`
/// set then). What it hears arrives as the client's notifications. Runs until aborted.
async fn keep_listening(
    client: Arc<McpClient>,
    namespace: String,
    mut uris: watch::Receiver<Vec<String>>,
    gap: Arc<AtomicBool>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let list = uris.borrow_and_update().clone();
        let opened = tokio::time::Instant::now();
        tokio::select! {
            () = listen_once(&client, &list) => {}
            changed = uris.changed() => {
                if changed.is_err() {
                    return;
                }
                // Closed (dropping the request cancels it) and opened with the new set; what
                // was said in between was said on no stream.
                gap.store(true, Ordering::Release);
                continue;
            }
        }
        if opened.elapsed() >= MAX_BACKOFF {
            backoff = FIRST_BACKOFF;
        }
        tracing::info!(upstream = %namespace, retry_in_secs = backoff.as_secs(), "the upstream's subscriptions/listen stream ended; listening again");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
        gap.store(true, Ordering::Release);
    }
}

/// One `subscriptions/listen` request, until the upstream ends it (or it fails).
async fn listen_once(client: &McpClient, uris: &[String]) {
    let params = json!({"notifications": {
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true,
        "resourceSubscriptions": uris,
    }});
    let options = CallOptions {
        timeout: Some(LISTEN_FOR),
        ..CallOptions::default()
    };
    match client
        .request_round("subscriptions/listen", &params, &options)
        .await
    {
        Ok(_) => tracing::debug!("the upstream ended its subscriptions/listen stream"),
        Err(e) => tracing::debug!(error = %e, "the upstream's subscriptions/listen failed"),
    }
}
