//! Whole-process Streamable HTTP load against any MCP server command.
//!
//! ```text
//! http_load [OPTIONS] --subject NAME:ERA=COMMAND ... [--case SIZE:CONNS[:N]]...
//! http_load [OPTIONS] --idle NAME=COMMAND ... [--idle-sessions N]
//! ```
//!
//! **Load cases.** For each case and subject it starts the server (a fresh process), opens
//! CONNS keep-alive HTTP/1.1 connections (`TCP_NODELAY`, a minimal hand-rolled client on
//! tokio), runs warm-up calls, then N measured `tools/call` calls of the `echo` tool with a
//! SIZE-byte text, split evenly over the connections, each connection one call at a time.
//! It reports calls/s, p50/p99 latency, the server's CPU per call (utime+stime from
//! `/proc/PID/stat` around the measured calls), the client's CPU per call, the server's peak
//! RSS (`VmHWM`) and the error count.
//!
//! A subject's ERA says how it is spoken to:
//!
//! - `modern`: 2026-07-28, stateless. Every call is a POST with `MCP-Protocol-Version:
//!   2026-07-28`, `Mcp-Method: tools/call`, `Mcp-Name: echo`, and `_meta` carrying
//!   `io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`.
//! - `legacy`: 2025-11-25. Each connection sends `initialize`, takes the `Mcp-Session-Id`,
//!   sends `notifications/initialized`, then calls with the session and
//!   `MCP-Protocol-Version: 2025-11-25` headers.
//! - `plain`: a bare `tools/call` POST with no MCP headers, no `_meta` and no session (what a
//!   stateless server without per-request negotiation, such as rmcp's stateless mode, takes).
//!
//! Every request accepts `application/json, text/event-stream`; answers may be JSON or SSE
//! (the JSON-RPC response in a `data:` line), with a `Content-Length` or chunked. Every answer
//! is checked: status 200, the call's id, and the call's own text (unique per call) echoed
//! back as a text block (or as `codomyrmex_mcp`'s `{"result": text}`: `util::echoes`); every
//! warm-up answer and every 97th measured one are parsed in full.
//! A failed check counts as an error; the exit status is 1 when any call failed.
//!
//! **Idle sessions** (`--idle NAME=COMMAND`). Starts the server, opens `--idle-sessions`
//! legacy sessions (`initialize` only, over `--idle-connections` keep-alive connections, each
//! from its own loopback address 127.0.0.2, 127.0.0.3, ... as that many clients would be, so a
//! per-client rate limit does not throttle the run), then leaves them idle. It reports the
//! server's RSS before, with all sessions alive, and after idle expiry: when the server has a
//! `/health` that reports `sessions` (codomyrmex-mcp does), it polls until that count is 0,
//! otherwise it waits `--idle-wait` seconds. `--idle-rounds R` repeats open-and-expire on the
//! same process, to show that nothing accumulates. After each wait, a `ping` on the round's
//! first session shows whether the server forgot it (404). `--idle-max-rss MIB` stops opening sessions
//! once the server grows past that, so a hungry subject cannot exhaust the machine.
//!
//! **Commands.** A command is split on whitespace. `{port}` in it is replaced by a free
//! loopback port (and the server is awaited until it accepts connections); without `{port}`
//! the server must print `LISTENING HOST:PORT` on stdout. Servers are killed when done.
//! `@HOST:PORT` instead of a command names a server that is already running (to profile it);
//! its CPU and RSS figures are then meaningless.
//!
//! Options:
//!   --subject NAME:ERA=COMMAND  a load subject; ERA is modern, legacy or plain; repeatable
//!   --case SIZE:CONNS[:N]       payload SIZE (bytes, or with K/KiB), CONNS connections, N
//!                               measured calls in all; repeatable (default 16:1, 16:64)
//!   --calls N                   measured calls for cases that do not give N (default 20000)
//!   --warmup W                  warm-up calls per case, over all connections (default 2000)
//!   --rounds R                  run everything R times, interleaved; report medians (default 1)
//!   --client-threads T          the client's tokio worker threads (default 1)
//!   --timeout SECS              give up on a case after this long (default 120)
//!   --idle NAME=COMMAND         an idle-sessions subject; repeatable
//!   --idle-sessions N           sessions to open (default 10000)
//!   --idle-connections C        connections (and client addresses) to open them over (default 64)
//!   --idle-wait SECS            the longest wait for idle expiry (default 120)
//!   --idle-settle SECS          after expiry, wait this long and read RSS again (default 0):
//!                               an allocator may return freed pages over some seconds
//!   --idle-rounds R             open-and-expire rounds per idle subject (default 1)
//!   --idle-max-rss MIB          stop opening sessions past this server RSS (default 2048)
//!   --show-stderr               let the servers' stderr through (default: discarded)
//!   --json                      print one JSON object per line instead of text
//!   --markdown                  also print markdown tables of the medians
//!   --ratio-to NAME             add a column: calls/s as a multiple of NAME's; repeatable
//!   --check SUBJECT=BASE        check SUBJECT against BASE: at least 1.6x (one connection), 1.8x (more) its calls/s on the
//!                               16 B cases (exit status 3 when missed); repeatable
//!   --idle-check NAME           check NAME's idle case: under 50 MiB growth with every
//!                               session alive; afterwards no session left (`/health`), the
//!                               round's first session gone (404), RSS not accumulating over
//!                               rounds
//!
//! The code: `args` (the command line), `server` (the process under test), `client` (the
//! HTTP/1.1 client), `calls` (sessions and the call loop), `cases` (one measured load case),
//! `idle` (the idle-sessions case) and `report` (printing and the targets). This file only
//! builds the runtime and runs the cases, rounds and checks in order.

