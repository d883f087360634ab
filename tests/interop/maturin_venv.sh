# Sourced by run_python_package.sh and .ci/prefetch.sh: installs maturin from PyPI into the
# virtualenv .ci/cache/venv-maturin unless it is there, and sets `root`, `python` and
# `build_venv`. Expects `set -euo pipefail` in the caller.

MATURIN_REQUIREMENT="maturin>=1.7,<2"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
build_venv="$root/.ci/cache/venv-maturin"
if [ ! -x "$build_venv/bin/maturin" ]; then
    echo "python package: installing maturin into $build_venv"
    "$python" -m venv "$build_venv"
    "$build_venv/bin/python" -m pip --disable-pip-version-check --quiet install "$MATURIN_REQUIREMENT"
fi
