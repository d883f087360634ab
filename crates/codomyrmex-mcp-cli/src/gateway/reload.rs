//! Live reload: on SIGHUP, or when the configuration file's contents change (read every
//! [`POLL_EVERY`]), the gateway applies the file anew without dropping a client.
//!
//! - **Upstreams** are compared by name with the running ones: one that is unchanged keeps
//!   running untouched (its connection, its calls in flight, its supervisor); one that is
//!   gone is *retired*; one whose table changed in any way (address, era, filter, renames,
//!   limits, health check) is retired and started anew under the new table; a new one is
//!   started. Retiring stops the upstream's supervisor, which takes its tools, prompts and
//!   resources out of the gateway's registries (clients hear `list_changed`, in both eras, as
//!   for any change of the registries), then leaves its connection to the calls still in
//!   flight on it: the connection is closed once none holds it any more, or at the
//!   upstream's deadline (`timeout_secs`, the longest one of its calls may take), a stdio
//!   child being ended (stdin closed, then killed after a grace period).
//! - **Policies** (`[[policy]]`) replace the engine's authorization as one value
//!   ([`Engine::set_authorization`]): the next request is decided by the new rules, and
//!   every client hears that the lists changed.
//! - **An invalid file** is refused with the loader's error (naming the line when the file
//!   does not parse), on stderr, and the configuration in force keeps serving.
//!
//! The configuration in force is one immutable [`Snapshot`] (its generation, counted from 1
//! at start, and the checked file), replaced whole by each applied reload; `/health`
//! (`configGeneration`) and the log line `configuration generation N is live` show it.
//! Reloads are applied one at a time, by one task; the running upstreams are that task's own.
//!
//! Not reloaded: the HTTP settings (the command line's), and the `ttlMs` the gateway's
//! lists carry (read from the upstreams at start).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use codomyrmex_mcp::authz::Authorization;
use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::driver;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::runtime::TOKIO;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::bridge::{AbortOnDrop, Live};
use super::config::{GatewayConfig, Upstream};
use super::observe::{Served, UpstreamStats};
use super::serve::Registries;
use super::{START_WAIT, supervise, target_of};
use crate::portable::Naming;

/// How often the configuration file is read for a change.
pub const POLL_EVERY: Duration = Duration::from_secs(1);
/// How often a retired connection is looked at for calls still holding it.
const DRAIN_POLL: Duration = Duration::from_millis(50);
/// How long a retired stdio child gets to exit after its stdin is closed.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The configuration in force: replaced whole, never changed in place.
#[derive(Debug)]
pub struct Snapshot {
    /// 1 at start, one more for each applied reload.
    pub generation: u64,
    /// The checked file.
    pub config: Arc<GatewayConfig>,
    /// Each running upstream's figures, in the file's order.
    pub upstreams: Vec<(String, Arc<UpstreamStats>)>,
}

/// The configuration generation in force, shared with what reports it (`/health`).
#[derive(Debug, Clone)]
pub struct LiveConfig(Arc<RwLock<Arc<Snapshot>>>);

impl LiveConfig {
    /// Generation 1: `config`, whose running upstreams' figures are `upstreams`.
    pub fn new(config: Arc<GatewayConfig>, upstreams: Vec<(String, Arc<UpstreamStats>)>) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(Snapshot {
            generation: 1,
            config,
            upstreams,
        }))))
    }

    /// The snapshot in force.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Its generation.
    pub fn generation(&self) -> u64 {
        self.snapshot().generation
    }

    /// `/health`'s fields: `configGeneration`.
    pub fn health_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("configGeneration".into(), json!(self.generation()));
        fields
    }

    /// What `/metrics` and `/status` show of it: its generation and its upstreams' figures,
    /// from one snapshot.
    pub fn served(&self) -> Served {
        let snapshot = self.snapshot();
        Served {
            generation: snapshot.generation,
            upstreams: snapshot.upstreams.clone(),
        }
    }

    /// Puts `config` in force as the next generation, with its running upstreams' figures;
    /// returns the generation.
    fn replace(
        &self,
        config: Arc<GatewayConfig>,
        upstreams: Vec<(String, Arc<UpstreamStats>)>,
    ) -> u64 {
        let mut live = self.0.write().unwrap_or_else(PoisonError::into_inner);
        let generation = live.generation + 1;
        *live = Arc::new(Snapshot {
            generation,
            config,
            upstreams,
        });
        generation
    }
}

