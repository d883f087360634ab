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

# shellcheck source=tests/interop/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

echo "interop: Python SDK $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))') over Streamable HTTP against $binary"
"$venv/bin/python" "$root/tests/interop/python_sdk_http.py" "$binary"

echo "interop: MCP Inspector CLI over Streamable HTTP"
bash "$root/tests/interop/inspector_cli.sh" "$binary"
