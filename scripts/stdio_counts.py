#!/usr/bin/env python3
"""Per-call counts of a stdio server under `stdio_load`, independent of the machine's load.

Runs `stdio_load` twice on fresh server processes, with N1 and then N2 measured calls of one
case (no warm-up), and prints the difference divided by N2 - N1, so that start-up, the
handshake and shutdown cancel out:

- the server's voluntary and involuntary context switches, all its threads (the rusage that
  `wait4` reports for the reaped server: every thread, alive or gone) and its CPU µs;
- the same for the load client (`stdio_load`'s rusage less the server's);
- the server's peak RSS (`VmHWM`, KiB, read by the wrapper every 10 ms until it exits) of the
  longer run;
- with `--strace`, the server's syscalls per call (`strace -f -c`; strace slows every thread,
  so these move with timing).

It measures no time per call. The server is started through this script (`--wrap`), which
only waits for it and writes its rusage to a file.

    scripts/stdio_counts.py --load target/release/stdio_load --case 64KiB:1 \
        --n 300 3300 -- target/release/examples/echo --stdio

Environment variables are passed through to the server (e.g. CODOMYRMEX_MCP_STDIO_SPIN_US=0).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading


def rusage_dict(ru):
    return {
        "nvcsw": ru.ru_nvcsw,
        "nivcsw": ru.ru_nivcsw,
        "cpu_us": (ru.ru_utime + ru.ru_stime) * 1e6,
        "maxrss_kib": ru.ru_maxrss,
    }


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wrap(out, cmd):
    """Runs cmd with this process's stdin and stdout, waits, writes its rusage to out."""
    child = subprocess.Popen(cmd)
    peak = [0]
    done = threading.Event()

    def watch():
        # VmHWM only grows; the last reading before the exit is the peak.
        while not done.wait(0.01):
            kib = vm_hwm_kib(child.pid)
            if kib is not None:
                peak[0] = max(peak[0], kib)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, status, ru = os.wait4(child.pid, 0)
    done.set()
    stats = rusage_dict(ru)
    # ru_maxrss of an exec'd child starts at its parent's (this script's): use VmHWM.
    stats["maxrss_kib"] = peak[0]
    with open(out, "w") as f:
        json.dump(stats, f)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 1)


def strace_counts(path):
    """Calls per syscall from an `strace -c` summary."""
    counts = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            # % time, seconds, usecs/call, calls, [errors], syscall
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[3].isdigit():
                counts[parts[-1]] = int(parts[3])
    return counts


def run_once(args, n, tmp):
    out = os.path.join(tmp, f"server.{n}.json")
    server = list(args.command)
    st = None
    if args.strace:
        st = os.path.join(tmp, f"strace.{n}")
        server = ["strace", "-f", "-c", "-o", st] + server
    subject = " ".join([sys.executable, os.path.abspath(__file__), "--wrap", out, "--"] + server)
    load = [
        args.load,
        "--case", f"{args.case}:{n}",
        "--warmup", "0",
        "--cold-starts", "0",
        "--rounds", "1",
        "--json",
        "--subject", f"s={subject}",
    ]
    child = subprocess.Popen(load, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(child.pid, 0)
    if status != 0:
        sys.exit(f"stdio_load failed ({status}) with {n} calls")
    total = rusage_dict(ru)
    with open(out) as f:
        srv = json.load(f)
    client = {k: total[k] - srv[k] for k in ("nvcsw", "nivcsw", "cpu_us")}
    return srv, client, (strace_counts(st) if st else None)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--wrap":
        rest = sys.argv[3:]
        if rest and rest[0] == "--":
            rest = rest[1:]
        wrap(sys.argv[2], rest)
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--load", required=True, help="the stdio_load binary")
    p.add_argument("--case", required=True, help="SIZE:IN_FLIGHT, as stdio_load's --case")
    p.add_argument("--n", nargs=2, type=int, default=[300, 3300], metavar=("N1", "N2"))
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--strace", action="store_true")
    p.add_argument("command", nargs="+")
    args = p.parse_args()
    n1, n2 = args.n
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            s1, c1, t1 = run_once(args, n1, tmp)
            s2, c2, t2 = run_once(args, n2, tmp)
            d = n2 - n1
            row = {
                "server_vcsw": (s2["nvcsw"] - s1["nvcsw"]) / d,
                "server_ivcsw": (s2["nivcsw"] - s1["nivcsw"]) / d,
                "server_cpu_us": (s2["cpu_us"] - s1["cpu_us"]) / d,
                "client_vcsw": (c2["nvcsw"] - c1["nvcsw"]) / d,
                "client_ivcsw": (c2["nivcsw"] - c1["nivcsw"]) / d,
                "client_cpu_us": (c2["cpu_us"] - c1["cpu_us"]) / d,
                "server_maxrss_kib": s2["maxrss_kib"],
            }
            if t1 is not None:
                for name in sorted(set(t1) | set(t2)):
                    per = (t2.get(name, 0) - t1.get(name, 0)) / d
                    if abs(per) >= 0.001:
                        row[f"sys_{name}"] = round(per, 3)
            print(" ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in row.items()))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
