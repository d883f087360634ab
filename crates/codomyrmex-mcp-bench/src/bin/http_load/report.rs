//! Reporting: each run as text or JSON, the markdown tables of the medians, and the `--check`
//! and `--idle-check` targets. It measures nothing.

use std::fmt::Write as _;
use std::io::Write as _;

use serde_json::{Value, json};

use crate::Result;
use crate::args::{Case, Options, Subject};
use crate::cases::Measured;
use crate::idle::{IdleReport, mib};

/// The throughput targets against the base (rmcp's stateless mode), for the 16 B
/// cases: at one connection, and at more.
const TARGET_RATIO_ONE: f64 = 1.6;
const TARGET_RATIO_MANY: f64 = 1.8;
/// The idle-sessions target: growth with every session alive.
const TARGET_IDLE_GROWTH_MIB: f64 = 50.0;

pub(crate) fn print_run(
    opts: &Options,
    round: usize,
    subject: &Subject,
    case: Case,
    m: &Measured,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        let record = json!({
            "round": round,
            "subject": subject.name,
            "era": subject.era.label(),
            "size": case.size,
            "connections": case.conns,
            "calls": case.calls,
            "calls_per_sec": m.calls_per_sec,
            "p50_us": m.p50_us,
            "p99_us": m.p99_us,
            "cpu_us_per_call": m.cpu_us_per_call,
            "client_cpu_us_per_call": m.client_cpu_us_per_call,
            "peak_rss_kib": m.peak_rss_kib,
            "errors": m.errors,
        });
        writeln!(out, "{record}")?;
    } else {
        writeln!(
            out,
            "round {round}  {:<20} {:<22} {:>9.0} calls/s  p50 {:>8.1} µs  p99 {:>8.1} µs  server cpu {:>7.2} µs/call  client cpu {:>6.2} µs/call  peak RSS {:>6.1} MiB  errors {}",
            subject.name,
            case.label(),
            m.calls_per_sec,
            m.p50_us,
            m.p99_us,
            m.cpu_us_per_call,
            m.client_cpu_us_per_call,
            mib(m.peak_rss_kib),
            m.errors,
        )?;
    }
    Ok(())
}

pub(crate) fn print_idle(opts: &Options, subject: &Subject, r: &IdleReport) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        let rounds: Vec<Value> = r
            .rounds
            .iter()
            .map(|x| {
                json!({
                    "sessions": x.opened,
                    "errors": x.errors,
                    "open_secs": x.open_secs,
                    "rss_alive_kib": x.rss_alive_kib,
                    "sessions_reported_alive": x.reported_alive,
                    "sessions_reported_after": x.reported_after,
                    "rss_after_kib": x.rss_after_kib,
                    "rss_settled_kib": x.rss_settled_kib,
                    "expiry_secs": x.expiry_secs,
                    "capped": x.capped,
                    "first_session_probe_status": x.first_probe,
                })
            })
            .collect();
        let record = json!({
            "subject": subject.name,
            "case": "idle_sessions",
            "rss_before_kib": r.rss_before_kib,
            "peak_rss_kib": r.peak_rss_kib,
            "has_health": r.has_health,
            "rounds": rounds,
        });
        writeln!(out, "{record}")?;
    } else {
        for (i, x) in r.rounds.iter().enumerate() {
            writeln!(
                out,
                "idle {:<20} round {}: {} sessions ({} errors{}) in {:.1} s; RSS {:.1} MiB before, {:.1} MiB alive (+{:.1} MiB, {:.1} KiB/session), {:.1} MiB after expiry ({:.1} s; first session then: {}){}",
                subject.name,
                i + 1,
                x.opened,
                x.errors,
                if x.capped { ", RSS cap reached" } else { "" },
                x.open_secs,
                mib(r.rss_before_kib),
                mib(x.rss_alive_kib),
                mib(x.rss_alive_kib.saturating_sub(r.rss_before_kib)),
                x.rss_alive_kib.saturating_sub(r.rss_before_kib) as f64 / (x.opened.max(1)) as f64,
                mib(x.rss_after_kib),
                x.expiry_secs,
                probe_label(x.first_probe),
                x.rss_settled_kib.map_or_else(String::new, |k| format!(
                    "; {:.1} MiB {} s later",
                    mib(k),
                    opts.idle_settle.as_secs()
                )),
            )?;
        }
    }
    Ok(())
}

