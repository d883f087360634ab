//! What the gateway counts per upstream (issue #31 item 5), shown on `/metrics` and `/status`
//! through the server's one hook for counted things ([`codomyrmex_mcp::observe`]).
//!
//! Each upstream's [`UpstreamStats`] is its `Live`'s (shared with [`GatewayObserved`]): [`forward`](super::serve) times every
//! call, prompt and read sent to it ([`UpstreamStats::call`]); its connection's changes
//! (`Live::set_client`) say whether it is up, which era it speaks and how often it was
//! connected again; its supervisor says what it mounted and its last error.
//! [`GatewayObserved`] renders them all:
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `mcp_gateway_upstream_calls_total` | counter | `upstream`, `method` (`tools/call`, `prompts/get`, `resources/read`) |
//! | `mcp_gateway_upstream_errors_total` | counter | `upstream`, `method`, `kind` (`timeout`, `unavailable`, `refused` by the upstream, `overloaded` or `rate_limited` at the gateway, `tool_error`: a result with `isError`, `other`) |
//! | `mcp_gateway_upstream_call_duration_seconds` | histogram | `upstream`: from the call's admission wait to its answer |
//! | `mcp_gateway_upstream_calls_in_flight` | gauge | `upstream` |
//! | `mcp_gateway_upstream_restarts_total` | counter | `upstream`: connected again after a connection ended (a stdio child started anew) |
//! | `mcp_gateway_upstream_up` | gauge | `upstream`: 1 while connected and answering its health checks |
//! | `mcp_gateway_config_generation` | gauge | the configuration generation being served |
//!
//! Upstream names are the configuration's namespaces, so every label is bounded.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codomyrmex_mcp::observe::{Observed, family_header, label_value};
use serde_json::{Map, Value, json};

/// The longest last error kept, in characters.
const MAX_LAST_ERROR: usize = 300;
/// The histogram's upper bounds, in seconds.
const BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// The methods forwarded, in label order.
const METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];
/// The kinds of error, in label order.
const KINDS: [&str; 7] = [
    "timeout",
    "unavailable",
    "refused",
    "overloaded",
    "rate_limited",
    "tool_error",
    "other",
];

/// An upstream's connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting = 0,
    Up = 1,
    Down = 2,
}

/// What the gateway counts of one upstream.
#[derive(Debug)]
pub struct UpstreamStats {
    state: AtomicU8,
    /// 0: not known; 1: 2026-07-28; 2: 2025-11-25.
    era: AtomicU8,
    tools: AtomicU64,
    restarts: AtomicU64,
    connected_once: AtomicBool,
    last_error: Mutex<Option<String>>,
    in_flight: AtomicI64,
    /// Per method.
    calls: [AtomicU64; METHODS.len()],
    /// Per method, then kind.
    errors: [[AtomicU64; KINDS.len()]; METHODS.len()],
    /// Cumulative counts are computed when rendered: one count per bucket, then `+Inf`.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
}

impl Default for UpstreamStats {
    fn default() -> Self {
        Self {
            state: AtomicU8::new(State::Connecting as u8),
            era: AtomicU8::new(0),
            tools: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            connected_once: AtomicBool::new(false),
            last_error: Mutex::new(None),
            in_flight: AtomicI64::new(0),
            calls: Default::default(),
            errors: Default::default(),
            buckets: Default::default(),
            sum_micros: AtomicU64::new(0),
        }
    }
}

/// One call in flight, counted until [`CallTimer::done`] (or dropped: a cancelled call).
#[derive(Debug)]
pub struct CallTimer<'a> {
    stats: &'a UpstreamStats,
    method: usize,
    started: Instant,
    ended: bool,
}

impl CallTimer<'_> {
    /// The call ended: `error` names its kind of failure, if it failed.
    pub fn done(mut self, error: Option<&str>) {
        self.finish(error);
    }

    fn finish(&mut self, error: Option<&str>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        let s = self.stats;
        s.in_flight.fetch_sub(1, Ordering::Relaxed);
        s.calls[self.method].fetch_add(1, Ordering::Relaxed);
        if let Some(kind) = error {
            let k = KINDS
                .iter()
                .position(|x| *x == kind)
                .unwrap_or(KINDS.len() - 1);
            s.errors[self.method][k].fetch_add(1, Ordering::Relaxed);
        }
        let took = self.started.elapsed();
        s.observe(took);
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        // A call whose caller went away: counted, as cancelled work is not an upstream error.
        self.finish(None);
    }
}

