"""The gateway's performance harness (issue #19 item 5): 16 B `echo` calls per second over
Streamable HTTP, one run, subjects interleaved, against the same upstream (the library's
`echo` example, started by each subject over stdio, or serving HTTP itself for `direct`):

- `direct`: the `echo` example serving Streamable HTTP itself (`--http`);
- `gateway`: `codomyrmex-mcp gateway --http` with `echo` as its stdio upstream;
- `fastmcp`: FastMCP's proxy (`create_proxy`, or `FastMCP.as_proxy` before it, of the stdio
  `echo`, served over HTTP);
- `supergateway`: npm `supergateway --stdio ... --outputTransport streamableHttp`.

Each case is N calls at 1 and at 64 in flight (one keep-alive HTTP/1.1 connection per call in
flight, one call at a time on each, 2025-11-25 sessions, which every subject speaks), over
several interleaved rounds; it prints the median calls/s, the ratios to `direct` and the
gateway's to FastMCP's, and the server CPU µs per call (utime+stime from /proc of the
subject's process tree, before and after). The client is this Python process: at 64 in flight
it may itself be the bottleneck of the fastest subjects, so read the ratios with that in mind.

Do not quote figures from a busy machine. Usage:

    python3 tests/bench/gateway_bench.py --binary target/release/codomyrmex-mcp \\
        --echo target/release/examples/echo [--calls 2000] [--rounds 3] \\
        [--fastmcp-python .ci/cache/bench-venv/bin/python] \\
        [--supergateway .ci/cache/bench-node/node_modules/.bin/supergateway]

A subject whose tool is missing is skipped (and says so).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PAYLOAD = "0123456789abcdef"  # 16 B
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            pass
    return total / TICKS


class Conn:
    """One keep-alive connection speaking a 2025-11-25 session."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.session: str | None = None
        self.next_id = 0

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        init = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.bump(),
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "gateway-bench", "version": "1"},
                },
            }
        )
        if "result" not in init:
            raise RuntimeError(f"initialize failed: {init}")
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, expect=False)

    def bump(self) -> int:
        self.next_id += 1
        return self.next_id

    async def post(self, message: dict, expect: bool = True) -> dict:
        body = json.dumps(message).encode()
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2025-11-25\r\n"
            + (f"Mcp-Session-Id: {self.session}\r\n" if self.session else "")
            + f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status, headers, data = await self.read_response()
        if "mcp-session-id" in headers:
            self.session = headers["mcp-session-id"]
        if not expect:
            return {}
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {data[:200]!r}")
        text = data.decode()
        if headers.get("content-type", "").startswith("text/event-stream"):
            for line in text.splitlines():
                if line.startswith("data:") and '"id"' in line:
                    return json.loads(line[5:])
            raise RuntimeError(f"no response in the event stream: {text[:200]!r}")
        return json.loads(text)

    async def read_response(self) -> tuple[int, dict, bytes]:
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        headers = {}
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        if "content-length" in headers:
            data = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding") == "chunked":
            data = b""
            while True:
                size = int((await self.reader.readline()).strip(), 16)
                if size == 0:
                    await self.reader.readline()
                    break
                data += await self.reader.readexactly(size)
                await self.reader.readline()
        else:
            data = b""
        return status, headers, data

    async def call(self, tool: str) -> None:
        r = await self.post(
            {
                "jsonrpc": "2.0",
                "id": self.bump(),
                "method": "tools/call",
                "params": {"name": tool, "arguments": {"text": PAYLOAD}},
            }
        )
        if PAYLOAD not in json.dumps(r.get("result", {})):
            raise RuntimeError(f"unexpected answer: {r}")


