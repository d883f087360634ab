#!/usr/bin/env python3
"""Cold start of `codomyrmex-mcp serve` over stdio: the time from spawning the process to
reading its `initialize` response, as the median (and range) of several runs.

Usage: scripts/cold-start.py [BINARY] [RUNS]
  BINARY defaults to target/release/codomyrmex-mcp, RUNS to 21.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "target/release/codomyrmex-mcp")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 21
init = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "cold-start", "version": "0"}},
}) + "\n"

times = []
with tempfile.TemporaryDirectory() as project:
    for _ in range(runs):
        start = time.perf_counter()
        p = subprocess.Popen([binary, "serve", "--root", project], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        p.stdin.write(init.encode())
        p.stdin.flush()
        line = p.stdout.readline()
        elapsed = time.perf_counter() - start
        p.stdin.close()
        p.wait(timeout=30)
        if json.loads(line).get("id") != 1:
            sys.exit(f"unexpected answer: {line!r}")
        times.append(elapsed * 1000)

print(f"{binary}: {os.path.getsize(binary) / 1e6:.1f} MB; cold start to the initialize "
      f"response: median {statistics.median(times):.2f} ms over {runs} runs "
      f"(min {min(times):.2f}, max {max(times):.2f})")
