#!/usr/bin/env bash
# Downloads and installs, into .ci/cache, everything CI's later steps install: Node 22 and the
# official servers (node_servers.sh), MCP Inspector (inspector_setup.sh), the two conformance
# suites (conformance-lib.sh), the Python SDK's and the OpenAI Agents SDK's virtualenvs
# (python_sdk_venv.sh, openai_agents_venv.sh), maturin (maturin_venv.sh), Redis and nginx
# from the distribution's packages, and the browser test's ext-apps, client, esbuild,
# Selenium and Chromium (tests/browser/setup.sh). Each part is the
# same sourced code its consumer runs, and idempotent: the consumers find it done.
#
# .ci/run starts it in the background while cargo compiles (the downloads wait on the
# network, the compiles on the CPU) and waits for it before the first step that needs it.
# Prints each part's seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

part() { # NAME COMMAND...
    local name=$1 start
    shift
    start=$(date +%s)
    (cd "$repo" && "$@")
    echo "prefetch: $name in $(( $(date +%s) - start )) s"
}

node_servers() { source tests/interop/node_servers.sh; }
inspector() { source tests/interop/inspector_setup.sh; }
conformance() { CACHE=.ci/cache; source .ci/conformance-lib.sh; install_suites conf01 conf02; }
python_sdk() { source tests/interop/python_sdk_venv.sh; }
openai_agents() { source tests/interop/openai_agents_venv.sh; }
maturin() { source tests/interop/maturin_venv.sh; }
redis_nginx() {
    if ! command -v redis-server >/dev/null || ! { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; }; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server nginx-light >/dev/null
    fi
}
# After redis_nginx: two apt-get installs at once would contend for dpkg's lock.
browser() { source tests/browser/setup.sh; }

part "Node 22, server-everything and server-filesystem" node_servers
part "MCP Inspector" inspector
part "the conformance suites" conformance
part "the Python SDK's virtualenv" python_sdk
part "the OpenAI Agents SDK's virtualenv" openai_agents
part "maturin" maturin
part "Redis and nginx" redis_nginx
part "ext-apps, esbuild, Selenium and Chromium (the browser test)" browser
