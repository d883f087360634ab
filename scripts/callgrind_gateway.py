#!/usr/bin/env python3
"""Instructions per call of the `gateway` process (callgrind; independent of the machine's
load): a 2025-11-25 client on its stdio, 16 B `echo` calls one at a time, to one stdio
upstream (the echo example) spoken to in ERA (modern, legacy or auto). Two fresh gateways with
A and B calls; the figure is (total(B) - total(A)) / (B - A), so start-up and shutdown cancel
out. The upstream child is not counted (callgrind does not follow children).

  scripts/callgrind_gateway.py target/profiling/codomyrmex-mcp target/release/examples/echo modern 100 600
"""
import json, os, re, subprocess, sys, tempfile, time
gw, echo, era, a, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
work = tempfile.mkdtemp()
cfg = os.path.join(work, "gateway.toml")
open(cfg, "w").write(f'[[upstream]]\nname = "echo"\ncommand = "{echo}"\nera = "{era}"\n')
def total(n):
    out = os.path.join(work, f"callgrind.{era}.{n}")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={out}", gw, "gateway", "--no-rate-limit", "--config", cfg],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    def send(m):
        p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
    def recv():
        while True:
            m = json.loads(p.stdout.readline())
            if "id" in m: return m
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m", "version": "1"}}})
    recv(); send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    # wait until the echo tool is mounted
    for _ in range(600):
        send({"jsonrpc": "2.0", "id": -1, "method": "tools/list"}); r = recv()
        if "echo.echo" in json.dumps(r): break
        time.sleep(0.05)
    for i in range(1, n + 1):
        send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo.echo", "arguments": {"text": "0123456789abcdef"}}})
        r = recv(); assert "0123456789abcdef" in json.dumps(r), r
    p.stdin.close(); p.wait(timeout=600)
    return int(re.search(r"^totals: (\d+)", open(out).read(), re.M).group(1))
ta, tb = total(a), total(b)
print(f"era={era} instructions/call={(tb - ta) / (b - a):.0f}")