mod args;
mod calls;
mod cases;
mod client;
mod idle;
mod report;
mod server;

use std::io::Write as _;
use std::process::ExitCode;

use codomyrmex_mcp_bench::procfs;

use args::{Options, parse_args};
use cases::{Measured, run_case, summarise};
use idle::run_idle;
use report::{
    print_checks, print_idle, print_idle_check, print_idle_markdown, print_markdown, print_run,
};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("http_load: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = if opts.client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.client_threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("http_load: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&opts)) {
        Ok(Outcome {
            errors: 0,
            met: true,
        }) => ExitCode::SUCCESS,
        Ok(Outcome { errors: 0, .. }) => ExitCode::from(3),
        Ok(Outcome { errors, .. }) => {
            eprintln!("http_load: {errors} calls failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("http_load: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Outcome {
    errors: u64,
    met: bool,
}

async fn run(opts: &Options) -> Result<Outcome> {
    let ticks = procfs::clock_ticks_per_second();
    // runs[subject][case]: one entry per round.
    let mut runs = vec![vec![Vec::new(); opts.cases.len()]; opts.subjects.len()];
    let mut errors = 0;
    for round in 1..=opts.rounds {
        for (ci, &case) in opts.cases.iter().enumerate() {
            for (si, subject) in opts.subjects.iter().enumerate() {
                let m = run_case(opts, subject, case, ticks).await?;
                errors += m.errors;
                print_run(opts, round, subject, case, &m)?;
                runs[si][ci].push(m);
            }
        }
    }
    let mut idle = Vec::new();
    for subject in &opts.idle {
        let report = run_idle(opts, subject).await?;
        errors += report.rounds.iter().map(|r| r.errors).sum::<u64>();
        print_idle(opts, subject, &report)?;
        idle.push(report);
    }
    let summary: Vec<Vec<Measured>> = runs
        .iter()
        .map(|cases| cases.iter().map(|r| summarise(r)).collect())
        .collect();
    let mut out = std::io::stdout().lock();
    if opts.markdown {
        if !opts.subjects.is_empty() {
            print_markdown(&mut out, opts, &summary)?;
        }
        if !opts.idle.is_empty() {
            print_idle_markdown(&mut out, opts, &idle)?;
        }
    }
    let mut met = true;
    if !opts.checks.is_empty() || !opts.idle_checks.is_empty() {
        writeln!(out)?;
        writeln!(out, "Targets:")?;
    }
    for (name, base) in &opts.checks {
        met &= print_checks(&mut out, opts, &summary, name, base)?;
    }
    for name in &opts.idle_checks {
        let i = opts
            .idle
            .iter()
            .position(|s| &s.name == name)
            .ok_or("no idle subject")?;
        met &= print_idle_check(&mut out, opts, name, &idle[i])?;
    }
    if errors > 0 {
        writeln!(out)?;
        writeln!(out, "ERRORS: {errors} calls failed (details on stderr)")?;
    }
    Ok(Outcome { errors, met })
}
