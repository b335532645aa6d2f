#!/usr/bin/env python3
"""Self-test of run-guest's verdict (suite 'unit'): fake VMMs that exit with
the wrong status, omit the summary, report failures or hang must each make
run-guest fail; only pass status + clean summary passes; a missing VMM skips.
"""
import os
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "run-guest")

CASES = [
    # name, fake VMM shell body, expected run-guest exit status
    ("pass", 'echo "SUMMARY: 3 tests, 0 failed, 0 skipped"; exit 85', 0),
    ("plain exit 0", 'echo "SUMMARY: 3 tests, 0 failed, 0 skipped"; exit 0', 1),
    ("vmm error 1", 'echo "SUMMARY: 3 tests, 0 failed, 0 skipped"; exit 1', 1),
    ("guest fail code", 'echo "SUMMARY: 3 tests, 1 failed, 0 skipped"; exit 27', 1),
    ("pass code, failures in summary", 'echo "SUMMARY: 3 tests, 1 failed, 0 skipped"; exit 85', 1),
    ("pass code, no summary", 'echo "hello"; exit 85', 1),
    ("pass code, zero tests", 'echo "SUMMARY: 0 tests, 0 failed, 0 skipped"; exit 85', 1),
    ("crash", 'kill -SEGV $$', 1),
    ("hang", 'sleep 30', 1),
    # expect=abort entry (test "fakeabort"): the guest's failure path.
    ("abort expected, got it", 'echo "EXCEPTION: vector 6 (#UD)"; exit 29', 0, "fakeabort"),
    ("abort expected, no message", 'exit 29', 1, "fakeabort"),
    ("abort expected, got pass", 'echo "SUMMARY: 3 tests, 0 failed, 0 skipped"; exit 85', 1, "fakeabort"),
]


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        manifest = os.path.join(tmp, "manifest.txt")
        with open(manifest, "w") as f:
            f.write("fake fake 1 32M 10\nfakeabort fake 1 32M 10 expect=abort\n")
        open(os.path.join(tmp, "fake.elf"), "w").close()
        fake = os.path.join(tmp, "fake-qemu")
        for case in CASES + [("missing vmm", None, 77)]:
            name, body, want = case[:3]
            test = case[3] if len(case) > 3 else "fake"
            qemu = fake if body is not None else os.path.join(tmp, "absent")
            if body is not None:
                with open(fake, "w") as f:
                    f.write(f"#!/bin/sh\n{body}\n")
                os.chmod(fake, stat.S_IRWXU)
            args = [sys.executable, RUNNER, "--vmm", "qemu", "--qemu", qemu,
                    "--manifest", manifest, "--elf-dir", tmp,
                    "--timeout-scale", "0.2", test]
            if body is None:
                # --qemu pointing nowhere: run-guest must skip, not fail.
                args[args.index("--qemu") + 1] = ""
                env = dict(os.environ, PATH=tmp)
            else:
                env = os.environ
            r = subprocess.run(args, capture_output=True, text=True, env=env)
            ok = r.returncode == want
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: run-guest exit {r.returncode}, want {want}")
            if not ok:
                print(r.stdout + r.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
