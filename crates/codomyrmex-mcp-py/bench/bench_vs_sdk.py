"""Compares a server written with `codomyrmex_mcp` against the same tools on the official
Python SDK (`mcp` 2.x, its `MCPServer`), in one interleaved run.

What it measures, for each subject, over stdio and over Streamable HTTP:

- **calls/s**: `tools/call` with `--concurrency` requests in flight (stdio: pipelined on the
  one connection; HTTP: one keep-alive connection per worker);
- **server CPU µs per call**: the server process's user + system time (`/proc/PID/stat`,
  every thread) around the measured calls, divided by the calls it answered;
- **peak RSS**: the server's `VmHWM` (`/proc/PID/status`);
- **cold start** (stdio): process start to the first answer.

The load generator (`--client`) is the same for both subjects:

- `rust` (the default): the repository's load tools, `stdio_load` and `http_load`
  (`crates/codomyrmex-mcp-bench`; build them with `cargo build --release -p
  codomyrmex-mcp-bench --bin stdio_load --bin http_load`). A client in Rust spends a few µs
  per call, so at our server's rates the figures are the server's, not the client's (the
  Python client spent 15-20 µs of CPU per call, a third of what our server spends, on the
  same 2 cores). They call `echo` (a 16-byte text) only, `--calls` calls per round after
  `--warm-up-calls`, a fresh server process per round; `http_load` also reports the
  client's CPU per call. The cold start is spawn to the `initialize` answer.
- `python`: the loop in this file, which alternates `add` (two integers) and `echo` (a
  string) for `--seconds` per round, on one server process per subject; the cold start is
  spawn to the first `tools/list` answer.

Rounds alternate the subjects (ours, theirs, theirs, ours, ...) so that drift of a shared
machine hits both; each figure is the median over `--rounds`. Both servers run the legacy
(2025-11-25) session flow, which both speak on both transports, with rate limits off.
It prints a table and the ratios (ours / theirs: above 1 is better for calls/s, below 1 for
the rest). Linux only (`/proc`). The CPU per call is the figure that does not depend on the
machine's load; calls/s does.

    python bench/bench_vs_sdk.py                       # the defaults: a few minutes
    python bench/bench_vs_sdk.py --rounds 1 --calls 2000 --warm-up-calls 200 --cold-starts 1   # a smoke run
    python bench/bench_vs_sdk.py --client python --rounds 1 --seconds 0.5 --cold-starts 1
    python bench/bench_vs_sdk.py --json results.json   # also write the numbers
    python bench/bench_vs_sdk.py --compat --client python   # ours in compatibility mode

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


def run_python_client(args: argparse.Namespace, scripts: Dict[str, str]) -> Dict[str, Any]:
    results: Dict[str, Any] = {"client": "python", "concurrency": args.concurrency, "seconds": args.seconds, "rounds": args.rounds}

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


# ----- the Rust load tools -----------------------------------------------------------------


def load_tools(directory: Optional[str]) -> Tuple[str, str]:
    """The paths of `stdio_load` and `http_load`: in `directory`, else the workspace's
    release directory (`CARGO_TARGET_DIR` if set)."""
    if directory is None:
        root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
        directory = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target"), "release")
    tools = (os.path.join(directory, "stdio_load"), os.path.join(directory, "http_load"))
    for tool in tools:
        if not os.access(tool, os.X_OK):
            raise SystemExit(
                f"{tool} not found: build the load tools with `cargo build --release -p codomyrmex-mcp-bench "
                "--bin stdio_load --bin http_load`, pass --load-tools DIR, or use --client python"
            )
    return tools


def records(command: List[str]) -> List[Dict[str, Any]]:
    """Runs a load tool with `--json` and returns its records (one JSON object a line)."""
    out = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{os.path.basename(command[0])} failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def run_rust_client(args: argparse.Namespace, scripts: Dict[str, str]) -> Dict[str, Any]:
    stdio_load, http_load = load_tools(args.load_tools)
    for path in (sys.executable, *scripts.values()):
        if any(c.isspace() for c in path):
            raise SystemExit(f"the load tools split commands on whitespace: {path!r} has some")
    results: Dict[str, Any] = {
        "client": "rust",
        "concurrency": args.concurrency,
        "calls": args.calls,
        "rounds": args.rounds,
    }
    case = f"16:{args.concurrency}:{args.calls}"
    common = ["--json", "--case", case, "--warmup", str(args.warm_up_calls), "--rounds", "1"]

    def stdio(name: str) -> List[str]:
        return ["--subject", f"{name}={sys.executable} {scripts[name]} stdio"]

    def http(name: str) -> List[str]:
        return ["--subject", f"{name}:legacy={sys.executable} {scripts[name]} http {{port}}"]

    for transport, tool, subject, extra in (
        ("stdio", stdio_load, stdio, ["--cold-starts", "0"]),
        ("http", http_load, http, []),
    ):
        seen: Dict[str, Dict[str, List[float]]] = {n: {"rate": [], "cpu": [], "client": [], "rss": []} for n in scripts}
        for r in range(args.rounds):
            order = ["ours", "theirs"] if r % 2 == 0 else ["theirs", "ours"]
            command = [tool, *common, *extra]
            for name in order:
                command += subject(name)
            for record in records(command):
                if "calls_per_sec" not in record:
                    continue
                got = seen[record["subject"]]
                got["rate"].append(record["calls_per_sec"])
                got["cpu"].append(record["cpu_us_per_call"])
                got["rss"].append(record["peak_rss_kib"])
                if "client_cpu_us_per_call" in record:
                    got["client"].append(record["client_cpu_us_per_call"])
        for name, got in seen.items():
            results[f"{transport}.{name}.calls_per_s"] = statistics.median(got["rate"])
            results[f"{transport}.{name}.cpu_us_per_call"] = statistics.median(got["cpu"])
            results[f"{transport}.{name}.peak_rss_kib"] = max(got["rss"])
            if got["client"]:
                results[f"{transport}.{name}.client_cpu_us_per_call"] = statistics.median(got["client"])

    starts: Dict[str, List[float]] = {"ours": [], "theirs": []}
    for i in range(args.cold_starts):
        command = [stdio_load, "--json", "--case", "16:1:1", "--warmup", "0", "--cold-starts", "0", "--rounds", "1"]
        for name in ["ours", "theirs"] if i % 2 == 0 else ["theirs", "ours"]:
            command += stdio(name)
        for record in records(command):
            if "calls_per_sec" in record:
                starts[record["subject"]].append(record["cold_start_ms"] / 1000)
    for name, values in starts.items():
        results[f"cold_start.{name}.s"] = statistics.median(values)
    return results


def run(args: argparse.Namespace) -> Dict[str, Any]:
    workdir = tempfile.mkdtemp(prefix="bench-vs-sdk-")
    scripts = {}
    ours = OURS.replace("from codomyrmex_mcp import", "from codomyrmex_mcp.compat import") if args.compat else OURS
    for name, text in (("ours", ours), ("theirs", THEIRS)):
        path = os.path.join(workdir, f"{name}.py")
        with open(path, "w") as f:
            f.write(text)
        scripts[name] = path
    if args.client == "rust":
        return run_rust_client(args, scripts)
    return run_python_client(args, scripts)


def report(results: Dict[str, Any]) -> None:
    def row(label: str, key: str, unit: str, scale: float = 1.0, better_higher: bool = False) -> None:
        ours, theirs = results[key.format("ours")] * scale, results[key.format("theirs")] * scale
        ratio = ours / theirs if theirs else float("inf")
        better = "higher is better" if better_higher else "lower is better"
        print(f"{label:<28} {ours:>12.1f} {theirs:>12.1f} {unit:<6} ours/theirs {ratio:7.3f}  ({better})")

    length = f"{results['calls']} calls" if results["client"] == "rust" else f"{results['seconds']} s"
    mode = " (compatibility mode)" if results.get("compat") else ""
    print(
        f"codomyrmex_mcp{mode} vs mcp SDK MCPServer: {results['rounds']} interleaved rounds of {length}, "
        f"{results['concurrency']} in flight (medians), the {results['client']} client"
    )
    print(f"{'':<28} {'ours':>12} {'theirs':>12}")
    for transport in ("stdio", "http"):
        row(f"{transport} calls/s", f"{transport}.{{}}.calls_per_s", "1/s", better_higher=True)
        row(f"{transport} server CPU per call", f"{transport}.{{}}.cpu_us_per_call", "µs")
        if f"{transport}.ours.client_cpu_us_per_call" in results:
            row(f"{transport} client CPU per call", f"{transport}.{{}}.client_cpu_us_per_call", "µs")
        row(f"{transport} peak RSS", f"{transport}.{{}}.peak_rss_kib", "MiB", scale=1 / 1024)
    row("cold start (stdio)", "cold_start.{}.s", "ms", scale=1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per subject and transport (default 5)")
    parser.add_argument("--seconds", type=float, default=5.0, help="python client: length of a round (default 5 s)")
    parser.add_argument("--warm-up", type=float, default=2.0, help="python client: unmeasured calls first, in seconds (default 2)")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight (default 4)")
    parser.add_argument(
        "--client", choices=("rust", "python"), default="rust", help="the load generator, the same for both (default rust)"
    )
    parser.add_argument("--calls", type=int, default=20000, help="rust client: measured calls per round (default 20000)")
    parser.add_argument("--warm-up-calls", type=int, default=2000, help="rust client: unmeasured calls first (default 2000)")
    parser.add_argument("--load-tools", metavar="DIR", help="rust client: where stdio_load and http_load are")
    parser.add_argument("--cold-starts", type=int, default=10, help="cold starts per subject (default 10)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--compat", action="store_true", help="ours in compatibility mode (codomyrmex_mcp.compat's MCPServer)"
    )
    args = parser.parse_args()
    if min(args.rounds, args.concurrency, args.cold_starts, args.calls) < 1 or args.seconds <= 0 or args.warm_up <= 0:
        parser.error("--rounds, --concurrency, --cold-starts and --calls must be >= 1, --seconds and --warm-up > 0")
    if args.warm_up_calls < 0:
        parser.error("--warm-up-calls must be >= 0")
    results = run(args)
    results["compat"] = args.compat
    report(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
