# Sourced by run_python_sdk.sh and run_http_interop.sh: the shared setup of both interop runs.
#
# Creates (or reuses) the virtualenv .ci/cache/venv with the pinned PyPI `mcp`, builds the
# `codomyrmex-mcp` binary, and sets `root`, `venv` (its python is "$venv/bin/python") and
# `binary`. Expects `set -euo pipefail` in the caller.

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
# shellcheck source=tests/interop/debug_build.sh
source "$root/tests/interop/debug_build.sh"
binary="$target_dir/debug/codomyrmex-mcp"
if [ ! -x "$binary" ]; then
    echo "interop: $binary was not built" >&2
    exit 1
fi
