//! `client load`: load-tests one tool through the same [`McpClient`] the other commands use.
//! Calls are started until `--calls` have been started or `--duration` has passed, at most
//! `--concurrency` in flight (and at most `--rate` started per second); calls in flight then
//! finish, each bounded by `--timeout`. The report counts calls, successes and failures by
//! kind (tool error, server error, timeout, ...) with the most common messages, and gives
//! calls/s and latency percentiles from a fixed-size histogram, so memory stays bounded
//! however many calls run.
//!
//! Not a benchmark harness: one client connection, no warm-up, no statistics across runs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use codomyrmex_mcp::client::CallOptions;
use codomyrmex_mcp::client::{ClientError, McpClient};
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::time::Instant;

/// How many distinct error messages the report keeps; the rest are counted as `(other)`.
const MAX_MESSAGES: usize = 10;
/// How much of an error message the report keeps.
const MAX_MESSAGE_CHARS: usize = 200;
/// The longest wait between two starts under `--rate`.
const MAX_INTERVAL: Duration = Duration::from_secs(86_400);
/// The duration when neither `--calls` nor `--duration` is given (as Inspector's `--load`).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Stop after starting this many calls.
    pub calls: Option<u64>,
    /// Stop starting calls after this long.
    pub duration: Option<Duration>,
    /// The most calls in flight.
    pub concurrency: u32,
    /// The most calls started per second.
    pub rate: Option<f64>,
    /// Each call's timeout.
    pub call_timeout: Duration,
}

/// What a load test saw.
#[derive(Debug)]
pub struct Report {
    tool: String,
    plan: Plan,
    calls: u64,
    ok: u64,
    by_kind: BTreeMap<&'static str, u64>,
    messages: Vec<(&'static str, String, u64)>,
    other_messages: u64,
    elapsed: Duration,
    max_in_flight: usize,
    latency: Histogram,
    stopped: Option<&'static str>,
}

/// Runs `plan` against `tool` with `arguments`.
pub async fn run(client: &McpClient, tool: &str, arguments: Value, plan: &Plan) -> Report {
    let duration = match (plan.calls, plan.duration) {
        (None, None) => Some(DEFAULT_DURATION),
        (_, d) => d,
    };
    let concurrency = usize::try_from(plan.concurrency)
        .unwrap_or(usize::MAX)
        .max(1);
    // At most a day apart: a rate so low that calls would be further apart starts one call.
    let interval = plan.rate.map(|r| {
        Duration::try_from_secs_f64(1.0 / r)
            .unwrap_or(MAX_INTERVAL)
            .min(MAX_INTERVAL)
    });
    let options = CallOptions {
        timeout: Some(plan.call_timeout),
        ..CallOptions::default()
    };
    let mut report = Report {
        tool: tool.to_owned(),
        plan: Plan {
            duration,
            ..plan.clone()
        },
        calls: 0,
        ok: 0,
        by_kind: BTreeMap::new(),
        messages: Vec::new(),
        other_messages: 0,
        elapsed: Duration::ZERO,
        max_in_flight: 0,
        latency: Histogram::new(),
        stopped: None,
    };
    let start = Instant::now();
    let deadline = duration.map(|d| start + d);
    let mut next_start = start;
    let mut started = 0u64;
    let mut in_flight = FuturesUnordered::new();
    let one = |arguments: Value| {
        let options = &options;
        async move {
            let t0 = Instant::now();
            let r = client.call_tool_with(tool, arguments, options).await;
            (t0.elapsed(), r)
        }
    };
    loop {
        let now = Instant::now();
        let may_start = report.stopped.is_none()
            && plan.calls.is_none_or(|n| started < n)
            && deadline.is_none_or(|d| now < d && next_start < d)
            && in_flight.len() < concurrency;
        if may_start && next_start > now {
            // Paced by --rate: start at the next slot, or record a call that ends first.
            tokio::select! {
                () = tokio::time::sleep_until(next_start) => {}
                Some((took, r)) = in_flight.next(), if !in_flight.is_empty() => {
                    report.record(took, r);
                }
            }
            continue;
        }
        if may_start {
            in_flight.push(one(arguments.clone()));
            started += 1;
            report.max_in_flight = report.max_in_flight.max(in_flight.len());
            if let Some(interval) = interval {
                next_start = next_start.max(now) + interval;
            }
            continue;
        }
        let Some((took, r)) = in_flight.next().await else {
            break;
        };
        report.record(took, r);
    }
    report.elapsed = start.elapsed();
    report
}

impl Report {
    /// Counts one finished call.
    fn record(&mut self, took: Duration, result: Result<Value, ClientError>) {
        self.calls += 1;
        self.latency.add(took);
        let (kind, message) = match result {
            Ok(r) if r.get("isError").and_then(Value::as_bool) == Some(true) => {
                ("tool error", tool_error_text(&r))
            }
            Ok(_) => {
                self.ok += 1;
                return;
            }
            Err(ClientError::Server(e)) => {
                ("server error", format!("error {}: {}", e.code, e.message))
            }
            Err(e @ ClientError::Timeout(_)) => ("timeout", e.to_string()),
            Err(e @ ClientError::Closed) => {
                // Nothing more can succeed on this connection.
                self.stopped = Some("the connection closed");
                ("connection closed", e.to_string())
            }
            Err(ClientError::Transport { message, .. }) => ("transport", message),
            Err(e) => ("protocol", e.to_string()),
        };
        *self.by_kind.entry(kind).or_default() += 1;
        let message: String = message.chars().take(MAX_MESSAGE_CHARS).collect();
        if let Some(m) = self
            .messages
            .iter_mut()
            .find(|(k, m, _)| *k == kind && *m == message)
        {
            m.2 += 1;
        } else if self.messages.len() < MAX_MESSAGES {
            self.messages.push((kind, message, 1));
        } else {
            self.other_messages += 1;
        }
    }

