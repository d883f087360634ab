#!/usr/bin/env bash
# Interop test: the official Python MCP SDK (PyPI `mcp`) drives `codomyrmex-mcp serve` over stdio.
#
# Creates (or reuses) a virtualenv under .ci/cache/venv, installs the pinned SDK, builds the
# binary and runs tests/interop/python_sdk_stdio.py against it. Exits non-zero on any failure.
#
#   bash tests/interop/run_python_sdk.sh
set -euo pipefail

MCP_VERSION="2.3.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

venv="$root/.ci/cache/venv"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    echo "interop: creating $venv"
    "$python" -m venv "$venv"
fi
installed="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)"
if [ "$installed" != "$MCP_VERSION" ]; then
    echo "interop: installing mcp==$MCP_VERSION"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
fi

echo "interop: building codomyrmex-mcp"
cargo build --quiet -p codomyrmex-mcp-cli --bin codomyrmex-mcp
target_dir="$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
binary="$target_dir/debug/codomyrmex-mcp"
if [ ! -x "$binary" ]; then
    echo "interop: $binary was not built" >&2
    exit 1
fi

echo "interop: mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))') against $binary"
"$venv/bin/python" "$root/tests/interop/python_sdk_stdio.py" "$binary"
