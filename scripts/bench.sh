#!/usr/bin/env bash
# Whole-process stdio benchmark: codomyrmex-mcp's echo example against the same echo tool on
# rmcp and against a bare serde_json echo loop, in ONE run so that the ratios are comparable.
#
#   scripts/bench.sh                 # build release, run, print the markdown table
#   ROUNDS=5 scripts/bench.sh        # more rounds (each figure is the median over rounds)
#   QUICK=1 scripts/bench.sh         # fewer calls, for a smoke test
#   NO_BUILD=1 scripts/bench.sh      # use the release binaries already in target/release
#
# Subjects (all release builds, started directly, never through `cargo run`):
#   codomyrmex  target/release/examples/echo_stdio          (crates/codomyrmex-mcp/examples/echo_stdio.rs:
#                                                            echo.rs's server, stdio only, as rmcp_echo)
#   rmcp        target/release/rmcp_echo                     (rmcp::transport::stdio(), the README's stdio transport)
#   rmcp-pipes  target/release/rmcp_echo --pipes             (rmcp::transport::stdio_pipes(); shown for reference)
#   bare        target/release/bare_echo                     (the yardstick of the issue's ratios)
#
# Cases, as in the issue's table: 16 B calls one in flight; 16 B calls 64 in flight; 64 KiB
# payloads (one in flight). The targets are checked for codomyrmex against rmcp; the exit status
# is 3 when one is missed (the table is printed either way).
#
# Other builds compete for the 2 cores: run this on a quiet machine, and quote ratios from one
# run only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

rounds="${ROUNDS:-3}"
if [[ -n "${QUICK:-}" ]]; then
    n_seq=2000 n_pipe=5000 n_big=300 warmup=200 colds=3
else
    n_seq=20000 n_pipe=60000 n_big=3000 warmup=2000 colds=10
fi

# PROFILE=profiling builds and runs the subjects with symbols and line tables (for perf or
# callgrind); the default, release, ships without them.
profile="${PROFILE:-release}"
if [[ -z "${NO_BUILD:-}" ]]; then
    echo "building release binaries..." >&2
    cargo build --profile "$profile" --quiet -p codomyrmex-mcp --example echo_stdio
    cargo build --profile "$profile" --quiet -p codomyrmex-mcp-bench --bins
fi

bin="${CARGO_TARGET_DIR:-$root/target}/$profile"
for f in "$bin/examples/echo_stdio" "$bin/rmcp_echo" "$bin/bare_echo" "$bin/stdio_load"; do
    [[ -x "$f" ]] || { echo "missing $f" >&2; exit 1; }
done

echo "## stdio round trips"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(nproc) cores, $(uname -sr), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "- load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck source=scripts/spinners.sh
source "$root/scripts/spinners.sh"
trap stop_spinners EXIT
start_spinners
echo "- rustc: $(rustc --version)"
echo "- rmcp: $(grep -A1 '^name = "rmcp"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')"
echo "- calls per round: ${n_seq} (16 B, one in flight), ${n_pipe} (16 B, 64 in flight), ${n_big} (64 KiB, one in flight), each after ${warmup} warm-up calls on a fresh server process"
echo "- rounds: ${rounds}, interleaved (every case on every subject in turn); each figure is a subject's median over the rounds"
echo "- server CPU: utime+stime of the server process from /proc (10 ms ticks) over the measured calls; peak RSS: VmHWM"
echo "- cold start (spawn to the first initialize response) is measured in a second run, without the spinners: they slow every process start (rmcp's too) and are there for steady-state round trips only"
echo

subjects=(
    --subject "codomyrmex=$bin/examples/echo_stdio"
    --subject "rmcp=$bin/rmcp_echo"
    --subject "rmcp-pipes=$bin/rmcp_echo --pipes"
    --subject "bare=$bin/bare_echo"
)
status=0
"$bin/stdio_load" \
    "${subjects[@]}" \
    --case "16:1:${n_seq}" \
    --case "16:64:${n_pipe}" \
    --case "64KiB:1:${n_big}" \
    --warmup "$warmup" \
    --cold-starts 0 \
    --rounds "$rounds" \
    --markdown \
    --ratio-to rmcp \
    --ratio-to bare \
    --check codomyrmex=rmcp \
    --targets throughput,rss || status=$?
stop_spinners
echo
echo "### cold start, without spinners"
echo
"$bin/stdio_load" \
    "${subjects[@]}" \
    --case "16:1:200" \
    --warmup 20 \
    --cold-starts "$colds" \
    --rounds "$rounds" \
    --markdown \
    --check codomyrmex=rmcp \
    --targets cold || { s=$?; [[ "$status" -eq 0 ]] && status="$s"; }
echo
echo "- load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
