//! The supervisor of one upstream: while it is up, a health check (`ping`) every
//! `health_check_secs`; when it fails (a child that died, a remote that stopped answering),
//! the upstream's tools, prompts and resources leave the gateway (clients hear `list_changed`)
//! and it is connected again with exponential backoff (1 s doubling to 30 s), a stdio child
//! being started anew; once it answers, its catalogue is mounted again. The first connection
//! is the supervisor's too (the gateway serves without waiting for a slow upstream), and an
//! upstream that was down at start is connected the same way. When the upstream says a list changed
//! (`notifications/*/list_changed` of a 2025-11-25 upstream, or on the `subscriptions/listen`
//! stream the supervisor keeps open to a 2026-07-28 upstream), its lists are read again and
//! mounted anew, and the gateway's clients hear `list_changed` (or a listen event) in their
//! own era. The upstream's `notifications/resources/updated` for a mounted resource reach the
//! gateway's clients subscribed to its local URI: the supervisor subscribes to every mounted
//! resource (up to [`MAX_SUBSCRIPTIONS`]) at the upstream, whoever subscribed at the gateway
//! (the engine has no hook that would say when a client does). One upstream's trouble never
//! touches another's.

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::CallOptions;
use codomyrmex_mcp::{Era, McpClient};
use serde_json::{Value, json};

use super::catalog::{Catalogue, Filter, Listing, Mount, local_uri};
use super::serve::{Live, Registries, mount, unmount};
use super::{Target, connect_upstream};

/// The first wait before reconnecting, doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The most resources of one upstream the gateway subscribes to (one request each).
const MAX_SUBSCRIPTIONS: usize = 100;
/// How long a `subscriptions/listen` request may stay open (it is reopened on each
/// remount).
const LISTEN_FOR: Duration = Duration::from_secs(365 * 24 * 3600);

/// What a supervisor needs to know of its upstream.
pub struct Supervised {
    /// How to reach it.
    pub target: Target,
    /// Its filter and renames.
    pub filter: Filter,
    /// The longest a connection attempt or call may take.
    pub timeout: Duration,
    /// How often to check it answers.
    pub health_every: Duration,
    /// Which era to speak to it.
    pub era: codomyrmex_mcp::client::EraPreference,
}

/// Connects the upstream, keeps it mounted while it answers, and mounts it again when it
/// comes back; `first_attempt` hears when the first connection attempt ended (mounted, or
/// failed). Runs until the process ends.
pub async fn supervise(
    s: Supervised,
    live: Arc<Live>,
    r: Registries,
    first_attempt: tokio::sync::oneshot::Sender<()>,
) {
    let mut first_attempt = Some(first_attempt);
    let mut mounted: Option<(Catalogue, bool)> = None;
    loop {
        if let Some((catalogue, subscribe)) = mounted.take() {
            if watch(&s, &live, &catalogue, subscribe, &r).await == Ended::Changed
                && let Some(listing) = relist(&s, &live, subscribe).await
            {
                // Clients hear of it as of any change of the gateway's registries.
                unmount(&catalogue, &r);
                mounted = Some((mount_listing(&s, &live, &listing, &r), subscribe));
                continue;
            }
            tracing::warn!(upstream = %live.name, "the upstream stopped answering; its tools leave the list");
            unmount(&catalogue, &r);
            drop(live.set_client(None));
        }
        let listing = reconnect(&s, &live, &mut first_attempt).await;
        mounted = Some((mount_listing(&s, &live, &listing, &r), listing.subscribe));
        if let Some(tx) = first_attempt.take() {
            let _ = tx.send(());
        }
    }
}

/// Mounts the upstream's catalogue; returns it (to unmount later).
pub fn mount_listing(
    s: &Supervised,
    live: &Arc<Live>,
    listing: &Listing,
    r: &Registries,
) -> Catalogue {
    let catalogue = Catalogue::build(&[Mount {
        namespace: &live.name,
        filter: &s.filter,
        listing,
    }]);
    for p in &catalogue.problems {
        tracing::warn!(upstream = %p.upstream, problem = %p.message, "left out");
    }
    for refused in mount(&catalogue, &[Some(live.clone())], r) {
        tracing::warn!(%refused, "not mounted");
    }
    tracing::info!(upstream = %live.name, tools = catalogue.tools.len(), "mounted");
    catalogue
}

/// Why [`watch`] returned.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The upstream failed a health check or its connection closed.
    Down,
    /// The upstream said a list of its changed (`notifications/*/list_changed`).
    Changed,
}

