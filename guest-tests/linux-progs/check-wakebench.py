#!/usr/bin/env python3
"""Run wakebench (linux-progs) and check its schbench-style table.

  check-wakebench.py PROG [wakebench options...]
  check-wakebench.py --log FILE     (a guest console log, e.g. image-test.sh)

Passes when PROG exits 0 and prints the whole table: the "Wakeup Latencies
percentiles" header with a sample count > 0, the 50.0/75.0/90.0/99.0/99.9th
lines in that order with non-decreasing values, "min=, max=" bracketing
them, "average rps:" > 0 and the machine-readable "wakebench:" line agreeing
with the header. Before running PROG it feeds itself broken tables and
fails if it accepts any, so a check that cannot fail is caught here too.
"""
import re
import subprocess
import sys

HEADER = re.compile(r"^Wakeup Latencies percentiles \(usec\) runtime (\d+) \(s\) "
                    r"\((\d+) total samples\)$")
PCT = re.compile(r"^\t(\* |  )(\d+\.\d)th: (\d+)$")
MINMAX = re.compile(r"^\t  min=(\d+), max=(\d+)$")
RPS = re.compile(r"^average rps: (\d+)\.(\d\d)$")
MACHINE = re.compile(r"^wakebench: samples=(\d+) p50_ns=\d+ p75_ns=\d+ p90_ns=\d+ "
                     r"p99_ns=\d+ p999_ns=\d+ min_ns=\d+ max_ns=\d+ rps_x100=\d+ "
                     r"busy=\d+ workers=\d+$")
WANT_PCTS = ["50.0", "75.0", "90.0", "99.0", "99.9"]


def check(text):
    """None if the table is good, else why not."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if HEADER.match(l)), None)
    if start is None:
        return "no 'Wakeup Latencies percentiles' header"
    samples = int(HEADER.match(lines[start]).group(2))
    if samples <= 0:
        return "0 samples recorded"
    rows = lines[start + 1:start + 8]
    if len(rows) < 7:
        return "table cut short"
    vals = []
    for want, row in zip(WANT_PCTS, rows[:5]):
        m = PCT.match(row)
        if not m or m.group(2) != want:
            return f"expected the {want}th line, got {row!r}"
        if (m.group(1) == "* ") != (want == "99.0"):
            return f"the '*' marks 99.0th only: {row!r}"
        vals.append(int(m.group(3)))
    m = MINMAX.match(rows[5])
    if not m:
        return f"expected 'min=, max=', got {rows[5]!r}"
    lo, hi = int(m.group(1)), int(m.group(2))
    if vals != sorted(vals) or lo > vals[0] or hi < vals[-1]:
        return f"percentiles not ordered within min/max: {lo} {vals} {hi}"
    m = RPS.match(rows[6])
    if not m or int(m.group(1) + m.group(2)) == 0:
        return f"expected 'average rps:' > 0, got {rows[6]!r}"
    m = next(filter(None, map(MACHINE.match, lines)), None)
    if not m or int(m.group(1)) != samples:
        return "no 'wakebench: samples=' line agreeing with the header"
    return None


GOOD = """Wakeup Latencies percentiles (usec) runtime 1 (s) (10 total samples)
\t  50.0th: 5
\t  75.0th: 6
\t  90.0th: 7
\t* 99.0th: 9
\t  99.9th: 9
\t  min=4, max=9
average rps: 10.00
wakebench: samples=10 p50_ns=5000 p75_ns=6000 p90_ns=7000 p99_ns=9000 p999_ns=9000 min_ns=4000 max_ns=9000 rps_x100=1000 busy=0 workers=2
"""
BROKEN = [
    GOOD.replace("(10 total", "(0 total"),
    GOOD.replace("\t  75.0th: 6\n", ""),
    GOOD.replace("90.0th: 7", "90.0th: 3"),
    GOOD.replace("min=4", "min=6"),
    GOOD.replace("average rps: 10.00", "average rps: 0.00"),
    GOOD.replace("samples=10 ", "samples=11 "),
    "",
]


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: check-wakebench.py PROG [options...]")
    if check(GOOD) is not None:
        sys.exit(f"check-wakebench: self-check rejects a good table: {check(GOOD)}")
    for i, bad in enumerate(BROKEN):
        if check(bad) is None:
            sys.exit(f"check-wakebench: self-check accepted broken table #{i}")
    if sys.argv[1] == "--log":
        with open(sys.argv[2], errors="replace") as f:
            text = f.read().replace("\r", "")
        why = check(text)
        print(f"check-wakebench: {'FAIL: ' + why if why else 'PASS'} ({sys.argv[2]})")
        return 1 if why else 0
    cmd = sys.argv[1:]
    print("check-wakebench: running", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=50)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        print(f"check-wakebench: FAIL: exit status {r.returncode}")
        return 1
    why = check(r.stdout)
    if why:
        print(f"check-wakebench: FAIL: {why}")
        return 1
    print("check-wakebench: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
