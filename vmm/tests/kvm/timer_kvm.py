#!/usr/bin/env python3
"""Late LAPIC timers under load (issue 17 item 6), checked with KVM.

  timer_kvm.py --lagvisor PATH --elf-dir DIR [--rounds N] [--late-max-ms MS]

guest-tests/tests/late-timer.c (LT_ROUNDS short random timers: one-shot and
TSC-deadline, halted and spinning) in one --sched-domain on one host CPU
beside a spinning hog VM, under --sched eevdf: every timer fires, none
early, and none is more than LATE_MAX_MS late beyond what its steal time
explains (the guest reads lagvisor's KVM steal-time area around each timer:
steal is the vCPU's wait for a pCPU of the domain plus its thread's wait in
the host's run queue), i.e. no halted or running vCPU slept past its own
deadline; the raw lateness must stay under the guest's lt.lost_ms (10 s).
Over the run, the timer vCPU thread's host run-queue delay
(/proc/PID/task/TID/schedstat) and lagvisor's own wait for a pCPU
(lagvisor stat wait_ns) are printed: where the time of late timers went.
Seen on a loaded 2-core host (lagvisor at nice 19): raw lateness up to 6.3 s
(the 1.27 s of issue 17 item 6 is of that kind), less steal at most 0.7 ms.

Exit 0 pass, 1 fail, 77 skip (no /dev/kvm, lagvisor not built).
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sched_kvm as sk  # noqa: E402

LT_ROUNDS = 10000
LATE_MAX_MS = 50


def vcpu_run_delay_ns(pid, name="vcpu0"):
    """The host run-queue wait of pid's thread `name` (schedstat field 2)."""
    st = sk.lv.thread_schedstat(pid, name)
    return st[1] if st else None


def vcpu_wait_ns(dom, pid):
    s = sk.stat(dom)
    if not s:
        return None
    return sum(v["wait_ns"] for v in s["vcpus"] if v["pid"] == pid)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lagvisor", required=True)
    ap.add_argument("--elf-dir", required=True)
    ap.add_argument("--rounds", type=int, default=LT_ROUNDS)
    ap.add_argument("--late-max-ms", type=int, default=LATE_MAX_MS)
    args = ap.parse_args()
    r = sk.prepare(args.lagvisor, args.elf_dir, ("hog", "late-timer"))
    if r is not None:
        return r
    t = time.monotonic()
    try:
        # the guest's TSC rate from a lone guest: one measured under load can be far off
        sk.calibrate_tsc()
        dom = sk.domain("late-timer")
        h = sk.hog("H", 1, sk.sched_args(dom))
        if not sk.failures and sk.check(h.wait_for(sk.has_progress(1), 120), "the spinning VM runs"):
            g = sk.Guest("T", "late-timer", 1,
                         [f"lt.rounds={args.rounds}", f"lt.late_max_ms={args.late_max_ms}"],
                         sk.sched_args(dom))
            # the guest's vCPU thread exists once it prints
            g.wait_for(lambda g: any("TSC" in l for _, l in g.snapshot()), 60)
            d0, w0 = vcpu_run_delay_ns(g.pid), vcpu_wait_ns(dom, g.pid)
            d1, w1 = d0, w0
            while g.running():
                d1, w1 = vcpu_run_delay_ns(g.pid), vcpu_wait_ns(dom, g.pid)
                time.sleep(0.5)
            g.wait(args.rounds * 0.01 + 60)
            if None not in (d0, d1, w0, w1):
                sk.log(f"over the run the timer vCPU waited {(d1 - d0) / 1e6:.1f} ms in the "
                       f"host's run queue and {(w1 - w0) / 1e6:.1f} ms for a pCPU of the domain")
            for _, line in g.snapshot():
                if line.startswith("late-timer:"):
                    sk.log(line)
            sk.check(g.passed(), f"late-timer passed beside a spinning VM (exit status "
                     f"{g.status}): {args.rounds} timers, none more than "
                     f"{args.late_max_ms} ms late")
        h.kill(signal.SIGTERM)
        h.wait(30)
    finally:
        sk.cleanup()
    took = time.monotonic() - t
    if sk.failures:
        sk.log(f"late-timer: FAIL ({took:.1f} s): " + "; ".join(sk.failures))
        return 1
    sk.log(f"late-timer: PASS ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
