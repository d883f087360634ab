//! The supervisor of one upstream: while it is up, a health check (`ping`) every
//! `health_check_secs`; when it fails (a child that died, a remote that stopped answering),
//! the upstream's tools, prompts and resources leave the gateway (clients hear `list_changed`)
//! and it is connected again with exponential backoff (1 s doubling to 30 s), a stdio child
//! being started anew; once it answers, its catalogue is mounted again. The first connection
//! is the supervisor's too (the gateway serves without waiting for a slow upstream), and an
//! upstream that was down at start is connected the same way. When the upstream says a list changed
//! (`notifications/*/list_changed` of a 2025-11-25 upstream, or on the `subscriptions/listen`
//! stream kept open to a 2026-07-28 upstream, reopened when it ends), its lists are read
//! again and, if they differ, mounted anew, and the gateway's clients hear `list_changed` (or
//! a listen event) in their own era. The upstream's `notifications/resources/updated` reach
//! the gateway's clients subscribed to the local URI: the supervisor subscribes at the
//! upstream ([`super::subscriptions`]) to every mounted resource and to every URI of the
//! upstream's namespace a client subscribes to at the gateway (a URI of a template
//! included), which the gateway's resource registry tells it. One upstream's trouble never
//! touches another's.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::ResourceEvent;
use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::driver;
use codomyrmex_mcp::runtime::TOKIO;
use codomyrmex_mcp::sync::{Receiver, Recv};
use serde_json::Value;

use super::bridge::Live;
use super::catalog::{Catalogue, Filter, Listing, Mount};
use super::serve::{Registries, mount, unmount};
use super::subscriptions::{MAX_SUBSCRIPTIONS, Subscriptions};
use super::uri::{local_uri, split_local_uri};
use super::{Target, connect_upstream};

/// The first wait before reconnecting, doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest a health check's `ping` may take (less if the upstream's timeout is shorter).
const HEALTH_WAIT: Duration = Duration::from_secs(10);

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
    /// How its tools and prompts are named (`name_style`).
    pub naming: crate::portable::Naming,
}

/// Connects the upstream, keeps it mounted while it answers, and mounts it again when it
/// comes back; `first_attempt` hears when the first connection attempt ended (mounted, or
/// failed). Runs until `stop` fires or its sender is dropped (a reload retired the
/// upstream): then what it mounted leaves the gateway (clients hear `list_changed`) and it
/// returns, leaving the connection in [`Live`] for its calls in flight ([`super::reload`]
/// closes it once they end).
pub async fn supervise(
    s: Supervised,
    live: Arc<Live>,
    r: Registries,
    first_attempt: tokio::sync::oneshot::Sender<()>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    if let Target::OpenApi(api) = &s.target {
        // A REST API: its document mounted once, no connection to watch.
        let mut mounted: Option<Catalogue> = None;
        tokio::select! {
            () = super::openapi::keep_mounted(api.clone(), (&s.filter, &s.naming), &live, &r, first_attempt, &mut mounted) => {}
            _ = stop => {}
        }
        if let Some(catalogue) = mounted.take() {
            unmount(&catalogue, &r);
            tracing::info!(upstream = %live.name, "retired; its tools leave the list");
        }
        return;
    }
    let mut mounted: Option<(Catalogue, Listing, Subscriptions)> = None;
    tokio::select! {
        () = keep_mounted(&s, &live, &r, first_attempt, &mut mounted) => {}
        _ = stop => {}
    }
    if let Some((catalogue, _, subs)) = mounted.take() {
        unmount(&catalogue, &r);
        drop(subs);
        tracing::info!(upstream = %live.name, "retired; its tools leave the list");
    }
}

