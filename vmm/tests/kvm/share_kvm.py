#!/usr/bin/env python3
"""What a domain leaves to the host's other threads on its CPUs (sched/README.md §7.2).

  share_kvm.py --lagvisor PATH --elf-dir DIR [--slice SLICE] [--min-pct PCT]

A hog VM with HOG_CPUS vCPUs in one --sched-domain on host CPU 0 (so its
vCPU threads hand that CPU to each other every slice), and beside it a busy
shell pinned to CPU 0 in its own session, as any other program on a shared
host would be. Over MEASURE_S the shell's run time (/proc/PID/schedstat) is
its share of the CPU; the host's fair answer is half (two sessions, one
runnable thread each at any moment). It must get at least --min-pct.

With --slice 20ms (the default here) the host shares fairly and the check
guards that. At 700 us slices this host (Linux 6.18) gave the shell
nothing, 0 ms of 6000 in six runs, and with lagvisor's own default slice
(`--slice default`: none given) anything from a tenth to half. That is the
host kernel's reweight of a running group entity, which multiplies its lag
by 5/4 at every hand-off (sched/README.md §7.2 derives it; reverted upstream
in 2026), and plain threads handing a token round show it too. Slices up to
KNOWN_MAX_NS SKIP naming it unless LAGVISOR_RUN_KNOWN_ISSUES=1.

Exit 0 pass, 1 fail, 77 skip (no /dev/kvm, lagvisor not built, one CPU).
"""
import argparse
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sched_kvm as sk  # noqa: E402

HOG_CPUS = 4
MEASURE_S = 5.0
KNOWN_MAX_NS = 3000000          # slices up to here starve (3 ms left the shell 41 %)
KNOWN_ISSUE = ("host kernel bug: reweight_entity() of a running group entity inflates its "
               "lag (Linux 6.14 until the 2026 revert of 6d71a9c61604), so short-slice "
               "hand-offs starve other threads on the domain's CPUs (sched/README.md §7.2)")


def slice_ns(text):
    """--slice's value in ns (None: lagvisor's default)."""
    if text == "default":
        return None
    for unit, mult in (("us", 1000), ("ms", 1000000), ("s", 1000000000)):
        if text.endswith(unit):
            return int(float(text[:-len(unit)]) * mult)
    return int(text)


def run_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def measure(slice_arg):
    dom = sk.domain("share")
    h = sk.Guest("H", "hog", HOG_CPUS, ["hog.duration_ms=0", "hog.report_ms=1000"],
                 sk.sched_args(dom) + ([] if slice_arg == "default" else ["--slice", slice_arg]))
    if not sk.check(h.wait_for(sk.has_progress(1), 120), "the hog VM runs"):
        return None
    shell = subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True,
                             preexec_fn=lambda: os.sched_setaffinity(0, {0}))
    try:
        time.sleep(0.5)
        a, t0 = run_ns(shell.pid), time.monotonic()
        time.sleep(MEASURE_S)
        b, t1 = run_ns(shell.pid), time.monotonic()
    finally:
        shell.kill()
        shell.wait()
    running = h.running()
    h.kill(signal.SIGTERM)
    h.wait(30)
    sk.check(running, "the hog VM ran through the measurement")
    return 100.0 * (b - a) / 1e9 / (t1 - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lagvisor", required=True)
    ap.add_argument("--elf-dir", required=True)
    ap.add_argument("--slice", default="20ms")
    ap.add_argument("--min-pct", type=float, default=35.0)
    args = ap.parse_args()
    r = sk.prepare(args.lagvisor, args.elf_dir, ("hog",))
    if r is not None:
        return r
    if os.cpu_count() < 2:
        sk.skip("one host CPU: the domain and the shell would leave the harness none")
    ns = slice_ns(args.slice)
    if (ns is None or ns <= KNOWN_MAX_NS) and not os.environ.get("LAGVISOR_RUN_KNOWN_ISSUES"):
        sk.skip(f"known open bug: {KNOWN_ISSUE} (LAGVISOR_RUN_KNOWN_ISSUES=1 runs it)")
    try:
        sk.calibrate_tsc()
        pct = measure(args.slice) if not sk.failures else None
        if pct is not None:
            sk.check(pct >= args.min_pct, f"--slice {args.slice}: a busy shell on the domain's "
                     f"CPU got {pct:.1f} % of it (>= {args.min_pct} %; fair is 50 %)")
    finally:
        sk.cleanup()
    if sk.failures:
        sk.log("host share: FAIL: " + "; ".join(sk.failures))
        return 1
    sk.log("host share: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
