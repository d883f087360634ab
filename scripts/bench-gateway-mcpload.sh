#!/usr/bin/env bash
# Issue #31 item 6: a server directly against the same server behind `codomyrmex-mcp gateway`
# with `[[policy]]` rules, at 64 calls in flight, measured by the neutral load tool mcpload
# (16 B `echo` calls, every answer verified; it reports calls/s and the CPU of the whole
# process tree it started: the gateway and its upstream together).
#
#   MCPLOAD=/path/to/mcpload scripts/bench-gateway-mcpload.sh
#
# mcpload is not part of this repository: build it where it lives, out of this tree, and point
# MCPLOAD at the binary. Other settings (environment):
#   BIN       the gateway binary (target/release/codomyrmex-mcp)
#   ECHO      the server (target/release/examples/echo: the `echo` tool, no rate limit)
#   ROUNDS    rounds, each running every subject once, in one order (5); figures are medians
#   N         calls per run (20000; mcpload also stops a run after 5 s)
#   INFLIGHT  calls in flight: stdio requests, or HTTP connections (64)
#   CASES     which transports ("stdio http")
#
# Subjects, per transport, interleaved round by round:
#   direct    the `echo` example itself (`--stdio`, or `--http 127.0.0.1:PORT`)
#   gateway   `gateway --no-rate-limit` with `echo --stdio` as its upstream `up`
#             (max_concurrent = INFLIGHT) and the 15 rules below (three principals; over stdio
#             and over HTTP without authentication the caller is the local one, `dev`)
#   nopolicy  the same gateway without the rules
# mcpload calls `echo`: the gateway resolves the bare name to `up.echo` (one upstream serves
# it), and its policy judges `up.echo`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${MCPLOAD:?set MCPLOAD to the mcpload binary}"
BIN="${BIN:-$root/target/release/codomyrmex-mcp}"
ECHO="${ECHO:-$root/target/release/examples/echo}"
ROUNDS="${ROUNDS:-5}"
N="${N:-20000}"
INFLIGHT="${INFLIGHT:-64}"
CASES="${CASES:-stdio http}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

upstream="[[upstream]]
name = \"up\"
command = \"$ECHO\"
args = [\"--stdio\"]
max_concurrent = $INFLIGHT
"
printf '%s' "$upstream" >"$work/nopolicy.toml"
{
  printf '%s\n' "$upstream"
  cat <<'EOF'
# dev: the local caller (stdio, HTTP without authentication)
[[policy]]
name = "dev"
local = true
tools = ["up.read_*", "up.list_*"]

[[policy]]
name = "dev"
local = true
prompts = ["up.*"]
resources = ["up+file:///srv/dev/*"]

[[policy]]
name = "dev"
local = true
tools = ["up.e*o", "up.search"]

# admin: by subject
[[policy]]
name = "admin"
subjects = ["alice", "ops-*"]
tools = ["*"]
prompts = ["*"]
resources = ["*"]

[[policy]]
name = "admin"
subjects = ["svc-backup"]
tools = ["up.read_*", "up.write_*"]

[[policy]]
name = "admin"
subjects = ["bob"]
scopes = ["mcp:admin"]
tools = ["*"]

[[policy]]
name = "admin"
subjects = ["carol"]
claims = { role = "admin" }
skills = ["*"]
apps = ["ui://*"]

# team: by claim and scope
[[policy]]
name = "team"
claims = { team = "docs" }
tools = ["up.read_*", "up.search"]
resources = ["up+file:///srv/docs/*"]

[[policy]]
name = "team"
claims = { team = "docs", "org.unit" = "eng-*" }
prompts = ["up.summarize", "up.explain"]

[[policy]]
name = "team"
scopes = ["mcp:tools"]
tools = ["up.echo", "up.list_*"]

[[policy]]
name = "team"
scopes = ["mcp:prompts"]
prompts = ["up.*"]

[[policy]]
name = "team"
claims = { team = "qa" }
tools = ["up.test_*", "up.read_*"]

[[policy]]
name = "team"
claims = { team = "qa" }
scopes = ["mcp:write"]
tools = ["up.write_*"]

[[policy]]
name = "team"
subjects = ["intern-*"]
claims = { team = "docs" }
tools = ["up.read_file"]

[[policy]]
name = "team"
claims = { groups = "mcp-users" }
resources = ["up+file:///srv/shared/*"]
EOF
} >"$work/gateway.toml"
echo "rules: $(grep -c '^\[\[policy\]\]' "$work/gateway.toml"), principals: $(grep '^name = "' "$work/gateway.toml" | grep -v '"up"' | sort -u | wc -l)" >&2

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run() { # transport subject round
  local transport=$1 subject=$2 round=$3 out
  local -a server
  local port=""
  [ "$transport" = http ] && port=$(free_port)
  case $subject in
    direct) server=("$ECHO") ;;
    gateway) server=("$BIN" gateway --config "$work/gateway.toml" --no-rate-limit) ;;
    nopolicy) server=("$BIN" gateway --config "$work/nopolicy.toml" --no-rate-limit) ;;
  esac
  if [ "$transport" = stdio ]; then
    [ "$subject" = direct ] && server+=(--stdio)
    out=$("$MCPLOAD" stdio --n "$N" --inflight "$INFLIGHT" --label "$subject" -- "${server[@]}") || true
  else
    server+=(--http "127.0.0.1:$port")
    out=$("$MCPLOAD" http --url "http://127.0.0.1:$port/mcp" --n "$N" --conns "$INFLIGHT" \
      --label "$subject" -- "${server[@]}") || true
  fi
  printf '%s\t%s\t%s\n' "$transport" "$round" "$out" | tee -a "$work/runs.tsv" >&2
}

for round in $(seq 1 "$ROUNDS"); do
  for transport in $CASES; do
    for subject in direct gateway nopolicy; do
      run "$transport" "$subject" "$round"
    done
  done
done

python3 - "$work/runs.tsv" "$INFLIGHT" <<'EOF'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    transport, _, raw = line.rstrip("\n").split("\t", 2)
    r = json.loads(raw)
    if "fail" in r or r.get("errors"):
        print(f"FAILED: {transport} {r}")
        continue
    runs.setdefault((transport, r["label"]), []).append(r)
print(f"| transport | subject | calls/s at {sys.argv[2]} in flight (CPU µs/call) | × direct |")
print("|---|---|---:|---:|")
for transport in ("stdio", "http"):
    d = runs.get((transport, "direct"))
    if not d:
        continue
    base = statistics.median(r["cps"] for r in d)
    for subject in ("direct", "gateway", "nopolicy"):
        rs = runs.get((transport, subject))
        if not rs:
            continue
        cps = statistics.median(r["cps"] for r in rs)
        cpu = statistics.median(r["cpu_us_per_call"] for r in rs)
        print(f"| {transport} | {subject} | {cps:,.0f} ({cpu:.1f}) | {cps / base:.2f}× |")
EOF
