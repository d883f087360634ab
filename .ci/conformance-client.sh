#!/usr/bin/env bash
# Runs the client scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance@0.2.0-alpha.12, the `client` command) against the
# library's `conformance_client` example (built on McpClient), for the 2025-11-25 and
# 2026-07-28 requirement sets. The suite starts one mock server per scenario and runs
# `target/debug/examples/conformance_client URL` with MCP_CONFORMANCE_SCENARIO set.
#
# A scenario fails when any of its checks is a FAILURE (warnings are reported, not fatal).
# Every scenario that ran is gated, scored or not, and every scenario the requirement set
# names must have run, except those listed in .ci/conformance-client-expected-failures.txt
# (one scenario name per line with its reason after `#`; a line `QUALIFIER:scenario` applies
# only to suites whose label contains QUALIFIER). The script prints one line per scenario and
# a summary line per suite, and exits non-zero on any unexpected failure.
#
# Installs what it needs into .ci/cache (idempotent, shared with .ci/conformance.sh): Node 22
# and the pinned suite. Environment: CONFORMANCE_KEEP=DIR keeps the raw results under DIR;
# CONFORMANCE_CACHE=DIR installs into DIR instead of .ci/cache;
# CONFORMANCE_CLIENT_SUITES="2025-11-25 2026-07-28" selects requirement sets;
# CONFORMANCE_CLIENT_BIN=PATH runs that conformance_client instead of building one.
#
# Extension scenarios the requirement sets leave out but the suite runs (the Skills
# extension's `sep-2640-client-*`, SEP-2640) are run one by one at each revision
# (`--scenario --spec-version REVISION --force`), written to the same results and required
# like the rest. Each must also end with every check a SUCCESS: a client that never lists
# skills gets only SKIPPED checks, which the judge alone would count as a pass.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CONFORMANCE_CACHE:-.ci/cache}
# shellcheck source=.ci/conformance-lib.sh
source .ci/conformance-lib.sh
EXPECTED=.ci/conformance-client-expected-failures.txt
SUITES=${CONFORMANCE_CLIENT_SUITES:-"2025-11-25 2026-07-28"}
JS=$(conformance_js conf02)

EXTENSION_SCENARIOS_RE='^sep-2640-client-'

# Fails unless the scenario's checks.json under DIR has checks and all are SUCCESS.
all_succeeded() { # DIR SCENARIO
  "$NODE" -e '
    const fs = require("fs"), path = require("path");
    const [dir, name] = process.argv.slice(1);
    const runs = fs.readdirSync(dir).filter((d) => d.startsWith(name + "-"));
    const checks = runs.flatMap((d) => {
      const f = path.join(dir, d, "checks.json");
      return fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, "utf8")) : [];
    });
    const bad = checks.filter((c) => c.status !== "SUCCESS").map((c) => `${c.id} ${c.status}`);
    if (checks.length === 0 || bad.length > 0) {
      console.log(`FAIL ${name}: ${checks.length === 0 ? "no checks" : bad.join(", ")}`);
      process.exit(1);
    }' "$1" "$2"
}

install_suites conf02
if [ -n "${CONFORMANCE_CLIENT_BIN:-}" ]; then
  # A client already built (for a local run): nothing is built.
  CLIENT=$(realpath "$CONFORMANCE_CLIENT_BIN")
else
  log "building the conformance client (debug)"
  # The debug build of tests/interop/debug_build.sh, which CI's `cargo test` has already made
  # (see .ci/conformance.sh).
  # shellcheck source=tests/interop/debug_build.sh
  source tests/interop/debug_build.sh
  CLIENT="$target_dir/debug/examples/conformance_client"
fi

if [ -n "${CONFORMANCE_KEEP:-}" ]; then
  WORK=$CONFORMANCE_KEEP
  rm -rf "$WORK"
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi

SUMMARY=()
FAILED=0
for revision in $SUITES; do
  label="conformance@$CONF02_VERSION client $revision"
  out="$WORK/$revision"
  mkdir -p "$out/results"
  log "$label"
  list_scenarios "$JS" client --requirements "$revision" >"$out/required.txt"
  # The CLI's exit status also counts the expected failures; the verdict is the judge's.
  timeout 1800 "$NODE" "$JS" client --command "$CLIENT" --requirements "$revision" \
    -o "$out/results" >"$out/output.log" 2>&1 || true
  rc=0
  for scenario in $(list_scenarios "$JS" client | grep -E "$EXTENSION_SCENARIOS_RE"); do
    echo "$scenario" >>"$out/required.txt"
    timeout 300 "$NODE" "$JS" client --command "$CLIENT" --scenario "$scenario" \
      --spec-version "$revision" --force -o "$out/results" >>"$out/output.log" 2>&1 || true
    all_succeeded "$out/results" "$scenario" || rc=1
  done
  result=$(judge client "$label" "$out/results" "$out/required.txt" "$EXPECTED") || rc=$?
  printf '%s\n' "$result"
  SUMMARY+=("$(printf '%s\n' "$result" | tail -1)")
  if [ "$rc" -ne 0 ]; then
    FAILED=1
    log "$label: unexpected failures (CONFORMANCE_KEEP=DIR keeps the suite's raw output)"
  fi
done

echo
echo "=== client conformance summary ==="
printf '%s\n' "${SUMMARY[@]}"
exit "$FAILED"
