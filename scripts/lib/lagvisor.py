#!/usr/bin/env python3
"""The scripts' one way to start a test guest under lagvisor and read it.

    import lagvisor as lv                     # sys.path: scripts/lib
    python3 scripts/lib/lagvisor.py argv --lagvisor L --kernel ELF --cpus N \\
        --memory 32M [--serial S] [--sched X] [--irqchip Y] [--strict-io] [-v] \\
        [--no-cpus-word] [--cmdline WORD]... [-- EXTRA...]
    python3 scripts/lib/lagvisor.py calibrate --lagvisor L --elf-dir DIR
    python3 scripts/lib/lagvisor.py parse-wakebench FILE [--hist]
    python3 scripts/lib/lagvisor.py --selftest

What is here: the `lagvisor run` argv of a guest (argv prints it one word
a line, for bash's mapfile -t), the guests' exit statuses and summary line
(guest-tests/lib/exit.h), the guests' TSC rate measured by lone guests
(calibrate prints it in kHz), the parsers of wakebench's summary and
histogram lines and of hog's progress lines (parse-wakebench prints the
summary as key=value words, or the histogram as "value count" lines), and
per-thread CPU time from /proc. Python 3 standard library only.

The bash benchmark drivers (scripts/lib/benchvm.sh, scripts/bench-seeds,
scripts/bench-irq) still build their command lines themselves: under
scripts/nested-kvm every python3 start costs ~40 s, and they start a VM
at a time in a loop. Their Python reports use the parsers.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = re.compile(r"^SUMMARY: (\d+) tests, (\d+) failed, (\d+) skipped\s*$")
WB_SUMMARY = re.compile(r"wakebench: (samples=\d+.*)$")
WB_HIST = re.compile(r"^wakebench-hist:((?: \d+:\d+)+)\s*$")
# The rate is optional so that a line cut short by a killed VM still gives
# its time and total (the last line of a SIGTERMed hog often is one).
HOG = re.compile(r"^hog: t=(\d+) ms total=(\d+) loops(?: \((\d+) loops/s\))?(.*)$")
HOG_CPUS = re.compile(r"((?: cpu\d+=\d+)+)\s*$")
TSC_LINE = re.compile(r"TSC (\d+) kHz from")


# --- the command line ---------------------------------------------------

def run_argv(lagvisor, kernel, cpus, memory, cmdline=(), serial="stdio", sched=None,
             irqchip=None, strict_io=False, verbose=False, cpus_word=True, extra=()):
    """`lagvisor run` for one guest. "cpus=N" leads the guest's words
    unless cpus_word=False (a Linux or kvm-unit-tests kernel): a test guest
    that finds no MP table waits for that many vCPUs to check in
    (guest-tests/lib/smp.c), and every script has always passed it."""
    argv = [lagvisor, "run"] + (["-v"] if verbose else [])
    argv += ["--kernel", kernel, "--cpus", str(cpus), "--memory", memory, "--serial", serial]
    if strict_io:
        argv.append("--strict-io")
    words = ([f"cpus={cpus}"] if cpus_word else []) + list(cmdline)
    argv += ["--cmdline", " ".join(words)]
    if sched:
        argv += ["--sched", sched]
    if irqchip:
        argv += ["--irqchip", irqchip]
    return argv + list(extra)


def guest_exit_codes():
    """{"PASS", "FAIL", "ABORT"}: the statuses lagvisor exits with for the
    guest's GUEST_EXIT_* (debug-exit port: value << 1 | 1), read from
    guest-tests/lib/exit.h, the one place they are defined. ValueError
    naming the key that is missing."""
    with open(os.path.join(ROOT, "guest-tests", "lib", "exit.h")) as f:
        text = f.read()
    codes = {}
    for key in ("PASS", "FAIL", "ABORT"):
        m = re.search(rf"#define GUEST_EXIT_{key}\s+(0x[0-9a-fA-F]+|\d+)", text)
        if not m:
            raise ValueError(f"GUEST_EXIT_{key} not found in lib/exit.h")
        codes[key] = ((int(m.group(1), 0) << 1) | 1) & 0xff
    return codes


def guest_passed(status, lines, pass_status):
    """A guest passed: its pass status and exactly one SUMMARY line that
    counts some tests and no failure."""
    summ = [m for m in map(SUMMARY.match, lines) if m]
    return (status == pass_status and len(summ) == 1 and int(summ[0].group(2)) == 0
            and int(summ[0].group(1)) > 0)


# --- the TSC rate ---------------------------------------------------------

def tsc_khz_of(lines):
    """The rate a guest says it measured ("TSC N kHz from ..."), or None."""
    m = next((m for m in map(TSC_LINE.search, lines) if m), None)
    return int(m.group(1)) if m else None


def lone_guest_argv(lagvisor, elf_dir):
    """The calibrating guest: a 1-vCPU hog that ends at once, under the
    host scheduler, with no tsc_khz= (it is to measure the rate)."""
    return run_argv(lagvisor, os.path.join(elf_dir, "hog.elf"), 1, "32M",
                    ["hog.duration_ms=1"], sched="host", strict_io=True)


def calibrate_tsc(run_lone, tries=3):
    """The guests' TSC rate, measured by lone 1-vCPU guests: (rates, the
    median kHz or None unless every try measured one).

    guest-tests/lib/lapic.c times the TSC against the LAPIC timer with
    c0 = read(TMCCT) before t0 = rdtsc(): a vCPU descheduled between the two
    (an MMIO exit is a scheduling point under --irqchip user) measures a rate
    off by up to 100x, and hog/wakebench then time everything with it. A
    guest alone on the host CPUs is not preempted there; the others get its
    rate as tsc_khz=.

    run_lone(i) starts the i-th lone guest (lone_guest_argv) and returns
    (passed, its output lines)."""
    rates = []
    for i in range(tries):
        passed, lines = run_lone(i)
        khz = tsc_khz_of(lines)
        if passed and khz:
            rates.append(khz)
    # even a lone vCPU is descheduled by the host now and then (nested
    # KVM on a loaded host): the median of three
    return rates, (sorted(rates)[tries // 2] if len(rates) == tries else None)


# --- guest output -----------------------------------------------------------

def read_lines(path):
    """A console log's lines, or None when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return [line.rstrip("\n") for line in f]
    except OSError:
        return None


