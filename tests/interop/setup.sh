# Sourced by run_python_sdk.sh and run_http_interop.sh: the shared setup of both interop runs.
#
# Creates (or reuses) the virtualenv .ci/cache/venv with the pinned PyPI `mcp`
# (python_sdk_venv.sh), builds the `codomyrmex-mcp` binary, and sets `root`, `venv` (its
# python is "$venv/bin/python") and `binary`. Expects `set -euo pipefail` in the caller.

# shellcheck source=tests/interop/python_sdk_venv.sh
source "$(dirname "${BASH_SOURCE[0]}")/python_sdk_venv.sh"

echo "interop: building codomyrmex-mcp"
# shellcheck source=tests/interop/debug_build.sh
source "$root/tests/interop/debug_build.sh"
binary="$target_dir/debug/codomyrmex-mcp"
if [ ! -x "$binary" ]; then
    echo "interop: $binary was not built" >&2
    exit 1
fi
