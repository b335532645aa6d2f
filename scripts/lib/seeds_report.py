#!/usr/bin/env python3
"""Turn scripts/bench-seeds' raw results (OUT/raw) into one markdown table.

    python3 scripts/lib/seeds_report.py OUT

Reads the guests' console logs, lagvisor's --trace files (Chrome trace JSON,
one event per line) and `lagvisor stat --json` snapshots that the measuring
part left in OUT/raw; prints the table and writes it, with the method and
the per-variant details, to OUT/results.md. Standard library only.

For each experiment "flag off" is the setting the seed thread argued
against (the old behaviour), "flag on" today's default; the ratio is
off / on, so > 1 means the default is better for a latency or interval.
"""
import glob
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lagvisor as lv  # noqa: E402  (the guests' output parsers)

PASS_STATUS = 85           # guest-tests/lib/exit.h: GUEST_EXIT_PASS
TERM_STATUS = 128 + 15     # a hog VM stopped with SIGTERM

NAME_RE = re.compile(r"^vCPU (\d+) \(pid (\d+)\)$")


def read_trace(path):
    """Events of a trace file; tolerant of a file cut short (no closing ])."""
    events = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip().rstrip(",")
                if not line.startswith("{"):
                    continue
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return events


def vcpu_of(name):
    """(vcpu index, pid) from "vCPU 3 (pid 1234)", else None."""
    m = NAME_RE.match(name or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def runs_and_wakes(events):
    """{(vcpu, pid): sorted run-start ts}, {(vcpu, pid): [(ts, how)]} (µs)."""
    runs, wakes = {}, {}
    for ev in events:
        if ev.get("ph") == "X":
            key = vcpu_of(ev.get("name"))
            if key:
                runs.setdefault(key, []).append(float(ev["ts"]))
        elif ev.get("ph") == "i" and ev.get("name") == "wakeup":
            key = vcpu_of(ev.get("args", {}).get("vcpu"))
            if key:
                wakes.setdefault(key, []).append((float(ev["ts"]), ev["args"].get("how", "")))
    for v in runs.values():
        v.sort()
    for v in wakes.values():
        v.sort()
    return runs, wakes


def first_at_or_after(sorted_list, t):
    lo, hi = 0, len(sorted_list)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_list[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return sorted_list[lo] if lo < len(sorted_list) else None


def pct(values, p):
    """Nearest-rank percentile (p in 0..100); None when empty."""
    if not values:
        return None
    s = sorted(values)
    k = max(1, math.ceil(len(s) * p / 100.0))
    return s[min(k, len(s)) - 1]


def mean(values):
    return sum(values) / len(values) if values else None


def read_rc(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def read_kv_line(path, prefix):
    """key=value pairs of the last line starting with prefix in a log."""
    found = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith(prefix):
                    found = line
    except OSError:
        return None
    if found is None:
        return None
    out = {}
    for word in found[len(prefix):].split():
        k, _, v = word.partition("=")
        try:
            out[k] = int(v)
        except ValueError:
            out[k] = v
    return out


def read_stats(path):
    snaps = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        snaps.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return snaps


class Report:
    def __init__(self, out):
        self.out = out
        self.raw = os.path.join(out, "raw")
        self.rows = []        # (exp, metric, off, on, ratio, claim, reproduced)
        self.notes = []       # lines for results.md
        self.problems = []    # measurement problems: exit status 1

    def row(self, exp, metric, off, on, unit, claim, reproduced, digits=2):
        def fmt(v):
            if v is None:
                return "n/a"
            return f"{v:.{digits}f} {unit}".strip()
        if off is not None and on is not None and on != 0:
            ratio = f"{off / on:.2f}x"
        else:
            ratio = "n/a"
        self.rows.append((exp, metric, fmt(off), fmt(on), ratio, claim, reproduced))

    def check_rc(self, name, want):
        rc = read_rc(os.path.join(self.raw, name + ".rc"))
        if rc != want:
            err = ""
            try:
                with open(os.path.join(self.raw, name + ".err"), errors="replace") as f:
                    tail = [l.strip() for l in f if l.strip()]
                err = f" ({tail[-1]})" if tail else ""
            except OSError:
                pass
            self.problems.append(f"{name}: exit status {rc}, expected {want}{err}")
        return rc == want

    # ---- 000 / 001 -------------------------------------------------------
    def start_latencies(self, variant):
        """First wakeup -> first run (ms) of every vCPU of the started VMs."""
        aps, bsps, guest_up = [], [], []
        files = sorted(glob.glob(os.path.join(self.raw, f"000-{variant}-new*.trace")))
        for tf in files:
            name = os.path.basename(tf)[:-len(".trace")]
            hog = name.replace("-new", "-hog")
            ok = self.check_rc(name, PASS_STATUS)
            self.check_rc(hog, TERM_STATUS)
            # By entity id, not name: an X event is named when the slice
            # ends, maybe after its VM exited. A fresh domain per start
            # means no id is reused within these two traces.
            runs_by_ent = {}
            for e in read_trace(os.path.join(self.raw, hog + ".trace")) + read_trace(tf):
                if e.get("ph") == "X" and "entity" in e.get("args", {}):
                    runs_by_ent.setdefault(e["args"]["entity"], []).append(float(e["ts"]))
            for v in runs_by_ent.values():
                v.sort()
            first_wake = {}
            for e in read_trace(tf):
                if e.get("ph") == "i" and e.get("name") == "wakeup":
                    key = vcpu_of(e["args"].get("vcpu"))
                    ent = e["args"].get("entity")
                    if key and ent is not None and ent not in first_wake:
                        first_wake[ent] = (float(e["ts"]), key[0])
            for ent, (t_wake, idx) in first_wake.items():
                t = first_at_or_after(runs_by_ent.get(ent, []), t_wake)
                if t is None:
                    self.problems.append(f"{name}: vCPU {idx} woke but never ran in the traces")
                    continue
                (bsps if idx == 0 else aps).append((t - t_wake) / 1000.0)
            kv = read_kv_line(os.path.join(self.raw, name + ".log"), "seedstart:")
            if ok and kv and "up_ns" in kv:
                guest_up.append(kv["up_ns"] / 1e6)
        return aps, bsps, guest_up, len(files)

    def exp_000(self):
        if not glob.glob(os.path.join(self.raw, "000-*")):
            return
        lat = {v: self.start_latencies(v) for v in ("at-creation", "initial-off", "default")}
        d_ap, d_bsp, d_up, _ = lat["default"]
        for v, (ap, bsp, up, n) in lat.items():
            self.notes.append(
                f"- 000/001 {v}: {n} VM starts, {len(ap)} AP samples "
                f"(mean {fmt_ms(mean(ap))}, p50 {fmt_ms(pct(ap, 50))}, p90 {fmt_ms(pct(ap, 90))}, "
                f"max {fmt_ms(max(ap) if ap else None)}), boot vCPU mean {fmt_ms(mean(bsp))}; "
                f"guest INIT-to-all-APs-up mean {fmt_ms(mean(up))}")
        c_ap = lat["at-creation"][0]
        i_ap = lat["initial-off"][0]
        m_off, m_on = mean(c_ap), mean(d_ap)
        rep = verdict(m_off, m_on, m_off is not None and m_on is not None and m_off >= 1.3 * m_on)
        self.row("000 NO_PLACE_FIRST_ENQUEUE vs PLACE_FIRST_ENQUEUE",
                 "new vCPU (AP) first wakeup to first run, mean", m_off, m_on, "ms",
                 "mean 12.8 ms -> 4.6 ms (2.8x)", rep)
        self.row("000", "... p90", pct(c_ap, 90), pct(d_ap, 90), "ms",
                 "(bpf histogram: mass moves from 4-32 ms to 16-32 µs)", "")
        m_off = mean(i_ap)
        rep = verdict(m_off, m_on, m_off is not None and m_on is not None and m_off >= 1.2 * m_on)
        self.row("001 NO_PLACE_DEADLINE_INITIAL vs PLACE_DEADLINE_INITIAL",
                 "new vCPU (AP) first wakeup to first run, mean", m_off, m_on, "ms",
                 "the half-slice initial deadline was lost; keeping it starts new tasks sooner",
                 rep)

    # ---- 002 -------------------------------------------------------------
    def wake_latencies(self, variant):
        """Worker vCPUs' wakeup -> run (µs) from the trace, after warm-up."""
        events = read_trace(os.path.join(self.raw, f"002-{variant}.trace"))
        runs, wakes = runs_and_wakes(events)
        ts = [float(e["ts"]) for e in events if "ts" in e]
        t_min = min(ts) if ts else 0.0
        lats = []
        for key, wl in wakes.items():
            if key[0] == 0:
                continue            # the message vCPU: woken by its own timer
            rl = runs.get(key, [])
            for t, how in wl:
                if how == "already" or t < t_min + 1.5e6:
                    continue        # running already / boot and warm-up
                r = first_at_or_after(rl, t)
                if r is not None:
                    lats.append(r - t)
        return lats

    def exp_002(self):
        if not glob.glob(os.path.join(self.raw, "002-*")):
            return
        res = {}
        for v in ("early-clear", "default"):
            self.check_rc(f"002-{v}", PASS_STATUS)
            res[v] = (self.wake_latencies(v),
                      lv.wakebench_summary(lv.read_lines(os.path.join(self.raw, f"002-{v}.log")))
                      or {})
            lats, kv = res[v]
            self.notes.append(
                f"- 002 {v}: {len(lats)} worker wakeups in the trace (p50 {fmt_us(pct(lats, 50))}, "
                f"p99 {fmt_us(pct(lats, 99))}, p99.5 {fmt_us(pct(lats, 99.5))}, "
                f"p99.9 {fmt_us(pct(lats, 99.9))}, max {fmt_us(max(lats) if lats else None)}); "
                f"guest: samples={kv.get('samples')} p50 {fmt_us(ns_us(kv.get('p50_ns')))} "
                f"p99 {fmt_us(ns_us(kv.get('p99_ns')))} p99.9 {fmt_us(ns_us(kv.get('p999_ns')))} "
                f"busy={kv.get('busy')}")
        a, b = res["early-clear"][0], res["default"][0]
        p995 = (pct(a, 99.5), pct(b, 99.5))
        p999 = (pct(a, 99.9), pct(b, 99.9))
        rep = verdict(p999[0], p999[1], None not in p999 + p995 and p999[0] >= 1.5 * p999[1] and
                      p995[0] >= 1.5 * p995[1])
        flags = "002 TTWU_PENDING_EARLY_CLEAR vs TTWU_PENDING"
        self.row(flags, "worker wakeup to run (lagvisor trace), p99.5", p995[0], p995[1], "µs",
                 "p99.5 3364 µs -> 27 µs", rep, 0)
        self.row("002", "... p99.9", p999[0], p999[1], "µs", "p99.9 12560 µs -> 30 µs", "", 0)
        ga = ns_us(res["early-clear"][1].get("p999_ns"))
        gb = ns_us(res["default"][1].get("p999_ns"))
        self.row("002", "wakebench guest's own p99.9 (IPI sent to worker running)", ga, gb, "µs",
                 "", "", 0)

    # ---- 003 / 004: a periodic guest beside a hog VM ----------------------
    def periodic(self, exp, variant):
        """(guest kv, {pid: {vcpu: (d_run_ns, d_preempt, d_wakeups)}}, dt_ns, hog pid)."""
        name = f"{exp}-{variant}"
        self.check_rc(name + "-sleeper", PASS_STATUS)
        self.check_rc(name + "-hog", TERM_STATUS)
        kv = read_kv_line(os.path.join(self.raw, name + "-sleeper.log"), "periodic:") or {}
        try:
            with open(os.path.join(self.raw, name + "-hog.pid")) as f:
                hog_pid = int(f.read().strip())
        except (OSError, ValueError):
            hog_pid = None
        snaps = read_stats(os.path.join(self.raw, name + "-stat.json"))
        deltas, dt = {}, None
        if len(snaps) >= 2:
            s1, s2 = snaps[0], snaps[-1]
            dt = s2["time_ns"] - s1["time_ns"]
            before = {(v["pid"], v["vcpu"]): v for v in s1["vcpus"]}
            for v in s2["vcpus"]:
                p = before.get((v["pid"], v["vcpu"]))
                if p is None:
                    continue
                deltas.setdefault(v["pid"], {})[v["vcpu"]] = (
                    v["run_ns"] - p["run_ns"], v["preemptions"] - p["preemptions"],
                    v["wakeups"] - p["wakeups"])
        else:
            self.problems.append(f"{name}: fewer than 2 lagvisor stat snapshots")
        return kv, deltas, dt, hog_pid

    def exp_003(self):
        if not glob.glob(os.path.join(self.raw, "003-*")):
            return
        res = {}
        for v in ("compensated", "default"):
            kv, deltas, dt, hog_pid = self.periodic("003", v)
            runs_s = kv["runs"] / (kv["wall_ns"] / 1e9) if kv.get("wall_ns") else None
            interval = 1000.0 / runs_s if runs_s else None
            hog_pre = None
            idle_share = None
            if dt and hog_pid in deltas:
                hog_pre = sum(d[1] for d in deltas[hog_pid].values()) / (dt / 1e9)
                others = [d for p, dd in deltas.items() if p != hog_pid for d in dd.values()]
                if others:
                    idle_share = 100.0 * sum(d[0] for d in others) / dt
            res[v] = (interval, runs_s, hog_pre, kv)
            self.notes.append(
                f"- 003 {v}: idle vCPU ran {kv.get('runs')} times in {fmt_ms(ns_ms(kv.get('wall_ns')))} "
                f"(every {fmt_ms(interval)}; {kv.get('missed')} 16 ms periods skipped; wake lateness "
                f"p50 {fmt_ms(ns_ms(kv.get('lat_p50_ns')))} p99 {fmt_ms(ns_ms(kv.get('lat_p99_ns')))}); "
                f"hog wakeup-preemptions {fmt_num(hog_pre)}/s; idle VM CPU share "
                f"{fmt_num(idle_share)} % (lagvisor stat)")
        a, b = res["compensated"], res["default"]
        rep = verdict(a[0], b[0], a[0] is not None and b[0] is not None and b[0] >= 1.1 * a[0])
        self.row("003 NO_IDLE_NO_COMPENSATION vs IDLE_NO_COMPENSATION",
                 "idle vCPU switched in over the hogs: mean interval", a[0], b[0], "ms",
                 "every 12 ms with compensation -> every 16-24 ms without", rep, 1)
        self.row("003", "... = hog preempted by the idle vCPU, per s", a[1], b[1], "/s", "", "", 1)
        self.row("003", "hog wakeup-preemptions (lagvisor stat), per s", a[2], b[2], "/s",
                 "(an idle-class wakee never wakeup-preempts: 0 in both)", "", 1)

    def exp_004(self):
        if not glob.glob(os.path.join(self.raw, "004-*")):
            return
        res = {}
        for v in ("fair-sleepers", "default"):
            kv, deltas, dt, hog_pid = self.periodic("004", v)
            guest_share = 100.0 * kv["cpu_ns"] / kv["wall_ns"] if kv.get("wall_ns") else None
            slp = hog = None
            if dt and hog_pid in deltas:
                hog = 100.0 * sum(d[0] for d in deltas[hog_pid].values()) / dt
                others = [d for p, dd in deltas.items() if p != hog_pid for d in dd.values()]
                if others:
                    slp = 100.0 * sum(d[0] for d in others) / dt
            res[v] = (slp, hog, guest_share)
            self.notes.append(
                f"- 004 {v}: sleeper {fmt_num(slp)} %, hog {fmt_num(hog)} % of host CPU 0 "
                f"(lagvisor stat run time over {fmt_ms(ns_ms(dt))}); sleeper's own count: "
                f"{fmt_num(guest_share)} % CPU, {kv.get('runs')} bursts, steal={kv.get('steal')}")
        a, b = res["fair-sleepers"], res["default"]
        rep = verdict(a[0], b[0], None not in (a[0], b[0]) and 41 <= a[0] <= 59 and 26 <= b[0] <= 41)
        self.row("004 NO_PLACE_LAG,FAIR_SLEEPERS vs PLACE_LAG",
                 "50 % sleeper's CPU share (lagvisor stat)", a[0], b[0], "%",
                 "50/50 with sleeper credit -> 33/67 with lag placement", rep, 1)
        self.row("004", "100 % hog's CPU share", a[1], b[1], "%", "", "", 1)
        self.row("004", "sleeper's share as the guest counts it (wall - steal)", a[2], b[2], "%",
                 "", "", 1)

    def hog_rates(self):
        """The hog VMs' own loops/s (their last progress line): shows they
        really spin (natively millions, in KVM's emulator about a thousand)."""
        rates = []
        for path in sorted(glob.glob(os.path.join(self.raw, "*.log"))):
            rate = lv.hog_loops_per_s(lv.read_lines(path))
            if rate is not None:
                rates.append(rate)
        if not rates:
            return "Hog VMs: no progress lines recorded."
        rates.sort()
        return (f"Hog VMs' own loop rate ({len(rates)} runs): median {rates[len(rates) // 2]:.3g} "
                f"loops/s, min {rates[0]:.3g}, max {rates[-1]:.3g}.")

    def render(self):
        meta = {}
        try:
            with open(os.path.join(self.raw, "meta.txt")) as f:
                for line in f:
                    k, _, v = line.strip().partition("=")
                    meta[k] = v
        except OSError:
            pass
        hdr = ("| experiment (flag off vs flag on) | metric | flag off | flag on | ratio off/on "
               "| seed claimed | reproduced |")
        lines = [hdr, "|---|---|---:|---:|---:|---|---|"]
        for r in self.rows:
            lines.append("| " + " | ".join(r) + " |")
        table = "\n".join(lines)
        md = ["# lagvisor: seed experiments with real vCPUs (scripts/bench-seeds)", "",
              f"{meta.get('host_cpus', '?')} host CPUs, {meta.get('machine', '?').strip()}, "
              f"kernel {meta.get('kernel', '?')}, quick={meta.get('quick', '?')}, "
              f"{meta.get('start', '?')} .. {meta.get('end', '?')}; seconds per experiment: "
              + ", ".join(f"{k[5:]} {v}" for k, v in meta.items() if k.startswith("time_")),
              "", f"Guests: {meta.get('guests', 'mode not recorded')}.", "", self.hog_rates(), "", table, "", "Details:", ""] + self.notes
        if self.problems:
            md += ["", "Problems:", ""] + [f"- {p}" for p in self.problems]
        md += ["", "Method: lagvisor --sched eevdf VMs in one --sched-domain per variant; the "
               "flags are set with --sched-feature on every member. 000/001: first wakeup -> first "
               "run per vCPU from the traces of both the started VM and the hog VM (a switch is "
               "traced by the process whose thread made it). 002: every worker wakeup event paired "
               "with the worker's next run start. 003/004: the periodic guest's own counts and "
               "`lagvisor stat --json` run-time/preemption deltas between two snapshots inside "
               "the guest's measured window. Under nested KVM absolute times are inflated; "
               "compare the ratios."]
        with open(os.path.join(self.out, "results.md"), "w") as f:
            f.write("\n".join(md) + "\n")
        print(table)
        for p in self.problems:
            print(f"bench-seeds: problem: {p}", file=sys.stderr)
        print(f"bench-seeds: details in {os.path.join(self.out, 'results.md')}", file=sys.stderr)


def verdict(off, on, ok):
    """yes / no, or n/a when a side was not measured."""
    if off is None or on is None:
        return "n/a (not measured)"
    return "yes" if ok else "no"


def ns_us(v):
    return v / 1000.0 if isinstance(v, (int, float)) else None


def ns_ms(v):
    return v / 1e6 if isinstance(v, (int, float)) else None


def fmt_ms(v):
    return "n/a" if v is None else f"{v:.2f} ms"


def fmt_us(v):
    return "n/a" if v is None else f"{v:.0f} µs"


def fmt_num(v):
    return "n/a" if v is None else f"{v:.1f}"


def main():
    if len(sys.argv) != 2:
        print("usage: seeds_report.py OUT", file=sys.stderr)
        return 2
    r = Report(sys.argv[1])
    if not os.path.isdir(r.raw):
        print(f"seeds_report: no {r.raw}", file=sys.stderr)
        return 1
    r.exp_000()
    r.exp_002()
    r.exp_003()
    r.exp_004()
    if not r.rows:
        print("seeds_report: nothing measured", file=sys.stderr)
        return 1
    r.render()
    return 1 if r.problems else 0


if __name__ == "__main__":
    sys.exit(main())
