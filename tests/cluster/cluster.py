"""Cluster test: three `codomyrmex-mcp serve --http` instances behind nginx (round robin,
retry to the next instance on connection errors), driven by the official Python MCP SDK.

Usage: cluster.py PATH_TO_CODOMYRMEX_MCP_BINARY

Starts the instances and nginx (`nginx.conf.template` beside this file) on free loopback
ports, then checks, through nginx:

- the SDK's `Client(mode="auto")` settles on 2026-07-28, lists the tools and calls one;
- a load of 2026-07-28 calls from several clients reaches all three instances (nginx's
  access log names the instance of every request);
- one instance killed with SIGKILL in the middle of that load costs zero failed calls, and
  the calls go on on the other two; a 2025-11-25 call left streaming on it, resumed on
  another instance, ends with an error saying the instance stopped
  (`streams_checks.check_writer_gone`);
- with the instances sharing a Redis (`--store`, a `redis-server` this script starts): a
  2025-11-25 session (`Client(mode="legacy")`) whose requests rotate across all three
  instances, and one held through the kill that goes on (one of the load's workers);
- Redis going away: 2026-07-28 calls go on, `initialize` gets 503 with `Retry-After`, and
  once Redis is back the instances reconnect by themselves.

- SSE resumption on another instance and an elicitation answered on another instance
  (`streams_checks.py`, against the instances directly).

- tasks polled from every instance, a task whose owner got SIGKILL failing within the lease,
  and `subscriptions/listen` on one instance seeing a change made through another
  (`tasks_checks.py`, against the instances directly).
Everything it starts is stopped on exit. Exits non-zero on the first mismatch.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import streams_checks
import tasks_checks

TOKEN = "cluster-" + os.urandom(8).hex()
TOOL = "codomyrmex.list_registered_tools"
INSTANCES = 3
WORKERS = 8
LOAD_SECONDS = 6.0
KILL_AFTER = 2.0


class Mismatch(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen[bytes], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Mismatch(f"{what} exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise Mismatch(f"{what} did not listen on port {port} within {timeout} s")


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found is None:
        raise Mismatch("nginx is not installed (apt-get install -y nginx-light)")
    return found


def http_client() -> Any:
    return create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})


async def check_modern_client(url: str) -> None:
    async with http_client() as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode="auto", read_timeout_seconds=30) as client:
            check(client.protocol_version == "2026-07-28", f"auto mode negotiated {client.protocol_version!r}")
            listed = await client.list_tools()
            check(TOOL in {t.name for t in listed.tools}, f"tools/list through nginx: {listed.tools!r}")
            result = await client.call_tool(TOOL, {})
            check(not result.is_error, f"{TOOL} through nginx reported an error: {result}")
    print("ok: Client(mode='auto') through nginx settles on 2026-07-28, lists and calls")


async def check_legacy_session(url: str, rounds: int, label: str) -> None:
    """One 2025-11-25 session making `rounds` calls; round robin sends them to every
    instance in turn."""
    async with http_client() as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode="legacy", read_timeout_seconds=30) as client:
            check(client.protocol_version == "2025-11-25", f"{label}: negotiated {client.protocol_version!r}")
            for n in range(rounds):
                result = await client.call_tool(TOOL, {})
                check(not result.is_error, f"{label}: call {n} reported an error: {result}")
    print(f"ok: {label}: one 2025-11-25 session, {rounds} calls across the instances")


def initialize_request() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "cluster-test", "version": "1"},
        },
    }


async def post_initialize(hc: Any, url: str) -> Any:
    return await hc.post(
        url,
        json=initialize_request(),
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
    )


async def check_store_down(url: str) -> None:
    async with http_client() as hc:
        r = await post_initialize(hc, url)
        check(r.status_code == 503, f"initialize with Redis down: status {r.status_code} {r.text[:200]!r}")
        check(r.headers.get("retry-after") is not None, f"initialize with Redis down: no Retry-After {r.headers!r}")
    print("ok: with Redis down, 2026-07-28 calls go on and initialize gets 503 with Retry-After")


async def check_store_back(url: str) -> None:
    deadline = time.monotonic() + 60
    async with http_client() as hc:
        while True:
            r = await post_initialize(hc, url)
            if r.status_code == 200:
                break
            check(time.monotonic() < deadline, f"no reconnection to Redis within 60 s: {r.status_code}")
            await asyncio.sleep(0.2)
    await check_legacy_session(url, INSTANCES, "after Redis came back")


async def load(url: str, victim: subprocess.Popen[bytes]) -> tuple[int, int, list[str]]:
    """Runs WORKERS clients calling TOOL until LOAD_SECONDS have passed, kills `victim` with
    SIGKILL after KILL_AFTER seconds; returns (calls before the kill, calls after it, failures)."""
    failures: list[str] = []
    counts = {"before": 0, "after": 0}
    killed = asyncio.Event()
    stop = time.monotonic() + LOAD_SECONDS

    async def worker(n: int, mode: str = "auto") -> None:
        async with http_client() as hc:
            async with Client(
                streamable_http_client(url, http_client=hc), mode=mode, read_timeout_seconds=30
            ) as client:
                while time.monotonic() < stop:
                    phase = "after" if killed.is_set() else "before"
                    try:
                        result = await client.call_tool(TOOL, {})
                    except Exception as e:  # noqa: BLE001 - every failure counts
                        failures.append(f"worker {n}, {phase} the kill: {type(e).__name__}: {e}")
                        continue
                    if result.is_error:
                        failures.append(f"worker {n}, {phase} the kill: an error result: {result}")
                    else:
                        counts[phase] += 1

    async def killer() -> None:
        await asyncio.sleep(KILL_AFTER)
        victim.send_signal(signal.SIGKILL)
        killed.set()

    # Worker 0 holds one 2025-11-25 session through the kill: it must go on.
    await asyncio.gather(killer(), worker(0, "legacy"), *(worker(n) for n in range(1, WORKERS)))
    return counts["before"], counts["after"], failures


def served_by(access_log: Path) -> dict[str, int]:
    """How many requests each upstream address answered, from nginx's access log (an entry
    that was retried lists every instance tried; the last one answered)."""
    counts: dict[str, int] = {}
    for line in access_log.read_text().splitlines():
        addrs, _, _status = line.rpartition(" ")
        last = addrs.split(",")[-1].strip()
        if last and last != "-":
            counts[last] = counts.get(last, 0) + 1
    return counts


def run(binary: str) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="cmcp-cluster-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        redis_port = free_port()
        def start_redis() -> subprocess.Popen[bytes]:
            proc = subprocess.Popen(
                [shutil.which("redis-server") or "redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no"],
                stdout=subprocess.DEVNULL,
            )
            procs.append(proc)
            wait_listening(redis_port, proc, "redis-server")
            return proc

        redis = start_redis()
        ports = [free_port() for _ in range(INSTANCES)]
        nginx_port = free_port()
        env = dict(
            os.environ,
            CODOMYRMEX_MCP_AUTH_TOKEN=TOKEN,
            CODOMYRMEX_MCP_STORE=f"redis://127.0.0.1:{redis_port}/0",
            CODOMYRMEX_MCP_DEMO_TOOLS="1",
            **tasks_checks.ENV,
        )
        instances = []
        for port in ports:
            proc = subprocess.Popen(
                [binary, "serve", "--http", f"127.0.0.1:{port}", "--root", str(scratch), "--no-rate-limit",
                 # nginx passes the client's Host on: the public name must be allowed.
                 "--allowed-host", f"127.0.0.1:{nginx_port}"],
                env=env,
            )
            procs.append(proc)
            instances.append(proc)
        for port, proc in zip(ports, instances):
            wait_listening(port, proc, f"the instance on port {port}")

        upstreams = "\n".join(
            f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=30s;" for p in ports
        )
        conf = (Path(__file__).parent / "nginx.conf.template").read_text()
        conf = conf.replace("@PORT@", str(nginx_port)).replace("@UPSTREAMS@", upstreams)
        conf = conf.replace("@PREFIX@", str(scratch))
        (scratch / "nginx.conf").write_text(conf)
        nginx = subprocess.Popen([nginx_binary(), "-p", str(scratch), "-c", str(scratch / "nginx.conf")])
        procs.append(nginx)
        wait_listening(nginx_port, nginx, "nginx")
        url = f"http://127.0.0.1:{nginx_port}/mcp"

        asyncio.run(asyncio.wait_for(check_modern_client(url), timeout=60))
        asyncio.run(asyncio.wait_for(check_legacy_session(url, 3 * INSTANCES, "before the kill"), timeout=60))
        direct = [f"http://127.0.0.1:{p}/mcp" for p in ports]
        asyncio.run(asyncio.wait_for(streams_checks.run(direct, TOKEN), timeout=60))
        asyncio.run(asyncio.wait_for(tasks_checks.check_task_polled_everywhere(direct, TOKEN), timeout=120))
        asyncio.run(asyncio.wait_for(tasks_checks.check_listen_sees_other_instance(direct, TOKEN), timeout=120))

        victim = instances[1]
        pending = asyncio.run(asyncio.wait_for(streams_checks.start_long_call(direct[1], TOKEN), timeout=60))
        before, after, failures = asyncio.run(asyncio.wait_for(load(url, victim), timeout=120))
        check(victim.wait(timeout=10) == -signal.SIGKILL, "the killed instance did not die of SIGKILL")
        check(not failures, f"{len(failures)} failed calls under load, first: {failures[:3]!r}")
        check(before > 0 and after > 0, f"calls before the kill: {before}, after: {after}")
        print(f"ok: {before} calls before and {after} after one instance got SIGKILL, none failed")
        asyncio.run(asyncio.wait_for(streams_checks.check_writer_gone(direct[0], TOKEN, pending), timeout=60))
        asyncio.run(asyncio.wait_for(check_legacy_session(url, 2 * INSTANCES, "a new session after the kill"), timeout=60))

        # Redis goes away: 2026-07-28 calls need no shared state and go on; 2025-11-25 requests
        # get 503 with Retry-After; when Redis is back, the instances reconnect by themselves.
        redis.terminate()
        redis.wait(timeout=10)
        asyncio.run(asyncio.wait_for(check_modern_client(url), timeout=60))
        asyncio.run(asyncio.wait_for(check_store_down(url), timeout=60))
        start_redis()
        asyncio.run(asyncio.wait_for(check_store_back(url), timeout=90))

        # Last: it kills a second instance (the first one's tasks are gone with Redis's restart).
        asyncio.run(asyncio.wait_for(
            tasks_checks.check_owner_killed([direct[0], direct[2]], instances[2], 1, TOKEN), timeout=120))

        served = served_by(scratch / "access.log")
        for port in ports:
            check(served.get(f"127.0.0.1:{port}", 0) > 0, f"instance {port} served no request: {served!r}")
        print(f"ok: requests per instance (nginx's access log): {served}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                # SIGTERM: nginx's master stops its workers on it (SIGKILL would orphan them).
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: cluster.py PATH_TO_CODOMYRMEX_MCP", file=sys.stderr)
        sys.exit(2)
    try:
        run(sys.argv[1])
    except TimeoutError:
        print("MISMATCH: the cluster run did not finish in time", file=sys.stderr)
        sys.exit(1)
    except (Mismatch, tasks_checks.TaskMismatch) as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        sys.exit(1)
    print("cluster: all checks passed")
