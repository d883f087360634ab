#!/usr/bin/env bash
# Interop test: the library's McpClient against servers nobody here wrote, beyond
# client_everything.sh's stdio run:
#
# - `codomyrmex-mcp client --http` against the official `server-everything` in its Streamable
#   HTTP mode (a 2025-11-25 server with sessions): era fallback over HTTP, tools, calls,
#   progress, prompts, resources, ping;
# - `codomyrmex-mcp client --stdio` against the official `server-filesystem`: it takes the
#   client's roots (the working directory) as its allowed directories, so writes, reads and
#   listings there work and a path outside them is refused;
# - the library example `input_roundtrips` against a server on the official Python SDK
#   (tests/interop/python_sdk_server.py): sampling, form elicitation and roots answered by the
#   client's handlers, in both eras (the SDK's 2026-07-28 InputRequiredResult round trips and
#   its 2025-11-25 server-to-client requests).
#
# Installs the Node servers through node_servers.sh and the pinned Python SDK through
# setup.sh (both under .ci/cache). The HTTP server listens on 127.0.0.1 on a port the OS picked.
#
#   bash tests/interop/client_interop.sh
set -euo pipefail

# shellcheck source=tests/interop/node_servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/node_servers.sh"
# shellcheck source=tests/interop/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

# setup.sh built it (debug_build.sh).
roundtrips="$target_dir/debug/examples/input_roundtrips"

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() { # NAME EXPECTED-STATUS NEEDLE-IN-OUTPUT DIR ARGS...
    local name=$1 want=$2 needle=$3 dir=$4; shift 4
    local rc=0
    (cd "$dir" && timeout 120 "$binary" client --timeout 60 "$@") \
        >"$work/out" 2>"$work/err" || rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -qF -- "$needle" "$work/out" "$work/err"; then
        echo "  FAIL $name: status $rc (want $want), looking for: $needle" >&2
        sed 's/^/    | /' "$work/out" "$work/err" | head -20 >&2
        failures=$((failures + 1))
    else
        echo "  ok   $name"
    fi
}

# --- server-everything over Streamable HTTP ------------------------------------------------
port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
echo "client-interop: server-everything $EVERYTHING_VERSION over Streamable HTTP on port $port"
PORT="$port" "$node" "$server" streamableHttp >"$work/http.log" 2>&1 &
server_pid=$!
deadline=$((SECONDS + 60))
until grep -q "listening on port $port" "$work/http.log"; do
    if ! kill -0 "$server_pid" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
        echo "client-interop: server-everything did not start:" >&2
        sed 's/^/    | /' "$work/http.log" >&2
        exit 1
    fi
    sleep 0.2
done
url="http://127.0.0.1:$port/mcp"
check "http: tools (auto falls back to initialize)" 0 "get-sum" "$work" --http "$url" tools
check "http: --era modern says what to do" 6 "use --era auto" "$work" --http "$url" --era modern tools
check "http: call with KEY=VALUE numbers" 0 "The sum of 2 and 3 is 5." "$work" --http "$url" call get-sum a=2 b=3
check "http: call with --args" 0 "Echo: hi" "$work" --http "$url" call echo --args '{"message": "hi"}'
check "http: progress on stderr" 0 "progress: 3/3" "$work" --http "$url" call trigger-long-running-operation duration=1 steps=3
check "http: prompt with arguments" 0 "Paris" "$work" --http "$url" prompt args-prompt city=Paris
check "http: resources" 0 "demo://resource/static/document/" "$work" --http "$url" resources
check "http: an unknown tool is a tool error" 1 "not found" "$work" --http "$url" call no-such-tool
check "http: ping" 0 "ok" "$work" --http "$url" ping
kill "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""

# --- server-filesystem over stdio ----------------------------------------------------------
echo "client-interop: server-filesystem $FILESYSTEM_VERSION over stdio"
mkdir -p "$work/fs" "$work/outside"
echo "not yours" >"$work/outside/secret.txt"
fs_dir="$(cd "$work/fs" && pwd -P)"
fs="'$node' '$filesystem_server' '$fs_dir'"
check "fs: the allowed directory is the client's root" 0 "$fs_dir" "$fs_dir" --stdio "$fs" call list_allowed_directories
check "fs: write a file" 0 "Successfully wrote" "$fs_dir" --stdio "$fs" call write_file path="$fs_dir/note.txt" content="written through codomyrmex"
check "fs: read it back" 0 "written through codomyrmex" "$fs_dir" --stdio "$fs" call read_text_file path="$fs_dir/note.txt"
check "fs: list the directory" 0 "[FILE] note.txt" "$fs_dir" --stdio "$fs" call list_directory path="$fs_dir"
check "fs: a path outside the roots is refused" 1 "Access denied" "$fs_dir" --stdio "$fs" call read_text_file path="$work/outside/secret.txt"

# --- a Python SDK server asking for sampling, elicitation and roots ------------------------
for era in legacy auto; do
    echo "client-interop: Python SDK server, input round trips ($era)"
    if ! timeout 120 "$roundtrips" "$era" "$venv/bin/python" "$root/tests/interop/python_sdk_server.py"; then
        echo "  FAIL the Python SDK input round trips ($era)" >&2
        failures=$((failures + 1))
    fi
done

if [ "$failures" -ne 0 ]; then
    echo "client-interop: $failures check(s) failed" >&2
    exit 1
fi
echo "client-interop: every check passed"