/// The supervisor's loop; `mounted` always holds what is mounted, so that a stop between
/// two awaits unmounts exactly that.
async fn keep_mounted(
    s: &Supervised,
    live: &Arc<Live>,
    r: &Registries,
    first_attempt: tokio::sync::oneshot::Sender<()>,
    mounted: &mut Option<(Catalogue, Listing, Subscriptions)>,
) {
    let mut first_attempt = Some(first_attempt);
    // The URIs of this upstream the gateway's clients subscribed to, kept across connections.
    let mut wanted = Wanted {
        subscribed: Some(r.resources.subscribe_updates()),
        uris: BTreeSet::new(),
    };
    loop {
        if let Some((catalogue, listing, subs)) = mounted.as_mut() {
            if watch(s, live, catalogue, subs, &mut wanted, r).await == Ended::Changed
                && let Some(again) = relist(live, listing.subscribe).await
            {
                if again != *listing {
                    // Clients hear of it as of any change of the gateway's registries.
                    unmount(catalogue, r);
                    *catalogue = mount_listing(s, live, &again, r).await;
                    *listing = again;
                }
                continue;
            }
            tracing::warn!(upstream = %live.name, "the upstream stopped answering; its tools leave the list");
            live.stats.failed(
                "the upstream stopped answering (a failed health check, or its connection closed)",
            );
            unmount(catalogue, r);
            *mounted = None;
            drop(live.set_client(None));
        }
        let (client, listing) = reconnect(s, live, &mut first_attempt).await;
        let subs = Subscriptions::new(client, &live.name, live.policy.clone(), listing.subscribe);
        *mounted = Some((mount_listing(s, live, &listing, r).await, listing, subs));
        if let Some(tx) = first_attempt.take() {
            let _ = tx.send(());
        }
    }
}

/// The URIs of one upstream the gateway's clients subscribed to (under its namespace), as
/// the gateway's resource registry tells them, up to [`MAX_SUBSCRIPTIONS`].
struct Wanted {
    /// `None` once the registry is gone.
    subscribed: Option<Receiver<ResourceEvent>>,
    /// Upstream URIs.
    uris: BTreeSet<String>,
}

impl Wanted {
    /// The next local URI a client subscribed to (`true`) or the last client unsubscribed
    /// from (`false`), of any namespace.
    async fn next(&mut self) -> (String, bool) {
        loop {
            let Some(rx) = &mut self.subscribed else {
                return std::future::pending().await;
            };
            match rx.recv().await {
                Recv::Value(ResourceEvent::Subscribed(uri)) => return (uri, true),
                Recv::Value(ResourceEvent::Unsubscribed(uri)) => return (uri, false),
                Recv::Value(_) => {}
                Recv::Lagged(n) => {
                    // Updates and subscriptions share the registry's bounded channel.
                    tracing::warn!(
                        skipped = n,
                        "resource events were read too late; a subscription among them is not forwarded to the upstream"
                    );
                }
                Recv::Closed => self.subscribed = None,
            }
        }
    }
}

/// Mounts the upstream's catalogue, its skills read within the upstream's deadline
/// ([`super::skills::mirror`]); returns it (to unmount later).
pub async fn mount_listing(
    s: &Supervised,
    live: &Arc<Live>,
    listing: &Listing,
    r: &Registries,
) -> Catalogue {
    let catalogue = Catalogue::build_named(
        &[Mount {
            namespace: &live.name,
            filter: &s.filter,
            listing,
        }],
        &s.naming,
    );
    for p in &catalogue.problems {
        tracing::warn!(upstream = %p.upstream, problem = %p.message, "left out");
    }
    for refused in mount(&catalogue, &[Some(live.clone())], r) {
        tracing::warn!(%refused, "not mounted");
    }
    if let (false, Some(client)) = (catalogue.skills.is_empty(), live.client()) {
        let entries = catalogue
            .skills
            .iter()
            .map(|(k, e)| (k.clone(), e.definition.clone()))
            .collect();
        let read = super::skills::mirror(&client, entries, &r.skills);
        match live.policy.within(&TOKIO, read).await {
            Ok(left_out) => {
                for problem in left_out {
                    tracing::warn!(upstream = %live.name, %problem, "left out");
                }
            }
            Err(_) => tracing::warn!(upstream = %live.name, "its skills were not read in time"),
        }
    }
    tracing::info!(upstream = %live.name, tools = catalogue.tools.len(), "mounted");
    live.stats.mounted(catalogue.tools.len());
    catalogue
}

/// Why [`watch`] returned.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The upstream failed a health check or its connection closed.
    Down,
    /// The upstream said a list of its changed (`notifications/*/list_changed`), or its
    /// listen stream was reopened (and a change may have gone unsaid meanwhile).
    Changed,
}

