#!/usr/bin/env bash
# The Python package (crates/codomyrmex-mcp-py): installs it with the README's command,
# `pip install ./crates/codomyrmex-mcp-py` (pip fetches maturin from PyPI and builds the
# extension), into a virtualenv of its own (.ci/cache/venv-py, with pytest and the pinned
# official SDK `mcp` as the client), and runs its pytest suite (crates/codomyrmex-mcp-py/tests).
#
# maturin builds with the `release` profile into the workspace's target directory
# (CARGO_TARGET_DIR if set), so it shares the release build's compiled dependencies instead
# of building them again. Exits non-zero on any failure.
#
#   bash tests/interop/run_python_package.sh [PYTEST_ARGS...]
#   PYTHON_OLDEST=/path/to/python3.9 bash tests/interop/run_python_package.sh   # also on 3.9
set -euo pipefail

MCP_VERSION="2.3.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
crate="$root/crates/codomyrmex-mcp-py"

venv="$root/.ci/cache/venv-py"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    echo "python package: creating $venv"
    "$python" -m venv "$venv"
fi
pip() { "$venv/bin/python" -m pip --disable-pip-version-check --quiet "$@"; }
have() { [ "$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null || true)" = "$2" ]; }
have mcp "$MCP_VERSION" || pip install "mcp==$MCP_VERSION"
"$venv/bin/python" -c 'import pytest, mypy' 2>/dev/null || pip install pytest mypy

target_dir="${CARGO_TARGET_DIR:-$(cargo metadata --format-version 1 --no-deps | "$venv/bin/python" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')}"
echo "python package: pip install ./crates/codomyrmex-mcp-py (target dir $target_dir)"
pip uninstall --yes codomyrmex-mcp >/dev/null 2>&1 || true
CARGO_TARGET_DIR="$target_dir" pip install ./crates/codomyrmex-mcp-py
"$venv/bin/python" -c 'import codomyrmex_mcp; print("python package: installed", codomyrmex_mcp.__file__)'

echo "python package: pytest"
cd "$crate"
"$venv/bin/python" -m pytest -q "$@"

# The oldest CPython the abi3 wheel supports (3.9), when PYTHON_OLDEST names one: the same
# suite without the SDK (which needs 3.10), whose tests are skipped there.
if [ -n "${PYTHON_OLDEST:-}" ]; then
    oldest="$root/.ci/cache/venv-py-oldest"
    [ -x "$oldest/bin/python" ] || "$PYTHON_OLDEST" -m venv "$oldest"
    echo "python package: $("$oldest/bin/python" --version) in $oldest"
    "$oldest/bin/python" -m pip --disable-pip-version-check --quiet uninstall --yes codomyrmex-mcp >/dev/null 2>&1 || true
    CARGO_TARGET_DIR="$target_dir" "$oldest/bin/python" -m pip --disable-pip-version-check --quiet install "$root/crates/codomyrmex-mcp-py" pytest mypy
    "$oldest/bin/python" -m pytest -q "$@"
fi
