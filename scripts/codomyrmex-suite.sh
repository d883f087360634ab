#!/usr/bin/env bash
# Codomyrmex's own tests of its `model_context_protocol` module, run against the installed
# `codomyrmex_mcp` through a shim that only re-exports (issue #28, item 7). Every change to the
# Python package quotes the closing line this prints.
#
#   scripts/codomyrmex-suite.sh PATH_TO_A_CODOMYRMEX_CHECKOUT [--list] [--keep] [--junit PATH] [-- PYTEST_ARGS...]
#   PYTHON=/path/to/venv/bin/python scripts/codomyrmex-suite.sh CHECKOUT
#
# The checkout needs src/, tests/ and pyproject.toml of Codomyrmex at commit
# 5007d90bf97677bec5393af5d2b7770a3abf6203 (from a clone: `git archive 5007d90 src tests
# pyproject.toml | tar -x -C DIR`). It is not changed: the script copies it to a scratch
# directory, replaces src/codomyrmex/model_context_protocol/ there by one __init__.py that
# calls `codomyrmex_mcp.compat.install()`, and runs the selected test files (printed first;
# scripts/codomyrmex_suite.py says how they are chosen) in ONE pytest run, with the checkout's
# pytest configuration, against the package installed for $PYTHON (default: python3). That
# Python needs codomyrmex_mcp, pytest, pytest-asyncio and pytest-timeout, and what
# `import codomyrmex` needs (its logging_monitoring); nothing is installed here.
#
# No network: the run is in a network namespace of its own with only loopback (`unshare -n`,
# when this user may), and with proxies pointing nowhere either way.
#
# Output: the files, per-file counts, the tests that did not pass, then the closing line
# `N passed, M failed, K skipped`. Exit status 0 when none failed, 1 when some did, 2 when
# the run could not be made.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: scripts/codomyrmex-suite.sh PATH_TO_A_CODOMYRMEX_CHECKOUT [--list] [--keep] [--junit PATH] [-- PYTEST_ARGS...]" >&2
    exit 2
fi
python="${PYTHON:-python3}"

# Nothing goes out: proxies that refuse, no package index.
export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
    HTTPS_PROXY=http://127.0.0.1:9 no_proxy=localhost,127.0.0.1,::1 NO_PROXY=localhost,127.0.0.1,::1 \
    PIP_NO_INDEX=1

run=("$python" "$root/scripts/codomyrmex_suite.py" "$@")
if command -v unshare >/dev/null 2>&1 && unshare -n true 2>/dev/null; then
    # A network namespace with loopback up only: the tests' own servers still work.
    if command -v ip >/dev/null 2>&1; then
        exec unshare -n -- sh -c 'ip link set lo up && exec "$@"' sh "${run[@]}"
    fi
    echo "codomyrmex-suite: no 'ip' to bring loopback up; running without a network namespace" >&2
fi
exec "${run[@]}"
