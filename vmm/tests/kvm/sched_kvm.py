#!/usr/bin/env python3
"""lagvisor's scheduler on real vCPUs (--sched eevdf), checked with KVM.

  sched_kvm.py --lagvisor PATH --elf-dir DIR TEST

TEST is one of:
  fairness      three hog VMs in one --sched-domain on one host CPU, weights
                2048, 1024, 1024, --slice 20ms: the scheduler's run time
                (lagvisor stat) must be 2:1 (A:B) and 1:1 (B:C) within
                TOL_FAIR, and so must the guests' loop counts (median of
                FAIR_PARTS sub-windows) whenever the equal-weight pair B:C
                agrees within TOL_FAIR (the control: on a loaded emulating
                host guest work per ms of curr time swings too much to judge;
                the log says so). A scheduler that ignored weights passes 1:1
                and fails 2:1. 20 ms slices and one progress line per 2 s:
                under nested KVM each switch and each serial byte costs ~ms
                of guest time, which at 3 ms slices skewed the work ratio to
                2.4-2.7 while run time stayed 2.0.
  starvation    a 4-vCPU and a 2-vCPU hog VM in one domain on one host CPU:
                every vCPU advances in every span of >= STARVE_BOUND_S,
                progress lines never stop for more than STARVE_GAP_S, and
                each vCPU's run time (lagvisor stat) is within
                +-STARVE_SHARE of the fair 1/6; a stall is printed with the
                scheduler's view of it.
  wakeups       wakebench (1 message vCPU, 3 workers, 5000 rounds/s, no work)
                on one host CPU for WAKE_MS: every IPI sent was seen (the
                guest counts them; a lost wakeup leaves a worker halted for
                good and fails its drain check), at least WAKE_MIN wakeups,
                and the VM never stops using CPU for WAKE_STUCK_S (then the
                domain and thread states are printed). Nested KVM (QEMU 10)
                does ~1000 wakeups/s here, so 40 s give ~4*10^4; the 10^6
                of the issue: SCHED_KVM_WAKE_MS=960000
                SCHED_KVM_WAKE_MIN=1000000 (~16 min nested).
  idle          a 2-vCPU wakebench at 1 round/s (all vCPUs halted ~always):
                lagvisor's CPU time (/proc/PID/stat utime+stime, every
                thread) over IDLE_WINDOW_S stays under 1 % of one core, and
                the domain's pCPUs are busy under 1 % (lagvisor stat).
  member-death  two survivor VMs (a hog and a wakebench) in one domain on
                one host CPU while victim VMs join and are SIGKILLed at
                random moments, KILLS times: the survivors keep printing
                (no gap over DEATH_GAP_S), the wakebench passes (no lost
                wakeup), and the victims' vCPUs leave the domain.
  features      a hog VM beside a wakebench VM on one host CPU: with the
                default flags the hog vCPU is preempted by wakeups (stat
                "preemptions" > 0); with --sched-feature
                NO_WAKEUP_PREEMPTION,NO_PREEMPT_ELIGIBLE passed to both it
                never is (== 0).

Exit 0 pass, 1 fail, 77 skip (no /dev/kvm, lagvisor not built). Under an
emulating KVM (scripts/nested-kvm) guests run at ~1/50 native speed: the
checks compare ratios and counts, never absolute times.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts", "lib"))
import lagvisor as lv  # noqa: E402  (the scripts' guest launcher)

SKIP = 77
SUMMARY = lv.SUMMARY

FAIR_SLICE = "20ms"     # see test_fairness
FAIR_REPORT_MS = 2000
FAIR_WINDOW_S = 30
FAIR_PARTS = 5
TOL_FAIR = 0.15         # 2:1 within 15 %: nested KVM noise, still far from 1:1
STARVE_REPORT_MS = 1000
STARVE_WINDOW_S = 20
STARVE_BOUND_S = 2.5    # every vCPU runs in every span this long
STARVE_GAP_S = 5.0      # no VM goes this long without a progress line
STARVE_SHARE = 0.25     # scheduler run time per vCPU: (1 +- this) x fair
WAKE_MS = int(os.environ.get("SCHED_KVM_WAKE_MS", 40000))
WAKE_MIN = int(os.environ.get("SCHED_KVM_WAKE_MIN", 10000))
WAKE_SLACK_S = 60
WAKE_STUCK_S = 15       # no CPU used by a running VM this long: stuck
IDLE_WINDOW_S = 8.0
IDLE_MAX = 0.01         # of one core
IDLE_SLOW = 20
KILLS = 12
DEATH_GAP_S = 6.0

LAGVISOR = None
TSC_KHZ = None
# Every lagvisor thread of a one-host-CPU domain on that CPU (as a host
# would run it): unpinned, each vCPU thread lands on its own nested CPU,
# and under an emulating host those run at unequal, load-dependent speeds,
# so guest work stops tracking the scheduler's run time (seen: vCPUs with
# fair run time and no guest progress for 5 s). SCHED_KVM_PIN=0: unpinned.
# Used by the fairness test only: the starvation test pinned (6 vCPU
# threads on one nested CPU) once stalled the whole nested VM (open).
PIN = None if os.environ.get("SCHED_KVM_PIN") == "0" else {0}
PASS = None
ELF_DIR = None
failures = []
guests = []


def log(msg):
    print(f"sched_kvm: {msg}", flush=True)


def check(ok, msg):
    log(("ok: " if ok else "FAIL: ") + msg)
    if not ok:
        failures.append(msg)
    return ok


def skip(reason):
    log(f"SKIP: {reason}")
    sys.exit(SKIP)


def live_threads(pid):
    """(tid, comm, stat fields, kernel wait channel) of each thread of pid
    still there: what a hang report shows of a VM."""
    for tid in lv.thread_ids(pid):
        st = lv.task_stat(pid, tid)
        if st is None:
            continue
        try:
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip()
        except OSError:
            continue
        yield tid, st[0], st[1], wchan


class Guest:
    """One lagvisor VM; its output lines are kept with host arrival times."""

    def __init__(self, tag, elf, cpus, cmdline, extra, sched="eevdf", affinity=None,
                 tsc_khz=None, strict=True):
        self.tag = tag
        self.lines = []
        self.lock = threading.Lock()
        if tsc_khz or TSC_KHZ:
            cmdline = cmdline + [f"tsc_khz={tsc_khz or TSC_KHZ}"]
        cmd = lv.run_argv(LAGVISOR, os.path.join(ELF_DIR, elf + ".elf"), cpus, "32M", cmdline,
                          sched=sched, strict_io=strict, extra=extra)
        log(f"[{tag}] {' '.join(cmd)}")
        pin = (lambda: os.sched_setaffinity(0, affinity)) if affinity else None
        self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=pin)
        self.pid = self.p.pid
        self.status = None
        self.reader = threading.Thread(target=self._pump, daemon=True)
        self.reader.start()
        guests.append(self)

    def _pump(self):
        for raw in self.p.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
            with self.lock:
                self.lines.append((time.monotonic(), line))
            print(f"[{self.tag}] {line}", flush=True)

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def running(self):
        return self.p.poll() is None

    def wait(self, timeout):
        """Exit status, or None after killing it when timeout passed."""
        try:
            self.status = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.diagnose(f"still running after {timeout:.0f} s")
            self.kill(signal.SIGKILL)
            self.p.wait()
            self.status = None
        self.reader.join(timeout=5)
        return self.status

    def diagnose(self, why):
        """Log what a VM that will be killed was doing: each thread's state,
        CPU time and kernel wait channel, its domain's stat, its last
        output. A hang in CI leaves nothing else to read."""
        log(f"[{self.tag}] {why}: pid {self.pid}, its threads:")
        for tid, comm, fields, wchan in live_threads(self.pid):
            log(f"[{self.tag}]   {tid} {comm}: state {fields[0]}, utime+stime "
                f"{lv.ticks(fields)} ticks, cpu {fields[36]}, wchan {wchan}")
            try:
                with open(f"/proc/{self.pid}/task/{tid}/stack") as f:
                    for frame in f.read().split("\n")[:8]:
                        if frame:
                            log(f"[{self.tag}]     {frame}")
            except OSError:
                pass
            if fields[0] != "Z" and shutil.which("gdb"):
                # each live thread by itself: a zombie leader cannot be attached
                r = subprocess.run(["gdb", "-p", tid, "-batch", "-ex", "bt 12"],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=60)
                for l in r.stdout.decode("utf-8", "replace").splitlines():
                    if l.startswith("#"):
                        log(f"[{self.tag}]     {l}")
        if "--sched-domain" in self.p.args:
            s = stat(self.p.args[self.p.args.index("--sched-domain") + 1])
            log(f"[{self.tag}] its domain: {json.dumps(s)}")
        lines = self.snapshot()
        log(f"[{self.tag}] {len(lines)} output lines; the last at "
            f"{time.monotonic() - lines[-1][0]:.1f} s ago" if lines else
            f"[{self.tag}] no output")

    def kill(self, sig=signal.SIGTERM):
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            pass

    def passed(self):
        return lv.guest_passed(self.status, [l for _, l in self.snapshot()], PASS)

    def hog_progress(self):
        """[(host time, [loops of vCPU 0..n-1])] from hog progress lines."""
        out = []
        for t, l in self.snapshot():
            h = lv.hog_line(l)
            if h and h["cpus"]:
                out.append((t, h["cpus"]))
        return out

    def wait_for(self, pred, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if pred(self):
                return True
            if not self.running():
                return pred(self)
            time.sleep(0.1)
        return False


def prepare(lagvisor, elf_dir, elfs):
    """Point the helpers at lagvisor and the guest images: None when all is
    there, else the exit status (a SKIP exits here)."""
    global LAGVISOR, ELF_DIR, PASS
    LAGVISOR, ELF_DIR = lagvisor, elf_dir
    if not os.path.exists("/dev/kvm"):
        skip("no /dev/kvm on this host (run it under scripts/nested-kvm)")
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR))
    except OSError as e:
        log(f"FAIL: /dev/kvm exists but cannot be opened: {e.strerror}")
        return 1
    if not os.access(LAGVISOR, os.X_OK):
        skip(f"lagvisor binary not built ({LAGVISOR})")
    for elf in elfs:
        if not os.path.exists(os.path.join(ELF_DIR, elf + ".elf")):
            log(f"FAIL: guest image {ELF_DIR}/{elf}.elf not built")
            return 1
    PASS = lv.guest_exit_codes()["PASS"]
    return None


def cleanup():
    for g in guests:
        if g.running():
            g.kill(signal.SIGKILL)
            g.p.wait()


def domain(name):
    return f"kvmt-{name}-{os.getpid()}"


def sched_args(dom, cpus="0", *more):
    return ["--host-cpus", cpus, "--sched-domain", dom] + list(more)


def stat(dom):
    r = subprocess.run([LAGVISOR, "stat", "--domain", dom, "--json", "--once"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    text = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0:
        log(f"lagvisor stat --domain {dom} exited {r.returncode}: {text.strip()}")
        return None
    try:
        return json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError):
        log(f"lagvisor stat: not JSON: {text.strip()[:300]}")
        return None


def interp(progress, t):
    """Total loops of a hog at host time t, linear between progress lines.
    A window edge computed as t0 + (t1 - t0) * k / n can land a rounding
    error past the last line it was derived from: clamp that much."""
    if progress and -1e-6 < t - progress[-1][0] <= 1e-6:
        t = progress[-1][0]
    if progress and -1e-6 <= progress[0][0] - t < 1e-6:
        t = progress[0][0]
    for (t0, a), (t1, b) in zip(progress, progress[1:]):
        if t0 <= t <= t1:
            f = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
            return [x + f * (y - x) for x, y in zip(a, b)]
    return None


def worst_stall(progress, bound_s):
    """(span_s, vcpu, t_from) of the longest span >= bound_s between two
    progress lines in which a vCPU's count did not move, or (0, None, None).
    hog prints late lines back to back (its report grid catches up), so
    line pairs alone would flag vCPUs that had no time to run."""
    worst = (0.0, None, None)
    for i, (ta, a) in enumerate(progress):
        j = next((j for j in range(i + 1, len(progress))
                  if progress[j][0] - ta >= bound_s), None)
        if j is None:
            break
        for k, (x, y) in enumerate(zip(a, progress[j][1])):
            if y <= x and progress[j][0] - ta > worst[0]:
                worst = (progress[j][0] - ta, k, ta)
    return worst


def hog(tag, cpus, extra, affinity=None, report_ms=250):
    return Guest(tag, "hog", cpus, ["hog.duration_ms=0", f"hog.report_ms={report_ms}"], extra,
                 affinity=affinity)


def has_progress(n):
    return lambda g: len(g.hog_progress()) >= n


def calibrate_tsc():
    """The guests' TSC rate, measured once by lone 1-vCPU guests
    (lagvisor.calibrate_tsc says why), in TSC_KHZ."""
    global TSC_KHZ

    def lone(i):
        g = Guest(f"cal{i}", "hog", 1, ["hog.duration_ms=1"], [], sched="host")
        g.wait(120)
        return g.passed(), [l for _, l in g.snapshot()]

    rates, khz = lv.calibrate_tsc(lone)
    if check(khz is not None, f"three lone guests measured the TSC rate: {rates} kHz"):
        TSC_KHZ = khz
        log(f"guests get tsc_khz={TSC_KHZ}")


# --- tests -----------------------------------------------------------------

def stop_hogs_together(vms, t_start, who):
    """Stop hog VMs that must still be running; their hog progress and the
    window [t0, t1] in which all of them reported, checked to span > 10 s."""
    for g in vms:
        check(g.running(), f"{g.tag} still running after the measured window")
        g.kill(signal.SIGTERM)
    for g in vms:
        g.wait(30)
    prog = {g.tag: g.hog_progress() for g in vms}
    t0 = max(t_start, max(p[0][0] for p in prog.values()))
    t1 = min(p[-1][0] for p in prog.values())
    check(t1 - t0 > 10, f"{who} ran together for {t1 - t0:.1f} s (> 10 s)")
    return prog, t0, t1


def test_fairness():
    dom = domain("fair")
    sl = ["--slice", os.environ.get("SCHED_KVM_SLICE", FAIR_SLICE)]
    rep = int(os.environ.get("SCHED_KVM_REPORT_MS", FAIR_REPORT_MS))
    vms = [hog("A", 1, sched_args(dom, "0", "--weight", "2048", *sl), PIN, rep),
           hog("B", 1, sched_args(dom, "0", "--weight", "1024", *sl), PIN, rep),
           hog("C", 1, sched_args(dom, "0", "--weight", "1024", *sl), PIN, rep)]
    if not all(check(g.wait_for(has_progress(2), 120), f"{g.tag} prints hog progress")
               for g in vms):
        return
    t_start = time.monotonic()
    s0 = stat(dom)
    time.sleep(FAIR_WINDOW_S)
    s1 = stat(dom)
    prog, t0, t1 = stop_hogs_together(vms, t_start, "all three")
    # Guest work per slice of curr time varies with the emulating host's
    # load (it deschedules the nested CPU running the curr vCPU now and then,
    # in bursts): the median ratio of FAIR_PARTS sub-windows, not the sum.
    ratios = []
    for i in range(FAIR_PARTS):
        ta = t0 + (t1 - t0) * i / FAIR_PARTS
        tb = t0 + (t1 - t0) * (i + 1) / FAIR_PARTS
        d = {}
        for tag, p in prog.items():
            a, b = interp(p, ta), interp(p, tb)
            d[tag] = (b[0] - a[0]) if a and b else 0
        log(f"sub-window {i}: guest loops " + ", ".join(f"{k}={v:.0f}" for k, v in d.items()))
        if min(d.values()) <= 0:
            check(False, f"every VM made progress in sub-window {i}")
            return
        ratios.append((d["A"] / d["B"], d["B"] / d["C"]))
    ab = sorted(r[0] for r in ratios)[FAIR_PARTS // 2]
    bc = sorted(r[1] for r in ratios)[FAIR_PARTS // 2]
    log(f"guest loops ratio A/B: median {ab:.3f} of {[round(r[0], 2) for r in ratios]}; "
        f"B/C: median {bc:.3f} of {[round(r[1], 2) for r in ratios]}")
    # The scheduler's decision: curr time per vCPU (lagvisor stat run_ns).
    if check(s0 is not None and s1 is not None, "lagvisor stat read the domain"):
        run = {}
        for v1 in s1["vcpus"]:
            v0 = next((v for v in s0["vcpus"] if v["pid"] == v1["pid"]), None)
            if v0:
                run[v1["pid"]] = v1["run_ns"] - v0["run_ns"]
        r = [run.get(g.pid, 0) for g in vms]
        if check(min(r) > 0, f"each VM ran in the window ({[x // 1000000 for x in r]} ms)"):
            check(abs(r[0] / r[1] / 2 - 1) <= TOL_FAIR, f"scheduler: run time A/B = "
                  f"{r[0] / r[1]:.3f} (want 2 +- {TOL_FAIR * 100:.0f} %)")
            check(abs(r[1] / r[2] - 1) <= TOL_FAIR, f"scheduler: run time B/C = "
                  f"{r[1] / r[2]:.3f} (want 1 +- {TOL_FAIR * 100:.0f} %)")
    # What the guests got. Under an emulating host the work a vCPU does per
    # ms of curr time swings with that host's load (measured at load 11 on
    # 2 cores: equal-weight sub-window ratios 0.43-1.35 while the scheduler
    # gave 0.975), so the equal-weight pair is the control: when it agrees
    # within TOL_FAIR the 2:1 pair must too; when it does not, the run is
    # too noisy to judge guest work and says so.
    if abs(bc - 1) <= TOL_FAIR:
        check(abs(ab / 2 - 1) <= TOL_FAIR, f"guests: weight 2048 vs 1024 did "
              f"{ab:.3f}x the work (want 2 +- {TOL_FAIR * 100:.0f} %; the 1024 vs 1024 "
              f"control: {bc:.3f})")
    else:
        log(f"guests: NOT JUDGED: the equal-weight control did {bc:.3f}x the work of its "
            f"twin (> {TOL_FAIR * 100:.0f} % off): guest work per curr time is too noisy "
            "on this host now")


def test_starvation():
    dom = domain("starve")
    vms = [hog("Q4", 4, sched_args(dom), report_ms=STARVE_REPORT_MS),
           hog("Q2", 2, sched_args(dom), report_ms=STARVE_REPORT_MS)]
    if not all(check(g.wait_for(has_progress(2), 180), f"{g.tag} prints hog progress")
               for g in vms):
        return
    # The scheduler's view of the same window, to tell a vCPU the scheduler
    # did not run from one whose thread ran no guest code.
    stats, t_start = [], time.monotonic()
    while time.monotonic() - t_start < STARVE_WINDOW_S:
        s = stat(dom)
        if s:
            stats.append((time.monotonic(), {(v["pid"], v["vcpu"]): (v["run_ns"], v["wait_ns"])
                                              for v in s["vcpus"]}))
        time.sleep(1)
    prog, t0, t1 = stop_hogs_together(vms, t_start, "both")
    shares = []
    for g in vms:
        p = prog[g.tag]
        win = [x for x in p if t0 <= x[0] <= t1]
        gaps = [b[0] - a[0] for a, b in zip(win, win[1:])]
        check(bool(gaps) and max(gaps) <= STARVE_GAP_S, f"{g.tag}: longest time between "
              f"progress lines {max(gaps or [0]):.2f} s (<= {STARVE_GAP_S} s)")
        worst = worst_stall(win, STARVE_BOUND_S)
        if worst[1] is not None:
            k, ta = worst[1], worst[2]
            seen = [r[(g.pid, k)] for t, r in stats
                    if ta <= t <= ta + worst[0] and (g.pid, k) in r]
            snaps = [r for t, r in stats if ta <= t <= ta + worst[0]]
            if len(seen) > 1:
                others = sum(snaps[-1][x][0] - snaps[0][x][0] for x in snaps[-1]
                             if x in snaps[0] and x != (g.pid, k))
                log(f"{g.tag}/vCPU{k} made no guest progress for {worst[0]:.2f} s from "
                    f"t={ta - t_start:.1f} s; lagvisor stat over {len(seen) - 1} s of it: run "
                    f"+{(seen[-1][0] - seen[0][0]) / 1e6:.0f} ms, wait "
                    f"+{(seen[-1][1] - seen[0][1]) / 1e6:.0f} ms; the other vCPUs ran "
                    f"{others / 1e6:.0f} ms meanwhile")
        check(worst[1] is None, f"{g.tag}: every vCPU advanced in every span of >= "
              f"{STARVE_BOUND_S} s")
        a, b = interp(p, t0), interp(p, t1)
        shares += [(f"{g.tag}/vCPU{i}", y - x) for i, (x, y) in enumerate(zip(a, b))]
    total = sum(s for _, s in shares)
    fair = total / len(shares)
    log("guest loops per vCPU in the common window (info: vCPU 0 also prints): " +
        ", ".join(f"{k}={v:.0f} ({v / fair:.2f}x fair)" for k, v in shares))
    if check(len(stats) > 5, f"{len(stats)} lagvisor stat samples"):
        first, last = stats[0][1], stats[-1][1]
        run = {k: last[k][0] - first[k][0] for k in last if k in first}
        fair_run = sum(run.values()) / len(run)
        tag = {g.pid: g.tag for g in vms}
        log("scheduler run time per vCPU: " + ", ".join(
            f"{tag.get(p, p)}/vCPU{v}={r / 1e6:.0f} ms ({r / fair_run:.2f}x fair)"
            for (p, v), r in sorted(run.items())))
        check(len(run) == 6, f"6 vCPUs in the domain ({len(run)})")
        worst = max(run.items(), key=lambda kv: abs(kv[1] / fair_run - 1))
        check(abs(worst[1] / fair_run - 1) <= STARVE_SHARE, f"scheduler: every vCPU got its "
              f"run time within {STARVE_SHARE * 100:.0f} % of fair (worst "
              f"{tag.get(worst[0][0])}/vCPU{worst[0][1]}: {worst[1] / fair_run:.2f}x)")


def describe_hang(g, dom):
    """What a stuck VM's threads and the domain look like (for the report)."""
    s = stat(dom)
    if s:
        log("domain: " + json.dumps(s["pcpus"]))
        for v in s["vcpus"]:
            if v["pid"] == g.pid:
                log(f"  vCPU {v['vcpu']}: run {v['run_ns'] / 1e6:.0f} ms, wakeups "
                    f"{v['wakeups']}, blocks {v['blocks']}, preemptions {v['preemptions']}")
    for tid, comm, fields, wchan in live_threads(g.pid):
        log(f"  thread {tid} ({comm}): state {fields[0]}, wchan {wchan or '-'}, "
            f"cpu {lv.ticks(fields)} ticks")


