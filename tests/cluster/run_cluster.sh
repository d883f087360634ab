#!/usr/bin/env bash
# The cluster test (tests/cluster/cluster.py): three instances of the binary behind nginx,
# driven by the official Python SDK, sharing a Redis. Installs Redis and nginx from the distribution's packages when it
# is missing (CI runs as root), and reuses the interop virtualenv and binary (setup.sh).
#
#   bash tests/cluster/run_cluster.sh [BINARY]
#
# BINARY (CI passes the release binary it built) runs instead of setup.sh's debug build: the
# 100,000 initializes of sessions_rss.py took about 380 s against the debug binary and about
# 40 s against the release one (docs/performance.md, "CI's time").
set -euo pipefail

if ! command -v redis-server >/dev/null || { ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; }; then
    echo "cluster: installing redis-server and nginx-light"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server nginx-light >/dev/null
fi

# shellcheck source=tests/interop/setup.sh
source "$(dirname "${BASH_SOURCE[0]}")/../interop/setup.sh"
if [ "$#" -ge 1 ]; then
    binary="$1"
fi

echo "cluster: three instances of $binary behind nginx"
"$venv/bin/python" "$root/tests/cluster/cluster.py" "$binary"

echo "cluster: 100,000 idle 2025-11-25 sessions in Redis against one instance's RSS"
"$venv/bin/python" "$root/tests/cluster/sessions_rss.py" "$binary"
