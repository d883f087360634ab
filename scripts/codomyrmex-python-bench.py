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
not the text sent): `--client python` (below) measures it.

    cargo build --release --manifest-path PATH/TO/mcpload/Cargo.toml --target-dir /tmp/mcpload -j 2
    (cd crates/codomyrmex-mcp-py && maturin develop --release)   # the extension, release build
    python scripts/codomyrmex-python-bench.py --mcpload /tmp/mcpload/release/mcpload [--rounds 5] [--json out.json]

The Python that runs it needs `codomyrmex_mcp` and `mcp` (2.x). Linux only. A measurement,
not a test.

`--client python` drives three subjects over stdio with this file's own client instead:
plain `codomyrmex_mcp` ("ours"), the same server in compatibility mode ("compat",
`echo_server.py --compat`) and the SDK ("theirs"). It is a pipelined client like mcpload's
stdio mode (the same handshake at 2025-06-18, `--inflight` requests in flight, a 16-byte text
that embeds the id, every answer's id and text checked), written in Python so that it can
check compatibility mode's text, `{"result": TEXT}` as `json.dumps` writes it. It costs more
CPU per call than mcpload, on the same cores as the servers; the server's CPU per call
(`/proc/PID/stat`, every thread) is the figure that does not depend on the client.

    python scripts/codomyrmex-python-bench.py --client python [--rounds 5] [--json out.json]
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
from typing import Any, Dict, List, Tuple

BENCH = Path(__file__).resolve().parents[1] / "crates" / "codomyrmex-mcp-py" / "bench"
SERVERS = {"ours": BENCH / "echo_server.py", "theirs": BENCH / "echo_server_sdk.py"}
# What each subject of `--client python` runs, after the Python.
PY_SUBJECTS = {
    "ours": [str(BENCH / "echo_server.py"), "stdio"],
    "compat": [str(BENCH / "echo_server.py"), "stdio", "--compat"],
    "theirs": [str(BENCH / "echo_server_sdk.py"), "stdio"],
}
# The order of each round of `--client python`: every subject first once in 3 rounds.
PY_ORDERS = [("ours", "compat", "theirs"), ("theirs", "ours", "compat"), ("compat", "theirs", "ours")]


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


def cpu_ticks(pid: int) -> int:
    """utime + stime of process ``pid``, every thread, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


class StdioSubject:
    """A server process spoken to over stdio with pipelined requests (`--client python`)."""

    def __init__(self, command: List[str], compat: bool) -> None:
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.inp, self.out = self.proc.stdin, self.proc.stdout.fileno()
        self.compat = compat
        self.buffer = b""
        self.write({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pyload", "version": "1"}}})
        if "result" not in self.lines(1)[0]:
            raise RuntimeError(f"{command}: initialize failed")
        self.write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, message: Dict[str, Any]) -> None:
        self.inp.write(json.dumps(message).encode() + b"\n")
        self.inp.flush()

    def lines(self, count: int) -> List[Dict[str, Any]]:
        """The next ``count`` messages with an id (notifications are skipped)."""
        found: List[Dict[str, Any]] = []
        while len(found) < count:
            while b"\n" not in self.buffer:
                chunk = os.read(self.out, 1 << 16)
                if not chunk:
                    raise RuntimeError("the server closed its stdout")
                self.buffer += chunk
            *whole, self.buffer = self.buffer.split(b"\n")
            for line in whole:
                if line.strip():
                    message = json.loads(line)
                    if "id" in message:
                        found.append(message)
        return found

    def expected(self, request_id: int) -> str:
        text = f"t{request_id:015d}"[-16:]
        return json.dumps({"result": text}) if self.compat else text

    def calls(self, first: int, count: int, inflight: int, deadline: float) -> int:
        """``count`` echo calls (ids from ``first``) with ``inflight`` in flight, until
        ``deadline``; returns how many were answered. Every answer is checked."""
        sent = done = 0
        pending = set()
        while done < count:
            batch = []
            while sent < count and len(pending) < inflight:
                request_id = first + sent
                text = f"t{request_id:015d}"[-16:]
                batch.append(
                    f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
                    f'"params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}\n'
                )
                pending.add(request_id)
                sent += 1
            if batch:
                self.inp.write("".join(batch).encode())
                self.inp.flush()
            for answer in self.lines(1):
                request_id = answer.get("id")
                content = (answer.get("result") or {}).get("content") or [{}]
                if request_id not in pending or content[0].get("text") != self.expected(request_id):
                    raise RuntimeError(f"unexpected answer: {answer}")
                pending.discard(request_id)
                done += 1
            if time.monotonic() > deadline and not pending:
                break
        return done

    def close(self) -> None:
        self.inp.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_python_once(args: argparse.Namespace, subject: str) -> Dict[str, Any]:
    """One run of `--client python`: a fresh server, warm-up, then the measured calls."""
    server = StdioSubject([args.python, *PY_SUBJECTS[subject]], compat=subject == "compat")
    try:
        server.calls(1, args.warmup, args.inflight, float("inf"))
        ticks_before, started = cpu_ticks(server.proc.pid), time.monotonic()
        done = server.calls(1 + args.warmup, args.calls, args.inflight, started + args.max_secs)
        elapsed, ticks = time.monotonic() - started, cpu_ticks(server.proc.pid) - ticks_before
    finally:
        server.close()
    cpu_us = ticks / os.sysconf("SC_CLK_TCK") * 1e6
    return {"cps": done / elapsed, "cpu_us_per_call": cpu_us / done, "calls": done}


def condition(args: argparse.Namespace, burners: int) -> Dict[str, Any]:
    """`--rounds` interleaved rounds with `burners` CPU burners running."""
    procs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(burners)]
    try:
        before = loadavg()
        runs: Dict[str, List[Dict[str, Any]]] = {}
        for r in range(args.rounds):
            python_client = args.client == "python"
            if python_client:
                order: Tuple[str, ...] = PY_ORDERS[r % len(PY_ORDERS)]
            else:
                order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
            for transport in ("stdio",) if python_client else ("stdio", "http"):
                for subject in order:
                    if python_client:
                        result = run_python_once(args, subject)
                    else:
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
        print(f"{'':<14} {'calls/s':>10} {'µs/call':>9} {'SDK calls/s':>12} {'µs/call':>9} {'ratio':>7} {'CPU ratio':>9}")
        for key, ours in sorted(cond["medians"].items()):
            transport, subject = key.split(".")
            if subject == "theirs":
                continue
            theirs = cond["medians"][f"{transport}.theirs"]
            ratio = ours["calls_per_s"] / theirs["calls_per_s"] if theirs["calls_per_s"] else float("inf")
            cpu = theirs["cpu_us_per_call"] / ours["cpu_us_per_call"] if ours["cpu_us_per_call"] else float("inf")
            print(
                f"{key:<14} {ours['calls_per_s']:>10.1f} {ours['cpu_us_per_call']:>9.1f} "
                f"{theirs['calls_per_s']:>12.1f} {theirs['cpu_us_per_call']:>9.1f} {ratio:>6.1f}× {cpu:>8.1f}×"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--client", choices=("mcpload", "python"), default="mcpload",
                        help="mcpload (ours and the SDK, stdio and HTTP) or this file's stdio client (ours, compat, the SDK)")
    parser.add_argument("--mcpload", help="the mcpload binary (--client mcpload)")
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
    if args.client == "mcpload" and not (args.mcpload and os.access(args.mcpload, os.X_OK)):
        parser.error(f"{args.mcpload} is not an executable")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    print(f"{started}: {args.client}, {args.rounds} rounds, {args.calls} calls (at most {args.max_secs} s), {args.inflight} in flight")
    results = [condition(args, 0)]
    if args.burners:
        results.append(condition(args, args.burners))
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"started": started, "args": vars(args), "conditions": results}, f, indent=2)


if __name__ == "__main__":
    main()