def test_wakeups():
    dom = domain("wake")
    extra = ["--host-cpus", "0", "--sched-domain", dom]
    if os.environ.get("SCHED_KVM_TRACE"):
        extra += ["--trace", os.environ["SCHED_KVM_TRACE"]]
    g = Guest("W", "wakebench", 4,
              [f"wb.duration_ms={WAKE_MS}", "wb.warmup_ms=0", "wb.rate=5000", "wb.work_us=0"],
              extra)
    t = time.monotonic()
    # wakebench ends WAKE_MS after its start (TSC time) plus a drain of at
    # most 5 s; a guest whose vCPUs all stopped running shows no more CPU.
    last, idle_since = -1, None
    while g.running() and time.monotonic() - t < WAKE_MS / 1000 + WAKE_SLACK_S:
        time.sleep(2)
        try:
            ticks = lv.process_ticks(g.pid)
        except OSError:
            break
        if ticks != last:
            last, idle_since = ticks, time.monotonic()
        elif time.monotonic() - idle_since > WAKE_STUCK_S:
            break
    if g.running():
        log(f"wakebench still running after {time.monotonic() - t:.0f} s, its process idle "
            f"for {time.monotonic() - idle_since:.0f} s:")
        describe_hang(g, dom)
    g.wait(WAKE_SLACK_S if g.running() and time.monotonic() - idle_since < WAKE_STUCK_S else 1)
    n = wakebench_requests(g)
    log(f"wakebench took {time.monotonic() - t:.1f} s, {n} wakeups")
    check(g.passed(), f"wakebench passed: exit status {g.status} (every IPI seen, "
          "every worker drained, the VM did not stall)")
    check(n >= WAKE_MIN, f"{n} wakeups of halted worker vCPUs on one host CPU "
          f"(>= {WAKE_MIN})")


