#!/usr/bin/env bash
# A large real OpenAPI document through the gateway (issue #31 item 4): GitHub's REST API
# description from the pinned npm package @octokit/openapi, installed here at test time
# (nothing of it is committed), mounted as an `openapi` upstream and read by
# `gateway --check --json`. Prints the tool count, the operations left out, and the time
# the check took (reading the 13 MB document, converting every operation, printing).
#
# Usage: tests/interop/openapi_github.sh [BINARY]   (default: target/release/codomyrmex-mcp)
# Needs npm (the npm registry). Exits non-zero if fewer than 900 tools are mounted.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/target/release/codomyrmex-mcp}"
version="23.0.2"
work="${OPENAPI_GITHUB_DIR:-$root/target/openapi-github}"
mkdir -p "$work"
spec="$work/node_modules/@octokit/openapi/generated/api.github.com.json"
if [ ! -f "$spec" ]; then
  npm install --no-audit --no-fund --silent --prefix "$work" "@octokit/openapi@$version" >/dev/null
fi
cat > "$work/gateway.toml" <<TOML
[[upstream]]
name = "github"
openapi = "$spec"
base_url = "https://api.github.com"
TOML
start=$(date +%s%N)
set +e
"$bin" gateway --check --json --config "$work/gateway.toml" > "$work/check.json" 2> "$work/check.err"
code=$?
set -e
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
python3 - "$work/check.json" "$ms" "$code" "$spec" <<'PY'
import json, os, sys
path, ms, code, spec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
out = json.load(open(path))
tools = out["tools"]
problems = out["problems"]
with_output = sum(1 for t in tools if "outputSchema" in t)
print(f"@octokit/openapi api.github.com.json ({os.path.getsize(spec)} bytes): "
      f"{len(tools)} tools ({with_output} with an output schema), "
      f"{len(problems)} operations left out, gateway --check took {ms} ms (exit {code})")
reasons = {}
for p in problems:
    why = p["problem"].split(": ", 1)[-1]
    why = "recursive schema" if "refers to itself" in why else why[:80]
    reasons[why] = reasons.get(why, 0) + 1
for why, n in sorted(reasons.items(), key=lambda x: -x[1])[:5]:
    print(f"  left out, {n}x: {why}")
if out["unreachable"]:
    print("unreachable:", out["unreachable"]); sys.exit(1)
if len(tools) < 900:
    sys.exit(1)
PY
