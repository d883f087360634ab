//! Whole-process stdio round trips against any MCP server command.
//!
//! ```text
//! stdio_load [OPTIONS] -- COMMAND [ARGS...]
//! ```
//!
//! For each case it spawns the server, performs the legacy handshake (`initialize` at
//! `2025-11-25`, then `notifications/initialized`), runs warm-up calls, then runs the measured
//! `tools/call` calls of the `echo` tool with a payload of the case's size, either one in flight
//! (write, wait for the answer, repeat) or pipelined (up to K in flight). It reports calls/s,
//! mean/p50/p99 latency, the server's CPU time per call (utime+stime from `/proc/PID/stat`,
//! read before and after the measured calls), its peak RSS (`VmHWM` from `/proc/PID/status`)
//! and the cold start: the time from spawn to the first `initialize` response, measured on
//! every spawn (the case's own and `--cold-starts` extra ones) and summarised as a median.
//!
//! Every warm-up answer and a sample of measured answers are checked in full (the echoed text
//! must come back as the single text block, or as `codomyrmex_mcp`'s `{"result": text}`:
//! `util::echoes`); every measured answer must carry a known id.
//!
//! One subject is given after `--`; several with `--subject NAME=COMMAND` (the command is split
//! on whitespace). With several subjects and `--rounds R`, every round runs every case on every
//! subject in turn, and the figures reported are each subject's median over the rounds, so that
//! ratios between subjects come from the same run under the same conditions.
//!
//! Options:
//!   --name NAME             label for the subject given after `--` (default: its file name)
//!   --subject NAME=COMMAND  a subject; repeatable
//!   --case SIZE:K[:N]       a case: payload SIZE (bytes, or with K/KiB), K in flight, N calls;
//!                           repeatable (default: 16:1, 16:64, 64KiB:1)
//!   --size SIZE             with --in-flight: a single case (instead of --case)
//!   --in-flight K           calls in flight for --size (default 1)
//!   --calls N               measured calls for cases that do not give N (default 20000)
//!   --warmup W              warm-up calls per case (default 2000, at most N)
//!   --cold-starts R         extra spawns per subject that only measure the cold start (default 5)
//!   --rounds R              run everything R times, interleaved; report medians (default 1)
//!   --timeout SECS          give up on a case after this long (default 120)
//!   --show-stderr           let the servers' stderr through (default: discarded)
//!   --json                  print one JSON object per line instead of text
//!   --markdown              also print a markdown table of the medians
//!   --ratio-to NAME         add a column: calls/s as a multiple of subject NAME's; repeatable
//!   --check SUBJECT=BASE    check SUBJECT against the issue's targets relative to BASE
//!                           (exit status 3 when one is missed)
//!   --targets LIST          which targets --check checks: any of throughput, rss, cold,
//!                           comma-separated (default: all three)
//!
//! The code: `args` (the command line), `server` (the process under test and its handshake),
//! `calls` (requests, answers and the call loops), `cases` (one measured case, the cold start)
//! and `report` (printing and the targets). This file only runs the cases, rounds and checks in
//! order.

mod args;
mod calls;
mod cases;
mod report;
mod server;

use std::io::Write as _;

use codomyrmex_mcp_bench::procfs::clock_ticks_per_second;
use serde_json::json;

use args::parse_args;
use cases::{cold_start, run_case};
use report::{Results, print_case, print_checks, print_markdown};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(3),
        Err(e) => {
            eprintln!("stdio_load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let opts = parse_args()?;
    let ticks = clock_ticks_per_second();
    let mut results = Results {
        runs: vec![vec![Vec::new(); opts.cases.len()]; opts.subjects.len()],
        colds: vec![Vec::new(); opts.subjects.len()],
    };
    let mut stdout = std::io::stdout().lock();
    for round in 1..=opts.rounds {
        for (si, subject) in opts.subjects.iter().enumerate() {
            for _ in 0..opts.cold_starts {
                results.colds[si].push(cold_start(&opts, subject)?.as_secs_f64() * 1e3);
            }
        }
        for (ci, &case) in opts.cases.iter().enumerate() {
            for (si, subject) in opts.subjects.iter().enumerate() {
                let m = run_case(&opts, subject, case, ticks)?;
                results.colds[si].push(m.cold_start_ms);
                results.runs[si][ci].push(m);
                print_case(&mut stdout, &opts, round, subject, case, &m)?;
            }
        }
    }
    for (si, subject) in opts.subjects.iter().enumerate() {
        let colds = &results.colds[si];
        let min = colds.iter().copied().fold(f64::INFINITY, f64::min);
        let median = results.cold_median(si);
        if opts.json {
            let record = json!({
                "subject": subject.name,
                "case": "cold_start",
                "spawns": colds.len(),
                "cold_start_median_ms": median,
                "cold_start_min_ms": min,
            });
            writeln!(stdout, "{record}")?;
        } else {
            writeln!(
                stdout,
                "{:<12} cold start to the first initialize response: median {median:.2} ms, min {min:.2} ms over {} spawns",
                subject.name,
                colds.len()
            )?;
        }
    }
    if opts.markdown {
        print_markdown(&mut stdout, &opts, &results)?;
    }
    let mut all_met = true;
    for (name, base) in &opts.checks {
        all_met &= print_checks(&mut stdout, &opts, &results, name, base)?;
    }
    Ok(all_met)
}