    /// The calls that did not succeed.
    pub fn failed(&self) -> u64 {
        self.calls - self.ok
    }

    fn calls_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            round(self.calls as f64 / secs, 2)
        } else {
            0.0
        }
    }

    fn sorted_messages(&self) -> Vec<(&'static str, &str, u64)> {
        let mut list: Vec<_> = self
            .messages
            .iter()
            .map(|(k, m, c)| (*k, m.as_str(), *c))
            .collect();
        list.sort_by_key(|m| std::cmp::Reverse(m.2));
        if self.other_messages > 0 {
            list.push(("other", "(other messages)", self.other_messages));
        }
        list
    }

    /// The report as JSON (`--json`).
    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "tool": self.tool,
            "concurrency": self.plan.concurrency,
            "calls": self.calls,
            "ok": self.ok,
            "failed": self.failed(),
            "errorRate": if self.calls == 0 { 0.0 } else { round(self.failed() as f64 / self.calls as f64, 4) },
            "errorsByKind": self.by_kind,
            "errorMessages": self.sorted_messages().iter().map(|(kind, message, count)| {
                json!({"kind": kind, "message": message, "count": count})
            }).collect::<Vec<_>>(),
            "elapsedMs": round(self.elapsed.as_secs_f64() * 1e3, 2),
            "callsPerSecond": self.calls_per_second(),
            "maxInFlight": self.max_in_flight,
            "latencyMs": self.latency.summary(),
        });
        if let Value::Object(o) = &mut out {
            if let Some(n) = self.plan.calls {
                o.insert("callLimit".into(), json!(n));
            }
            if let Some(d) = self.plan.duration {
                o.insert("durationS".into(), json!(d.as_secs_f64()));
            }
            if let Some(r) = self.plan.rate {
                o.insert("rate".into(), json!(r));
            }
            o.insert(
                "callTimeoutS".into(),
                json!(self.plan.call_timeout.as_secs_f64()),
            );
            if let Some(why) = self.stopped {
                o.insert("stoppedEarly".into(), json!(why));
            }
        }
        out
    }

    /// The report for people.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{}: {} calls in {:.2} s, {} calls/s, concurrency {} (at most {} in flight)\n",
            self.tool,
            self.calls,
            self.elapsed.as_secs_f64(),
            self.calls_per_second(),
            self.plan.concurrency,
            self.max_in_flight
        );
        let rate = if self.calls == 0 {
            0.0
        } else {
            self.failed() as f64 * 100.0 / self.calls as f64
        };
        let _ = writeln!(s, "  ok {}, failed {} ({rate:.2}%)", self.ok, self.failed());
        if let Some(why) = self.stopped {
            let _ = writeln!(s, "  stopped early: {why}");
        }
        if let Some(l) = self.latency.summary() {
            let at = |k: &str| l.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            let _ = writeln!(
                s,
                "  latency ms: min {}  mean {}  p50 {}  p90 {}  p99 {}  max {}",
                at("min"),
                at("mean"),
                at("p50"),
                at("p90"),
                at("p99"),
                at("max")
            );
        }
        if !self.by_kind.is_empty() {
            s.push_str("  errors by kind:\n");
            for (kind, n) in &self.by_kind {
                let _ = writeln!(s, "    {kind}: {n}");
            }
            s.push_str("  error messages:\n");
            for (kind, message, n) in self.sorted_messages() {
                let _ = writeln!(s, "    {n} × {kind}: {message}");
            }
        }
        s
    }
}