impl UpstreamStats {
    /// Starts counting a call of `method` (one of `tools/call`, `prompts/get`,
    /// `resources/read`; any other counts as `tools/call`).
    pub fn call(&self, method: &str) -> CallTimer<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        CallTimer {
            stats: self,
            method: METHODS.iter().position(|m| *m == method).unwrap_or(0),
            started: Instant::now(),
            ended: false,
        }
    }

    fn observe(&self, took: Duration) {
        let secs = took.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// The upstream is connected, speaking `era`; a connection after the first is a restart.
    pub fn connected(&self, era: codomyrmex_mcp::Era) {
        if self.connected_once.swap(true, Ordering::Relaxed) {
            self.restarts.fetch_add(1, Ordering::Relaxed);
        }
        let era = match era {
            codomyrmex_mcp::Era::Modern => 1,
            codomyrmex_mcp::Era::Legacy => 2,
        };
        self.era.store(era, Ordering::Relaxed);
        self.state.store(State::Up as u8, Ordering::Relaxed);
    }

    /// A REST upstream's document was read: it is up (speaking no MCP era; never restarted).
    pub fn ready(&self) {
        self.state.store(State::Up as u8, Ordering::Relaxed);
    }

    /// The upstream's connection ended; nothing of it is mounted any more.
    pub fn disconnected(&self) {
        self.state.store(State::Down as u8, Ordering::Relaxed);
        self.tools.store(0, Ordering::Relaxed);
    }

    /// How many of its tools are mounted.
    pub fn mounted(&self, tools: usize) {
        self.tools
            .store(u64::try_from(tools).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Its last error (a failed connection attempt, a failed health check), bounded and
    /// inert; it is down until connected again.
    pub fn failed(&self, error: &str) {
        self.state.store(State::Down as u8, Ordering::Relaxed);
        let inert = codomyrmex_mcp::util::inert_text(error);
        let kept: String = inert.chars().take(MAX_LAST_ERROR).collect();
        *self
            .last_error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(kept);
    }

    fn state(&self) -> State {
        match self.state.load(Ordering::Relaxed) {
            1 => State::Up,
            2 => State::Down,
            _ => State::Connecting,
        }
    }
}

/// The error kind of a forwarded call's failure code.
pub fn error_kind(code: &str) -> &'static str {
    match code {
        "UPSTREAM_TIMEOUT" => "timeout",
        "UPSTREAM_UNAVAILABLE" => "unavailable",
        "UPSTREAM_ERROR" => "refused",
        "UPSTREAM_OVERLOADED" => "overloaded",
        "UPSTREAM_RATE_LIMITED" => "rate_limited",
        _ => "other",
    }
}

/// What the gateway serves at one moment: the configuration generation in force and its
/// running upstreams' figures (`reload::LiveConfig::served`).
pub struct Served {
    /// 1 at start, one more for each applied reload.
    pub generation: u64,
    /// Each upstream's name and figures, in the file's order.
    pub upstreams: Vec<(String, Arc<UpstreamStats>)>,
}

/// Every upstream's figures and the configuration generation: the gateway's part of
/// `/metrics` and `/status`, read anew at each scrape from the configuration in force.
pub struct GatewayObserved {
    served: Box<dyn Fn() -> Served + Send + Sync>,
}

impl GatewayObserved {
    /// The part that shows what `served` returns at each scrape.
    pub fn new(served: impl Fn() -> Served + Send + Sync + 'static) -> Self {
        Self {
            served: Box::new(served),
        }
    }
}

impl Observed for GatewayObserved {
    fn metrics(&self, out: &mut String) {
        let Served {
            generation,
            upstreams,
        } = (self.served)();
        let names: Vec<String> = upstreams.iter().map(|(n, _)| label_value(n)).collect();
        let each = |out: &mut String,
                    name: &str,
                    kind: &str,
                    help: &str,
                    f: &dyn Fn(&UpstreamStats) -> i64| {
            family_header(out, name, kind, help);
            let sample = if kind == "counter" {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            for ((_, stats), up) in upstreams.iter().zip(&names) {
                let _ = writeln!(out, "{sample}{{upstream=\"{up}\"}} {}", f(stats));
            }
        };
        let count = |v: &AtomicU64| i64::try_from(v.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        each(
            out,
            "mcp_gateway_upstream_calls_in_flight",
            "gauge",
            "Calls sent to the upstream and not answered yet.",
            &|s| s.in_flight.load(Ordering::Relaxed),
        );
        each(
            out,
            "mcp_gateway_upstream_restarts",
            "counter",
            "Times the upstream was connected again after its connection ended.",
            &|s| count(&s.restarts),
        );
        each(
            out,
            "mcp_gateway_upstream_up",
            "gauge",
            "1 while the upstream is connected and answers its health checks.",
            &|s| i64::from(s.state() == State::Up),
        );

        family_header(
            out,
            "mcp_gateway_upstream_calls",
            "counter",
            "Calls, prompts and reads sent to the upstream.",
        );
        for ((_, stats), up) in upstreams.iter().zip(&names) {
            for (m, method) in METHODS.iter().enumerate() {
                let n = stats.calls[m].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "mcp_gateway_upstream_calls_total{{upstream=\"{up}\",method=\"{method}\"}} {n}"
                );
            }
        }
        family_header(
            out,
            "mcp_gateway_upstream_errors",
            "counter",
            "Forwarded calls that failed, by kind.",
        );
        for ((_, stats), up) in upstreams.iter().zip(&names) {
            for (m, method) in METHODS.iter().enumerate() {
                for (k, kind) in KINDS.iter().enumerate() {
                    let n = stats.errors[m][k].load(Ordering::Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "mcp_gateway_upstream_errors_total{{upstream=\"{up}\",method=\"{method}\",kind=\"{kind}\"}} {n}"
                        );
                    }
                }
            }
        }
        family_header(
            out,
            "mcp_gateway_upstream_call_duration_seconds",
            "histogram",
            "Time from a call's admission wait to the upstream's answer.",
        );
        for ((_, stats), up) in upstreams.iter().zip(&names) {
            let s = stats;
            let mut cumulative = 0u64;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += s.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "mcp_gateway_upstream_call_duration_seconds_bucket{{upstream=\"{up}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            cumulative += s.buckets[BUCKETS.len()].load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "mcp_gateway_upstream_call_duration_seconds_bucket{{upstream=\"{up}\",le=\"+Inf\"}} {cumulative}"
            );
            let sum = s.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(
                out,
                "mcp_gateway_upstream_call_duration_seconds_sum{{upstream=\"{up}\"}} {sum}"
            );
            let _ = writeln!(
                out,
                "mcp_gateway_upstream_call_duration_seconds_count{{upstream=\"{up}\"}} {cumulative}"
            );
        }
        family_header(
            out,
            "mcp_gateway_config_generation",
            "gauge",
            "The configuration generation being served.",
        );
        let _ = writeln!(out, "mcp_gateway_config_generation {generation}");
    }

    fn status(&self, doc: &mut Map<String, Value>) {
        let Served {
            generation,
            upstreams,
        } = (self.served)();
        let upstreams: Vec<Value> = upstreams
            .iter()
            .map(|(name, s)| {
                json!({
                    "name": name,
                    "state": match s.state() {
                        State::Connecting => "connecting",
                        State::Up => "up",
                        State::Down => "down",
                    },
                    "era": match s.era.load(Ordering::Relaxed) {
                        1 => Value::from("2026-07-28"),
                        2 => Value::from("2025-11-25"),
                        _ => Value::Null,
                    },
                    "tools": s.tools.load(Ordering::Relaxed),
                    "last_error": s.last_error.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone(),
                    "restarts": s.restarts.load(Ordering::Relaxed),
                    "calls_in_flight": s.in_flight.load(Ordering::Relaxed),
                })
            })
            .collect();
        doc.insert("upstreams".into(), Value::Array(upstreams));
        doc.insert("config_generation".into(), json!(generation));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn calls_errors_and_latency_are_counted_per_upstream() {
        let stats = Arc::new(UpstreamStats::default());
        stats.call("tools/call").done(None);
        stats.call("tools/call").done(Some("timeout"));
        let pending = stats.call("resources/read");
        let shown = stats.clone();
        let o = GatewayObserved::new(move || Served {
            generation: 1,
            upstreams: vec![("up".to_owned(), shown.clone())],
        });
        let mut text = String::new();
        o.metrics(&mut text);
        for line in [
            "mcp_gateway_upstream_calls_total{upstream=\"up\",method=\"tools/call\"} 2",
            "mcp_gateway_upstream_errors_total{upstream=\"up\",method=\"tools/call\",kind=\"timeout\"} 1",
            "mcp_gateway_upstream_calls_in_flight{upstream=\"up\"} 1",
            "mcp_gateway_upstream_call_duration_seconds_count{upstream=\"up\"} 2",
            "mcp_gateway_upstream_up{upstream=\"up\"} 0",
            "mcp_gateway_config_generation 1",
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        drop(pending);
        stats.connected(codomyrmex_mcp::Era::Legacy);
        stats.disconnected();
        stats.failed("boom\u{1b}[31m");
        stats.connected(codomyrmex_mcp::Era::Legacy);
        let mut doc = Map::new();
        o.status(&mut doc);
        let up = &doc["upstreams"][0];
        assert_eq!(up["state"], "up");
        assert_eq!(up["era"], "2025-11-25");
        assert_eq!(up["restarts"], 1);
        assert_eq!(up["calls_in_flight"], 0);
        assert!(!up["last_error"].as_str().unwrap().contains('\u{1b}'));
        assert_eq!(doc["config_generation"], 1);
    }
}
