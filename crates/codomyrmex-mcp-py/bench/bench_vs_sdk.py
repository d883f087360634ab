"""Compares a server written with `codomyrmex_mcp` against the same tools on the official
Python SDK (`mcp` 2.x, its `MCPServer`), in one interleaved run.

What it measures, for each subject, over stdio and over Streamable HTTP:

- **calls/s**: `tools/call` of `add` (two integers) and `echo` (a string), alternated, with
  `--concurrency` requests in flight (stdio: pipelined on the one connection; HTTP: one
  keep-alive connection per worker thread), for `--seconds` per round;
- **server CPU µs per call**: the server process's user + system time (`/proc/PID/stat`,
  every thread) over the round, divided by the calls it answered;
- **peak RSS**: the server's `VmHWM` (`/proc/PID/status`) at the end of its rounds;
- **cold start** (stdio): process start to the first `tools/list` answered.

Rounds alternate the subjects (ours, theirs, theirs, ours, ...) so that drift of a shared
machine hits both; each figure is the median over `--rounds`. Both servers run the legacy
(2025-11-25) session flow, which both speak on both transports, with rate limits off.
It prints a table and the ratios (ours / theirs: above 1 is better for calls/s, below 1 for
the rest). Linux only (`/proc`). The client is Python too: at high rates it, not the server,
may be the limit; the CPU per call is the figure that is not.

    python bench/bench_vs_sdk.py                       # the defaults: a few minutes
    python bench/bench_vs_sdk.py --rounds 1 --seconds 0.5 --cold-starts 1   # a smoke run
    python bench/bench_vs_sdk.py --json results.json   # also write the numbers

Run it on a quiet machine: it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

LEGACY = "2025-11-25"

# The same tool bodies for both servers; only the server around them differs.
TOOLS = '''
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def echo(text: str) -> str:
    """Echoes a text."""
    return text
'''

OURS = (
    TOOLS
    + '''
import asyncio
import sys

from codomyrmex_mcp import MCPServer, MCPServerConfig

server = MCPServer(MCPServerConfig(name="ours", version="1", rate_limit_rate=0, log_level="WARNING"))
server.tool()(add)
server.tool()(echo)

if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run()
    else:
        asyncio.run(server.run_http("127.0.0.1", int(sys.argv[2])))
'''
)

THEIRS = (
    TOOLS
    + '''
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="theirs", version="1", log_level="WARNING")
server.tool()(add)
server.tool()(echo)

if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
'''
)

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(request_id: int) -> Dict[str, Any]:
    arguments: Dict[str, Any]
    if request_id % 2:
        name, arguments = "add", {"a": request_id, "b": 1}
    else:
        name, arguments = "echo", {"text": f"hello {request_id}"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def check(reply: Dict[str, Any]) -> None:
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise RuntimeError(f"the call failed: {json.dumps(reply)[:300]}")


# ----- /proc -------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system time of every thread of `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the command: state is field 3, utime 14 and stime 15 (1-based, man proc).
    return (int(fields[11]) + int(fields[12])) / TICK


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


# ----- the servers -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stdio:
    """A server over stdio, initialized, with pipelined calls."""

    def __init__(self, script: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.send(INITIALIZE)
        self.response(0)
        self.send(INITIALIZED)

    def send(self, message: Dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def read(self) -> Dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        return json.loads(line)  # type: ignore[no-any-return]

    def response(self, request_id: int) -> Dict[str, Any]:
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def calls(self, seconds: float, concurrency: int, first_id: int) -> int:
        """Calls for `seconds` with `concurrency` in flight; returns how many were answered."""
        next_id, in_flight, done = first_id, 0, 0
        deadline = time.perf_counter() + seconds
        while in_flight < concurrency:
            self.send(call(next_id))
            next_id, in_flight = next_id + 1, in_flight + 1
        while in_flight:
            message = self.read()
            if "method" in message:
                continue
            check(message)
            in_flight, done = in_flight - 1, done + 1
            if time.perf_counter() < deadline:
                self.send(call(next_id))
                next_id, in_flight = next_id + 1, in_flight + 1
        return done

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class HttpSession:
    """One keep-alive connection and one legacy session."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.session: Optional[str] = None
        self.post(INITIALIZE)
        self.post(INITIALIZED)

    def post(self, message: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": LEGACY,
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", body=json.dumps(message), headers=headers)
        response = self.conn.getresponse()
        body = response.read().decode()
        if response.status >= 400:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]}")
        self.session = response.getheader("Mcp-Session-Id") or self.session
        if "id" not in message:
            return None
        if (response.getheader("Content-Type") or "").startswith("text/event-stream"):
            for line in body.splitlines():
                if line.startswith("data:"):
                    event = json.loads(line[5:])
                    if event.get("id") == message["id"] and "method" not in event:
                        return event  # type: ignore[no-any-return]
            raise RuntimeError(f"no response in the event stream: {body[:300]}")
        return json.loads(body)  # type: ignore[no-any-return]


