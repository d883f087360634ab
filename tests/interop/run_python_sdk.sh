#!/usr/bin/env bash
# Interop test: the official Python MCP SDK (PyPI `mcp`) drives `codomyrmex-mcp serve` over stdio.
#
# Through setup.sh: creates (or reuses) a virtualenv under .ci/cache/venv, installs the pinned SDK, builds the
# binary and runs tests/interop/python_sdk_stdio.py against it. Exits non-zero on any failure.
#
#   bash tests/interop/run_python_sdk.sh
set -euo pipefail

# shellcheck source=tests/interop/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

echo "interop: mcp $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))') against $binary"
"$venv/bin/python" "$root/tests/interop/python_sdk_stdio.py" "$binary"