async def measure(port: int, path: str, tool: str, calls: int, inflight: int) -> float:
    conns = [Conn("127.0.0.1", port, path) for _ in range(inflight)]
    await asyncio.gather(*(c.open() for c in conns))
    per = max(1, calls // inflight)
    await asyncio.gather(*(c.call(tool) for c in conns))  # warm up
    start = time.perf_counter()

    async def loop(c: Conn) -> None:
        for _ in range(per):
            await c.call(tool)

    await asyncio.gather(*(loop(c) for c in conns))
    elapsed = time.perf_counter() - start
    for c in conns:
        c.writer.close()
    return per * inflight / elapsed


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


FASTMCP_PROXY = """
import sys
from fastmcp.client.transports import StdioTransport
try:
    from fastmcp.server import create_proxy
    proxy = create_proxy(StdioTransport(command=sys.argv[1], args=["--stdio"]), name="proxy")
except ImportError:  # FastMCP before create_proxy
    from fastmcp import FastMCP
    proxy = FastMCP.as_proxy(StdioTransport(command=sys.argv[1], args=["--stdio"]), name="proxy")
proxy.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), path="/mcp", show_banner=False)
"""


def subjects(args: argparse.Namespace, work: str) -> list[tuple[str, list[str], str]]:
    """(name, command with {port}, tool name)."""
    config = os.path.join(work, "gateway.toml")
    with open(config, "w") as f:
        f.write(f'[[upstream]]\nname = "up"\ncommand = "{args.echo}"\nargs = ["--stdio"]\nmax_concurrent = 64\n')
    proxy = os.path.join(work, "fastmcp_proxy.py")
    with open(proxy, "w") as f:
        f.write(FASTMCP_PROXY)
    out = [
        ("direct", [args.echo, "--http", "127.0.0.1:{port}"], "echo"),
        ("gateway", [args.binary, "gateway", "--config", config, "--no-rate-limit", "--http", "127.0.0.1:{port}"], "up.echo"),
    ]
    if args.fastmcp_python and os.path.exists(args.fastmcp_python):
        out.append(("fastmcp", [args.fastmcp_python, proxy, args.echo, "{port}"], "echo"))
    else:
        print("skipped: fastmcp (no --fastmcp-python)", file=sys.stderr)
    if args.supergateway and os.path.exists(args.supergateway):
        out.append(
            (
                "supergateway",
                [args.supergateway, "--stdio", f"{args.echo} --stdio", "--outputTransport",
                 "streamableHttp", "--stateful", "--port", "{port}"],
                "echo",
            )
        )
    else:
        print("skipped: supergateway (no --supergateway)", file=sys.stderr)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--echo", required=True)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--fastmcp-python")
    p.add_argument("--supergateway")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="gateway-bench-")
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    running = []
    try:
        started = []
        for name, command, tool in subjects(args, work):
            port = free_port()
            cmd = [c.replace("{port}", str(port)) for c in command]
            log = open(os.path.join(work, f"{name}.log"), "w")
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            running.append(proc)
            try:
                wait_port(port, proc)
            except RuntimeError as e:
                log.flush()
                with open(log.name) as f:
                    raise SystemExit(f"{name} did not start ({e}):\n{f.read()[-2000:]}") from None
            started.append((name, port, tool, proc))
        for _ in range(args.rounds):
            for inflight in (1, 64):
                for name, port, tool, proc in started:
                    pids = tree(proc.pid)
                    before = cpu_seconds(pids)
                    rate = asyncio.run(measure(port, "/mcp", tool, args.calls, inflight))
                    used = cpu_seconds(tree(proc.pid)) - before
                    calls = max(1, args.calls // inflight) * inflight
                    results.setdefault((name, inflight), []).append((rate, used / calls * 1e6))
        print(f"16 B echo calls, {args.calls} per case, median of {args.rounds} interleaved rounds")
        print(f"{'subject':<14}{'in flight':>10}{'calls/s':>12}{'x direct':>10}{'CPU us/call':>13}")
        med = {k: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for k, v in results.items()}
        for (name, inflight), (rate, cpu) in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            direct = med.get(("direct", inflight), (rate, 0))[0]
            print(f"{name:<14}{inflight:>10}{rate:>12.0f}{rate / direct:>10.2f}{cpu:>13.1f}")
        for inflight in (1, 64):
            g, f = med.get(("gateway", inflight)), med.get(("fastmcp", inflight))
            if g and f:
                print(f"gateway / fastmcp at {inflight} in flight: {g[0] / f[0]:.2f}x")
    finally:
        for proc in running:
            proc.terminate()
        for proc in running:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
