#!/usr/bin/env bash
# Interop test: `codomyrmex-mcp gateway` mounting, in one gateway, servers nobody here wrote
# and our own:
#
# - `everything`: the official server-everything over stdio (a 2025-11-25 server);
# - `files`: the official server-filesystem over stdio, allowed one temporary directory;
# - `old` and `new`: `codomyrmex-mcp serve --http 127.0.0.1:0`, spoken to in 2025-11-25
#   (`era = "legacy"`) and in 2026-07-28 (`era = "modern"`).
#
# Driven by the official Python SDK client (gateway_interop.py: both eras, a sampling and an
# elicitation round trip across the era bridge, the restart of a killed child) and by MCP
# Inspector's CLI over stdio (tools/list and tools/call of every upstream), in both eras
# (`--protocol-era legacy` and `--protocol-era modern`).
#
# Installs the Node servers (node_servers.sh), the Python SDK (setup.sh) and the Inspector
# (inspector_setup.sh) under .ci/cache. Our servers listen on 127.0.0.1 on ports the OS picked.
#
#   bash tests/interop/gateway_interop.sh
set -euo pipefail

# shellcheck source=tests/interop/node_servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/node_servers.sh"
# shellcheck source=tests/interop/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# shellcheck source=tests/interop/inspector_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/inspector_setup.sh"

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Starts `serve --http 127.0.0.1:0` and sets `url` (from its stderr) once it listens. Its root
# is a small directory: the repository's thousands of files as resources would take the
# gateway longer to list than its start-up wait on a busy machine, and the Inspector lists
# at once, without waiting for `list_changed`.
mkdir -p "$work/ours"
echo "a file of ours" >"$work/ours/a.txt"
start_ours() { # NAME
    "$binary" serve --http 127.0.0.1:0 --root "$work/ours" </dev/null >/dev/null 2>"$work/$1.log" &
    pids+=($!)
    local deadline=$((SECONDS + 60))
    url=""
    until url="$(grep -oE 'http://127\.0\.0\.1:[0-9]+/mcp' "$work/$1.log" | head -1)" && [ -n "$url" ]; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "gateway-interop: $1 did not start:" >&2
            sed 's/^/    | /' "$work/$1.log" >&2
            exit 1
        fi
        sleep 0.1
    done
}
start_ours old
old_url="$url"
start_ours new
new_url="$url"
mkdir -p "$work/files"
files="$(cd "$work/files" && pwd -P)"

config="$work/gateway.toml"
cat >"$config" <<EOF
[[upstream]]
name = "everything"
command = "$node"
args = ["$server", "stdio"]
health_check_secs = 1

[[upstream]]
name = "files"
command = "$node"
args = ["$filesystem_server", "$files"]

[[upstream]]
name = "old"
url = "$old_url"
era = "legacy"

[[upstream]]
name = "new"
url = "$new_url"
era = "modern"
EOF
echo "gateway-interop: server-everything $EVERYTHING_VERSION, server-filesystem $FILESYSTEM_VERSION, ours at $old_url (2025-11-25) and $new_url (2026-07-28)"

echo "gateway-interop: the Python SDK client"
"$venv/bin/python" "$root/tests/interop/gateway_interop.py" "$binary" "$config" "$files"

export MCP_CATALOG_PATH="$work/catalog.json" HOME="$work"
# The Inspector's own options first: after `--`, its `--config` is the gateway's.
run_inspector() {
    timeout 120 "$inspector_node" "$inspector" --cli --connect-timeout 60000 --protocol-era "$era" "$@" -- "$binary" gateway --config "$config"
}
inspector_call() { # NEEDLE TOOL ARGS...
    local needle=$1 tool=$2; shift 2
    local args=()
    for a in "$@"; do args+=(--tool-arg "$a"); done
    run_inspector --method tools/call --tool-name "$tool" "${args[@]}" >"$work/call.json" 2>"$work/call.err" \
        || { cat "$work/call.err" >&2; echo "inspector ($era): tools/call $tool failed" >&2; exit 1; }
    if ! grep -qF -- "$needle" "$work/call.json" || grep -q '"isError": true' "$work/call.json"; then
        cat "$work/call.json" >&2
        echo "inspector ($era): tools/call $tool: no $needle" >&2
        exit 1
    fi
    echo "ok: inspector ($era): tools/call $tool"
}
for era in legacy modern; do
    echo "gateway-interop: MCP Inspector's CLI over stdio (--protocol-era $era)"
    run_inspector --method tools/list >"$work/list.json" 2>"$work/list.err" \
        || { cat "$work/list.err" >&2; exit 1; }
    "$inspector_node" -e '
const names = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).tools.map(t => t.name);
for (const want of ["everything.echo", "files.list_directory", "old.codomyrmex.list_registered_tools", "new.codomyrmex.list_registered_tools"]) {
  if (!names.includes(want)) { console.error(`inspector (${process.argv[2]}): tools/list lacks ${want}: ${names}`); process.exit(1); }
}
console.log(`ok: inspector (${process.argv[2]}): tools/list (${names.length} tools from 4 upstreams)`);
' "$work/list.json" "$era"
    inspector_call "Echo: through the gateway" everything.echo "message=through the gateway"
    inspector_call "[FILE]" files.list_directory "path=$files"
    inspector_call "file_system.read" old.codomyrmex.list_registered_tools
    inspector_call "file_system.read" new.codomyrmex.list_registered_tools
done
echo "gateway interop: all checks passed"
