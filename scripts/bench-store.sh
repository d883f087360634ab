#!/usr/bin/env bash
# The shared-store benchmark (issue #16, item 10), in ONE run so that the ratios compare:
#
# 1. 2025-11-25 (and 2026-07-28) calls/s of the echo tool with sessions in memory against
#    sessions in Redis: `store_echo` (crates/codomyrmex-mcp-bench) with and without --store,
#    driven by `http_load`, interleaved over ROUNDS rounds.
# 2. 2026-07-28 calls/s through nginx in front of three store_echo instances sharing the Redis,
#    against one instance direct (the nginx configuration of tests/cluster/, with 2 workers).
# 3. Redis round trips per call, per era: a fixed number of calls against one instance, read
#    from its /metrics (`mcp_store_round_trips_total`, counted by the Redis connection).
#
#   scripts/bench-store.sh            # build release, run, print markdown tables
#   QUICK=1 scripts/bench-store.sh    # fewer calls, for a smoke test
#   NO_BUILD=1 scripts/bench-store.sh # use the release binaries already built
#   NO_SPIN=1 scripts/bench-store.sh  # without the vCPU spinners (scripts/spinners.sh)
#
# Needs redis-server and nginx (apt-get install -y redis-server nginx-light). Run it on a quiet
# machine; quote ratios from one run only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
rounds="${ROUNDS:-3}"
if [[ -n "${QUICK:-}" ]]; then
    n_one=2000 n_many=6000 warmup=300 trips_calls=200
else
    n_one=20000 n_many=60000 warmup=2000 trips_calls=2000
fi
if [[ -z "${NO_BUILD:-}" ]]; then
    echo "building release binaries..." >&2
    cargo build --release --quiet -p codomyrmex-mcp-bench --bin store_echo --bin http_load
fi
bin="${CARGO_TARGET_DIR:-$root/target}/release"
for f in "$bin/store_echo" "$bin/http_load"; do
    [[ -x "$f" ]] || { echo "missing $f" >&2; exit 1; }
done
nginx_bin="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$nginx_bin" ]] && command -v redis-server >/dev/null || {
    echo "needs redis-server and nginx: apt-get install -y redis-server nginx-light" >&2
    exit 1
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 1 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nothing listens on port $1" >&2
    return 1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
    [[ "$(type -t stop_spinners)" == function ]] && stop_spinners
}
trap cleanup EXIT

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >/dev/null &
pids+=($!)
wait_port "$redis_port"
store="redis://127.0.0.1:${redis_port}/0"

echo "## Shared store (Redis)"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $(nproc) cores, $(uname -sr); load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- redis: $(redis-server --version | cut -d' ' -f3); nginx: $("$nginx_bin" -v 2>&1 | cut -d/ -f2)"
echo "- calls per round: ${n_one} (1 connection), ${n_many} (64 connections), after ${warmup} warm-up calls; ${rounds} interleaved rounds, medians"
# shellcheck source=scripts/spinners.sh
source "$root/scripts/spinners.sh"
if [[ -z "${NO_SPIN:-}" ]]; then
    start_spinners
    echo "- vCPU spinners on (NO_SPIN=1 turns them off)"
else
    echo "- vCPU spinners off (NO_SPIN=1)"
fi
echo

status=0
echo "### Sessions in memory against sessions in Redis"
echo
"$bin/http_load" \
    --subject "memory-legacy:legacy=$bin/store_echo --http 127.0.0.1:{port}" \
    --subject "redis-legacy:legacy=$bin/store_echo --http 127.0.0.1:{port} --store $store" \
    --subject "memory-modern:modern=$bin/store_echo --http 127.0.0.1:{port}" \
    --subject "redis-modern:modern=$bin/store_echo --http 127.0.0.1:{port} --store $store" \
    --case "16:1:${n_one}" --case "16:64:${n_many}" \
    --warmup "$warmup" --rounds "$rounds" --markdown \
    --ratio-to memory-legacy --ratio-to memory-modern || status=$?

