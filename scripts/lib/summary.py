#!/usr/bin/env python3
"""Count results in meson testlog.json files; print the summary line.

Exit status 0 only if nothing failed and at least one test ran.
"""
import json
import sys

passed = failed = skipped = 0
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
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if failed == 0 and passed > 0 else 1)