def last_number(g, pattern):
    """The number pattern's group 1 matched on the guest's last line with it (0 if none)."""
    for _, line in reversed(g.snapshot()):
        m = re.search(pattern, line)
        if m:
            return int(m.group(1))
    return 0


def wakebench_requests(g):
    """Wakeups the guest recorded: its "wakebench: samples=N" line (0 if none)."""
    wb = lv.wakebench_summary([l for _, l in g.snapshot()])
    return wb.get("samples", 0) if wb else 0


def test_idle():
    dom = domain("idle")
    # tsc_khz= IDLE_SLOW x the real rate: the guest's 1 round/s is one round
    # every IDLE_SLOW s, and between rounds the message vCPU sleeps in
    # LAPIC one-shots of at most 2^32 ticks (~4.3 s); the worker halts.
    g = Guest("I", "wakebench", 2, ["wb.duration_ms=30000", "wb.warmup_ms=0", "wb.rate=1",
                                    "wb.work_us=0"], ["--sched-domain", dom],
              tsc_khz=TSC_KHZ * IDLE_SLOW)
    if not check(g.wait_for(lambda g: any("rounds/s" in l for _, l in g.snapshot()), 120),
                 "wakebench started its rounds"):
        return
    time.sleep(2)
    s0, c0, th0, t0 = stat(dom), lv.process_ticks(g.pid), lv.thread_ticks(g.pid), time.monotonic()
    time.sleep(IDLE_WINDOW_S)
    s1, c1, th1, t1 = stat(dom), lv.process_ticks(g.pid), lv.thread_ticks(g.pid), time.monotonic()
    hz = os.sysconf("SC_CLK_TCK")
    log("CPU ms per thread in the window: " + ", ".join(
        f"{k}: {(v - th0.get(k, 0)) * 1000 / hz:.0f}" for k, v in sorted(th1.items())))
    frac = (c1 - c0) / hz / (t1 - t0)
    check(g.running(), "the VM was still running through the window")
    check(frac < IDLE_MAX, f"lagvisor used {(c1 - c0) * 1000 / hz:.0f} ms CPU in "
          f"{t1 - t0:.1f} s = {frac * 100:.2f} % of a core (< {IDLE_MAX * 100:.0f} %)")
    if check(s0 is not None and s1 is not None, "lagvisor stat read the domain"):
        busy = [(p1["pcpu"], p1["busy_ns"] - p0["busy_ns"])
                for p0, p1 in zip(s0["pcpus"], s1["pcpus"])]
        span = (s1["time_ns"] - s0["time_ns"]) or 1
        worst = max(b for _, b in busy) / span
        log("pCPU busy in the window: " +
            ", ".join(f"pCPU {p}: {b / span * 100:.2f} %" for p, b in busy))
        check(worst < IDLE_MAX, f"every pCPU of the domain idle: busiest {worst * 100:.2f} % "
              f"(< {IDLE_MAX * 100:.0f} %)")
    g.kill(signal.SIGTERM)
    g.wait(30)