def wakebench_summary(lines):
    """wakebench's machine-readable line ("wakebench: samples=N p50_ns=...",
    both the guest's and guest-tests/linux-progs') as {key: int}, the last
    one if several, or None. The Linux wakebench also begins its parameter
    line with "wakebench: ", hence samples= in the pattern."""
    found = None
    for line in lines or ():
        m = WB_SUMMARY.search(line.strip())
        if m:
            found = m
    if not found:
        return None
    out = {}
    for word in found.group(1).split():
        k, _, v = word.partition("=")
        if v.isdigit():
            out[k] = int(v)
    return out


def wakebench_hist(lines):
    """The merged latency histogram of the wakebench-hist: lines as a
    sorted [(value_ns, count)], or None when there are none (an older
    guest, or the host-threads wakebench)."""
    hist = {}
    for line in lines or ():
        m = WB_HIST.match(line.strip())
        if m:
            for pair in m.group(1).split():
                v, c = pair.split(":")
                hist[int(v)] = hist.get(int(v), 0) + int(c)
    return sorted(hist.items()) if hist else None


def hog_line(line):
    """One hog progress line as {"t_ms", "total", "rate" (loops/s, None
    on a cut line), "cpus" ([loops of vCPU 0..n-1], None without)}, or
    None for any other line."""
    m = HOG.match(line.strip())
    if not m:
        return None
    c = HOG_CPUS.search(m.group(4))
    return {"t_ms": int(m.group(1)), "total": int(m.group(2)),
            "rate": int(m.group(3)) if m.group(3) else None,
            "cpus": [int(x.split("=")[1]) for x in c.group(1).split()] if c else None}


def hog_loops_per_s(lines):
    """A hog's loops/s over its whole run: total / t of its last progress
    line (t > 0), or None. The per-line rate is over one report interval."""
    last = None
    for h in map(hog_line, lines or ()):
        if h and h["t_ms"] > 0:
            last = h
    return last["total"] * 1000 / last["t_ms"] if last else None


# --- CPU time from /proc ------------------------------------------------------

def task_stat(pid, tid=None):
    """(comm, the fields after it) of /proc/PID/stat or of one thread's, or
    None once it is gone. comm may hold spaces and parentheses: it is cut
    at the first "(" and the last ")"."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    return text[text.index("(") + 1:text.rindex(")")], text.rsplit(")", 1)[1].split()


def ticks(fields):
    """utime + stime (clock ticks) of task_stat's fields."""
    return int(fields[11]) + int(fields[12])


def process_ticks(pid):
    """utime + stime of every thread of pid, in clock ticks; OSError once
    it is gone."""
    st = task_stat(pid)
    if st is None:
        raise OSError(f"no process {pid}")
    return ticks(st[1])


def thread_ids(pid):
    """pid's thread ids, ascending; [] once it is gone."""
    try:
        return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return []


def thread_ticks(pid):
    """{"tid/comm": utime + stime} for each thread of pid."""
    out = {}
    for tid in thread_ids(pid):
        st = task_stat(pid, tid)
        if st:
            out[f"{tid}/{st[0]}"] = ticks(st[1])
    return out


def thread_schedstat(pid, name):
    """(ns on CPU, ns waiting in the host's run queue) of pid's thread named
    name (a vCPU thread is vcpuN), from its schedstat: nanoseconds, where
    stat's ticks are too coarse for a short run. None without it."""
    for tid in thread_ids(pid):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != name:
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
            return int(run), int(wait)
        except (OSError, ValueError):
            continue
    return None


# --- command line -------------------------------------------------------------

