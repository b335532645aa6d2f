#!/usr/bin/env python3
"""Statistics and report of a scripts/bench-tail run with repetitions
(standard library only, so that every host that runs the benchmark can
report it).

  tail_stats.py report DIR [--title TEXT] [--resamples N] [--seed N] [--no-plot]
  tail_stats.py setslice PID --now --slice-ns NS
  tail_stats.py setslice PID --vcpus N --slice-ns NS --out FILE [--watch LOG]
  tail_stats.py setslice --probe --slice-ns NS
  tail_stats.py --selftest

report: reads DIR/raw/ (scripts/lib/benchvm.sh's NAME.meta / NAME.wb.log /
NAME.hog.log, with bench-tail's config=, rep=, work_us= lines added to each
meta, skip-CONFIG files for configurations that cannot run here) and
writes DIR/results.md (also printed), DIR/results.json (every run: its
percentiles, histogram, meta; every pooled row and ratio), DIR/latency.png
(benchvm.py's p50..p99.9 plot, on the pooled numbers) and
DIR/latency-cdf.png (pooled CDFs, one panel per level and work value).

Protocol. Every configuration ran once per repetition ("rep"), in an order
rotated per rep, so slow drift of the host hits every configuration alike.
A configuration's percentiles are *pooled*: the latency histograms of all
its runs merged, then the nearest-rank percentile of the merge (the
wakebench guest prints its histogram; the host-threads wakebench prints
only percentiles, and there the pooled value is approximated from them,
marked ~). A ratio A/B is the ratio of pooled percentiles; its 95 %
interval is a percentile bootstrap over reps: draw as many reps as were
run, with replacement, the same draw for A and B (runs of one rep ran
minutes apart at most and share the host's state then), pool the drawn
runs of each side, take the ratio; repeat --resamples times with a seeded
generator, so the same raw data always gives the same interval. host-B
is a second copy of the baseline, so host-B/host-A is the A/A control: an
interval that excludes 1 there says the run-to-run noise is larger than
the intervals pretend.

setslice: bench-tail's host-tuned baseline. --now gives every thread of
PID the slice NS with sched_setattr (SCHED_OTHER, sched_runtime; Linux >=
6.12 takes it as the task's EEVDF slice request; threads and children
inherit it). Without --now it waits until PID has N vCPU threads, reads
every thread's slice back from /proc/PID/task/TID/sched (se.slice), sets
it on any that lacks it (late: noted) and writes what it found to FILE as
JSON. --probe tries it on a child `sleep` and says whether this kernel
honours it.

Exit status: report 0 when every run that ran gave numbers and fairness
(if measured) passed, 1 otherwise, 2 on bad input; setslice 0 when every
thread reads back the slice.
"""
import argparse
import ctypes
import glob
import json
import math
import os
import platform
import random
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchvm  # noqa: E402  (the single-run parsers and the fairness check)
import lagvisor as lv  # noqa: E402  (the guests' output parsers)

PCTS = (("p50", 500), ("p99", 990), ("p999", 999))
PCT_NAME = {"p50": "p50", "p99": "p99", "p999": "p99.9"}
MIN_SAMPLES = 5000
THREADS_PASS = 0      # the Linux wakebench exits 0 when its checks pass
# The order of rows and of plot colours; anything else sorts after these.
CONFIG_ORDER = ["host-A", "host-B", "host-tuned", "host-user", "qemu", "threads", "eevdf"]
BASELINES = ["host-A", "host-tuned", "host-user", "qemu", "threads"]
COLORS = {"host-A": "#d62728", "host-B": "#ff9896", "host-tuned": "#ff7f0e",
          "host-user": "#8c564b", "qemu": "#9467bd", "threads": "#7f7f7f",
          "eevdf": "#1f77b4"}
EXTRA_COLORS = ["#2ca02c", "#17becf", "#bcbd22", "#e377c2", "#98df8a"]
DESCRIBE = {
    "host-A": "--sched host (KVM's irqchip), both VMs taskset to the same CPUs",
    "host-B": "host-A again, a separate configuration: host-B/host-A is the A/A control",
    "host-tuned": "host-A with every thread of the latency VM given the EEVDF slice "
                  "request (sched_setattr sched_runtime) that lagvisor's latency VM gets",
    "host-user": "host-A with --irqchip user (eevdf's irqchip: its cost apart from the scheduler's)",
    "qemu": "qemu-system-x86_64 -accel kvm (in-kernel irqchip), both VMs taskset to the same CPUs",
    "threads": "no VM: the Linux wakebench as host threads beside spinning host threads, "
               "taskset to the same CPUs",
    "eevdf": "--sched eevdf, both VMs in one --sched-domain; the latency VM with --slice",
}


# --- pooling and the bootstrap ---

def read_hist(path):
    """The wakebench-hist: lines of a console log as a sorted list of
    (value_ns, count), or None when the log has none (an older guest, or
    the host-threads wakebench)."""
    return lv.wakebench_hist(lv.read_lines(path))


