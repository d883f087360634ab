"""Memory with the Redis store: 100,000 idle 2025-11-25 sessions must grow an instance's RSS
by less than 10 MiB (issue #16, item 3): the process keeps a bounded cache of live sessions
(`max_live_sessions`), the records live in Redis.

Usage: sessions_rss.py PATH_TO_CODOMYRMEX_MCP_BINARY [SESSIONS]

Starts a `redis-server` and one `serve --http --store redis://...` instance on free loopback
ports (`[http] max_sessions` raised so that the store keeps them all), opens a warm-up batch of
sessions (more than the live cache holds, so that the cache is full and evicting), reads
VmRSS, opens SESSIONS more (default 100,000), reads VmRSS again, and checks:

- the growth is under 10 MiB;
- Redis holds a record for every session (none was evicted or lost);
- the first session of the run, long evicted from the live cache, still answers `ping`
  (rebuilt from its record), and a `DELETE` of it then gives 404.

Everything it starts is stopped on exit. Exits non-zero on the first mismatch.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from cluster import Mismatch, check, free_port, wait_listening

WARM_UP = 5_000
THREADS = 8
LIMIT_MIB = 10.0

INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "sessions-rss", "version": "1"},
        },
    }
).encode()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise Mismatch("no VmRSS in /proc/PID/status")


def headers(port: int, session: str | None = None) -> dict[str, str]:
    h = {
        "Host": f"127.0.0.1:{port}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if session is not None:
        h["Mcp-Session-Id"] = session
        h["MCP-Protocol-Version"] = "2025-11-25"
    return h


def open_sessions(port: int, count: int) -> list[str]:
    """Opens `count` sessions (an `initialize` each) over THREADS keep-alive connections."""
    ids: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: list[str] = []
        try:
            for _ in range(n):
                conn.request("POST", "/mcp", body=INITIALIZE, headers=headers(port))
                response = conn.getresponse()
                body = response.read()
                sid = response.getheader("Mcp-Session-Id")
                if response.status != 200 or not sid:
                    with lock:
                        errors.append(f"initialize: HTTP {response.status} {body[:200]!r}")
                    return
                mine.append(sid)
        finally:
            conn.close()
            with lock:
                ids.extend(mine)

    per = [count // THREADS + (1 if i < count % THREADS else 0) for i in range(THREADS)]
    threads = [threading.Thread(target=worker, args=(n,)) for n in per]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check(not errors, f"{len(errors)} initializes failed, first: {errors[:1]!r}")
    check(len(ids) == count, f"opened {len(ids)} sessions, wanted {count}")
    return ids


def request(port: int, method: str, session: str, body: bytes | None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, "/mcp", body=body, headers=headers(port, session))
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def redis_sessions(redis_port: int) -> int:
    """How many keys Redis holds (the sessions' records and their index)."""
    cli = shutil.which("redis-cli") or "redis-cli"
    out = subprocess.run([cli, "-p", str(redis_port), "dbsize"], check=True, capture_output=True, text=True)
    return int(out.stdout.strip())


def run(binary: str, sessions: int) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="cmcp-rss-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        redis_port = free_port()
        redis = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        procs.append(redis)
        wait_listening(redis_port, redis, "redis-server")

        port = free_port()
        config = scratch / "config.toml"
        config.write_text(
            f'[http]\nmax_sessions = {2 * (sessions + WARM_UP)}\n\n[store]\nurl = "redis://127.0.0.1:{redis_port}/0"\n'
        )
        server = subprocess.Popen(
            [binary, "serve", "--config", str(config), "--http", f"127.0.0.1:{port}", "--root", str(scratch),
             "--no-rate-limit"],
            stderr=subprocess.DEVNULL,
        )
        procs.append(server)
        wait_listening(port, server, "the instance")

        first = open_sessions(port, WARM_UP)[0]
        before = rss_kib(server.pid)
        open_sessions(port, sessions)
        after = rss_kib(server.pid)
        growth_mib = (after - before) / 1024
        print(f"VmRSS after {WARM_UP} warm-up sessions: {before} KiB; after {sessions} more: {after} KiB "
              f"(+{growth_mib:.1f} MiB)")
        check(growth_mib < LIMIT_MIB, f"{sessions} idle sessions grew RSS by {growth_mib:.1f} MiB (limit {LIMIT_MIB})")

        keys = redis_sessions(redis_port)
        check(keys >= sessions + WARM_UP, f"Redis holds {keys} keys for {sessions + WARM_UP} sessions")

        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        status, body = request(port, "POST", first, ping)
        check(status == 200 and b'"result"' in body, f"ping on the first session: HTTP {status} {body[:200]!r}")
        status, _ = request(port, "DELETE", first, None)
        check(status in (200, 204), f"DELETE of the first session: HTTP {status}")
        status, _ = request(port, "POST", first, ping)
        check(status == 404, f"ping after DELETE: HTTP {status}, wanted 404")
        print(f"ok: {sessions} idle sessions cost {growth_mib:.1f} MiB of RSS (< {LIMIT_MIB}); Redis holds "
              f"{keys} keys; an evicted session is rebuilt from its record, and DELETE ends it")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print("usage: sessions_rss.py PATH_TO_CODOMYRMEX_MCP [SESSIONS]", file=sys.stderr)
        sys.exit(2)
    try:
        run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 100_000)
    except Mismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        sys.exit(1)
    print("sessions_rss: all checks passed")
