//! The command line of `http_load`: the options, the subjects (name, era, command) and the
//! load cases, parsed from the arguments. It only parses; it starts nothing.

use std::time::Duration;

use codomyrmex_mcp_bench::util::parse_size;

use crate::Result;

pub(crate) const MODERN: &str = "2026-07-28";
pub(crate) const LEGACY: &str = "2025-11-25";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    Modern,
    Legacy,
    Plain,
}

impl Era {
    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "modern" | MODERN => Ok(Self::Modern),
            "legacy" | LEGACY => Ok(Self::Legacy),
            "plain" => Ok(Self::Plain),
            other => Err(format!("unknown era {other:?}: want modern, legacy or plain").into()),
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::Modern => MODERN,
            Self::Legacy => LEGACY,
            Self::Plain => "plain",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) name: String,
    pub(crate) era: Era,
    pub(crate) command: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Case {
    pub(crate) size: usize,
    pub(crate) conns: usize,
    pub(crate) calls: usize,
}

impl Case {
    pub(crate) fn label(&self) -> String {
        let conns = if self.conns == 1 {
            "1 connection".to_owned()
        } else {
            format!("{} connections", self.conns)
        };
        format!("{}, {conns}", size_label(self.size))
    }
}

fn size_label(size: usize) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) subjects: Vec<Subject>,
    pub(crate) cases: Vec<Case>,
    pub(crate) warmup: usize,
    pub(crate) rounds: usize,
    pub(crate) client_threads: usize,
    pub(crate) timeout: Duration,
    pub(crate) idle: Vec<Subject>,
    pub(crate) idle_sessions: usize,
    pub(crate) idle_connections: usize,
    pub(crate) idle_wait: Duration,
    pub(crate) idle_settle: Duration,
    pub(crate) idle_rounds: usize,
    pub(crate) idle_max_rss_kib: u64,
    pub(crate) show_stderr: bool,
    pub(crate) json: bool,
    pub(crate) markdown: bool,
    pub(crate) ratio_to: Vec<String>,
    pub(crate) checks: Vec<(String, String)>,
    pub(crate) idle_checks: Vec<String>,
}

const USAGE: &str = "usage: http_load [--subject NAME:ERA=COMMAND]... [--case SIZE:CONNS[:N]]... \
[--calls N] [--warmup W] [--rounds R] [--client-threads T] [--timeout SECS] \
[--idle NAME=COMMAND]... [--idle-sessions N] [--idle-connections C] [--idle-wait SECS] [--idle-settle SECS] \
[--idle-rounds R] [--idle-max-rss MIB] [--show-stderr] [--json] [--markdown] \
[--ratio-to NAME]... [--check SUBJECT=BASE]... [--idle-check NAME]...
ERA: modern (2026-07-28), legacy (2025-11-25) or plain; `{port}` in COMMAND is replaced by a free port";

fn split_pair<'a>(s: &'a str, what: &str) -> Result<(&'a str, &'a str)> {
    let (a, b) = s
        .split_once('=')
        .ok_or_else(|| format!("{what} wants NAME=VALUE, got {s:?}"))?;
    Ok((a.trim(), b.trim()))
}

fn words(command: &str, name: &str) -> Result<Vec<String>> {
    let command: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    if command.is_empty() {
        return Err(format!("subject {name}: no command").into());
    }
    Ok(command)
}

pub(crate) fn parse_args() -> Result<Options> {
    let mut o = Options {
        subjects: Vec::new(),
        cases: Vec::new(),
        warmup: 2000,
        rounds: 1,
        client_threads: 1,
        timeout: Duration::from_secs(120),
        idle: Vec::new(),
        idle_sessions: 10_000,
        idle_connections: 64,
        idle_wait: Duration::from_secs(120),
        idle_settle: Duration::ZERO,
        idle_rounds: 1,
        idle_max_rss_kib: 2048 * 1024,
        show_stderr: false,
        json: false,
        markdown: false,
        ratio_to: Vec::new(),
        checks: Vec::new(),
        idle_checks: Vec::new(),
    };
    let mut calls = 20_000;
    let mut case_specs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--subject" => {
                let v = value()?;
                let (label, cmd) = split_pair(&v, "--subject")?;
                let (name, era) = label
                    .split_once(':')
                    .ok_or_else(|| format!("--subject wants NAME:ERA=COMMAND, got {v:?}"))?;
                o.subjects.push(Subject {
                    name: name.to_owned(),
                    era: Era::parse(era)?,
                    command: words(cmd, name)?,
                });
            }
            "--idle" => {
                let v = value()?;
                let (name, cmd) = split_pair(&v, "--idle")?;
                o.idle.push(Subject {
                    name: name.to_owned(),
                    era: Era::Legacy,
                    command: words(cmd, name)?,
                });
            }
            "--case" => case_specs.push(value()?),
            "--calls" => calls = value()?.parse()?,
            "--warmup" => o.warmup = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--client-threads" => o.client_threads = value()?.parse()?,
            "--timeout" => o.timeout = Duration::from_secs(value()?.parse()?),
            "--idle-sessions" => o.idle_sessions = value()?.parse()?,
            "--idle-connections" => o.idle_connections = value()?.parse()?,
            "--idle-wait" => o.idle_wait = Duration::from_secs(value()?.parse()?),
            "--idle-settle" => o.idle_settle = Duration::from_secs(value()?.parse()?),
            "--idle-rounds" => o.idle_rounds = value()?.parse()?,
            "--idle-max-rss" => o.idle_max_rss_kib = value()?.parse::<u64>()? * 1024,
            "--show-stderr" => o.show_stderr = true,
            "--json" => o.json = true,
            "--markdown" => o.markdown = true,
            "--ratio-to" => o.ratio_to.push(value()?),
            "--check" => {
                let v = value()?;
                let (a, b) = split_pair(&v, "--check")?;
                o.checks.push((a.to_owned(), b.to_owned()));
            }
            "--idle-check" => o.idle_checks.push(value()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    for spec in &case_specs {
        let parts: Vec<&str> = spec.split(':').collect();
        let case = match parts.as_slice() {
            [s, c] => Case {
                size: parse_size(s)?,
                conns: c.parse()?,
                calls,
            },
            [s, c, n] => Case {
                size: parse_size(s)?,
                conns: c.parse()?,
                calls: n.parse()?,
            },
            _ => return Err(format!("bad --case {spec:?}: want SIZE:CONNS[:N]").into()),
        };
        o.cases.push(case);
    }
    if o.cases.is_empty() && !o.subjects.is_empty() {
        for conns in [1, 64] {
            o.cases.push(Case {
                size: 16,
                conns,
                calls,
            });
        }
    }
    if o.subjects.is_empty() && o.idle.is_empty() {
        return Err(format!("no subject given\n{USAGE}").into());
    }
    if o.cases
        .iter()
        .any(|c| c.conns == 0 || c.calls < c.conns || c.size == 0)
        || o.rounds == 0
        || o.client_threads == 0
        || o.idle_connections == 0
        || o.idle_rounds == 0
    {
        return Err("sizes, connections, rounds and threads must be at least 1, and calls at least the connections".into());
    }
    for wanted in o
        .ratio_to
        .iter()
        .chain(o.checks.iter().flat_map(|(a, b)| [a, b]))
    {
        if !o.subjects.iter().any(|s| &s.name == wanted) {
            return Err(format!("no load subject named {wanted:?}").into());
        }
    }
    for wanted in &o.idle_checks {
        if !o.idle.iter().any(|s| &s.name == wanted) {
            return Err(format!("no idle subject named {wanted:?}").into());
        }
    }
    Ok(o)
}
