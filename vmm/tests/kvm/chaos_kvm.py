#!/usr/bin/env python3
"""The chaos guest (guest-tests/tests/chaos.c) beside other VMs of one domain.

  chaos_kvm.py --lagvisor PATH --elf-dir DIR TEST

TEST is one of:
  neighbour  a wakebench VM (1 message vCPU, 1 worker) in one --sched-domain
             on one host CPU, three times: alone, beside a 4-vCPU hog VM,
             and beside the 4-vCPU chaos guest (--sched eevdf, lagvisor's
             irqchip, no --strict-io). Each wakebench passes (every IPI
             seen, no stall) with at least WAKE_MIN_RATE of its rounds; the
             chaos guest passes (it ran, stopped, its irqchip still works);
             and the wakeup p99 beside chaos stays within NEIGHBOUR_P99_FACTOR
             of the p99 beside the plain hog, plus NEIGHBOUR_P99_SLACK_US
             (chaos makes thousands of exits per ms of run time; each is a
             scheduling point, none may cost the neighbour its turn). Each
             wakebench lagvisor ends within EXIT_S of its guest's summary.
  kill       a hog VM and the chaos guest in one domain on one host CPU; the
             chaos guest is SIGKILLed mid-chaos, a second one SIGTERMed: the
             hog keeps printing (no silence over KILL_GAP_S), the SIGTERMed
             lagvisor exits by itself within TERM_S, and the domain is left
             with the hog alone (no vCPU of a dead member).

Exit 0 pass, 1 fail, 77 skip (no /dev/kvm, lagvisor not built). The
helpers (Guest, check, stat, ...) are sched_kvm.py's.
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sched_kvm as sk  # noqa: E402

WAKE_MS = 6000
WAKE_RATE = 500
WAKE_MIN_RATE = 0.3         # of WAKE_RATE * WAKE_MS rounds: the neighbour kept running
WAKE_MIN = 300              # wakeups, for a p99 worth comparing
NEIGHBOUR_P99_FACTOR = 3.0
NEIGHBOUR_P99_SLACK_US = 2000
CHAOS_CPUS = 4
# A vCPU thread left pinned to the domain's host CPU waited 11 s to over
# 2 min there for the other VM's holder to let it leave (vmm/vm.c,
# vm_unpin_vcpus), and lagvisor said "vCPU 0 did not stop" after 5 s. The
# rest of a VM's teardown still waits for the kernel's per-CPU workers of
# that CPU (an SRCU grace period), seen to take up to 4.9 s beside the hog.
EXIT_S = 15.0
KILL_GAP_S = 6.0
TERM_S = 10.0
WB_KEYS = ("samples", "p50_ns", "p99_ns", "max_ns", "busy")


def wakebench_stats(g):
    wb = sk.lv.wakebench_summary([l for _, l in g.snapshot()])
    if not wb or not all(k in wb for k in WB_KEYS):
        return None
    return {"samples": wb["samples"], "p50": wb["p50_ns"] / 1000, "p99": wb["p99_ns"] / 1000,
            "max": wb["max_ns"] / 1000, "busy": wb["busy"]}


def chaos(tag, extra, duration_ms):
    return sk.Guest(tag, "chaos", CHAOS_CPUS, [f"chaos.duration_ms={duration_ms}"], extra,
                    strict=False)


def chaos_ops(g):
    return sk.last_number(g, r"chaos: ops=(\d+)")


def wakebench_beside(name, make_other):
    """One wakebench run in a fresh domain, beside make_other(domain args)."""
    dom = sk.domain(f"chaos-{name}")
    other = make_other(sk.sched_args(dom)) if make_other else None
    if other and not sk.check(other.wait_for(lambda g: len(g.snapshot()) > 0, 120),
                              f"{name}: the other VM started"):
        return None, other
    w = sk.Guest(f"W-{name}", "wakebench", 2,
                 [f"wb.duration_ms={WAKE_MS}", "wb.warmup_ms=200", f"wb.rate={WAKE_RATE}",
                  "wb.work_us=20"], sk.sched_args(dom))
    w.wait(WAKE_MS / 1000 + 120)
    ended = time.monotonic()
    summ = [t for t, l in w.snapshot() if sk.SUMMARY.match(l)]
    if summ and w.status is not None:
        stuck = [l for _, l in w.snapshot() if "did not stop" in l]
        sk.check(not stuck and ended - summ[-1] <= EXIT_S,
                 f"{name}: lagvisor ended {ended - summ[-1]:.1f} s after the guest's summary "
                 f"(<= {EXIT_S} s), every vCPU stopped ({stuck[0] if stuck else 'yes'})")
    s = wakebench_stats(w)
    want = int(WAKE_RATE * WAKE_MS / 1000 * WAKE_MIN_RATE)
    sk.check(w.passed(), f"{name}: wakebench passed (exit status {w.status})")
    # a round whose worker is still busy is skipped (its 20 us of work
    # shares the CPU with the other VM): rounds = wakeups + busy
    sk.check(s is not None and s["samples"] + s["busy"] >= want and s["samples"] >= WAKE_MIN,
             f"{name}: {s['samples'] if s else 0} wakeups + {s['busy'] if s else 0} busy rounds "
             f"(>= {want}, wakeups >= {WAKE_MIN})")
    if s:
        sk.log(f"{name}: wakeup p50 {s['p50']:.0f} us, p99 {s['p99']:.0f} us, "
               f"max {s['max']:.0f} us")
    return s, other


def test_neighbour():
    alone, _ = wakebench_beside("alone", None)
    hog_s, h = wakebench_beside("hog", lambda extra: sk.hog("H", CHAOS_CPUS, extra))
    if h:
        h.kill(signal.SIGTERM)
        h.wait(30)
    # long enough to outlast the wakebench: its end is checked, not awaited
    dur = WAKE_MS + 4000
    chaos_s, c = wakebench_beside("chaos", lambda extra: chaos("C", extra, dur))
    if c:
        c.wait(dur / 1000 + 60)
        sk.check(c.passed(), f"the chaos guest beside wakebench passed (exit status "
                 f"{c.status}, {chaos_ops(c)} operations)")
    if alone and hog_s and chaos_s:
        bound = hog_s["p99"] * NEIGHBOUR_P99_FACTOR + NEIGHBOUR_P99_SLACK_US
        sk.check(chaos_s["p99"] <= bound, f"wakeup p99 beside chaos {chaos_s['p99']:.0f} us "
                 f"<= {NEIGHBOUR_P99_FACTOR} x beside a hog ({hog_s['p99']:.0f} us) + "
                 f"{NEIGHBOUR_P99_SLACK_US} us = {bound:.0f} us (alone: {alone['p99']:.0f} us)")


def members_left(dom, dead):
    s, deadline = None, time.monotonic() + 30
    while time.monotonic() < deadline:
        s = sk.stat(dom)
        if s and not any(x["pid"] in dead for x in s["vcpus"]) and s["members"] == 1:
            break
        time.sleep(1)
    return s


def test_kill():
    dom = sk.domain("chaos-kill")
    h = sk.hog("S", 2, sk.sched_args(dom))
    if not sk.check(h.wait_for(sk.has_progress(2), 120), "S prints hog progress"):
        return
    t_begin, dead = time.monotonic(), set()
    for sig in (signal.SIGKILL, signal.SIGTERM):
        c = chaos(f"C-{sig.name}", sk.sched_args(dom), 600000)
        sk.check(c.wait_for(lambda g: any("LAPIC in" in l for _, l in g.snapshot()), 120),
                 f"chaos guest for {sig.name} started")
        time.sleep(3)
        sk.check(c.running(), f"the chaos guest ran 3 s (lagvisor up) before {sig.name}")
        t = time.monotonic()
        c.kill(sig)
        st = c.wait(TERM_S if sig == signal.SIGTERM else 30)
        took = time.monotonic() - t
        dead.add(c.pid)
        if sig == signal.SIGTERM:
            sk.check(st is not None and st >= 0, f"SIGTERM: lagvisor exited by itself in "
                     f"{took:.1f} s (status {st}; <= {TERM_S} s)")
        sk.log(f"{sig.name}: chaos lagvisor (pid {c.pid}) ended with status {st}")
    t_end = time.monotonic()
    sk.check(h.running(), "S survived both chaos guests")
    prog = [x for x in h.hog_progress() if t_begin <= x[0]]
    gaps = [b[0] - a[0] for a, b in zip(prog, prog[1:])] + \
        [t_end - prog[-1][0] if prog else t_end - t_begin]
    sk.check(bool(prog) and max(gaps) <= KILL_GAP_S, f"S kept printing through the chaos "
             f"and the kills: longest silence {max(gaps):.2f} s (<= {KILL_GAP_S} s)")
    s = members_left(dom, dead)
    if sk.check(s is not None, "lagvisor stat read the domain after the kills"):
        left = sorted({x["pid"] for x in s["vcpus"] if x["pid"] in dead})
        sk.check(not left, f"no vCPU of a killed chaos guest left in the domain ({left})")
        sk.check(s["members"] == 1, f"members after the kills: {s['members']} (want 1, S)")
    before = h.hog_progress()[-1][1]
    time.sleep(3)
    sk.check(sum(h.hog_progress()[-1][1]) > sum(before), "S still makes progress after")
    h.kill(signal.SIGTERM)
    h.wait(30)


TESTS = {"neighbour": test_neighbour, "kill": test_kill}

# Open bugs the test found: SKIP naming them, unless asked. "neighbour"
# was one until the holder of a pCPU woke its blocked vCPUs at their
# deadlines (vmm/sched/sched_bind_sleepers.c): a blocked wakebench vCPU whose
# deadline passed waited 1.5-6.5 s for its own thread to get host CPU 0
# from the chaos VM's threads (the VMs in separate autogroups), and sched/
# never learned it was runnable.
KNOWN_ISSUES = {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lagvisor", required=True)
    ap.add_argument("--elf-dir", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    r = sk.prepare(args.lagvisor, args.elf_dir, ("hog", "wakebench", "chaos"))
    if r is not None:
        return r
    known = KNOWN_ISSUES.get(args.test)
    if known and not os.environ.get("LAGVISOR_RUN_KNOWN_ISSUES"):
        sk.skip(f"known open bug: {known} (LAGVISOR_RUN_KNOWN_ISSUES=1 runs it)")
    t = time.monotonic()
    try:
        sk.calibrate_tsc()
        if not sk.failures:
            TESTS[args.test]()
    finally:
        sk.cleanup()
    took = time.monotonic() - t
    if sk.failures:
        sk.log(f"chaos {args.test}: FAIL ({len(sk.failures)} checks, {took:.1f} s): " +
               "; ".join(sk.failures))
        return 1
    sk.log(f"chaos {args.test}: PASS ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