/// One running upstream: its state and its supervisor.
pub struct Running {
    live: Arc<Live>,
    /// Dropping it stops the supervisor.
    stop: oneshot::Sender<()>,
    supervisor: AbortOnDrop<()>,
}

/// Starts `u`'s supervisor, which connects it and mounts its catalogue into `r`; the
/// receiver hears when its first connection attempt ended.
pub fn start(
    u: &Upstream,
    naming: &Naming,
    r: &Registries,
    logs: Option<&mpsc::Sender<Value>>,
) -> (Running, oneshot::Receiver<()>) {
    let live = Arc::new(Live::new(u.name.clone(), u.limits()));
    if let Some(logs) = logs {
        live.inbox.serve_logs_with(logs.clone());
    }
    let supervised = supervise::Supervised {
        era: u.era,
        target: target_of(u),
        filter: u.filter.clone(),
        timeout: u.timeout,
        health_every: u.health_check,
        naming: naming.clone(),
    };
    let (first_tx, first_rx) = oneshot::channel();
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(supervise::supervise(
        supervised,
        live.clone(),
        r.clone(),
        first_tx,
        stopped,
    ));
    let running = Running {
        live,
        stop,
        supervisor: AbortOnDrop(task),
    };
    (running, first_rx)
}

impl Running {
    /// Its state (its connection, its limits, its inbox).
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// Stops its supervisor (which unmounts its catalogue), then leaves its connection to
    /// the calls in flight on it until they end or its deadline passes, and closes it.
    async fn retire(self) {
        let Running {
            live,
            stop,
            mut supervisor,
        } = self;
        drop(stop);
        if (&mut supervisor.0).await.is_err() {
            tracing::warn!(upstream = %live.name, "its supervisor failed");
        }
        let Some(client) = live.set_client(None) else {
            return;
        };
        let deadline = live.timeout();
        let name = live.name.clone();
        drop(live);
        tokio::spawn(drain(name, client, deadline));
    }
}

/// Waits until no call holds `client` any more (each call in flight holds it), at most
/// `deadline` (an upstream's calls' own), then closes it.
async fn drain(name: String, client: Arc<McpClient>, deadline: Duration) {
    let idle = async {
        while Arc::strong_count(&client) > 1 {
            tokio::time::sleep(DRAIN_POLL).await;
        }
    };
    if driver::within(&TOKIO, deadline, idle).await.is_err() {
        tracing::warn!(upstream = %name, "calls still held a retired connection at its deadline");
    }
    match Arc::try_unwrap(client) {
        Ok(client) => {
            client.close(CLOSE_GRACE).await;
            tracing::info!(upstream = %name, "a retired connection was closed");
        }
        // A call past its deadline still ends with it: the last one to let go ends the
        // connection (a stdio child is killed when its handle is dropped).
        Err(client) => drop(client),
    }
}

/// What a reload needs: the file, the gateway's registries and engine, and where the
/// upstreams' log messages of no call go.
pub struct Reloader {
    /// The configuration file.
    pub path: PathBuf,
    /// The gateway's registries, which the supervisors fill.
    pub registries: Registries,
    /// The gateway's engine (its authorization policy).
    pub engine: Engine,
    /// Where the upstreams' log messages of no call go.
    pub logs: mpsc::Sender<Value>,
    /// The configuration in force.
    pub config: LiveConfig,
}

