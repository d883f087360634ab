# Sourced by scripts/bench.sh and scripts/bench-http.sh.
#
# This machine is a VM whose idle vCPUs halt at once (the kernel runs with
# haltpoll.guest_halt_poll_ns=0), so waking a process that sleeps on a halted vCPU costs tens
# to hundreds of microseconds, far more than any subject spends on a small call; with one call
# in flight that wake-up latency is most of every round trip, for every subject alike, and it
# comes and goes with whatever else the host runs. The spinners keep the vCPUs from halting,
# as `idle=poll` would: one busy loop per core under SCHED_IDLE, the policy that runs only when
# nothing else wants the CPU, so a subject that becomes runnable preempts them at once. They
# are separate processes: no subject's CPU figure includes them. NO_SPIN=1 turns them off.

SPINNERS=()

start_spinners() {
    if [[ -n "${NO_SPIN:-}" ]]; then
        echo "- vCPU spinners: off (NO_SPIN=1)"
        return
    fi
    if ! command -v chrt >/dev/null 2>&1; then
        echo "- vCPU spinners: off (chrt not found)"
        return
    fi
    local n
    n="$(nproc)"
    for _ in $(seq "$n"); do
        chrt --idle 0 bash -c 'while :; do :; done' &
        SPINNERS+=("$!")
    done
    echo "- vCPU spinners: ${n} SCHED_IDLE busy loops keep the vCPUs from halting (see scripts/spinners.sh; NO_SPIN=1 turns them off); they add ${n} to the load average"
}

stop_spinners() {
    if [[ ${#SPINNERS[@]} -gt 0 ]]; then
        kill "${SPINNERS[@]}" 2>/dev/null || true
        wait "${SPINNERS[@]}" 2>/dev/null || true
        SPINNERS=()
    fi
}