def cmd_calibrate(args):
    codes = guest_exit_codes()

    def lone(i):
        r = subprocess.run(lone_guest_argv(args.lagvisor, args.elf_dir), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        lines = r.stdout.decode("utf-8", "replace").replace("\r", "").splitlines()
        return guest_passed(r.returncode, lines, codes["PASS"]), lines

    rates, khz = calibrate_tsc(lone)
    if khz is None:
        print(f"lagvisor.py: calibrate: lone guests measured {rates} kHz, not three rates",
              file=sys.stderr)
        return 1
    print(khz)
    return 0


def cmd_parse_wakebench(args):
    lines = read_lines(args.file)
    if args.hist:
        hist = wakebench_hist(lines)
        for v, c in hist or ():
            print(v, c)
        return 0 if hist else 1
    wb = wakebench_summary(lines)
    if wb is None:
        return 1
    print(" ".join(f"{k}={v}" for k, v in wb.items()))
    return 0


def selftest():
    wb = ["wakebench: 1 message threads, 2 workers each",
          "wakebench: samples=10 p50_ns=5000 p75_ns=6000 p90_ns=7000 p99_ns=9000 "
          "p999_ns=9000 min_ns=4000 max_ns=9000 rps_x100=1000 busy=0 workers=2",
          "wakebench-hist: 4096:2 5120:8", "wakebench-hist: 4096:1"]
    assert wakebench_summary(wb)["p99_ns"] == 9000 and wakebench_summary(wb[:1]) is None
    assert wakebench_hist(wb) == [(4096, 3), (5120, 8)] and wakebench_hist(wb[:2]) is None
    h = hog_line("hog: t=500 ms total=1200 loops (2400 loops/s) cpu0=700 cpu1=500 \r")
    assert h == {"t_ms": 500, "total": 1200, "rate": 2400, "cpus": [700, 500]}, h
    assert hog_line("hog: t=9 ms total=3 loops (1")["rate"] is None and hog_line("hogs") is None
    assert hog_loops_per_s(["hog: t=0 ms total=0 loops (0 loops/s)",
                            "hog: t=500 ms total=1000 loops (2000 loops/s)", "x"]) == 2000
    assert tsc_khz_of(["INFO: hog: 1 vCPUs, 1 ms, TSC 2096035 kHz from CPUID"]) == 2096035
    assert calibrate_tsc(lambda i: (True, [f"TSC {[3, 1, 2][i]} kHz from x"])) == ([3, 1, 2], 2)
    assert calibrate_tsc(lambda i: (i != 1, ["TSC 5 kHz from x"]))[1] is None
    assert run_argv("lv", "k.elf", 2, "32M", ["a=1"], strict_io=True, sched="host",
                    extra=["--x"]) == ["lv", "run", "--kernel", "k.elf", "--cpus", "2", "--memory",
                                       "32M", "--serial", "stdio", "--strict-io", "--cmdline",
                                       "cpus=2 a=1", "--sched", "host", "--x"]
    assert guest_exit_codes()["PASS"] == 85
    assert guest_passed(85, ["SUMMARY: 3 tests, 0 failed, 0 skipped"], 85)
    assert not guest_passed(85, ["SUMMARY: 0 tests, 0 failed, 0 skipped"], 85)
    me = thread_ticks(os.getpid())
    assert me and process_ticks(os.getpid()) >= 0 and thread_ids(os.getpid())
    print("lagvisor.py: selftest passed")
    return 0


def main(argv):
    if argv == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(prog="lagvisor.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("argv", help="print `lagvisor run`'s words, one a line")
    a.add_argument("--lagvisor", required=True)
    a.add_argument("--kernel", required=True)
    a.add_argument("--cpus", type=int, required=True)
    a.add_argument("--memory", required=True)
    a.add_argument("--serial", default="stdio")
    a.add_argument("--sched")
    a.add_argument("--irqchip")
    a.add_argument("--strict-io", action="store_true")
    a.add_argument("-v", "--verbose", action="store_true")
    a.add_argument("--no-cpus-word", action="store_true", help="no cpus=N on the command line")
    a.add_argument("--cmdline", action="append", default=[], help="one guest word (repeatable)")
    a.add_argument("extra", nargs="*", help="more lagvisor options, after --")
    c = sub.add_parser("calibrate", help="print the guests' TSC rate in kHz")
    c.add_argument("--lagvisor", required=True)
    c.add_argument("--elf-dir", required=True)
    p = sub.add_parser("parse-wakebench", help="print a log's wakebench summary or histogram")
    p.add_argument("file")
    p.add_argument("--hist", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "argv":
        print("\n".join(run_argv(args.lagvisor, args.kernel, args.cpus, args.memory,
                                 args.cmdline, args.serial, args.sched, args.irqchip,
                                 args.strict_io, args.verbose, not args.no_cpus_word,
                                 args.extra)))
        return 0
    return cmd_calibrate(args) if args.cmd == "calibrate" else cmd_parse_wakebench(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
