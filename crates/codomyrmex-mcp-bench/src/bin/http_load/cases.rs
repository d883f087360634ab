//! One load case on one subject: start the server, warm up, run the measured calls, read the
//! server's CPU and peak RSS around them, and summarise rounds as medians. Printing is in
//! `report`.

use codomyrmex_mcp_bench::procfs;
use codomyrmex_mcp_bench::util::median;

use crate::Result;
use crate::args::{Case, Options, Subject};
use crate::calls::{Caller, run_all};
use crate::server::Server;

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Measured {
    pub(crate) calls_per_sec: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) cpu_us_per_call: f64,
    pub(crate) client_cpu_us_per_call: f64,
    pub(crate) peak_rss_kib: u64,
    pub(crate) errors: u64,
}

pub(crate) async fn run_case(
    opts: &Options,
    subject: &Subject,
    case: Case,
    ticks: u64,
) -> Result<Measured> {
    let server = Server::spawn(opts, subject).await?;
    let outcome = tokio::time::timeout(opts.timeout, measure(opts, subject, case, ticks, &server))
        .await
        .unwrap_or_else(|_| {
            Err(format!("{}: the case overran {:?}", subject.name, opts.timeout).into())
        });
    server.stop().await;
    outcome
}

async fn measure(
    opts: &Options,
    subject: &Subject,
    case: Case,
    ticks: u64,
    server: &Server,
) -> Result<Measured> {
    let mut callers = Vec::with_capacity(case.conns);
    for i in 0..case.conns {
        let caller = Caller::open(server.addr, subject.era, i as u64, case.size)
            .await
            .map_err(|e| format!("{}: opening connection {i}: {e}", subject.name))?;
        callers.push(caller);
    }
    let mut errors = 0;
    let mut samples = Vec::new();
    if opts.warmup > 0 {
        let warmup = opts.warmup.max(case.conns);
        let (c, tally, _) = run_all(callers, warmup, true).await?;
        callers = c;
        errors += tally.errors;
        samples.extend(tally.samples);
    }
    let self_pid = std::process::id();
    let cpu_before = procfs::cpu_ticks(server.pid)?;
    let client_before = procfs::cpu_ticks(self_pid)?;
    let (callers, tally, elapsed) = run_all(callers, case.calls, false).await?;
    let cpu_after = procfs::cpu_ticks(server.pid)?;
    let client_after = procfs::cpu_ticks(self_pid)?;
    let peak = procfs::peak_rss_kib(server.pid)?;
    drop(callers);
    errors += tally.errors;
    samples.extend(tally.samples);
    for s in samples.iter().take(5) {
        eprintln!("http_load: {} ({}): {s}", subject.name, case.label());
    }
    let mut lat = tally.latencies_ns;
    lat.sort_unstable();
    let n = lat.len().max(1);
    let pct = |p: f64| {
        let i = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
        lat.get(i).map_or(f64::NAN, |&v| v as f64 / 1e3)
    };
    let calls = case.calls as f64;
    Ok(Measured {
        calls_per_sec: calls / elapsed.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        cpu_us_per_call: (cpu_after - cpu_before) as f64 * 1e6 / ticks as f64 / calls,
        client_cpu_us_per_call: (client_after - client_before) as f64 * 1e6 / ticks as f64 / calls,
        peak_rss_kib: peak,
        errors,
    })
}

/// A subject's figures for one case: the median of each figure over the rounds (errors summed).
pub(crate) fn summarise(runs: &[Measured]) -> Measured {
    let m = |f: fn(&Measured) -> f64| median(runs.iter().map(f).collect());
    Measured {
        calls_per_sec: m(|r| r.calls_per_sec),
        p50_us: m(|r| r.p50_us),
        p99_us: m(|r| r.p99_us),
        cpu_us_per_call: m(|r| r.cpu_us_per_call),
        client_cpu_us_per_call: m(|r| r.client_cpu_us_per_call),
        peak_rss_kib: m(|r| r.peak_rss_kib as f64) as u64,
        errors: runs.iter().map(|r| r.errors).sum(),
    }
}