/// A tool error's text blocks, or a placeholder.
fn tool_error_text(result: &Value) -> String {
    let text: Vec<&str> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|c| {
            c.iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if text.is_empty() {
        "(no text)".into()
    } else {
        text.join(" ")
    }
}

fn round(n: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (n * scale).round() / scale
}

/// Sub-buckets per power of two above [`EXACT`]: 2^7 = 128, under 1 % apart.
const SUB_BITS: u32 = 7;
/// Latencies under this many microseconds have a bucket each.
const EXACT: u64 = 1 << (SUB_BITS + 3);

/// Latencies in microseconds in log-linear buckets: exact under 1,024 µs, then 128 buckets per
/// power of two. A fixed size (under 8,000 counters) whatever the number of calls.
#[derive(Debug)]
struct Histogram {
    counts: Vec<u64>,
    n: u64,
    sum_us: u128,
    min_us: u64,
    max_us: u64,
}

impl Histogram {
    fn new() -> Self {
        Self {
            counts: vec![0; index(u64::MAX) + 1],
            n: 0,
            sum_us: 0,
            min_us: u64::MAX,
            max_us: 0,
        }
    }

    fn add(&mut self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        if let Some(c) = self.counts.get_mut(index(us)) {
            *c += 1;
        }
        self.n += 1;
        self.sum_us += u128::from(us);
        self.min_us = self.min_us.min(us);
        self.max_us = self.max_us.max(us);
    }

    /// The value at percentile `p` (the nearest-rank method): the middle of its bucket,
    /// within the smallest and largest seen.
    fn percentile_us(&self, p: f64) -> u64 {
        let rank = ((p / 100.0 * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (low, high) = (lower(i), lower(i + 1));
                return (low + (high - low) / 2).clamp(self.min_us, self.max_us);
            }
        }
        self.max_us
    }

    /// `{min, mean, p50, p90, p99, max}` in milliseconds, or null with no calls.
    fn summary(&self) -> Option<Value> {
        if self.n == 0 {
            return None;
        }
        let ms = |us: u64| round(us as f64 / 1e3, 3);
        let mean = self.sum_us / u128::from(self.n);
        Some(json!({
            "min": ms(self.min_us),
            "mean": round(mean as f64 / 1e3, 3),
            "p50": ms(self.percentile_us(50.0)),
            "p90": ms(self.percentile_us(90.0)),
            "p99": ms(self.percentile_us(99.0)),
            "max": ms(self.max_us),
        }))
    }
}

/// The bucket of `us` microseconds.
fn index(us: u64) -> usize {
    if us < EXACT {
        return usize::try_from(us).unwrap_or(usize::MAX);
    }
    let exp = 63 - us.leading_zeros();
    let sub = (us >> (exp - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    let octave = u64::from(exp) - u64::from(SUB_BITS + 3);
    usize::try_from(EXACT + (octave << SUB_BITS) + sub).unwrap_or(usize::MAX)
}

/// The smallest value in bucket `i` (`u64::MAX` past the last).
fn lower(i: usize) -> u64 {
    let i = u64::try_from(i).unwrap_or(u64::MAX);
    if i < EXACT {
        return i;
    }
    let k = i - EXACT;
    let exp = (k >> SUB_BITS) + u64::from(SUB_BITS + 3);
    if exp > 63 {
        return u64::MAX;
    }
    let sub = k & ((1 << SUB_BITS) - 1);
    (1 << exp) | (sub << (exp - u64::from(SUB_BITS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_falls_in_a_bucket_that_holds_it() {
        for us in [
            0,
            1,
            1023,
            1024,
            1025,
            2047,
            2048,
            123_456,
            1 << 40,
            u64::MAX - 1,
        ] {
            let i = index(us);
            assert!(lower(i) <= us, "{us}: bucket {i} starts at {}", lower(i));
            assert!(
                us < lower(i + 1) || lower(i + 1) == u64::MAX,
                "{us}: bucket {i}"
            );
        }
        assert!(index(u64::MAX) < 8_000);
    }

    #[test]
    fn percentiles_are_nearest_rank_within_a_percent() {
        let mut h = Histogram::new();
        for ms in 1..=100u64 {
            h.add(Duration::from_millis(ms));
        }
        let near = |got: u64, want: u64| got.abs_diff(want) * 100 <= want;
        assert!(
            near(h.percentile_us(50.0), 50_000),
            "{}",
            h.percentile_us(50.0)
        );
        assert!(
            near(h.percentile_us(90.0), 90_000),
            "{}",
            h.percentile_us(90.0)
        );
        assert!(
            near(h.percentile_us(99.0), 99_000),
            "{}",
            h.percentile_us(99.0)
        );
        assert_eq!(h.percentile_us(100.0), 100_000);
        let s = h.summary().unwrap();
        assert_eq!(
            (s["min"].as_f64(), s["max"].as_f64()),
            (Some(1.0), Some(100.0))
        );
        assert_eq!(s["mean"].as_f64(), Some(50.5));
        assert_eq!(Histogram::new().summary(), None);
    }
}
