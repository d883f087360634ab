//! Reporting: each case as text or JSON, the collected results, the markdown table of the
//! medians and the `--check` targets. It measures nothing.

use std::io::Write;

use codomyrmex_mcp_bench::util::median;
use serde_json::json;

use crate::Result;
use crate::args::{Case, Options, Subject, size_label};
use crate::cases::{Measured, summarise};

pub(crate) fn print_case(
    out: &mut impl Write,
    opts: &Options,
    round: usize,
    subject: &Subject,
    case: Case,
    m: &Measured,
) -> Result<()> {
    if opts.json {
        let record = json!({
            "round": round,
            "subject": subject.name,
            "case": case.label(),
            "size": case.size,
            "in_flight": case.in_flight,
            "calls": case.calls,
            "calls_per_sec": m.calls_per_sec,
            "mean_us": m.mean_us,
            "p50_us": m.p50_us,
            "p99_us": m.p99_us,
            "cpu_us_per_call": m.cpu_us_per_call,
            "peak_rss_kib": m.peak_rss_kib,
            "cold_start_ms": m.cold_start_ms,
        });
        writeln!(out, "{record}")?;
    } else {
        writeln!(
            out,
            "{:<12} {:<10} calls={:<7} {:>10.0} calls/s  mean {:>8.1} µs  p50 {:>8.1} µs  p99 {:>8.1} µs  cpu {:>7.2} µs/call  peak RSS {:>7} KiB  cold {:>6.2} ms",
            subject.name,
            case.label(),
            case.calls,
            m.calls_per_sec,
            m.mean_us,
            m.p50_us,
            m.p99_us,
            m.cpu_us_per_call,
            m.peak_rss_kib,
            m.cold_start_ms,
        )?;
    }
    Ok(())
}

/// Everything measured, by subject then case.
pub(crate) struct Results {
    /// `runs[subject][case]`: one entry per round.
    pub(crate) runs: Vec<Vec<Vec<Measured>>>,
    /// Every cold start measured per subject, in ms.
    pub(crate) colds: Vec<Vec<f64>>,
}

impl Results {
    fn summary(&self, subject: usize, case: usize) -> Measured {
        summarise(&self.runs[subject][case])
    }

    pub(crate) fn cold_median(&self, subject: usize) -> f64 {
        median(self.colds[subject].clone())
    }

    fn peak_rss(&self, subject: usize) -> u64 {
        (0..self.runs[subject].len())
            .map(|c| self.summary(subject, c).peak_rss_kib)
            .max()
            .unwrap_or(0)
    }
}

fn subject_index(opts: &Options, name: &str) -> Result<usize> {
    opts.subjects
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("no subject named {name:?}").into())
}

pub(crate) fn print_markdown(
    out: &mut impl Write,
    opts: &Options,
    results: &Results,
) -> Result<()> {
    let rounds = if opts.rounds > 1 {
        format!(", medians of {} rounds", opts.rounds)
    } else {
        String::new()
    };
    writeln!(out)?;
    write!(out, "| case | subject | calls/s{rounds} |")?;
    for r in &opts.ratio_to {
        write!(out, " × {r} |")?;
    }
    writeln!(
        out,
        " mean µs | p50 µs | p99 µs | server CPU µs/call | peak RSS MiB |"
    )?;
    write!(out, "|---|---|---:|")?;
    for _ in &opts.ratio_to {
        write!(out, "---:|")?;
    }
    writeln!(out, "---:|---:|---:|---:|---:|")?;
    let bases: Vec<usize> = opts
        .ratio_to
        .iter()
        .map(|r| subject_index(opts, r))
        .collect::<Result<_>>()?;
    for (ci, case) in opts.cases.iter().enumerate() {
        let label = format!(
            "{}, {} in flight",
            size_label(case.size)
                .replace("B", " B")
                .replace("Ki B", " KiB"),
            case.in_flight
        );
        for (si, subject) in opts.subjects.iter().enumerate() {
            let m = results.summary(si, ci);
            write!(
                out,
                "| {label} | {} | {:.0} |",
                subject.name, m.calls_per_sec
            )?;
            for &b in &bases {
                let base = results.summary(b, ci).calls_per_sec;
                write!(out, " {:.2}× |", m.calls_per_sec / base)?;
            }
            writeln!(
                out,
                " {:.1} | {:.1} | {:.1} | {:.2} | {:.1} |",
                m.mean_us,
                m.p50_us,
                m.p99_us,
                m.cpu_us_per_call,
                m.peak_rss_kib as f64 / 1024.0
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "| subject | cold start to first `initialize` response, median ms | min ms | spawns | peak RSS over all cases MiB |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for (si, subject) in opts.subjects.iter().enumerate() {
        let colds = &results.colds[si];
        let min = colds.iter().copied().fold(f64::INFINITY, f64::min);
        writeln!(
            out,
            "| {} | {:.2} | {:.2} | {} | {:.1} |",
            subject.name,
            results.cold_median(si),
            min,
            colds.len(),
            results.peak_rss(si) as f64 / 1024.0
        )?;
    }
    Ok(())
}

/// The targets for `name` against `base`. Returns whether all were met.
pub(crate) fn print_checks(
    out: &mut impl Write,
    opts: &Options,
    results: &Results,
    name: &str,
    base: &str,
) -> Result<bool> {
    let s = subject_index(opts, name)?;
    let b = subject_index(opts, base)?;
    let find = |size: usize, in_flight: Option<usize>| {
        opts.cases
            .iter()
            .position(|c| c.size == size && in_flight.is_none_or(|k| c.in_flight == k))
    };
    let mut all_met = true;
    let mut verdict = |out: &mut dyn Write, what: String, met: bool| -> Result<()> {
        all_met &= met;
        writeln!(out, "- {what}: {}", if met { "met" } else { "MISSED" })?;
        Ok(())
    };
    writeln!(out)?;
    writeln!(out, "Targets for {name} against {base}:")?;
    let targets = opts.targets;
    for (size, in_flight, want, label) in [
        (16, Some(1), 4.0, "16 B calls, one in flight"),
        (16, Some(64), 12.0, "16 B calls, 64 in flight"),
        (64 * 1024, None, 2.0, "64 KiB payloads"),
    ] {
        if let Some(ci) = find(size, in_flight).filter(|_| targets.throughput) {
            let ratio = results.summary(s, ci).calls_per_sec / results.summary(b, ci).calls_per_sec;
            verdict(
                out,
                format!("{label}: {ratio:.2}× {base} (target ≥ {want}×)"),
                ratio >= want,
            )?;
        }
    }
    if targets.rss {
        let (rss, base_rss) = (results.peak_rss(s), results.peak_rss(b));
        verdict(
            out,
            format!(
                "peak RSS: {:.1} MiB vs {base}'s {:.1} MiB (target ≤)",
                rss as f64 / 1024.0,
                base_rss as f64 / 1024.0
            ),
            rss <= base_rss,
        )?;
    }
    if targets.cold {
        let cold = results.cold_median(s);
        verdict(
            out,
            format!(
                "cold start to the first initialize response: median {cold:.2} ms (target ≤ 5 ms)"
            ),
            cold <= 5.0,
        )?;
    }
    Ok(all_met)
}
