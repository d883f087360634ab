# Sourced by openai_agents.sh and .ci/prefetch.sh: creates (or reuses) the virtualenv
# .ci/cache/venv-agents (or $AGENTS_VENV) with the pinned PyPI `openai-agents`, and sets `root`
# and `agents_venv`. Expects `set -euo pipefail` in the caller.

OPENAI_AGENTS_VERSION="0.24.0"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
agents_venv="${AGENTS_VENV:-$root/.ci/cache/venv-agents}"
if [ ! -x "$agents_venv/bin/python" ]; then
    echo "openai-agents: creating $agents_venv"
    "${PYTHON:-python3}" -m venv "$agents_venv"
fi
installed="$("$agents_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("openai-agents"))' 2>/dev/null || true)"
if [ "$installed" != "$OPENAI_AGENTS_VERSION" ]; then
    echo "openai-agents: installing openai-agents==$OPENAI_AGENTS_VERSION"
    "$agents_venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "openai-agents==$OPENAI_AGENTS_VERSION"
fi
