# Sourced by scripts/bench.sh and scripts/bench-http.sh.
#
# This machine is a VM whose idle vCPUs halt at once (the kernel runs with
# haltpoll.guest_halt_poll_ns=0), so waking a process that sleeps on a halted vCPU costs tens
# to hundreds of microseconds, far more than any subject spends on a small call; with one call
# in flight that wake-up latency is most of every round trip, for every subject alike, and it
# comes and goes with whatever else the host runs. The spinners keep the vCPUs from halting,
# as `idle=poll` would: one busy loop per core at nice 19, which gets about 1.5 % of a core
# when a subject wants it (CFS weights 15 against 1024) and lets a waking subject run at once.
# SCHED_IDLE spinners were tried first: the scheduler counts their cores as idle, so wake-ups
# still cross cores and stay slow. The spinners are separate processes: no subject's CPU
# figure includes them. NO_SPIN=1 turns them off.

SPINNERS=()

start_spinners() {
    if [[ -n "${NO_SPIN:-}" ]]; then
        echo "- vCPU spinners: off (NO_SPIN=1)"
        return
    fi
    local n
    n="$(nproc)"
    for _ in $(seq "$n"); do
        nice -n 19 bash -c 'while :; do :; done' &
        SPINNERS+=("$!")
    done
    echo "- vCPU spinners: ${n} busy loops at nice 19 keep the vCPUs from halting (see scripts/spinners.sh; NO_SPIN=1 turns them off); they add ${n} to the load average"
}

stop_spinners() {
    if [[ ${#SPINNERS[@]} -gt 0 ]]; then
        kill "${SPINNERS[@]}" 2>/dev/null || true
        wait "${SPINNERS[@]}" 2>/dev/null || true
        SPINNERS=()
    fi
}
