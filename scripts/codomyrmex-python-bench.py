#!/usr/bin/env python3
"""Issue #28 item 6 on the neutral load generator: `codomyrmex_mcp` against the official
Python SDK, the same `echo(text) -> str` tool
(crates/codomyrmex-mcp-py/bench/echo_server.py and echo_server_sdk.py), driven by
`mcpload` (it checks every answer's text) over stdio and Streamable HTTP.

For each load condition (none, then `--burners` processes running `yes >/dev/null`), it runs
`--rounds` interleaved rounds (ours, theirs, theirs, ours, ...), a fresh server process per
run, and prints each subject's median calls/s and server CPU µs per call (mcpload's
`/proc` reading of the server process), the ratios, and the machine's load average before
and after. Compatibility mode cannot be driven by mcpload (its text is `{"result": ...}`,
not the text sent): `bench_vs_sdk.py --compat` measures it.

    cargo build --release --manifest-path PATH/TO/mcpload/Cargo.toml --target-dir /tmp/mcpload -j 2
    (cd crates/codomyrmex-mcp-py && maturin develop --release)   # the extension, release build
    python scripts/codomyrmex-python-bench.py --mcpload /tmp/mcpload/release/mcpload [--rounds 5] [--json out.json]

The Python that runs it needs `codomyrmex_mcp` and `mcp` (2.x). Linux only. A measurement,
not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

BENCH = Path(__file__).resolve().parents[1] / "crates" / "codomyrmex-mcp-py" / "bench"
SERVERS = {"ours": BENCH / "echo_server.py", "theirs": BENCH / "echo_server_sdk.py"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_once(args: argparse.Namespace, subject: str, transport: str) -> Dict[str, Any]:
    server = [args.python, str(SERVERS[subject]), transport]
    common = ["--n", str(args.calls), "--max-secs", str(args.max_secs), "--warmup", str(args.warmup)]
    common += ["--inflight", str(args.inflight), "--label", subject]
    if transport == "stdio":
        command = [args.mcpload, "stdio", *common, "--", *server]
    else:
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        command = [args.mcpload, "http", "--url", url, *common, "--", *server, str(port)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.max_secs + 120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{subject} {transport}: mcpload failed: {done.stdout[-500:]} {done.stderr[-500:]}")
    result: Dict[str, Any] = json.loads(lines[-1])
    if result.get("errors"):
        raise RuntimeError(f"{subject} {transport}: {result['errors']} answers failed mcpload's check")
    return result


def condition(args: argparse.Namespace, burners: int) -> Dict[str, Any]:
    """`--rounds` interleaved rounds with `burners` CPU burners running."""
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(burners)]
    try:
        before = loadavg()
        runs: Dict[str, List[Dict[str, Any]]] = {}
        for r in range(args.rounds):
            order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
            for transport in ("stdio", "http"):
                for subject in order:
                    result = run_once(args, subject, transport)
                    runs.setdefault(f"{transport}.{subject}", []).append(result)
                    print(
                        f"  burners={burners} round {r + 1} {transport:<5} {subject:<6} "
                        f"{result['cps']:>9.1f} calls/s {result['cpu_us_per_call']:>8.1f} µs CPU/call",
                        flush=True,
                    )
        after = loadavg()
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    medians = {
        key: {
            "calls_per_s": statistics.median(r["cps"] for r in results),
            "cpu_us_per_call": statistics.median(r["cpu_us_per_call"] for r in results),
            "rounds": len(results),
        }
        for key, results in runs.items()
    }
    return {"burners": burners, "loadavg_before": before, "loadavg_after": after, "medians": medians, "runs": runs}


def report(results: List[Dict[str, Any]]) -> None:
    for cond in results:
        print(
            f"\n{cond['burners']} CPU burners; load average before {cond['loadavg_before']}, "
            f"after {cond['loadavg_after']} (medians of {cond['medians']['stdio.ours']['rounds']} rounds)"
        )
        print(f"{'':<8} {'ours calls/s':>13} {'µs/call':>9} {'SDK calls/s':>13} {'µs/call':>9} {'ratio':>7}")
        for transport in ("stdio", "http"):
            ours, theirs = cond["medians"][f"{transport}.ours"], cond["medians"][f"{transport}.theirs"]
            ratio = ours["calls_per_s"] / theirs["calls_per_s"] if theirs["calls_per_s"] else float("inf")
            print(
                f"{transport:<8} {ours['calls_per_s']:>13.1f} {ours['cpu_us_per_call']:>9.1f} "
                f"{theirs['calls_per_s']:>13.1f} {theirs['cpu_us_per_call']:>9.1f} {ratio:>6.1f}×"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mcpload", required=True, help="the mcpload binary")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs the servers")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per condition (default 5)")
    parser.add_argument("--calls", type=int, default=20000, help="mcpload --n: measured calls per run (default 20000)")
    parser.add_argument("--max-secs", type=float, default=4.0, help="mcpload --max-secs: cap of a run's measured phase")
    parser.add_argument("--warmup", type=int, default=200, help="mcpload --warmup (default 200)")
    parser.add_argument("--inflight", type=int, default=4, help="stdio: requests in flight; HTTP: connections (default 4)")
    parser.add_argument("--burners", type=int, default=2, help="`yes` processes of the loaded condition (default 2)")
    parser.add_argument("--json", metavar="FILE", help="also write every run's figures as JSON")
    args = parser.parse_args()
    if min(args.rounds, args.calls, args.inflight) < 1 or args.max_secs <= 0 or args.burners < 0:
        parser.error("--rounds, --calls and --inflight must be >= 1, --max-secs > 0, --burners >= 0")
    if not os.access(args.mcpload, os.X_OK):
        parser.error(f"{args.mcpload} is not an executable")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"{started}: {args.rounds} rounds, {args.calls} calls (at most {args.max_secs} s), {args.inflight} in flight")
    results = [condition(args, 0)]
    if args.burners:
        results.append(condition(args, args.burners))
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"started": started, "args": vars(args), "conditions": results}, f, indent=2)


if __name__ == "__main__":
    main()