/// Returns when the upstream fails a health check, its connection closes, or one of its
/// lists may have changed. Meanwhile relays its `notifications/resources/updated` (under
/// the local URIs), having subscribed ([`Subscriptions`]) to the mounted resources and to
/// every URI of its namespace a client subscribes to at the gateway.
async fn watch(
    s: &Supervised,
    live: &Live,
    catalogue: &Catalogue,
    subs: &mut Subscriptions,
    wanted: &mut Wanted,
    r: &Registries,
) -> Ended {
    let Some(client) = live.client() else {
        return Ended::Down;
    };
    let uris: Vec<String> = catalogue
        .resources
        .values()
        .map(|e| e.upstream_name.clone())
        .chain(wanted.uris.iter().cloned())
        .collect();
    subs.add(uris).await;
    let mut next_check = tokio::time::Instant::now() + s.health_every;
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_check) => {
                let answer =
                    driver::within(&TOKIO, s.timeout.min(HEALTH_WAIT), client.ping()).await;
                if !matches!(answer, Ok(Ok(()))) {
                    return Ended::Down;
                }
                next_check = tokio::time::Instant::now() + s.health_every;
            }
            (local, on) = wanted.next() => {
                let Some((namespace, uri)) = split_local_uri(&local) else {
                    continue;
                };
                let uri = uri.as_str();
                if namespace != live.name {
                    continue;
                }
                if !on {
                    // Mounted resources stay subscribed (the gateway's own interest).
                    let mounted = catalogue.resources.values().any(|e| e.upstream_name == uri);
                    if wanted.uris.remove(uri) && !mounted {
                        subs.remove(uri).await;
                    }
                } else if wanted.uris.contains(uri) || wanted.uris.len() < MAX_SUBSCRIPTIONS {
                    wanted.uris.insert(uri.to_owned());
                    subs.add(vec![uri.to_owned()]).await;
                }
            }
            n = client.next_notification() => match n {
                None => return Ended::Down,
                Some(n) => {
                    let method = n.get("method").and_then(Value::as_str).unwrap_or("");
                    if method == "notifications/resources/updated" {
                        relay_updated(live, &n, r);
                    }
                    if method == "notifications/subscriptions/acknowledged" && subs.reopened() {
                        return Ended::Changed;
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
/// the gateway's namespace; one without a scheme is dropped).
fn relay_updated(live: &Live, n: &Value, r: &Registries) {
    let Some(uri) = n["params"]["uri"].as_str() else {
        return;
    };
    if let Some(local) = local_uri(&live.name, uri) {
        r.resources.notify_updated(local);
    }
}

/// The upstream's lists again, on the same connection (a kind it does not serve lists as
/// empty); `None` when it does not answer within the upstream's deadline.
async fn relist(live: &Live, subscribe: bool) -> Option<Listing> {
    let client = live.client()?;
    let list = |method: &'static str, key: &'static str| {
        let client = client.clone();
        async move {
            match client.list_all(method, key).await {
                Ok(items) => Some(items),
                Err(codomyrmex_mcp::client::ClientError::Server(_)) => Some(Vec::new()),
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
            skills: list("skills/list", "skills").await?,
        })
    };
    let listing = live.policy.within(&TOKIO, all).await.ok().flatten();
    if listing.is_some() {
        tracing::info!(upstream = %live.name, "the upstream's lists changed; mounted again");
    }
    listing
}

/// Connects until it works, with exponential backoff; returns the connection and the
/// listing. A failed attempt is told to `first_attempt`, if it is still waiting.
async fn reconnect(
    s: &Supervised,
    live: &Live,
    first_attempt: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> (Arc<McpClient>, Listing) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        // Over Streamable HTTP, a message's stream says which call it belongs to.
        let handlers = live.inbox.handlers(matches!(s.target, Target::Http { .. }));
        match connect_upstream(s.target.clone(), s.timeout, s.era, handlers).await {
            Ok((client, listing)) => {
                let client = Arc::new(client);
                live.set_client(Some(client.clone()));
                tracing::info!(upstream = %live.name, "connected");
                return (client, listing);
            }
            Err(e) => {
                tracing::warn!(upstream = %live.name, error = %codomyrmex_mcp::util::inert_text(&e), retry_in_secs = backoff.as_secs(), "upstream unreachable");
                live.stats.failed(&e);
                if let Some(tx) = first_attempt.take() {
                    let _ = tx.send(());
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}