def test_member_death():
    dom = domain("death")
    h = hog("S1", 2, sched_args(dom))
    w = Guest("S2", "wakebench", 3, ["wb.duration_ms=40000", "wb.warmup_ms=0", "wb.rate=200",
                                     "wb.work_us=20"], sched_args(dom))
    if not check(h.wait_for(has_progress(2), 120), "S1 prints hog progress"):
        return
    rng = random.Random(os.environ.get("SCHED_KVM_SEED") or time.time_ns())
    victims, t_begin = [], time.monotonic()
    for i in range(KILLS):
        v = hog(f"V{i}", rng.choice([1, 2]), sched_args(dom))
        victims.append(v)
        time.sleep(rng.uniform(0.0, 3.0))
        v.kill(signal.SIGKILL)
        v.wait(30)
        log(f"V{i} (pid {v.pid}) killed, status {v.status}")
        if not w.running() and w.status is None:
            w.wait(1)
        time.sleep(rng.uniform(0.0, 0.5))
    t_end = time.monotonic()
    check(h.running(), "S1 survived the kills")
    prog = [x for x in h.hog_progress() if t_begin <= x[0]]
    gaps = [b[0] - a[0] for a, b in zip(prog, prog[1:])]
    tail = (t_end - prog[-1][0]) if prog else t_end - t_begin
    check(bool(prog) and max(gaps + [tail]) <= DEATH_GAP_S,
          f"S1 kept printing through {KILLS} kills in {t_end - t_begin:.1f} s: longest "
          f"silence {max(gaps + [tail]):.2f} s (<= {DEATH_GAP_S} s)")
    worst = worst_stall(prog, STARVE_BOUND_S)
    check(bool(prog) and worst[1] is None, f"both S1 vCPUs advanced in every span of >= "
          f"{STARVE_BOUND_S} s between {len(prog)} progress lines"
          + (f" (vCPU {worst[1]} did not for {worst[0]:.2f} s)" if worst[1] is not None else ""))
    w.wait(240)
    check(w.passed(), f"S2 wakebench finished and passed (exit status {w.status}): no "
          "wakeup lost while members died")
    dead = {v.pid for v in victims}
    s, deadline = None, time.monotonic() + 30
    while time.monotonic() < deadline:
        s = stat(dom)
        if s and not any(x["pid"] in dead for x in s["vcpus"]) and s["members"] == 1:
            break
        time.sleep(1)
    if check(s is not None, "lagvisor stat read the domain after the kills"):
        left = sorted({x["pid"] for x in s["vcpus"] if x["pid"] in dead})
        check(not left, f"no vCPU of a killed member left in the domain ({left})")
        check(s["members"] == 1, f"members after the kills and S2's exit: {s['members']} "
              "(want 1, S1)")
    before = h.hog_progress()[-1][1] if h.hog_progress() else None
    time.sleep(3)
    after = h.hog_progress()[-1][1] if h.hog_progress() else None
    check(before is not None and after is not None and sum(after) > sum(before),
          "S1 still makes progress after the others left")
    h.kill(signal.SIGTERM)
    h.wait(30)


