#!/usr/bin/env python3
"""Report of a scripts/bench-tail run (the raw files scripts/lib/benchvm.sh
wrote): a markdown table of wakeup latency, requests/s and the noisy VM's CPU
share per configuration with eevdf/host ratios, the fairness verdict, and a
gnuplot latency plot.

  benchvm.py report DIR [--title TEXT] [--no-plot]

Writes DIR/results.md (also printed), DIR/latency.dat, DIR/latency.gp and,
with gnuplot, DIR/latency.png. Exit status 0 when every run produced numbers
and fairness (if measured) passed, 1 otherwise, 2 on bad input.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lagvisor as lv  # noqa: E402  (the guests' output parsers)

WB_PASS = 85          # (0x2a << 1) | 1: wakebench's own checks passed
FAIR_TOLERANCE = 0.05


def read_meta(path):
    meta = {}
    with open(path) as f:
        for line in f:
            key, sep, val = line.rstrip("\n").partition("=")
            if sep:
                meta[key] = val
    return meta


def read_wakebench(path):
    """The machine-readable wakebench: line as a dict of ints, or None."""
    return lv.wakebench_summary(lv.read_lines(path))


def read_hog_rate(path):
    """Mean loops/s of the noisy VM over its progress lines, the first one
    (boot and start-up inside it) left out; None without two lines."""
    lines = lv.read_lines(path)
    if lines is None:
        return None
    rates = [h["rate"] for h in map(lv.hog_line, lines) if h and h["rate"] is not None]
    rates = rates[1:]
    return sum(rates) / len(rates) if rates else None


def config_label(meta):
    if meta.get("sched") == "host":
        return "host"
    if meta.get("sched") == "host-user":
        return "host, user irqchip"
    feat = meta.get("features", "")
    return f"eevdf {feat}" if feat else "eevdf"


def collect(raw):
    rows = []
    for path in sorted(glob.glob(os.path.join(raw, "*.meta"))):
        meta = read_meta(path)
        name = meta.get("name", os.path.basename(path)[:-5])
        if name.startswith("fair"):
            continue
        row = {"name": name, "meta": meta, "label": config_label(meta),
               "level": meta.get("level", "?"), "error": meta.get("error")}
        if "sched" not in meta and not row["error"]:
            # Cut off (timeout, the nested VM hung): name it by its file.
            m = re.match(r"l(\d+)-(host-user|host|eevdf)-?(.*)$", name)
            if m:
                row["level"] = m.group(1)
                row["label"] = config_label({"sched": m.group(2), "features": m.group(3)})
            row["error"] = "incomplete record (the run was cut off)"
        wb = read_wakebench(os.path.join(raw, name + ".wb.log"))
        row["wb"] = wb
        if not row["error"]:
            if wb is None:
                row["error"] = f"no wakebench result (exit {meta.get('wb_rc')})"
            elif int(meta.get("wb_rc", -1)) != WB_PASS:
                row["error"] = f"wakebench exit {meta.get('wb_rc')} (its checks failed)"
        try:
            wall = int(meta["wall_ns"])
            row["share"] = int(meta["noisy_vcpu_run_ns"]) / (wall * int(meta["pcpus"]))
        except (KeyError, ValueError, ZeroDivisionError):
            row["share"] = None
        row["loops"] = read_hog_rate(os.path.join(raw, name + ".hog.log"))
        rows.append(row)
    return rows


def config_key(label):
    return (label != "host", label != "host, user irqchip", label != "eevdf", label)


def level_key(level):
    try:
        return int(level)
    except ValueError:
        return 1 << 30


def fmt_us(ns):
    return "-" if ns is None else f"{ns / 1000:.0f}" if ns >= 10000 else f"{ns / 1000:.1f}"


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}"


def metric(row, key):
    wb = row["wb"]
    if wb is None:
        return None
    if key == "rps":
        return wb.get("rps_x100", 0) / 100
    return wb.get(key)


def table(rows):
    out = ["| vCPU:pCPU | latency+noisy vCPUs / pCPUs | scheduler | p50 µs | p99 µs | p99.9 µs "
           "| req/s | noisy CPU share | noisy Mloops/s | p50 e/h | p99 e/h | p99.9 e/h | req/s e/h "
           "| share e/h |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    host = {r["level"]: r for r in rows if r["label"] == "host"}
    order = sorted(rows, key=lambda r: (level_key(r["level"]), config_key(r["label"])))
    for r in order:
        m = r["meta"]
        h = host.get(r["level"]) if r["label"] != "host" else None
        shape = f"{m.get('lat_vcpus', '?')}+{m.get('noisy_vcpus', '?')} / {m.get('pcpus', '?')}"
        share = "-" if r["share"] is None else f"{100 * r['share']:.1f} %"
        loops = "-" if r["loops"] is None else f"{r['loops'] / 1e6:.2f}"
        cells = [f"{r['level']}:1", shape, r["label"]]
        if r["error"]:
            cells += [f"FAILED: {r['error']}"] + ["-"] * 10
        else:
            cells += [fmt_us(metric(r, "p50_ns")), fmt_us(metric(r, "p99_ns")),
                      fmt_us(metric(r, "p999_ns")), f"{metric(r, 'rps'):.0f}", share, loops]
            if h is None or h["error"]:
                cells += ["-"] * 5
            else:
                cells += [fmt_ratio(metric(r, k), metric(h, k))
                          for k in ("p50_ns", "p99_ns", "p999_ns", "rps")]
                cells.append(fmt_ratio(r["share"], h["share"]))
        out.append("| " + " | ".join(cells) + " |")
    return out


def stat_run_ns(path):
    """{pid: run_ns summed over its vCPUs} from a `lagvisor stat --json` line."""
    import json
    try:
        with open(path) as f:
            snap = json.loads(f.readline())
    except (OSError, ValueError):
        return {}
    runs = {}
    for v in snap.get("vcpus", []):
        runs[v.get("pid")] = runs.get(v.get("pid"), 0) + v.get("run_ns", 0)
    return runs


def fairness(raw):
    """(lines, ok or None when not measured). Judged on the vCPU threads'
    CPU time; the whole processes' and the scheduler's own accounting
    (lagvisor stat) are shown beside it."""
    metas = [read_meta(p) for p in sorted(glob.glob(os.path.join(raw, "fair*.meta")))]
    if not metas:
        return [], None
    lines, ok = [], True
    for m in metas:
        if m.get("error"):
            lines.append(f"- fairness {m.get('name')}: FAIL ({m['error']})")
            ok = False
            continue
        try:
            wa, wb = int(m["weight_a"]), int(m["weight_b"])
            ra, rb = int(m["a_run_ns"]), int(m["b_run_ns"])
            pa, pb = int(m["a_proc_run_ns"]), int(m["b_proc_run_ns"])
            wall = int(m["wall_ns"])
        except (KeyError, ValueError):
            lines.append(f"- fairness {m.get('name')}: FAIL (incomplete record)")
            ok = False
            continue
        want = wa / wb
        got = ra / rb if rb else float("inf")
        good = abs(got / want - 1) <= FAIR_TOLERANCE
        ok = ok and good
        extra = f"whole processes {pa / pb:.3f}" if pb else "whole processes -"
        s0 = stat_run_ns(os.path.join(raw, m["name"] + ".stat0.json"))
        s1 = stat_run_ns(os.path.join(raw, m["name"] + ".stat1.json"))
        ka, kb = int(m.get("pid_a", -1)), int(m.get("pid_b", -1))
        if all(k in s0 and k in s1 for k in (ka, kb)) and s1[kb] > s0[kb]:
            extra += f", lagvisor stat run_ns {(s1[ka] - s0[ka]) / (s1[kb] - s0[kb]):.3f}"
        lines.append(
            f"- fairness: two 1-vCPU hog VMs in one domain on host CPU {m['cpu']}, "
            f"--weight {wa} vs --weight {wb}, {wall / 1e9:.1f} s: vCPU threads ran "
            f"{ra / 1e9:.2f} s vs {rb / 1e9:.2f} s ({100 * (ra + rb) / wall:.0f} % of the CPU), "
            f"ratio {got:.3f} (want {want:.3f} ± {100 * FAIR_TOLERANCE:.0f} %): "
            f"**{'PASS' if good else 'FAIL'}** ({extra}; whole processes used "
            f"{100 * (pa + pb) / wall:.0f} % of a CPU)")
    return lines, ok


def plot(rows, out, title):
    """latency.dat: one block per configuration (level p50 p99 p999 in µs)."""
    configs = []
    # Only configurations with numbers: gnuplot does not count an empty
    # data block as an index, which would shift every later title.
    for r in rows:
        if r["label"] not in configs and not r["error"]:
            configs.append(r["label"])
    configs.sort(key=config_key)
    dat = os.path.join(out, "latency.dat")
    with open(dat, "w") as f:
        for c in configs:
            f.write(f"# {c}\n")
            for r in sorted((r for r in rows if r["label"] == c and not r["error"]),
                            key=lambda r: level_key(r["level"])):
                f.write(f"{r['level']} " + " ".join(
                    f"{metric(r, k) / 1000:.3f}" for k in ("p50_ns", "p99_ns", "p999_ns")) + "\n")
            f.write("\n\n")
    colors = ["#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf"]
    plots = []
    n = len(configs)
    for i, c in enumerate(configs):
        col = colors[i % len(colors)]
        # Side by side within a level: bar from p50 to p99.9, point at p99.
        dx = (i - (n - 1) / 2) * (0.6 / max(n, 1))
        plots.append(f"'latency.dat' index {i} using ($1+{dx:.3f}):3:2:4 with yerrorbars "
                     f"lw 2 lc rgb '{col}' pt 7 ps 1.2 title '{c}' noenhanced")
        plots.append(f"'latency.dat' index {i} using ($1+{dx:.3f}):3 with lines lw 1 "
                     f"lc rgb '{col}' notitle")
    levels = [level_key(r["level"]) for r in rows if not r["error"]] or [1]
    gp = os.path.join(out, "latency.gp")
    with open(gp, "w") as f:
        f.write("set terminal pngcairo size 1000,600 font 'sans,10'\n"
                "set output 'latency.png'\n"
                f"set title \"{title}\"\n"
                "set xlabel 'total vCPUs per host CPU (latency VM + noisy VM)'\n"
                "set ylabel 'wakeup latency, µs (bar p50..p99.9, point p99; log)'\n"
                "set logscale y\nset grid\nset key outside right\n"
                "set xtics 1\n"
                f"set xrange [{min(levels) - 0.5}:{max(levels) + 0.5}]\n"
                "plot " + ", \\\n     ".join(plots) + "\n")
    if not shutil.which("gnuplot"):
        return "gnuplot is not installed: latency.gp written, no PNG"
    p = subprocess.run(["gnuplot", "latency.gp"], cwd=out, capture_output=True, text=True)
    if p.returncode != 0:
        return f"gnuplot failed: {p.stderr.strip()}"
    return None


def main():
    ap = argparse.ArgumentParser(prog="benchvm.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("dir")
    rp.add_argument("--title", default="lagvisor: wakeup latency beside a noisy VM")
    rp.add_argument("--no-plot", action="store_true")
    args = ap.parse_args()

    raw = os.path.join(args.dir, "raw")
    if not os.path.isdir(raw):
        print(f"benchvm.py: no raw results in {raw}", file=sys.stderr)
        return 2
    rows = collect(raw)
    lines = [f"# {args.title}", ""]
    info = os.path.join(raw, "info")
    if os.path.exists(info):
        with open(info) as f:
            lines += [line.rstrip("\n") for line in f] + [""]
    ok = True
    if rows:
        lines += table(rows)
        lines += ["", "e/h = eevdf row / host row at the same level (latency: < 1 is better "
                  "for eevdf; req/s: > 1 is better). Noisy CPU share = CPU time of the noisy "
                  "VM's vCPU threads (/proc schedstat) / (wall time x pCPUs) from wakebench's first "
                  "round to its result.", ""]
        ok = not any(r["error"] for r in rows)
    fl, fok = fairness(raw)
    if fl:
        lines += fl + [""]
        ok = ok and fok
    if rows and not args.no_plot:
        err = plot(rows, args.dir, args.title)
        lines.append(f"plot: {err}" if err else "![latency](latency.png)")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.dir, "results.md"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
