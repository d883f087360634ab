//! One case on one subject: spawn the server, warm up, run the measured calls, read the
//! server's CPU and peak RSS around them; the cold start; and medians over rounds. Printing is
//! in `report`.

use std::time::Duration;

use codomyrmex_mcp_bench::procfs::{cpu_ticks, peak_rss_kib};
use codomyrmex_mcp_bench::util::median;

use crate::Result;
use crate::args::{Case, Options, Subject};
use crate::calls::{Requests, run_calls};
use crate::server::Server;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    pub(crate) calls_per_sec: f64,
    pub(crate) mean_us: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) cpu_us_per_call: f64,
    pub(crate) peak_rss_kib: u64,
    pub(crate) cold_start_ms: f64,
}

pub(crate) fn run_case(
    opts: &Options,
    subject: &Subject,
    case: Case,
    ticks_per_sec: u64,
) -> Result<Measured> {
    let mut server = Server::spawn(opts, subject)?;
    let cold = server.handshake()?;
    let requests = Requests::new(case.size);
    let warmup = opts.warmup.min(case.calls);
    if warmup > 0 {
        run_calls(&mut server, &requests, 1, warmup, case.in_flight, true)?;
    }
    let first_id = 1 + warmup as u64;
    let cpu_before = cpu_ticks(server.pid)?;
    let run = run_calls(
        &mut server,
        &requests,
        first_id,
        case.calls,
        case.in_flight,
        false,
    )?;
    let cpu_after = cpu_ticks(server.pid)?;
    let peak = peak_rss_kib(server.pid)?;
    server.finish()?;

    let mut lat = run.latencies_ns;
    lat.sort_unstable();
    let n = lat.len();
    let pct = |p: f64| {
        let i = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
        lat[i] as f64 / 1e3
    };
    let cpu_us = (cpu_after - cpu_before) as f64 * 1e6 / ticks_per_sec as f64;
    Ok(Measured {
        calls_per_sec: n as f64 / run.elapsed.as_secs_f64(),
        mean_us: lat.iter().sum::<u64>() as f64 / n as f64 / 1e3,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        cpu_us_per_call: cpu_us / n as f64,
        peak_rss_kib: peak,
        cold_start_ms: cold.as_secs_f64() * 1e3,
    })
}

pub(crate) fn cold_start(opts: &Options, subject: &Subject) -> Result<Duration> {
    let mut server = Server::spawn(opts, subject)?;
    let cold = server.handshake()?;
    server.finish()?;
    Ok(cold)
}

/// A subject's figures for one case: the median of each figure over the rounds.
pub(crate) fn summarise(runs: &[Measured]) -> Measured {
    let m = |f: fn(&Measured) -> f64| median(runs.iter().map(f).collect());
    Measured {
        calls_per_sec: m(|r| r.calls_per_sec),
        mean_us: m(|r| r.mean_us),
        p50_us: m(|r| r.p50_us),
        p99_us: m(|r| r.p99_us),
        cpu_us_per_call: m(|r| r.cpu_us_per_call),
        peak_rss_kib: m(|r| r.peak_rss_kib as f64) as u64,
        cold_start_ms: m(|r| r.cold_start_ms),
    }
}
