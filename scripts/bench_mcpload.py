#!/usr/bin/env python3
"""Subjects compared on the neutral load tool mcpload, interleaved, medians of rounds.

    python3 scripts/bench_mcpload.py --mcpload PATH \
        --subject now=target/release/examples/echo \
        --subject base=/tmp/echo-before \
        --subject rmcp=target/release/rmcp_echo,target/release/rmcp_http_echo \
        [--rounds 5] [--calls 20000] [--max-secs 3] [--load] [--cases stdio:1,stdio:64,http:1,http:64]
        [--reference rmcp] [--json out.json]

A subject is NAME=STDIO_BINARY[,HTTP_BINARY]; `-` for either leaves the subject out of that
transport's cases (rmcp's stdio server has no stateless mode to compare). The stdio command is `STDIO_BINARY --stdio`
(rmcp_echo takes the same flag). Over HTTP the command is `HTTP_BINARY --http 127.0.0.1:PORT`,
or, for a binary named `rmcp_http_echo`, `rmcp_http_echo --bind 127.0.0.1:PORT` (rmcp's
default session mode; add `--stateless` after the name, as in `rmcp_http_echo --stateless`,
for its stateless JSON mode). A fresh free port is picked for each run; mcpload spawns the
server, so its CPU per call, peak RSS and cold start are the server's alone.

Each round runs every case once for every subject, the subjects' order rotating each round, so
that a change in the machine's load falls on all subjects alike. The figures are the medians
over rounds of calls/s, the server's CPU µs per call and p99 latency. `--load` runs two
`yes > /dev/null` processes (one per core) for the whole run: the competing-CPU case.

Prints a markdown table per case, with each subject's ratio to the reference subject's calls/s.
Exits 1 when a run fails (mcpload verifies every answer).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import socket
import statistics
import subprocess
import sys
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(binary: str, transport: str, port: int) -> list[str]:
    parts = shlex.split(binary)
    if transport == "stdio":
        return parts + ["--stdio"]
    if Path(parts[0]).name == "rmcp_http_echo":
        return parts + ["--bind", f"127.0.0.1:{port}"]
    return parts + ["--http", f"127.0.0.1:{port}"]


def run(mcpload: str, transport: str, inflight: int, binary: str, calls: int, max_secs: float, label: str) -> dict:
    args = [mcpload, transport, "--n", str(calls), "--max-secs", str(max_secs), "--inflight", str(inflight),
            "--warmup", "500", "--size", "16", "--label", label, "--timeout", "120"]
    port = free_port()
    if transport == "http":
        args += ["--url", f"http://127.0.0.1:{port}/mcp"]
    args += ["--"] + command(binary, transport, port)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, capture_output=True, text=True, timeout=180)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
    result = json.loads(line)
    if done.returncode != 0 or "fail" in result or result.get("errors"):
        raise SystemExit(f"{label} {transport}:{inflight} failed: {line} {done.stderr[-500:]}")
    # mcpload's own CPU per measured call, an upper bound: everything mcpload and the server it
    # waited for used over the whole run (start-up and warm-up included), less the server's
    # CPU over the measured calls that mcpload reports.
    children_ms = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e3
    result["client_us_per_call"] = (children_ms - float(result["cpu_ms"])) * 1e3 / max(int(result["calls"]), 1)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mcpload", required=True)
    p.add_argument("--subject", action="append", required=True, help="NAME=STDIO_BINARY[,HTTP_BINARY]")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--max-secs", type=float, default=3.0)
    p.add_argument("--cases", default="stdio:1,stdio:64,http:1,http:64")
    p.add_argument("--reference", action="append", default=None,
                   help="a subject the ratios are to (repeatable; default: the last subject)")
    p.add_argument("--load", action="store_true", help="two `yes` processes compete for the CPUs")
    p.add_argument("--json", default=None)
    a = p.parse_args()

    subjects: list[tuple[str, str, str]] = []
    for s in a.subject:
        name, _, bins = s.partition("=")
        stdio_bin, _, http_bin = bins.partition(",")
        subjects.append((name, stdio_bin, http_bin or stdio_bin))
    references = a.reference or [subjects[-1][0]]
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in a.cases.split(",")]

    burners = []
    if a.load:
        burners = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(os.cpu_count() or 2)]
    results: dict[tuple[str, int, str], list[dict]] = {}
    try:
        for r in range(a.rounds):
            for transport, inflight in cases:
                order = subjects[r % len(subjects):] + subjects[: r % len(subjects)]
                for name, stdio_bin, http_bin in order:
                    binary = stdio_bin if transport == "stdio" else http_bin
                    if binary == "-":
                        continue
                    out = run(a.mcpload, transport, inflight, binary, a.calls, a.max_secs, name)
                    results.setdefault((transport, inflight, name), []).append(out)
                    print(f"round {r + 1} {transport}:{inflight} {name}: {out['cps']:.0f} calls/s, "
                          f"{out['cpu_us_per_call']} µs CPU/call, p99 {out['p99_us']} µs", file=sys.stderr)
    finally:
        for b in burners:
            b.kill()
            b.wait()

    def med(key: str, runs: list[dict]) -> float:
        return statistics.median(float(x[key]) for x in runs)

    print(f"competing load: {'two `yes` processes' if a.load else 'none'}; rounds: {a.rounds}; "
          f"calls per run: {a.calls} (at most {a.max_secs} s); medians")
    for transport, inflight in cases:
        present = [n for n, _, _ in subjects if (transport, inflight, n) in results]
        refs = [r for r in references if r in present]
        ref_cps = {r: med("cps", results[(transport, inflight, r)]) for r in refs}
        print(f"\n{transport}, 16 B, {inflight} {'in flight' if transport == 'stdio' else 'connection(s)'}\n")
        print("| subject | calls/s | server CPU µs/call | mcpload CPU µs/call (≤) | p99 µs |"
              + "".join(f" × {r} |" for r in refs))
        print("|---|---:|---:|---:|---:|" + "---:|" * len(refs))
        for name in present:
            runs = results[(transport, inflight, name)]
            cps = med("cps", runs)
            print(f"| {name} | {cps:.0f} | {med('cpu_us_per_call', runs):.1f} | "
                  f"{med('client_us_per_call', runs):.1f} | {med('p99_us', runs):.0f} |"
                  + "".join(f" {cps / ref_cps[r]:.2f} |" for r in refs))
    if a.json:
        Path(a.json).write_text(json.dumps({f"{t}:{i}:{n}": v for (t, i, n), v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