def hist_percentiles(hist, lo, hi, permilles):
    """Nearest-rank percentiles of a sorted (value, count) list, as
    lib/lathist.h's lathist_percentile computes them in the guest (so one
    run's pooled value is its own printed value): the first value whose
    cumulative count reaches ceil(total * permille / 1000), clamped to the
    exact extremes [lo, hi], since a bucket's middle may lie outside them."""
    total = sum(c for _, c in hist)
    if not total:
        return [None] * len(permilles)
    wants = [max(1, -(-total * pm // 1000)) for pm in permilles]
    out = [None] * len(permilles)
    seen = 0
    for v, c in hist:
        seen += c
        for i, w in enumerate(wants):
            if out[i] is None and seen >= w:
                out[i] = min(max(v, lo), hi)
        if all(o is not None for o in out):
            break
    return out


def knots(run):
    """A run's CDF as the points its printed percentiles give, for runs
    without a histogram. Forced non-decreasing: rounding in the guest can
    make neighbours equal, never reversed, but a parse of odd output
    must not make the interpolation below run backwards."""
    pts = [(run["min"], 0.0), (run["pct"]["p50_ns"], 0.5), (run["pct"]["p75_ns"], 0.75),
           (run["pct"]["p90_ns"], 0.9), (run["pct"]["p99_ns"], 0.99),
           (run["pct"]["p999_ns"], 0.999), (run["max"], 1.0)]
    out, last = [], 0
    for x, f in pts:
        last = max(last, x, 1)
        out.append((last, f))
    return out


def knot_cdf(kn, x):
    """F(x) of knots(), linear in log(x) between knots (latencies spread
    over decades; linear in x would put the mass at the upper knot)."""
    if x <= kn[0][0]:
        return 0.0
    for (x0, f0), (x1, f1) in zip(kn, kn[1:]):
        if x <= x1:
            if x1 == x0:
                return f1
            t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return f0 + t * (f1 - f0)
    return 1.0


def mixture_quantile(parts, q):
    """x with sum(w * F(x)) / sum(w) = q over (weight, knots) parts, by
    bisection in log x: the approximate pooled percentile."""
    total = sum(w for w, _ in parts)
    lo = math.log(min(kn[0][0] for _, kn in parts))
    hi = math.log(max(kn[-1][0] for _, kn in parts))
    for _ in range(60):
        mid = (lo + hi) / 2
        f = sum(w * knot_cdf(kn, math.exp(mid)) for w, kn in parts) / total
        if f < q:
            lo = mid
        else:
            hi = mid
    return round(math.exp(hi))


def pool(runs, mult=None):
    """Pooled p50/p99/p999 (ns) of runs, each counted mult[i] times (a
    bootstrap draw), and whether they are exact (every run has its
    histogram) or approximated from the printed percentiles."""
    mult = mult or [1] * len(runs)
    pairs = [(r, m) for r, m in zip(runs, mult) if m]
    lo = min(r["min"] for r, _ in pairs)
    hi = max(r["max"] for r, _ in pairs)
    if all(r["hist"] for r, _ in pairs):
        merged = {}
        for r, m in pairs:
            for v, c in r["hist"]:
                merged[v] = merged.get(v, 0) + c * m
        vals = hist_percentiles(sorted(merged.items()), lo, hi, [pm for _, pm in PCTS])
        return dict(zip((k for k, _ in PCTS), vals)), True
    parts = [(r["n"] * m, knots(r)) for r, m in pairs]
    vals = [mixture_quantile(parts, pm / 1000) for _, pm in PCTS]
    return dict(zip((k for k, _ in PCTS), vals)), False


def bootstrap_ratio(num, den, resamples, seed):
    """Pooled-percentile ratios num/den with 95 % percentile-bootstrap
    intervals. num[i] and den[i] are the runs of rep i (paired: one draw of
    rep indices serves both sides). Returns {pct: (ratio, lo, hi)}.
    A draw is a multiset of reps, so pooled values are cached by it: with
    5 reps there are only 126 distinct draws, and pooling is the cost."""
    n = len(num)
    point_n, _ = pool(num)
    point_d, _ = pool(den)
    rng = random.Random(seed)
    cache = {}
    samples = {k: [] for k, _ in PCTS}
    for _ in range(resamples):
        mult = [0] * n
        for _ in range(n):
            mult[rng.randrange(n)] += 1
        key = tuple(mult)
        if key not in cache:
            cache[key] = (pool(num, mult)[0], pool(den, mult)[0])
        pn, pd = cache[key]
        for k, _ in PCTS:
            if pd[k]:
                samples[k].append(pn[k] / pd[k])
    out = {}
    for k, _ in PCTS:
        s = sorted(samples[k])
        ratio = point_n[k] / point_d[k] if point_d[k] else None
        # One rep resamples only to itself: no spread, so no interval.
        if n < 2 or len(s) < 2 or ratio is None:
            out[k] = (ratio, None, None)
            continue
        # Nearest-rank 2.5th and 97.5th percentiles of the resampled ratios.
        lo = s[max(0, math.ceil(0.025 * len(s)) - 1)]
        hi = s[min(len(s) - 1, math.ceil(0.975 * len(s)) - 1)]
        out[k] = (ratio, lo, hi)
    return out


# --- setslice: the host-tuned baseline's slice ---

SCHED_ATTR = "IIQiIQQQII"   # struct sched_attr, sched_setattr(2): 56 bytes
SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}


def set_slice(tid, slice_ns):
    """sched_setattr(tid, SCHED_OTHER, sched_runtime = slice_ns); None or
    why not. The thread's nice value is passed through: a SCHED_OTHER
    sched_setattr also sets nice, and the baseline must change only the
    slice."""
    nr = SYS_SCHED_SETATTR.get(platform.machine())
    if nr is None:
        return f"no sched_setattr number known for {platform.machine()}"
    try:
        nice = os.getpriority(os.PRIO_PROCESS, tid)
    except OSError as e:
        return f"getpriority: {e.strerror}"
    attr = struct.pack(SCHED_ATTR, struct.calcsize(SCHED_ATTR), 0, 0, nice, 0,
                       slice_ns, 0, 0, 0, 0)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(attr, len(attr))
    if libc.syscall(ctypes.c_long(nr), ctypes.c_long(tid), buf, ctypes.c_long(0)) != 0:
        return f"sched_setattr: {os.strerror(ctypes.get_errno())}"
    return None


def read_se_slice(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/sched") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() == "se.slice":
                    return int(val.strip().split(".")[0])
    except (OSError, ValueError):
        pass
    return None


def comm(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def tasks(pid):
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def apply_slice(pid, slice_ns):
    """Every thread of pid: set, then read back. [{tid, comm, error,
    se_slice_ns, ok}]."""
    out = []
    for tid in tasks(pid):
        err = set_slice(tid, slice_ns)
        got = read_se_slice(pid, tid)
        out.append({"tid": tid, "comm": comm(pid, tid), "error": err, "se_slice_ns": got,
                    "ok": err is None and got == slice_ns})
    return out


def cmd_setslice(args):
    if args.probe:
        child = subprocess.Popen(["sleep", "30"])
        try:
            res = apply_slice(child.pid, args.slice_ns)
        finally:
            child.kill()
            child.wait()
        bad = [r for r in res if not r["ok"]]
        if not res or bad:
            r = bad[0] if bad else {"error": "no thread", "se_slice_ns": None}
            print(r["error"] or f"this kernel ignores it: se.slice reads {r['se_slice_ns']} "
                  f"ns, not {args.slice_ns} (Linux >= 6.12 takes sched_runtime as the slice)")
            return 1
        print(f"se.slice reads back {args.slice_ns} ns")
        return 0
    if args.now:
        # tail-vmm, before it execs lagvisor: every thread lagvisor
        # creates inherits the slice, so the vCPUs have it from birth.
        res = apply_slice(args.pid, args.slice_ns)
        bad = [r for r in res if not r["ok"]]
        for r in bad:
            print(f"setslice: thread {r['tid']}: {r['error'] or 'se.slice reads %s' % r['se_slice_ns']}")
        return 1 if bad or not res else 0
    # Wait for the vCPU threads, then check every thread of the process:
    # what it inherited, and set (late) any that lacks the slice.
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if not os.path.isdir(f"/proc/{args.pid}"):
            break
        if sum(1 for t in tasks(args.pid) if (comm(args.pid, t) or "").startswith("vcpu")) >= args.vcpus:
            break
        time.sleep(0.01)
    inherited = {t: read_se_slice(args.pid, t) for t in tasks(args.pid)}
    missing = [t for t, v in inherited.items() if v != args.slice_ns]
    res = []
    for t in sorted(inherited):
        if t in missing:
            err = set_slice(t, args.slice_ns)
            got = read_se_slice(args.pid, t)
        else:
            err, got = None, inherited[t]
        res.append({"tid": t, "comm": comm(args.pid, t), "inherited_ns": inherited[t],
                    "error": err, "se_slice_ns": got, "ok": err is None and got == args.slice_ns})
    # A slice set only now may come after the guest's rounds began (its
    # INFO workers line is printed as they start).
    late = False
    if missing and args.watch:
        try:
            with open(args.watch, errors="replace") as f:
                late = any(re.match(r"^INFO: \d+ workers", line) for line in f)
        except OSError:
            pass
    vcpus = [r for r in res if (r["comm"] or "").startswith("vcpu")]
    rec = {"pid": args.pid, "slice_ns": args.slice_ns, "threads": res,
           "set_late": [r["tid"] for r in res if r["tid"] in missing],
           "vcpus_found": len(vcpus), "vcpus_wanted": args.vcpus, "late": late,
           "ok": bool(res) and all(r["ok"] for r in res) and len(vcpus) >= args.vcpus and not late}
    with open(args.out, "w") as f:
        json.dump(rec, f)
    return 0 if rec["ok"] else 1


# --- the report ---

def config_of(meta, name):
    if meta.get("config"):
        return meta["config"]
    m = re.match(r"l\d+-w\d+\.(.+)\.r\d+$", name)
    return m.group(1) if m else name


def config_sort(c):
    base = c.split(" ")[0].split("-NO_")[0].split("+")[0]
    return (CONFIG_ORDER.index(base) if base in CONFIG_ORDER else len(CONFIG_ORDER), c)


def label(c):
    """eevdf-NO_X as 'eevdf NO_X', as benchvm.py names the feature rows;
    eevdf+X as 'eevdf +X'."""
    return c.replace("-NO_", " NO_").replace("+", " +")


def load_runs(raw):
    runs = []
    for path in sorted(glob.glob(os.path.join(raw, "l*.meta"))):
        meta = benchvm.read_meta(path)
        name = meta.get("name", os.path.basename(path)[:-5])
        m = re.match(r"l(\d+)-w(\d+)\.(.+)\.r(\d+)$", name)
        cfg = config_of(meta, name)
        r = {"name": name, "config": cfg, "meta": meta,
             "level": int(meta.get("level") or (m.group(1) if m else 0)),
             "work_us": int(meta.get("work_us") or (m.group(2) if m else 0)),
             "rep": int(meta.get("rep") or (m.group(4) if m else 0)),
             "seq": int(meta.get("seq", 0)), "error": meta.get("error")}
        log = os.path.join(raw, name + ".wb.log")
        wb = benchvm.read_wakebench(log)
        r["hist"] = read_hist(log)
        want = THREADS_PASS if cfg == "threads" else benchvm.WB_PASS
        if not r["error"]:
            if "wb_rc" not in meta:
                r["error"] = "incomplete record (the run was cut off)"
            elif wb is None:
                r["error"] = f"no wakebench result (exit {meta.get('wb_rc')})"
            elif int(meta.get("wb_rc", -1)) != want:
                r["error"] = f"wakebench exit {meta.get('wb_rc')} (its checks failed)"
        if wb:
            r["n"] = wb.get("samples", 0)
            r["min"], r["max"] = wb.get("min_ns", 0), wb.get("max_ns", 0)
            r["pct"] = {k: wb.get(k) for k in ("p50_ns", "p75_ns", "p90_ns", "p99_ns", "p999_ns")}
            r["rps"] = wb.get("rps_x100", 0) / 100
            r["busy"] = wb.get("busy")
        if r["hist"] and wb and sum(c for _, c in r["hist"]) != r["n"]:
            # A console cut short mid-histogram: pool this run from its
            # percentiles rather than from part of its samples.
            r["hist"] = None
        if not r["error"] and not r.get("n"):
            r["error"] = "no samples"
        try:
            wall = int(meta["wall_ns"]) * int(meta["pcpus"])
            # QEMU's vCPU threads are not named vcpuN: whole process there.
            key = "noisy_run_ns" if cfg == "qemu" else "noisy_vcpu_run_ns"
            r["share"] = int(meta[key]) / wall
        except (KeyError, ValueError, ZeroDivisionError):
            r["share"] = None
        r["hog_lps"] = hog_loops_per_s(os.path.join(raw, name + ".hog.log"))
        sl = os.path.join(raw, name + ".wb.log.slice")
        if os.path.exists(sl):
            try:
                with open(sl) as f:
                    r["slice"] = json.load(f)
            except (OSError, ValueError):
                r["slice"] = {"ok": False, "error": "unreadable record"}
            if not r["error"] and not r["slice"].get("ok"):
                r["error"] = "slice not applied: " + slice_problem(r["slice"])
        elif cfg == "host-tuned" and not r["error"]:
            r["error"] = "slice not applied: no record of the helper"
        runs.append(r)
    return runs


def slice_problem(s):
    if s.get("error"):
        return s["error"]
    if s.get("late"):
        return "set after the measurement had begun"
    if s.get("vcpus_found", 0) < s.get("vcpus_wanted", 0):
        return f"{s.get('vcpus_found')} of {s.get('vcpus_wanted')} vCPU threads found"
    bad = [t for t in s.get("threads", []) if not t.get("ok")]
    if bad:
        t = bad[0]
        return t.get("error") or f"thread {t['tid']} reads se.slice {t.get('se_slice_ns')}"
    return "no thread found"


def read_skips(raw):
    skips = {}
    for path in sorted(glob.glob(os.path.join(raw, "skip-*"))):
        with open(path, errors="replace") as f:
            skips[os.path.basename(path)[5:]] = f.read().strip()
    return skips


def fmt_us(ns, approx=False):
    s = benchvm.fmt_us(ns)
    return ("~" + s) if approx and ns is not None else s


def fmt_ci(t):
    ratio, lo, hi = t
    if ratio is None:
        return "-"
    if lo is None:
        return f"{ratio:.2f}"
    star = "" if lo <= 1 <= hi else " *"
    return f"{ratio:.2f} [{lo:.2f}, {hi:.2f}]{star}"


def groups_of(runs):
    g = {}
    for r in runs:
        g.setdefault((r["level"], r["work_us"]), {}).setdefault(r["config"], []).append(r)
    return g


def compare(cfgs, a, b, resamples, seed):
    """a/b over the reps where both have a good run; None without one."""
    ga = {r["rep"]: r for r in cfgs.get(a, []) if not r["error"]}
    gb = {r["rep"]: r for r in cfgs.get(b, []) if not r["error"]}
    reps = sorted(set(ga) & set(gb))
    if not reps:
        return None
    res = bootstrap_ratio([ga[i] for i in reps], [gb[i] for i in reps], resamples, seed)
    exact = pool([ga[i] for i in reps])[1] and pool([gb[i] for i in reps])[1]
    return {"num": a, "den": b, "reps": reps, "exact": exact,
            "ratios": {k: {"ratio": v[0], "lo": v[1], "hi": v[2]} for k, v in res.items()},
            "_t": res}


def shape_of(cfgs):
    for rs in cfgs.values():
        for r in rs:
            m = r["meta"]
            if "lat_vcpus" in m:
                return f"{m['lat_vcpus']}+{m['noisy_vcpus']} / {m['pcpus']}"
    return "?"


def cdf_points(runs):
    """(x µs, F) points of the pooled CDF: exact steps from the merged
    histogram, else the knot mixture on a log grid."""
    p, exact = pool(runs)
    if exact:
        merged = {}
        for r in runs:
            for v, c in r["hist"]:
                merged[v] = merged.get(v, 0) + c
        total = sum(merged.values())
        pts, seen = [], 0
        for v, c in sorted(merged.items()):
            seen += c
            pts.append((v / 1000, seen / total))
        return pts
    parts = [(r["n"], knots(r)) for r in runs]
    lo = min(kn[0][0] for _, kn in parts)
    hi = max(kn[-1][0] for _, kn in parts)
    total = sum(w for w, _ in parts)
    pts = []
    for i in range(201):
        x = lo * (hi / lo) ** (i / 200)
        pts.append((x / 1000, sum(w * knot_cdf(kn, x) for w, kn in parts) / total))
    return pts


def nines(f, top):
    """The CDF's y axis in 'nines' (-log10(1 - F)): 0.9, 0.99, 0.999 equally
    spaced, so the tail the benchmark is about is not squeezed into the top
    pixel of a linear axis. F = 1 (the last sample) is drawn at the top."""
    return top if f >= 1 else min(top, -math.log10(1 - f))


def plot_cdf(groups, out, title):
    panels = sorted(k for k, cfgs in groups.items()
                    if any(not r["error"] for rs in cfgs.values() for r in rs))
    if not panels:
        return "no run gave numbers: no CDF plot"
    ddir = os.path.join(out, "cdf")
    os.makedirs(ddir, exist_ok=True)
    top = 4
    # One x range for every panel (whole decades), so panels compare by eye.
    xs = [v for cfgs in groups.values() for rs in cfgs.values() for r in rs
          if not r["error"] for v in (r["min"], r["max"])]
    xlo = 10 ** math.floor(math.log10(max(1, min(xs)) / 1000))
    xhi = 10 ** math.ceil(math.log10(max(xs) / 1000))
    cols = min(2, len(panels))
    rows = (len(panels) + cols - 1) // cols
    extra = {}
    gp = [f"set terminal pngcairo size {700 * cols},{480 * rows} font 'sans,10'",
          "set output 'latency-cdf.png'",
          f"set multiplot layout {rows},{cols} title \"{title}\" noenhanced",
          "set logscale x", "set format x '%.0f'", "set grid", "set key bottom right noenhanced",
          "set xlabel 'wakeup latency, µs (log)'",
          "set ylabel 'fraction of wakeups <= x'",
          f"set yrange [0:{top}]", f"set xrange [{xlo}:{xhi}]",
          'set ytics ("0" 0, "0.5" 0.30103, "0.9" 1, "0.99" 2, "0.999" 3, "0.9999" 4)']
    for level, work in panels:
        cfgs = groups[(level, work)]
        plots = []
        for c in sorted(cfgs, key=config_sort):
            good = [r for r in cfgs[c] if not r["error"]]
            if not good:
                continue
            fn = f"l{level}-w{work}-{c}.dat"
            with open(os.path.join(ddir, fn), "w") as f:
                for x, y in cdf_points(good):
                    f.write(f"{x:.3f} {nines(y, top):.4f}\n")
            col = COLORS.get(c) or extra.setdefault(c, EXTRA_COLORS[len(extra) % len(EXTRA_COLORS)])
            approx = "" if pool(good)[1] else " (~)"
            plots.append(f"'cdf/{fn}' using 1:2 with lines lw 2 lc rgb '{col}' "
                         f"title '{label(c)}{approx}'")
        gp.append(f"set title '{level}:1 vCPU:pCPU ({shape_of(cfgs)}), work {work} µs'")
        gp.append("plot " + ", \\\n     ".join(plots))
    gp.append("unset multiplot")
    with open(os.path.join(out, "latency-cdf.gp"), "w") as f:
        f.write("\n".join(gp) + "\n")
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed: latency-cdf.gp written, no PNG"
    p = subprocess.run(["gnuplot", "latency-cdf.gp"], cwd=out, capture_output=True, text=True)
    return f"gnuplot failed: {p.stderr.strip()}" if p.returncode else None


def hog_loops_per_s(path):
    """The hog guest's loops per second over its run (its last progress line)."""
    return lv.hog_loops_per_s(lv.read_lines(path))


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def report(args):
    raw = os.path.join(args.dir, "raw")
    if not os.path.isdir(raw):
        print(f"tail_stats.py: no raw results in {raw}", file=sys.stderr)
        return 2
    runs = load_runs(raw)
    skips = read_skips(raw)
    groups = groups_of(runs)
    reps = max((r["rep"] for r in runs), default=0)
    lines = [f"# {args.title}", ""]
    info = os.path.join(raw, "info")
    if os.path.exists(info):
        with open(info) as f:
            lines += [line.rstrip("\n") for line in f] + [""]
    if runs:
        lines += [f"Protocol: every configuration {reps} times (reps), in an order rotated per rep; "
                  f"percentiles pooled over a configuration's runs (merged histograms; ~ = "
                  f"approximated from the runs' printed percentiles, no histogram); ratios with "
                  f"95 % percentile-bootstrap intervals over reps ({args.resamples} resamples of "
                  f"the reps with replacement, paired by rep, seed {args.seed}); * = the interval "
                  f"excludes 1.", ""]
        if reps and reps < 5:
            lines += [f"With {reps} reps a bootstrap interval is little more than the spread of "
                      f"the reps themselves; use --reps 5 or more before trusting one.", ""]
        ran = {r["config"] for r in runs}
        lines += ["Configurations:"] + [f"- {c}: {d}" for c, d in DESCRIBE.items() if c in ran]
        lines += [f"- {label(c)}: eevdf with {c.split('-', 1)[1]} switched off"
                  for c in sorted(ran) if c.startswith("eevdf-")]
        lines += [f"- {label(c)}: eevdf with {c.split('+', 1)[1]} switched on"
                  for c in sorted(ran) if c.startswith("eevdf+")] + [""]
    for c, why in skips.items():
        lines.append(f"- **{c}: SKIPPED**: {why}")
    if skips:
        lines.append("")

    comparisons, aa_lines, pooled_rows = [], [], []
    for (level, work), cfgs in sorted(groups.items()):
        tag = f"{level}:1, work {work} µs"
        aa = compare(cfgs, "host-B", "host-A", args.resamples, args.seed)
        if aa:
            cells = ", ".join(f"{PCT_NAME[k]} {fmt_ci(aa['_t'][k])}" for k, _ in PCTS)
            vals = aa["ratios"].values()
            if any(v["lo"] is None for v in vals):
                note = "one rep in common: no interval, so no noise estimate (--reps 5)"
            elif all(v["lo"] <= 1 <= v["hi"] for v in vals):
                note = ("every interval contains 1: no noise visible (their widths are the "
                        "noise floor a ratio must clear)")
            else:
                note = ("**an interval excludes 1: NOISE VISIBLE** -- the run-to-run noise is "
                        "larger than the intervals say; ratios of this size are not evidence")
            aa_lines.append(f"- **A/A control {tag}: host-B/host-A** {cells} "
                            f"({len(aa['reps'])} rep{'' if len(aa['reps']) == 1 else 's'}): "
                            f"{note}")
            comparisons.append(dict(aa, level=level, work_us=work, kind="A/A"))
        evs = sorted((c for c in cfgs if c.startswith("eevdf")), key=config_sort)
        for e in evs:
            # eevdf against every baseline; a feature switched off against
            # eevdf itself (its effect) and host-A.
            for b in BASELINES if e == "eevdf" else ["eevdf", "host-A"]:
                if b in cfgs:
                    cmp_ = compare(cfgs, e, b, args.resamples, args.seed)
                    if cmp_:
                        comparisons.append(dict(cmp_, level=level, work_us=work, kind="ratio"))
        for c in sorted(cfgs, key=config_sort):
            rs = cfgs[c]
            good = [r for r in rs if not r["error"]]
            row = {"level": level, "work_us": work, "config": c, "runs": len(rs),
                   "good": len(good), "shape": shape_of(cfgs),
                   "errors": [f"{r['name']}: {r['error']}" for r in rs if r["error"]]}
            if good:
                p, exact = pool(good)
                row.update(p, exact=exact, samples=sum(r["n"] for r in good),
                           rps=mean(r["rps"] for r in good),
                           share=mean(r["share"] for r in good),
                           hog_lps=mean(r.get("hog_lps") for r in good),
                           short=[r["name"] for r in good if r["n"] < MIN_SAMPLES])
            pooled_rows.append(row)

    if aa_lines:
        lines += ["## A/A control (the noise floor)", ""] + aa_lines + [""]
    if pooled_rows:
        lines += ["## Pooled wakeup latency", "",
                  "| vCPU:pCPU | latency+noisy vCPUs / pCPUs | work µs | configuration | runs ok "
                  "| samples | p50 µs | p99 µs | p99.9 µs | req/s | noisy CPU share | hog loops/s |",
                  "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in pooled_rows:
            cells = [f"{row['level']}:1", row["shape"], str(row["work_us"]), label(row["config"]),
                     f"{row['good']}/{row['runs']}"]
            if row["good"]:
                ap = not row["exact"]
                cells += [str(row["samples"]), fmt_us(row["p50"], ap), fmt_us(row["p99"], ap),
                          fmt_us(row["p999"], ap), f"{row['rps']:.0f}",
                          "-" if row["share"] is None else f"{100 * row['share']:.1f} %",
                          "-" if row.get("hog_lps") is None else f"{row['hog_lps']:.3g}"]
            else:
                cells += ["FAILED"] + ["-"] * 6
            lines.append("| " + " | ".join(cells) + " |")
        lines += ["", "Noisy CPU share = CPU time of the noisy VM's vCPU threads (qemu: its whole "
                  "process; threads: the spinners) / (wall time x pCPUs) over wakebench's measured "
                  "window, mean over runs. Hog loops/s = the noisy guest's own count of its "
                  "loop (all vCPUs) over its run: it shows the noisy VM really spins (a native "
                  "vCPU does millions, one in KVM's instruction emulator about a thousand).", ""]
    ratio_rows = [c for c in comparisons if c["kind"] == "ratio"]
    if ratio_rows:
        lines += ["## Ratios (< 1: the numerator has the shorter latency)", "",
                  "| vCPU:pCPU | work µs | ratio | p50 [95 % CI] | p99 [95 % CI] "
                  "| p99.9 [95 % CI] | reps |", "|---|---:|---|---|---|---|---:|"]
        for c in ratio_rows:
            name = f"{label(c['num'])} / {label(c['den'])}" + ("" if c["exact"] else " (~)")
            lines.append(f"| {c['level']}:1 | {c['work_us']} | {name} | " +
                         " | ".join(fmt_ci(c["_t"][k]) for k, _ in PCTS) +
                         f" | {len(c['reps'])} |")
        lines.append("")
    problems = [e for row in pooled_rows for e in row["errors"]]
    short = [n for row in pooled_rows for n in row.get("short", [])]
    if short:
        lines.append(f"- WARNING: {len(short)} run(s) recorded fewer than {MIN_SAMPLES} "
                     f"wakeups (their p99.9 rests on < 5 samples): {', '.join(short)}")
    for e in problems:
        lines.append(f"- FAILED run {e}")
    tuned = [r for r in runs if r.get("slice")]
    if tuned:
        ok = [r for r in tuned if r["slice"].get("ok")]
        born = [r for r in tuned if not r["slice"].get("set_late")]
        nthreads = sorted({len(r["slice"].get("threads", [])) for r in tuned})
        got = sorted({t.get("se_slice_ns") for r in tuned for t in r["slice"].get("threads", [])},
                     key=lambda v: -1 if v is None else v)
        lines.append(f"- host-tuned: slice request {tuned[0]['slice'].get('slice_ns')} ns on "
                     f"every thread of the latency VM ({'/'.join(map(str, nthreads))} threads) in "
                     f"{len(ok)} of {len(tuned)} runs, inherited from lagvisor's start in "
                     f"{len(born)}; /proc/PID/task/TID/sched se.slice read back once its vCPUs "
                     f"ran: {', '.join(str(v) for v in got)} ns")
    ok = not problems
    fl, fok = benchvm.fairness(raw)
    if fl:
        lines += fl
        ok = ok and fok
    lines.append("")

    if runs and not args.no_plot:
        err = plot_cdf(groups, args.dir, args.title)
        lines.append(f"plot: {err}" if err else "![latency CDFs](latency-cdf.png)")
        # benchvm.py's per-level plot of the pooled numbers, for the first
        # work value (its x axis is the level).
        w0 = min(w for _, w in groups)
        prow = [{"label": label(r["config"]), "level": str(r["level"]), "error": None,
                 "wb": {"p50_ns": r["p50"], "p99_ns": r["p99"], "p999_ns": r["p999"]}}
                for r in pooled_rows if r["good"] and r["work_us"] == w0]
        if prow:
            err = benchvm.plot(prow, args.dir, f"{args.title} (pooled, work {w0} µs)")
            lines.append(f"plot: {err}" if err else "![latency](latency.png)")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.dir, "results.md"), "w") as f:
        f.write(text)
    record = {"title": args.title,
              "bootstrap": {"resamples": args.resamples, "seed": args.seed, "confidence": 0.95,
                            "method": "percentile bootstrap over reps, paired, pooled histograms"},
              "skipped": skips,
              "runs": [{k: v for k, v in r.items()} for r in runs],
              "pooled": pooled_rows,
              "comparisons": [{k: v for k, v in c.items() if k != "_t"} for c in comparisons]}
    with open(os.path.join(args.dir, "results.json"), "w") as f:
        json.dump(record, f, indent=1)
    sys.stdout.write(text)
    return 0 if ok else 1


# --- self-test ---

def selftest():
    fails = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    def run_of(values):
        """A synthetic run from exact values (one bucket each)."""
        h = {}
        for v in values:
            h[v] = h.get(v, 0) + 1
        return {"hist": sorted(h.items()), "n": len(values), "min": min(values),
                "max": max(values)}

    check(struct.calcsize(SCHED_ATTR) == 56, "struct sched_attr packs to 56 bytes")
    one = run_of(list(range(1, 1001)))
    p, exact = pool([one])
    check(exact and (p["p50"], p["p99"], p["p999"]) == (500, 990, 999),
          f"nearest-rank percentiles of 1..1000: {p}")
    a, b = run_of(list(range(1, 501))), run_of(list(range(501, 1001)))
    check(pool([a, b])[0] == p, "pooling two halves equals the percentiles of the whole")
    check(pool([a], [3])[0] == pool([a])[0], "a run counted 3 times pools as itself")
    clamp = hist_percentiles([(100, 10)], 90, 95, [500])
    check(clamp == [95], "a bucket's value is clamped to the exact maximum")

    rng = random.Random(7)

    def bucket(v):
        # lib/lathist.h's resolution, 64 buckets an octave: real runs have
        # a few hundred distinct values, not one per sample.
        q = 1 << max(0, v.bit_length() - 7)
        return v // q * q + q // 2

    def sample_run(scale):
        # Log-normal-ish latencies: a body near 20 µs and a tail.
        return run_of([bucket(int(scale * 1000 * math.exp(rng.gauss(3, 0.6))))
                       for _ in range(5000)])

    base = [sample_run(1) for _ in range(5)]
    res = bootstrap_ratio(base, base, 1000, 1)
    check(all(v[1] <= 1 <= v[2] for v in res.values()),
          f"A/A on identical samples: intervals contain 1 ({res})")
    other = [sample_run(1) for _ in range(5)]
    res = bootstrap_ratio(other, base, 1000, 1)
    check(all(v[1] <= 1 <= v[2] for v in res.values()),
          f"A/A on two draws of one distribution: intervals contain 1 ({res})")
    double = [{"hist": [(2 * v, c) for v, c in r["hist"]], "n": r["n"], "min": 2 * r["min"],
               "max": 2 * r["max"]} for r in base]
    res = bootstrap_ratio(double, base, 1000, 1)
    check(all(1.9 <= v[1] <= 2 <= v[2] <= 2.1 for v in res.values()),
          f"a 2x shift: intervals around 2 ({res})")
    shifted = [sample_run(2) for _ in range(5)]
    res = bootstrap_ratio(shifted, base, 1000, 1)
    check(all(v[1] <= 2 <= v[2] and v[1] > 1.5 for v in res.values()),
          f"two draws, one at 2x: intervals contain 2, exclude 1 ({res})")
    check(bootstrap_ratio(shifted, base, 500, 3) == bootstrap_ratio(shifted, base, 500, 3),
          "the same seed gives the same intervals")
    res = bootstrap_ratio(shifted[:1], base[:1], 100, 1)
    check(all(v[1] is None and v[2] is None for v in res.values()), "one rep: no interval")

    # Runs without a histogram: pooled from their printed percentiles.
    pr = {"hist": None, "n": 5000, "min": 5000, "max": 900000,
          "pct": {"p50_ns": 20000, "p75_ns": 30000, "p90_ns": 45000, "p99_ns": 100000,
                  "p999_ns": 400000}}
    p, exact = pool([pr, pr])
    check(not exact and all(abs(p[k] / pr["pct"][k + "_ns"] - 1) < 0.01 for k, _ in PCTS),
          f"identical runs without a histogram pool to their own percentiles ({p})")
    pr2 = dict(pr, pct={k: 2 * v for k, v in pr["pct"].items()}, min=10000, max=1800000)
    p2, _ = pool([pr, pr2])
    check(all(pr["pct"][k + "_ns"] < p2[k] < pr2["pct"][k + "_ns"] for k, _ in PCTS),
          f"runs at 1x and 2x pool between them ({p2})")
    res = bootstrap_ratio([pr2] * 3, [pr] * 3, 200, 1)
    check(all(abs(v[0] - 2) < 0.02 for v in res.values()), f"approximate 2x ratio ({res})")

    # The histogram lines as the guest prints them.
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tail_stats_selftest.{os.getpid()}")
    with open(path, "w") as f:
        f.write("wakebench: samples=3 p50_ns=1\nwakebench-hist: 100:1 2048:2\n"
                "wakebench-hist: 4096:1\nINFO: other\n")
    h = read_hist(path)
    os.unlink(path)
    check(h == [(100, 1), (2048, 2), (4096, 1)], f"wakebench-hist: lines parse ({h})")
    print(f"tail_stats.py selftest: {'FAILED ' + str(len(fails)) if fails else 'all passed'}")
    return 1 if fails else 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(prog="tail_stats.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("dir")
    rp.add_argument("--title", default="lagvisor bench-tail: wakeup latency beside a noisy VM")
    rp.add_argument("--resamples", type=int, default=2000)
    rp.add_argument("--seed", type=int, default=1)
    rp.add_argument("--no-plot", action="store_true")
    sp = sub.add_parser("setslice")
    sp.add_argument("pid", type=int, nargs="?")
    sp.add_argument("--probe", action="store_true")
    sp.add_argument("--now", action="store_true")
    sp.add_argument("--vcpus", type=int, default=1)
    sp.add_argument("--slice-ns", type=int, required=True)
    sp.add_argument("--out")
    sp.add_argument("--watch")
    sp.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    if args.cmd == "report":
        if args.resamples < 1:
            ap.error("--resamples wants a number >= 1")
        return report(args)
    if not args.probe and (args.pid is None or not (args.out or args.now)):
        ap.error("setslice wants PID and --out or --now (or --probe)")
    return cmd_setslice(args)


if __name__ == "__main__":
    sys.exit(main())