def run_features(flags):
    dom = domain("feat" + ("-off" if flags else "-on"))
    extra = ["--sched-feature", flags] if flags else []
    h = hog("H", 1, sched_args(dom, "0", *extra))
    w = Guest("W", "wakebench", 2, ["wb.duration_ms=8000", "wb.warmup_ms=0", "wb.rate=200",
                                    "wb.work_us=20"], sched_args(dom, "0", *extra))
    ok = check(h.wait_for(has_progress(1), 120), "H prints hog progress")
    ok = check(w.wait_for(lambda g: any("rounds/s" in l for _, l in g.snapshot()), 120),
               "W started its rounds") and ok
    s = None
    if ok:
        time.sleep(6)
        s = stat(dom)
    w.wait(240)
    check(w.passed(), f"wakebench passed (exit status {w.status})")
    h.kill(signal.SIGTERM)
    h.wait(30)
    if not check(s is not None, "lagvisor stat read the domain"):
        return None
    hv = [x for x in s["vcpus"] if x["pid"] == h.pid]
    wv = [x for x in s["vcpus"] if x["pid"] == w.pid]
    pre = sum(x["preemptions"] for x in hv)
    wake = sum(x["wakeups"] for x in wv)
    log(f"{flags or 'default flags'}: hog vCPU preempted {pre} times, "
        f"wakebench vCPUs woke {wake} times")
    # enough wakeups that 0 preemptions means something: with the default
    # flags about a third of them preempt the hog (325 of 927 in one run)
    check(wake >= 20, f"wakebench vCPUs woke {wake} times (>= 20) in the domain")
    return pre


