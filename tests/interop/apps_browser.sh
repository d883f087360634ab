#!/usr/bin/env bash
# Interop test: the Apps example (examples/apps_server.rs) in a real browser, hosted by the
# official host side of MCP Apps, direct and through the gateway.
#
# - The test host (tests/browser/host.html and host.js, bundled here with esbuild) uses
#   `@modelcontextprotocol/ext-apps`'s AppBridge and the official TypeScript client over
#   Streamable HTTP; it renders the app in a sandboxed iframe as hosts do, so the official
#   host side checks the app's side of the protocol.
# - Headless Chromium from the distribution, driven by Selenium (tests/browser/apps_browser.py),
#   renders the app, clicks its Refresh button and checks that the app's `tools/call` reached
#   the server and came back into the page.
# - Cases: `direct` (the example over HTTP, CORS allowing the host page's origin) and
#   `gateway` (`codomyrmex-mcp gateway --http` with the example as the upstream `apps`; the
#   host calls `apps.dashboard.show`, and the app calls the bare `dashboard.refresh`, as the
#   app knows no namespace).
#
# Installs (tests/browser/setup.sh) go to .ci/cache/browser; the debug binary and example come
# from debug_build.sh (nothing to compile after `cargo test`). Every service listens on
# 127.0.0.1, on a port the OS picked, and is stopped on exit. The screenshots are kept in
# target/browser/ (apps-direct.png, apps-gateway.png). About 15 s once installed and built (the
# two browser cases take 5 s of it).
#
#   bash tests/interop/apps_browser.sh
set -euo pipefail

# shellcheck source=tests/browser/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/../browser/setup.sh"
# shellcheck source=tests/interop/debug_build.sh
source "$root/tests/interop/debug_build.sh"
binary="$target_dir/debug/codomyrmex-mcp"
example="$target_dir/debug/examples/apps_server"
for built in "$binary" "$example"; do
    if [ ! -x "$built" ]; then
        echo "apps-browser: $built was not built" >&2
        exit 1
    fi
done

out="$target_dir/browser"
site="$out/site"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

rm -rf "$site" "$out/profile" "$out"/apps-*.png
mkdir -p "$site"
cp "$root/tests/browser/host.html" "$site/"
NODE_PATH="$browser_cache/node_modules" "$esbuild" "$root/tests/browser/host.js" --bundle \
    --format=iife --platform=browser --target=chrome120 --log-level=warning \
    --outfile="$site/host.bundle.js"

# Waits until FILE has a line matching REGEX and prints the match; fails, showing FILE, when
# PID exits or 60 s pass.
wait_for_line() { # NAME PID FILE REGEX
    local deadline=$((SECONDS + 60)) found
    until found="$(grep -oE "$4" "$3" | head -1)" && [ -n "$found" ]; do
        if ! kill -0 "$2" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
            echo "apps-browser: $1 did not start:" >&2
            sed 's/^/    | /' "$3" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "$found"
}

# The host page, served from its own origin.
python3 -u -m http.server --bind 127.0.0.1 --directory "$site" 0 >"$work/site.log" 2>&1 &
pids+=($!)
site_port="$(wait_for_line "the host page's server" "$!" "$work/site.log" 'port [0-9]+' | cut -d' ' -f2)"
origin="http://127.0.0.1:$site_port"

# The example: it takes a fixed ADDR, so a free port is picked first (and again if another
# process takes it in between).
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
example_url=""
for try in 1 2 3; do
    port="$(free_port)"
    "$example" --http "127.0.0.1:$port" --cors-origin "$origin" </dev/null >"$work/example.log" 2>&1 &
    example_pid=$!
    for _ in $(seq 100); do
        if curl -fsS -o /dev/null "http://127.0.0.1:$port/health" 2>/dev/null; then
            example_url="http://127.0.0.1:$port/mcp"
            break 2
        fi
        kill -0 "$example_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$example_pid" 2>/dev/null || true
    wait "$example_pid" 2>/dev/null || true
    echo "apps-browser: the example did not come up on port $port (try $try)" >&2
done
if [ -z "$example_url" ]; then
    sed 's/^/    | /' "$work/example.log" >&2
    exit 1
fi
pids+=("$example_pid")
example_metrics="${example_url%/mcp}/metrics"

cat >"$work/gateway.toml" <<EOF
[[upstream]]
name = "apps"
url = "$example_url"
EOF
"$binary" gateway --config "$work/gateway.toml" --http 127.0.0.1:0 --cors-origin "$origin" \
    </dev/null >/dev/null 2>"$work/gateway.log" &
pids+=($!)
gateway_url="$(wait_for_line "the gateway" "$!" "$work/gateway.log" 'http://127\.0\.0\.1:[0-9]+/mcp')"
echo "apps-browser: host page at $origin, the example at $example_url, the gateway at $gateway_url"

# The distribution's chromedriver is given by path; SE_OFFLINE keeps Selenium's driver
# manager from reaching out should it ever run.
SE_OFFLINE=true "$browser_python" "$root/tests/browser/apps_browser.py" --site "$origin" --out "$out" \
    --chromium "$chromium" --chromedriver "$chromedriver" \
    --case direct "$example_url" dashboard.show "$example_metrics" \
    --case gateway "$gateway_url" apps.dashboard.show "$example_metrics" \
    || { echo "apps-browser: the gateway's log:" >&2; sed 's/^/    | /' "$work/gateway.log" >&2; exit 1; }
