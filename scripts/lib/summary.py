#!/usr/bin/env python3
"""Count results in meson testlog.json files; print the summary line.

Each test that did not pass or skip is listed just above that line, with
the tail of its output: CI keeps only the end of what a run printed, and
meson's own failure log is far above it.

Exit status 0 only if nothing failed and at least one test ran.
"""
import json
import sys

TAIL_LINES = 25

passed = failed = skipped = 0
bad = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            lines = [l for l in f if l.strip()]
    except OSError as e:
        print(f"summary: cannot read {path}: {e.strerror}")
        failed += 1
        continue
    for line in lines:
        r = json.loads(line)
        res = r.get("result")
        if res in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif res == "SKIP":
            skipped += 1
        else:
            failed += 1
            bad.append(r)
for r in bad:
    print(f"--- {r.get('name')}: {r.get('result')} after {r.get('duration', 0):.0f} s; its output ends:")
    out = (r.get("stdout") or "") + (r.get("stderr") or "")
    for line in out.splitlines()[-TAIL_LINES:]:
        print("    " + line[:300])
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if failed == 0 and passed > 0 else 1)