def test_features():
    # PREEMPT_ELIGIBLE off as well: its slice-timer tick preempts a hog
    # whose protection is over for a queued wakee with an earlier deadline,
    # and since the holder wakes a halted vCPU at its deadline itself
    # (vmm/sched/sched_bind_sleepers.c) that tick comes right after such a wake
    # (168 of ~2000 wakes with PREEMPT_ELIGIBLE on); stat counts both kinds.
    off_flags = "NO_WAKEUP_PREEMPTION,NO_PREEMPT_ELIGIBLE"
    on = run_features(None)
    off = run_features(off_flags)
    if on is not None:
        check(on > 0, f"default flags: wakeups preempted the hog vCPU {on} times (> 0)")
    if off is not None:
        check(off == 0, f"--sched-feature {off_flags}: hog vCPU preempted {off} "
              "times (want 0)")


TESTS = {"fairness": test_fairness, "starvation": test_starvation, "wakeups": test_wakeups,
         "idle": test_idle, "member-death": test_member_death, "features": test_features}


# Tests that found a bug not fixed yet: SKIP naming it, unless asked.
KNOWN_ISSUES = {
    # Empty: the stalls once listed here (wakeups, starvation, member-death,
    # features) were QEMU 7.2's SVM emulation dropping the guest's STI
    # shadow (see pick_qemu in scripts/nested-kvm), not lagvisor's.
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lagvisor", required=True)
    ap.add_argument("--elf-dir", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    r = prepare(args.lagvisor, args.elf_dir, ("hog", "wakebench"))
    if r is not None:
        return r
    known = KNOWN_ISSUES.get(args.test)
    if known and not os.environ.get("LAGVISOR_RUN_KNOWN_ISSUES"):
        skip(f"known open bug: {known} (LAGVISOR_RUN_KNOWN_ISSUES=1 runs it)")
    t = time.monotonic()
    try:
        calibrate_tsc()
        if not failures:
            TESTS[args.test]()
    finally:
        cleanup()
    took = time.monotonic() - t
    if failures:
        log(f"{args.test}: FAIL ({len(failures)} checks, {took:.1f} s): " + "; ".join(failures))
        return 1
    log(f"{args.test}: PASS ({took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