fn subject_index(opts: &Options, name: &str) -> Result<usize> {
    opts.subjects
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("no subject named {name:?}").into())
}

pub(crate) fn print_markdown(
    out: &mut impl std::io::Write,
    opts: &Options,
    summary: &[Vec<Measured>],
) -> Result<()> {
    let rounds = if opts.rounds > 1 {
        format!(", median of {} rounds", opts.rounds)
    } else {
        String::new()
    };
    writeln!(out)?;
    let mut header = format!("| case | subject | era | calls/s{rounds} |");
    let mut rule = "|---|---|---|---:|".to_owned();
    for r in &opts.ratio_to {
        let _ = write!(header, " × {r} |");
        rule.push_str("---:|");
    }
    header.push_str(
        " p50 µs | p99 µs | server CPU µs/call | client CPU µs/call | peak RSS MiB | errors |",
    );
    rule.push_str("---:|---:|---:|---:|---:|---:|");
    writeln!(out, "{header}")?;
    writeln!(out, "{rule}")?;
    let bases: Vec<usize> = opts
        .ratio_to
        .iter()
        .map(|r| subject_index(opts, r))
        .collect::<Result<_>>()?;
    for (ci, case) in opts.cases.iter().enumerate() {
        for (si, subject) in opts.subjects.iter().enumerate() {
            let m = &summary[si][ci];
            let mut row = format!(
                "| {} | {} | {} | {:.0} |",
                case.label(),
                subject.name,
                subject.era.label(),
                m.calls_per_sec
            );
            for &b in &bases {
                let _ = write!(
                    row,
                    " {:.2}× |",
                    m.calls_per_sec / summary[b][ci].calls_per_sec
                );
            }
            let _ = write!(
                row,
                " {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                m.p50_us,
                m.p99_us,
                m.cpu_us_per_call,
                m.client_cpu_us_per_call,
                mib(m.peak_rss_kib),
                m.errors
            );
            writeln!(out, "{row}")?;
        }
    }
    Ok(())
}

pub(crate) fn print_idle_markdown(
    out: &mut impl std::io::Write,
    opts: &Options,
    reports: &[IdleReport],
) -> Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "| idle legacy sessions | round | sessions | RSS before MiB | RSS all alive MiB | growth MiB | KiB/session | RSS after expiry MiB | RSS {} s later MiB | sessions left | first session afterwards | expiry s |",
        opts.idle_settle.as_secs()
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
    )?;
    for (subject, r) in opts.idle.iter().zip(reports) {
        for (i, x) in r.rounds.iter().enumerate() {
            let growth = x.rss_alive_kib.saturating_sub(r.rss_before_kib);
            writeln!(
                out,
                "| {} | {} | {}{} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {:.1} |",
                subject.name,
                i + 1,
                x.opened,
                if x.capped { " (RSS cap)" } else { "" },
                mib(r.rss_before_kib),
                mib(x.rss_alive_kib),
                mib(growth),
                growth as f64 / x.opened.max(1) as f64,
                mib(x.rss_after_kib),
                x.rss_settled_kib
                    .map_or_else(|| "—".to_owned(), |k| format!("{:.1}", mib(k))),
                x.reported_after
                    .map_or_else(|| "n/a (no /health)".to_owned(), |n| n.to_string()),
                probe_label(x.first_probe),
                x.expiry_secs,
            )?;
        }
    }
    Ok(())
}

fn probe_label(status: Option<u16>) -> String {
    match status {
        Some(404) => "gone (404)".to_owned(),
        Some(s @ 200..=299) => format!("alive ({s})"),
        Some(s) => format!("HTTP {s}"),
        None => "?".to_owned(),
    }
}

