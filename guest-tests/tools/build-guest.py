#!/usr/bin/env python3
"""Build freestanding test guests with the C compiler called directly.

Called by guest-tests/meson.build through custom_target(), so none of the
project's compile flags reach the guests: in particular not
-Db_sanitize=address,undefined (a sanitizer runtime cannot exist inside a
guest with no OS) and no FPU/SSE code (-mgeneral-regs-only: the emulating
KVM on our hosts cannot run FPU/SSE state instructions).

  build-guest.py lib --cc CC --out libguest.a  SRC...
  build-guest.py elf --cc CC --out X.elf --lds guest.lds --lib libguest.a
                     [--objdump OBJDUMP] SRC...

After linking, the executable sections are disassembled (when objdump is
given) and the build fails on any instruction a guest must not contain.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

CFLAGS = [
    "-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Werror",
    "-ffreestanding", "-fno-builtin-printf", "-fno-pic", "-fno-pie",
    "-mgeneral-regs-only", "-mno-red-zone", "-mcmodel=small",
    "-fno-stack-protector", "-fno-stack-clash-protection",
    "-fcf-protection=none", "-fno-asynchronous-unwind-tables",
    "-fno-omit-frame-pointer", "-U_FORTIFY_SOURCE", "-fno-sanitize=all",
]
LDFLAGS = [
    "-nostdlib", "-static", "-no-pie", "-Wl,--build-id=none",
    "-Wl,-z,noexecstack", "-Wl,--no-warn-rwx-segments",
]

# Mnemonics (or operands) that must never appear in guest code: x87/SSE
# state and arithmetic, hypercalls, int3 (see ARCHITECTURE.md §6, "What the
# hosts we test on can run").
FORBIDDEN = re.compile(
    r"^(f[a-z0-9]+|fxsave\w*|fxrstor\w*|xsave\w*|xrstor\w*|cmpxchg16b|int3|"
    r"vmcall|vmmcall|emms|ldmxcsr|stmxcsr)$")
FORBIDDEN_OPERAND = re.compile(r"%(x|y|z)mm\d|%mm\d|%st\b")


def run(cmd):
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"build-guest: command failed: {shlex.join(cmd)}")


def compile_all(cc, srcs, incs, tmp):
    objs = []
    for i, src in enumerate(srcs):
        obj = os.path.join(tmp, f"{i}-{os.path.basename(src)}.o")
        run(cc + CFLAGS + [f"-I{d}" for d in incs] + ["-c", src, "-o", obj])
        objs.append(obj)
    return objs


def check_instructions(objdump, elf):
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", elf],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"build-guest: {objdump} -d {elf} failed: {out.stderr.strip()}")
    bad = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if not m:
            continue
        addr, mnem, ops = m.groups()
        mnem = mnem.split(",")[0]
        if mnem in ("rep", "repz", "repnz", "lock", "data16", "addr32"):
            parts = ops.split(None, 1)
            mnem = parts[0] if parts else mnem
            ops = parts[1] if len(parts) > 1 else ""
        if FORBIDDEN.match(mnem) or FORBIDDEN_OPERAND.search(ops):
            bad.append(f"  {addr}: {mnem} {ops}")
    if bad:
        sys.exit(f"build-guest: {elf} contains instructions a test guest must "
                 f"not use (FPU/SSE, int3, hypercalls):\n" + "\n".join(bad[:20]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["lib", "elf"])
    ap.add_argument("--cc", required=True, help="compiler command (shell words)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--lds")
    ap.add_argument("--lib")
    ap.add_argument("--ar", default="ar")
    ap.add_argument("--objdump", default="")
    ap.add_argument("srcs", nargs="+")
    a = ap.parse_args()
    cc = shlex.split(a.cc)

    with tempfile.TemporaryDirectory(prefix="guest-build-") as tmp:
        objs = compile_all(cc, a.srcs, a.include, tmp)
        if a.mode == "lib":
            if os.path.exists(a.out):
                os.unlink(a.out)
            run([a.ar, "rcs", a.out] + objs)
            return
        if not a.lds or not a.lib:
            sys.exit("build-guest: elf needs --lds and --lib")
        # --whole-archive: the entry stub and the IDT stubs are reached only
        # through the linker script and the ELF note, never by a call.
        run(cc + LDFLAGS + [f"-Wl,-T,{a.lds}", "-o", a.out] + objs +
            ["-Wl,--whole-archive", a.lib, "-Wl,--no-whole-archive"])
    if a.objdump:
        check_instructions(a.objdump, a.out)


if __name__ == "__main__":
    main()
