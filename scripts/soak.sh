#!/usr/bin/env bash
# Soak test over Streamable HTTP on loopback: N concurrent clients for M minutes with a mix of
# calls of both eras (tools/list, tools/call, resources/read, a slow tool, an SSE stream)
# against a server in its own process. Reports calls/s, the error count (must be 0), latency
# percentiles and the server's RSS over time; exits non-zero if any call failed.
#
#   scripts/soak.sh [CLIENTS] [MINUTES]     (default: 8 clients, 1 minute)
#
# Environment: SAMPLE (seconds between RSS samples, default 10), SLOW_MS (the slow tool's
# sleep, default 50), OUT (where to keep the report, default target/soak/soak-<time>.txt),
# NO_BUILD=1 (use target/release/soak as it is).
# The driver is crates/codomyrmex-mcp-bench/src/bin/soak.rs. Other builds compete for the
# cores: run it on a quiet machine and quote figures from one run.
set -euo pipefail
cd "$(dirname "$0")/.."

clients="${1:-${CLIENTS:-8}}"
minutes="${2:-${MINUTES:-1}}"
sample="${SAMPLE:-10}"
slow_ms="${SLOW_MS:-50}"
out="${OUT:-target/soak/soak-$(date -u +%Y%m%dT%H%M%SZ).txt}"
mkdir -p "$(dirname "$out")"

if [ -z "${NO_BUILD:-}" ]; then
  echo "building target/release/soak..." >&2
  cargo build --release --quiet -p codomyrmex-mcp-bench --bin soak
fi

status=0
{
  echo "# scripts/soak.sh $clients $minutes  ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
  target/release/soak --clients "$clients" --seconds "$((minutes * 60))" --sample "$sample" --slow-ms "$slow_ms"
} 2>&1 | tee "$out" || status=$?
echo "report kept in $out" >&2
exit "$status"