pub(crate) fn print_checks(
    out: &mut impl std::io::Write,
    opts: &Options,
    summary: &[Vec<Measured>],
    name: &str,
    base: &str,
) -> Result<bool> {
    let s = subject_index(opts, name)?;
    let b = subject_index(opts, base)?;
    let mut met = true;
    for (ci, case) in opts.cases.iter().enumerate() {
        if case.size != 16 {
            continue;
        }
        let ratio = summary[s][ci].calls_per_sec / summary[b][ci].calls_per_sec;
        let target = if case.conns == 1 {
            TARGET_RATIO_ONE
        } else {
            TARGET_RATIO_MANY
        };
        let ok = ratio >= target;
        met &= ok;
        writeln!(
            out,
            "- {}: {name} {ratio:.2}× {base} (target ≥ {target}×): {}",
            case.label(),
            if ok { "met" } else { "MISSED" }
        )?;
    }
    Ok(met)
}

pub(crate) fn print_idle_check(
    out: &mut impl std::io::Write,
    opts: &Options,
    name: &str,
    r: &IdleReport,
) -> Result<bool> {
    let growth = mib(r.growth_kib());
    let all_opened = r
        .rounds
        .iter()
        .all(|x| x.opened == opts.idle_sessions as u64 && !x.capped);
    let growth_ok = all_opened && growth < TARGET_IDLE_GROWTH_MIB;
    writeln!(
        out,
        "- {} idle sessions: {name} grew {growth:.1} MiB with all alive (target < {TARGET_IDLE_GROWTH_MIB} MiB): {}",
        opts.idle_sessions,
        if growth_ok { "met" } else { "MISSED" }
    )?;
    // Reclaimed: every session expired (when the server reports them), and nothing
    // accumulated: after expiry, the last round's RSS is within 10% of a round's growth of the
    // first round's.
    let expired = r
        .rounds
        .iter()
        .all(|x| x.reported_after.is_none_or(|n| n == 0) && x.first_probe == Some(404));
    let first_after = r.rounds.first().map_or(0, |x| x.rss_after_kib);
    let last_after = r.rounds.last().map_or(0, |x| x.rss_after_kib);
    let drift = last_after.saturating_sub(first_after);
    let flat = r.rounds.len() < 2 || drift * 10 <= r.growth_kib().max(1024);
    // With a settle time: memory back near the start, within 8 MiB (allocator metadata and
    // part-used slabs; the library's fault test uses the same bound).
    let settled_ok = r.rounds.iter().all(|x| {
        x.rss_settled_kib
            .is_none_or(|k| k <= r.rss_before_kib + 8 * 1024)
    });
    let reclaimed = expired && flat && settled_ok;
    let settled = r
        .rounds
        .iter()
        .filter_map(|x| x.rss_settled_kib)
        .map(|k| format!("{:.1}", mib(k)))
        .collect::<Vec<_>>();
    let settled = if settled.is_empty() {
        String::new()
    } else {
        format!(
            "; RSS {} s after expiry {} MiB (start {:.1} MiB; allowed up to 8 MiB above it)",
            opts.idle_settle.as_secs(),
            settled.join(", "),
            mib(r.rss_before_kib)
        )
    };
    let detail = if r.rounds.len() >= 2 {
        format!(
            "; RSS after expiry {:.1} MiB in round 1, {:.1} MiB in round {}",
            mib(first_after),
            mib(last_after),
            r.rounds.len()
        )
    } else {
        format!("; RSS after expiry {:.1} MiB", mib(last_after))
    };
    writeln!(
        out,
        "- all reclaimed after idle expiry: {}{detail}{settled}: {}",
        if r.has_health {
            "sessions left per round ".to_owned()
                + &r.rounds
                    .iter()
                    .map(|x| x.reported_after.map_or("?".to_owned(), |n| n.to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
        } else {
            "no /health to count sessions".to_owned()
        } + &format!(
            "; first session of each round afterwards: {}",
            r.rounds
                .iter()
                .map(|x| probe_label(x.first_probe))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        if reclaimed { "met" } else { "MISSED" }
    )?;
    Ok(growth_ok && reclaimed)
}
