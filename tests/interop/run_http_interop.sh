#!/usr/bin/env bash
# Interop tests over Streamable HTTP: the official Python MCP SDK's HTTP client
# (python_sdk_http.py) and MCP Inspector's CLI (inspector_cli.sh) against
# `codomyrmex-mcp serve --http` with a bearer token.
#
# Uses the same virtualenv as run_python_sdk.sh (.ci/cache/venv, pinned PyPI `mcp`), creating
# it if needed, and builds the binary once for both clients. Exits non-zero on any failure.
#
#   bash tests/interop/run_http_interop.sh
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

echo "interop: Python SDK $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))') over Streamable HTTP against $binary"
"$venv/bin/python" "$root/tests/interop/python_sdk_http.py" "$binary"

echo "interop: MCP Inspector CLI over Streamable HTTP"
bash "$root/tests/interop/inspector_cli.sh" "$binary"
