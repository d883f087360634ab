# Sourced by setup.sh and .ci/prefetch.sh: creates (or reuses) the virtualenv .ci/cache/venv
# with the pinned PyPI `mcp` (the official Python SDK), and sets `root` and `venv` (its python
# is "$venv/bin/python"). Expects `set -euo pipefail` in the caller.

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
