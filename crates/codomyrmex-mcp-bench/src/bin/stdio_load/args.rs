//! The command line of `stdio_load`: the options, the subjects, the cases and which targets
//! `--check` checks, parsed from the arguments. It only parses; it starts nothing.

use std::time::Duration;

use codomyrmex_mcp_bench::util::parse_size;

use crate::Result;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Case {
    pub(crate) size: usize,
    pub(crate) in_flight: usize,
    pub(crate) calls: usize,
}

impl Case {
    pub(crate) fn label(&self) -> String {
        format!("{} x{}", size_label(self.size), self.in_flight)
    }
}

pub(crate) fn size_label(size: usize) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{}KiB", size / 1024)
    } else {
        format!("{size}B")
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Subject {
    pub(crate) name: String,
    pub(crate) command: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) subjects: Vec<Subject>,
    pub(crate) cases: Vec<Case>,
    pub(crate) warmup: usize,
    pub(crate) cold_starts: usize,
    pub(crate) rounds: usize,
    pub(crate) timeout: Duration,
    pub(crate) show_stderr: bool,
    pub(crate) json: bool,
    pub(crate) markdown: bool,
    pub(crate) ratio_to: Vec<String>,
    pub(crate) checks: Vec<(String, String)>,
    pub(crate) targets: Targets,
}

const USAGE: &str = "usage: stdio_load [--subject NAME=COMMAND]... [--case SIZE:K[:N]]... \
[--size SIZE --in-flight K] [--calls N] [--warmup W] [--cold-starts R] [--rounds R] [--timeout SECS] \
[--show-stderr] [--json] [--markdown] [--ratio-to NAME]... [--check SUBJECT=BASE]... [--targets LIST] \
[--name NAME] [-- COMMAND [ARGS...]]";

fn split_pair(s: &str, what: &str) -> Result<(String, String)> {
    let (a, b) = s
        .split_once('=')
        .ok_or_else(|| format!("{what} wants NAME=VALUE, got {s:?}"))?;
    Ok((a.trim().to_owned(), b.trim().to_owned()))
}

pub(crate) fn parse_args() -> Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut name = None;
    let mut subjects = Vec::new();
    let mut case_specs = Vec::new();
    let mut size = None;
    let mut in_flight = 1;
    let mut calls = 20_000;
    let mut warmup = 2_000;
    let mut cold_starts = 5;
    let mut rounds = 1;
    let mut timeout = 120;
    let mut show_stderr = false;
    let mut json = false;
    let mut markdown = false;
    let mut ratio_to = Vec::new();
    let mut checks = Vec::new();
    let mut targets = Targets::ALL;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--name" => name = Some(value()?),
            "--subject" => {
                let (n, cmd) = split_pair(&value()?, "--subject")?;
                let command: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
                if command.is_empty() {
                    return Err(format!("--subject {n}: no command").into());
                }
                subjects.push(Subject { name: n, command });
            }
            "--case" => case_specs.push(value()?),
            "--size" => size = Some(parse_size(&value()?)?),
            "--in-flight" => in_flight = value()?.parse()?,
            "--calls" => calls = value()?.parse()?,
            "--warmup" => warmup = value()?.parse()?,
            "--cold-starts" => cold_starts = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--timeout" => timeout = value()?.parse()?,
            "--show-stderr" => show_stderr = true,
            "--json" => json = true,
            "--markdown" => markdown = true,
            "--ratio-to" => ratio_to.push(value()?),
            "--check" => checks.push(split_pair(&value()?, "--check")?),
            "--targets" => targets = Targets::parse(&value()?)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--" => {
                command.extend(args.by_ref());
                break;
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if !command.is_empty() {
        let name = name.unwrap_or_else(|| {
            std::path::Path::new(&command[0])
                .file_name()
                .map_or_else(|| command[0].clone(), |n| n.to_string_lossy().into_owned())
        });
        subjects.push(Subject { name, command });
    }
    if subjects.is_empty() {
        return Err(format!("no server command given\n{USAGE}").into());
    }
    for wanted in ratio_to
        .iter()
        .chain(checks.iter().flat_map(|(a, b)| [a, b]))
    {
        if !subjects.iter().any(|s| &s.name == wanted) {
            return Err(format!("no subject named {wanted:?}").into());
        }
    }
    let mut cases = Vec::new();
    if let Some(size) = size {
        cases.push(Case {
            size,
            in_flight,
            calls,
        });
    }
    for spec in &case_specs {
        let parts: Vec<&str> = spec.split(':').collect();
        let case = match parts.as_slice() {
            [s, k] => Case {
                size: parse_size(s)?,
                in_flight: k.parse()?,
                calls,
            },
            [s, k, n] => Case {
                size: parse_size(s)?,
                in_flight: k.parse()?,
                calls: n.parse()?,
            },
            _ => return Err(format!("bad --case {spec:?}: want SIZE:K[:N]").into()),
        };
        cases.push(case);
    }
    if cases.is_empty() {
        for (size, in_flight) in [(16, 1), (16, 64), (64 * 1024, 1)] {
            cases.push(Case {
                size,
                in_flight,
                calls,
            });
        }
    }
    if cases.iter().any(|c| c.in_flight == 0 || c.calls == 0) || rounds == 0 {
        return Err("in-flight, calls and rounds must be at least 1".into());
    }
    Ok(Options {
        subjects,
        cases,
        warmup,
        cold_starts,
        rounds,
        timeout: Duration::from_secs(timeout),
        show_stderr,
        json,
        markdown,
        ratio_to,
        checks,
        targets,
    })
}

/// Which of the targets `--check` checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Targets {
    pub(crate) throughput: bool,
    pub(crate) rss: bool,
    pub(crate) cold: bool,
}

impl Targets {
    const ALL: Self = Self {
        throughput: true,
        rss: true,
        cold: true,
    };

    pub(crate) fn parse(list: &str) -> Result<Self> {
        let mut t = Self {
            throughput: false,
            rss: false,
            cold: false,
        };
        for item in list.split(',').map(str::trim) {
            match item {
                "throughput" => t.throughput = true,
                "rss" => t.rss = true,
                "cold" => t.cold = true,
                other => {
                    return Err(format!(
                        "--targets: {other:?} is not one of throughput, rss, cold"
                    )
                    .into());
                }
            }
        }
        Ok(t)
    }
}