/// The listener of the reload signal (SIGHUP), installed before the gateway serves so that
/// from then on the signal reloads rather than ends the process.
pub struct Hangup {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Hangup {
    /// Installs it.
    pub fn install() -> Result<Self, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let signal = signal(SignalKind::hangup())
                .map_err(|e| format!("cannot listen for SIGHUP: {e}"))?;
            Ok(Self { signal })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        {
            if self.signal.recv().await.is_none() {
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        std::future::pending::<()>().await;
    }
}

impl Reloader {
    /// Applies the file on each SIGHUP and each change of its contents, for as long as the
    /// gateway serves; `running` are the upstreams started with the configuration in force.
    pub async fn run(self, mut running: BTreeMap<String, Running>, mut hangup: Hangup) {
        let mut seen = read(&self.path);
        let mut every = tokio::time::interval(POLL_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let why = tokio::select! {
                () = hangup.next() => "SIGHUP",
                _ = every.tick() => {
                    let now = read(&self.path);
                    if now == seen {
                        continue;
                    }
                    "the file changed"
                }
            };
            // What is applied (or refused) now is what the next poll compares with.
            seen = read(&self.path);
            self.apply(&mut running, why).await;
        }
    }

    /// Reads, checks and applies the file; a refused file changes nothing.
    async fn apply(&self, running: &mut BTreeMap<String, Running>, why: &str) {
        let old = self.config.snapshot();
        let new = match GatewayConfig::load(&self.path) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                eprintln!(
                    "codomyrmex-mcp: gateway: reload ({why}) refused: {e}; configuration \
                     generation {} keeps serving",
                    old.generation
                );
                return;
            }
        };
        let wanted: BTreeMap<&str, &Upstream> =
            new.upstreams.iter().map(|u| (u.name.as_str(), u)).collect();
        let before: BTreeMap<&str, &Upstream> = old
            .config
            .upstreams
            .iter()
            .map(|u| (u.name.as_str(), u))
            .collect();
        // Gone or changed: retired first, so that a changed one's names are free again. A
        // changed `name_style` or separator renames every upstream's tools and prompts.
        let renamed = old.config.naming != new.naming;
        let leaving: Vec<String> = running
            .keys()
            .filter(|name| renamed || wanted.get(name.as_str()) != before.get(name.as_str()))
            .cloned()
            .collect();
        for name in &leaving {
            if let Some(r) = running.remove(name) {
                r.retire().await;
            }
        }
        let mut first_attempts = Vec::new();
        for u in &new.upstreams {
            if !running.contains_key(&u.name) {
                let (r, first) = start(u, &new.naming, &self.registries, Some(&self.logs));
                running.insert(u.name.clone(), r);
                first_attempts.push(first);
            }
        }
        if policy_entries(&old.config.authorization) != policy_entries(&new.authorization) {
            self.engine.set_authorization(new.authorization.clone());
        }
        let started = first_attempts.len();
        // As at start: the new upstreams' first attempts, for a while.
        let all_tried = async {
            for rx in first_attempts {
                let _ = rx.await;
            }
        };
        let _ = driver::within(&TOKIO, START_WAIT, all_tried).await;
        let upstreams = new
            .upstreams
            .iter()
            .filter_map(|u| {
                running
                    .get(&u.name)
                    .map(|r| (u.name.clone(), r.live.stats.clone()))
            })
            .collect();
        let generation = self.config.replace(new, upstreams);
        tracing::info!(
            generation,
            retired = leaving.len(),
            started,
            "configuration reloaded"
        );
        eprintln!("codomyrmex-mcp: gateway: configuration generation {generation} is live ({why})");
    }
}

/// A policy's rules, to compare two files'.
fn policy_entries(a: &Option<Arc<Authorization>>) -> Option<&[codomyrmex_mcp::authz::PolicyEntry]> {
    a.as_deref().map(Authorization::entries)
}

/// The file's bytes (`None` while it cannot be read).
fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}
