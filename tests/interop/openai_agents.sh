#!/usr/bin/env bash
# Interop test: portable names (issue #31 item 2) through the OpenAI Agents SDK with its
# default settings (openai_agents.py): the gateway and `serve` with `name_style = "portable"`
# give only tool names the API accepts; the gateway's dotted names do not. No API key, no
# network.
#
#   bash tests/interop/openai_agents.sh [BINARY]   # default: the release build, else debug
set -euo pipefail

# shellcheck source=tests/interop/openai_agents_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/openai_agents_venv.sh"
cd "$root"
binary="${1:-}"
if [ -z "$binary" ]; then
    target_dir="${CARGO_TARGET_DIR:-$root/target}"
    binary="$target_dir/release/codomyrmex-mcp"
    [ -x "$binary" ] || binary="$target_dir/debug/codomyrmex-mcp"
fi
if [ ! -x "$binary" ]; then
    echo "openai-agents: $binary was not built" >&2
    exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
OPENAI_API_KEY="" "$agents_venv/bin/python" tests/interop/openai_agents.py "$binary" "$work"