echo
echo "### Three instances behind nginx against one direct (2026-07-28)"
echo
nginx_port="$(free_port)"
ports=()
instance_pids=()
for _ in 1 2 3; do
    p="$(free_port)"
    "$bin/store_echo" --http "127.0.0.1:$p" --store "$store" --allowed-host "127.0.0.1:$nginx_port" &
    pids+=($!)
    instance_pids+=($!)
    ports+=("$p")
done
for p in "${ports[@]}"; do wait_port "$p"; done
upstreams=""
for p in "${ports[@]}"; do upstreams+="        server 127.0.0.1:$p max_fails=1 fail_timeout=30s;"$'\n'; done
python3 - "$root/tests/cluster/nginx.conf.template" "$work/nginx.conf" "$nginx_port" "$work" "$upstreams" <<'EOF'
import sys
template, out, port, prefix, upstreams = sys.argv[1:]
conf = open(template).read().replace("@PORT@", port).replace("@PREFIX@", prefix)
conf = conf.replace("@UPSTREAMS@", upstreams.rstrip("\n")).replace("worker_processes 1;", "worker_processes 2;")
# The load generator keeps its connections for the whole case: nginx must not close them
# after its default 1000 requests.
conf = conf.replace("listen 127.0.0.1:" + port + ";", "listen 127.0.0.1:" + port + ";\n        keepalive_requests 10000000;")
open(out, "w").write(conf)
EOF
"$nginx_bin" -p "$work" -c "$work/nginx.conf" &
pids+=($!)
wait_port "$nginx_port"
before=0
for p in "${instance_pids[@]}"; do before=$((before + $(cpu_ticks "$p"))); done
"$bin/http_load" \
    --subject "one-instance:modern=$bin/store_echo --http 127.0.0.1:{port} --store $store" \
    --subject "three-behind-nginx:modern=@127.0.0.1:$nginx_port" \
    --case "16:1:${n_one}" --case "16:64:${n_many}" \
    --warmup "$warmup" --rounds "$rounds" --markdown --ratio-to one-instance || status=$?
after=0
for p in "${instance_pids[@]}"; do after=$((after + $(cpu_ticks "$p"))); done
cluster_calls=$(( rounds * (n_one + n_many + 2 * warmup) ))
hz="$(getconf CLK_TCK)"
python3 -c "print(f'- three-behind-nginx: the three instances together used {($after - $before) / $hz * 1e6 / $cluster_calls:.1f} µs of CPU per call (warm-up included; nginx not counted); the CPU column above is not theirs')"

echo
echo "### Redis round trips per call"
echo
trips_port="$(free_port)"
"$bin/store_echo" --http "127.0.0.1:$trips_port" --store "$store" &
pids+=($!)
wait_port "$trips_port"
metric() {
    curl -s -H "Host: 127.0.0.1:$trips_port" "http://127.0.0.1:$trips_port/metrics" |
        awk '$1 == "mcp_store_round_trips_total" {print $2}'
}
echo "| era | calls (one connection, after one warm-up run) | round trips | per call |"
echo "|---|---:|---:|---:|"
for era in legacy modern; do
    "$bin/http_load" --subject "warm:$era=@127.0.0.1:$trips_port" --case "16:1:50" --warmup 10 >/dev/null
    t0="$(metric)"
    "$bin/http_load" --subject "count:$era=@127.0.0.1:$trips_port" --case "16:1:${trips_calls}" --warmup 0 >/dev/null
    t1="$(metric)"
    python3 -c "
calls = ${trips_calls}
extra = 2 if '$era' == 'legacy' else 0   # initialize and notifications/initialized
trips = ${t1%.*} - ${t0%.*}
print(f'| ${era} | {calls} (+{extra} to open the session) | {trips} | {trips / calls:.2f} |')"
done
exit "$status"
