#!/usr/bin/env bash
# Instructions per call of the echo example's server, counted by callgrind (valgrind), for the
# stdio and the Streamable HTTP echo paths. Instruction counts do not depend on the machine's
# load, so this may run while other work competes for the cores; it is no calls/s benchmark.
#
#   scripts/callgrind.sh                 # build release binaries, count, print the table
#   NO_BUILD=1 scripts/callgrind.sh      # use the binaries already in $CARGO_TARGET_DIR/release
#   ECHO=/path/to/echo scripts/callgrind.sh   # count another build of the echo example
#
# Method: each case runs twice on a fresh server process under callgrind, with A and B
# measured calls (no warm-up); the server's total instruction count (every thread, start-up
# and shutdown included) is read from callgrind's `totals:` line, and the figure is
# (total(B) - total(A)) / (B - A): start-up, registration and shutdown cancel out.
# stdio: `stdio_load`, 16 B calls (one in flight and 64 in flight) and 64 KiB calls (one in
# flight), with the input spin off (CODOMYRMEX_MCP_STDIO_SPIN_US=0): spinning is instructions
# spent waiting, which would make the count depend on the client's timing. HTTP: `http_load`, 16 B
# calls on one keep-alive connection, at 2026-07-28 (stateless) and 2025-11-25 (a session),
# with its input spin off too (CODOMYRMEX_MCP_HTTP_SPIN_US=0), for the same reason.
# tools/list: A and B `tools/list` lines (each era) written to the stdio server's input at once.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="${CARGO_TARGET_DIR:-$root/target}/release"
if [[ -z "${NO_BUILD:-}" ]]; then
    cargo build --release --quiet -p codomyrmex-mcp --example echo
    cargo build --release --quiet -p codomyrmex-mcp-bench --bin stdio_load --bin http_load
fi
echo_bin="${ECHO:-$bin/examples/echo}"
a="${CALLS_A:-200}"
b="${CALLS_B:-1200}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

totals() { sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$1"; }

# The wrapper http_load starts as its subject: callgrind in the background, so that the
# tool's kill (SIGKILL) ends only this shell; the server is then stopped with SIGINT, which
# lets it exit normally and callgrind write its counts.
cat > "$work/http-wrap.sh" <<EOF
#!/usr/bin/env bash
CODOMYRMEX_MCP_HTTP_SPIN_US=0 valgrind --tool=callgrind --callgrind-out-file="\$2" "$echo_bin" --http "\$1" 2>/dev/null &
echo \$! > "\$2.pid"
wait
EOF
chmod +x "$work/http-wrap.sh"

stdio_case() { # size in_flight calls -> total instructions
    local out="$work/stdio.$1.$2.$3"
    CODOMYRMEX_MCP_STDIO_SPIN_US=0 "$bin/stdio_load" --case "$1:$2:$3" --warmup 0 \
        --cold-starts 0 --rounds 1 --timeout 600 \
        --subject "cg=valgrind --tool=callgrind --callgrind-out-file=$out $echo_bin --stdio" \
        > /dev/null 2>&1
    totals "$out"
}

http_case() { # era calls -> total instructions
    local out="$work/http.$1.$2"
    "$bin/http_load" --case "16:1:$2" --warmup 0 --rounds 1 --timeout 600 \
        --subject "cg:$1=$work/http-wrap.sh 127.0.0.1:{port} $out" > /dev/null 2>&1 || true
    local pid
    pid="$(cat "$out.pid")"
    kill -INT "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    totals "$out"
}

list_case() { # era calls -> total instructions: `tools/list` lines, all written at once
    local out="$work/list.$1.$2" input="$work/list.in.$1.$2" i
    {
        if [[ "$1" == legacy ]]; then
            printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cg","version":"1"}}}'
        fi
        for ((i = 1; i <= $2; i++)); do
            if [[ "$1" == legacy ]]; then
                printf '{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n' "$i"
            else
                printf '{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}\n' "$i"
            fi
        done
    } > "$input"
    CODOMYRMEX_MCP_STDIO_SPIN_US=0 valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$echo_bin" --stdio < "$input" > /dev/null 2>&1
    totals "$out"
}

per_call() { echo $(( ($2 - $1) / (b - a) )); }

echo "| path | instructions per call |"
echo "|---|---:|"
for c in "16 1 16 B" "16 64 16 B" "65536 1 64 KiB"; do
    read -r size k label <<< "$c"
    ta="$(stdio_case "$size" "$k" "$a")"; tb="$(stdio_case "$size" "$k" "$b")"
    echo "| stdio, $label, $k in flight | $(per_call "$ta" "$tb") |"
done
for era in modern legacy; do
    ta="$(http_case "$era" "$a")"; tb="$(http_case "$era" "$b")"
    echo "| HTTP $era, 16 B, 1 connection | $(per_call "$ta" "$tb") |"
done
for era in modern legacy; do
    ta="$(list_case "$era" "$a")"; tb="$(list_case "$era" "$b")"
    echo "| stdio $era, tools/list (one tool), lines written at once | $(per_call "$ta" "$tb") |"
done