/// Returns when the upstream fails a health check, its connection closes, or it says one of
/// its lists changed. Meanwhile relays its `notifications/resources/updated` for the
/// mounted resources (under their local URIs), having subscribed to them: a 2025-11-25
/// upstream that declares `resources.subscribe` with `resources/subscribe`, a 2026-07-28
/// upstream on a `subscriptions/listen` stream, which also carries its list changes.
async fn watch(
    s: &Supervised,
    live: &Live,
    catalogue: &Catalogue,
    subscribe: bool,
    r: &Registries,
) -> Ended {
    let Some(client) = live.client() else {
        return Ended::Down;
    };
    let uris: Vec<&str> = catalogue
        .resources
        .values()
        .map(|e| e.upstream_name.as_str())
        .take(MAX_SUBSCRIPTIONS)
        .collect();
    if client.era() == Era::Legacy && subscribe {
        for uri in &uris {
            let why = match tokio::time::timeout(s.timeout, client.subscribe(uri)).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no answer in time".to_owned(),
            };
            // Not asked again for the others.
            tracing::warn!(upstream = %live.name, %uri, error = %why, "resources/subscribe failed; no further subscriptions");
            break;
        }
    }
    let listen = listen(&client, &uris);
    tokio::pin!(listen);
    let mut next_check = tokio::time::Instant::now() + s.health_every;
    loop {
        tokio::select! {
            () = &mut listen => {}
            () = tokio::time::sleep_until(next_check) => {
                let answer =
                    tokio::time::timeout(s.timeout.min(Duration::from_secs(10)), client.ping()).await;
                if !matches!(answer, Ok(Ok(()))) {
                    return Ended::Down;
                }
                next_check = tokio::time::Instant::now() + s.health_every;
            }
            n = client.next_notification() => match n {
                None => return Ended::Down,
                Some(n) => {
                    let method = n.get("method").and_then(Value::as_str).unwrap_or("");
                    if method == "notifications/resources/updated" {
                        relay_updated(live, &n, r);
                    }
                    if matches!(
                        method,
                        "notifications/tools/list_changed"
                            | "notifications/prompts/list_changed"
                            | "notifications/resources/list_changed"
                    ) {
                        return Ended::Changed;
                    }
                }
            },
        }
    }
}

/// Tells the gateway's subscribers that a resource of `live` changed (the URI renamed into
/// the gateway's namespace; one the gateway does not mount, or without a scheme, is
/// dropped).
fn relay_updated(live: &Live, n: &Value, r: &Registries) {
    let Some(uri) = n["params"]["uri"].as_str() else {
        return;
    };
    if let Some(local) = local_uri(&live.name, uri) {
        r.resources.notify_updated(local);
    }
}

/// A 2026-07-28 upstream's `subscriptions/listen` stream (its list changes and updates of
/// `uris`), open while the future is; whatever it hears arrives as the client's
/// notifications. Never ends (when the stream closes, the health check and the connection
/// say whether the upstream is still up); for a 2025-11-25 upstream, it only waits.
async fn listen(client: &McpClient, uris: &[&str]) {
    if client.era() == Era::Modern {
        let params = json!({"notifications": {
            "toolsListChanged": true,
            "promptsListChanged": true,
            "resourcesListChanged": true,
            "resourceSubscriptions": uris,
        }});
        let options = CallOptions {
            progress: None,
            timeout: Some(LISTEN_FOR),
        };
        if let Err(e) = client
            .request_round("subscriptions/listen", params, &options)
            .await
        {
            tracing::debug!(error = %e, "the upstream's subscriptions/listen ended");
        }
    }
    std::future::pending::<()>().await;
}

/// The upstream's lists again, on the same connection (a kind it does not serve lists as
/// empty); `None` when it does not answer in time.
async fn relist(s: &Supervised, live: &Live, subscribe: bool) -> Option<Listing> {
    let client = live.client()?;
    let list = |method: &'static str, key: &'static str| {
        let client = client.clone();
        async move {
            match client.list_all(method, key).await {
                Ok(items) => Some(items),
                Err(codomyrmex_mcp::ClientError::Server(_)) => Some(Vec::new()),
                Err(_) => None,
            }
        }
    };
    let all = async {
        Some(Listing {
            tools: list("tools/list", "tools").await?,
            prompts: list("prompts/list", "prompts").await?,
            resources: list("resources/list", "resources").await?,
            templates: list("resources/templates/list", "resourceTemplates").await?,
            subscribe,
        })
    };
    let listing = tokio::time::timeout(s.timeout, all).await.ok().flatten();
    if listing.is_some() {
        tracing::info!(upstream = %live.name, "the upstream's lists changed; mounted again");
    }
    listing
}

/// Connects until it works, with exponential backoff; returns the listing. A failed attempt
/// is told to `first_attempt`, if it is still waiting.
async fn reconnect(
    s: &Supervised,
    live: &Live,
    first_attempt: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Listing {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let handlers = live.inbox.handlers();
        match connect_upstream(s.target.clone(), s.timeout, s.era, handlers).await {
            Ok((client, listing)) => {
                live.set_client(Some(Arc::new(client)));
                tracing::info!(upstream = %live.name, "connected");
                return listing;
            }
            Err(e) => {
                tracing::warn!(upstream = %live.name, error = %e, retry_in_secs = backoff.as_secs(), "upstream unreachable");
                if let Some(tx) = first_attempt.take() {
                    let _ = tx.send(());
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
