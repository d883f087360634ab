#!/usr/bin/env bash
# Interop test: `codomyrmex-mcp client` (the library's McpClient) drives the official
# `@modelcontextprotocol/server-everything` over stdio, a 2025-11-25 server nobody here wrote:
# era fallback (and the hint for --era modern), tools with KEY=VALUE arguments, --env, roots
# (the client declares its working directory), progress on stderr, prompts, completion,
# resources and exit statuses.
#
# Installs (idempotent, pinned) Node 22 and the server into .ci/cache/everything through
# node_servers.sh. Needs the machine's npm for that.
#
#   bash tests/interop/client_everything.sh [PATH_TO_CODOMYRMEX_MCP]
set -euo pipefail

# shellcheck source=tests/interop/node_servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/node_servers.sh"

binary="${1:-}"
if [ -z "$binary" ]; then
    echo "client-everything: building codomyrmex-mcp"
    # shellcheck source=tests/interop/debug_build.sh
    source "$(dirname "${BASH_SOURCE[0]}")/debug_build.sh"
    binary="$target_dir/debug/codomyrmex-mcp"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stdio="'$node' '$server' stdio"
failures=0
check() { # NAME EXPECTED-STATUS NEEDLE-IN-OUTPUT ARGS...
    local name=$1 want=$2 needle=$3; shift 3
    local rc=0
    (cd "$work" && timeout 120 "$binary" client --stdio "$stdio" --timeout 60 "$@") \
        >"$work/out" 2>"$work/err" || rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -qF -- "$needle" "$work/out" "$work/err"; then
        echo "  FAIL $name: status $rc (want $want), looking for: $needle" >&2
        sed 's/^/    | /' "$work/out" "$work/err" | head -20 >&2
        failures=$((failures + 1))
    else
        echo "  ok   $name"
    fi
}

echo "client-everything: server-everything $EVERYTHING_VERSION against $binary"
check "tools (auto falls back to initialize)" 0 "get-sum" tools
check "--era modern says what to do" 6 "use --era auto" --era modern tools
check "call with KEY=VALUE numbers" 0 "The sum of 2 and 3 is 5." call get-sum a=2 b=3
check "call with --args" 0 "Echo: hi" call echo --args '{"message": "hi"}'
check "--env reaches the server" 0 '"FOO_FROM_CLIENT": "bar"' --env FOO_FROM_CLIENT=bar call get-env
check "roots: the working directory" 0 "file://$work" call get-roots-list
check "progress on stderr" 0 "progress: 3/3" call trigger-long-running-operation duration=1 steps=3
check "prompt with arguments" 0 "Paris" prompt args-prompt city=Paris
check "completion" 0 "Engineering" complete --prompt completable-prompt department E
check "resources" 0 "demo://resource/static/document/" resources
check "an unknown tool is a tool error here" 1 "not found" call no-such-tool
check "a bad argument is a usage error" 2 "a=two" call get-sum a=two b=3
check "ping" 0 "ok" ping

if [ "$failures" -ne 0 ]; then
    echo "client-everything: $failures check(s) failed" >&2
    exit 1
fi
echo "client-everything: every check passed"