class Http:
    """A server over Streamable HTTP on a free loopback port."""

    def __init__(self, script: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, script, "http", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                HttpSession(self.port)
                return
            except (OSError, RuntimeError, http.client.HTTPException):
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the HTTP server did not start") from None
                time.sleep(0.05)

    def calls(self, seconds: float, concurrency: int, first_id: int) -> int:
        sessions = [HttpSession(self.port) for _ in range(concurrency)]
        counts = [0] * concurrency
        errors: List[BaseException] = []
        deadline = time.perf_counter() + seconds

        def worker(i: int) -> None:
            request_id = first_id + i * 10_000_000
            try:
                while time.perf_counter() < deadline:
                    reply = sessions[i].post(call(request_id))
                    assert reply is not None
                    check(reply)
                    counts[i] += 1
                    request_id += 1
            except BaseException as e:  # reported by the caller
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in sessions:
            s.conn.close()
        if errors:
            raise errors[0]
        return sum(counts)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ----- the run -----------------------------------------------------------------------------


def cold_start(script: str) -> float:
    """Seconds from process start to the first `tools/list` answered, over stdio."""
    started = time.perf_counter()
    server = Stdio(script)
    server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = server.response(1)["result"]["tools"]
    elapsed = time.perf_counter() - started
    if sorted(t["name"] for t in tools) != ["add", "echo"]:
        raise RuntimeError(f"unexpected tools: {tools}")
    server.close()
    return elapsed


class Subject:
    """One server (ours or theirs) on one transport, kept running across its rounds."""

    def __init__(self, name: str, make: Callable[[str], Any], script: str) -> None:
        self.name = name
        self.server = make(script)
        self.rates: List[float] = []
        self.cpu_us: List[float] = []
        self.next_id = 1

    def round(self, seconds: float, concurrency: int) -> None:
        pid = self.server.proc.pid
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        done = self.server.calls(seconds, concurrency, self.next_id)
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
        self.next_id += 100_000_000
        self.rates.append(done / elapsed)
        self.cpu_us.append(cpu / max(done, 1) * 1e6)

    def close(self) -> int:
        rss = peak_rss_kib(self.server.proc.pid)
        self.server.close()
        return rss


def run(args: argparse.Namespace) -> Dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="bench-vs-sdk-")
    scripts = {}
    for name, text in (("ours", OURS), ("theirs", THEIRS)):
        path = os.path.join(workdir, f"{name}.py")
        with open(path, "w") as f:
            f.write(text)
        scripts[name] = path
    results: Dict[str, Any] = {"concurrency": args.concurrency, "seconds": args.seconds, "rounds": args.rounds}

    for transport, make in (("stdio", Stdio), ("http", Http)):
        subjects = {name: Subject(name, make, scripts[name]) for name in ("ours", "theirs")}
        for s in subjects.values():  # warm-up, not counted
            s.round(args.warm_up, args.concurrency)
            s.rates.clear()
            s.cpu_us.clear()
        for r in range(args.rounds):
            order = ["ours", "theirs"] if r % 2 == 0 else ["theirs", "ours"]
            for name in order:
                subjects[name].round(args.seconds, args.concurrency)
        for name, s in subjects.items():
            results[f"{transport}.{name}.calls_per_s"] = statistics.median(s.rates)
            results[f"{transport}.{name}.cpu_us_per_call"] = statistics.median(s.cpu_us)
            results[f"{transport}.{name}.peak_rss_kib"] = s.close()

    starts: Dict[str, List[float]] = {"ours": [], "theirs": []}
    for i in range(args.cold_starts):
        for name in (["ours", "theirs"] if i % 2 == 0 else ["theirs", "ours"]):
            starts[name].append(cold_start(scripts[name]))
    for name, values in starts.items():
        results[f"cold_start.{name}.s"] = statistics.median(values)
    return results


def report(results: Dict[str, Any]) -> None:
    def row(label: str, key: str, unit: str, scale: float = 1.0, better_higher: bool = False) -> None:
        ours, theirs = results[key.format("ours")] * scale, results[key.format("theirs")] * scale
        ratio = ours / theirs if theirs else float("inf")
        better = "higher is better" if better_higher else "lower is better"
        print(f"{label:<28} {ours:>12.1f} {theirs:>12.1f} {unit:<6} ours/theirs {ratio:7.3f}  ({better})")

    print(
        f"codomyrmex_mcp vs mcp SDK MCPServer: {results['rounds']} interleaved rounds of {results['seconds']} s, "
        f"{results['concurrency']} in flight (medians)"
    )
    print(f"{'':<28} {'ours':>12} {'theirs':>12}")
    for transport in ("stdio", "http"):
        row(f"{transport} calls/s", f"{transport}.{{}}.calls_per_s", "1/s", better_higher=True)
        row(f"{transport} server CPU per call", f"{transport}.{{}}.cpu_us_per_call", "µs")
        row(f"{transport} peak RSS", f"{transport}.{{}}.peak_rss_kib", "MiB", scale=1 / 1024)
    row("cold start (stdio)", "cold_start.{}.s", "ms", scale=1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per subject and transport (default 5)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of a round (default 5 s)")
    parser.add_argument("--warm-up", type=float, default=2.0, help="unmeasured calls first, in seconds (default 2)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    parser.add_argument("--cold-starts", type=int, default=10, help="cold starts per subject (default 10)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args()
    if min(args.rounds, args.concurrency, args.cold_starts) < 1 or args.seconds <= 0 or args.warm_up <= 0:
        parser.error("--rounds, --concurrency and --cold-starts must be >= 1, --seconds and --warm-up > 0")
    results = run(args)
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
