#!/usr/bin/env python3
"""system_reset in place on a real lagvisor VM (suite 'guest', needs KVM).

libvirt's `virsh reboot` is QMP system_reset + cont, and libvirt keeps the
vCPU thread IDs it read at start (pinning, cgroups): the reset must keep
the threads. This runs lagvisor-qemu with -S, a QMP socket and a file
serial, on the 2-vCPU hog guest (hog.duration_ms=0: it spins and prints
forever), and checks:
  - after cont the guest starts both vCPUs ("2 of 2 vCPUs online");
  - system_reset while it runs starts the guest over: the boot lines come
    again, with the AP started again by the guest's INIT/SIPI (so the
    LAPICs really went back to power-on, and the AP was waiting for SIPI);
  - query-cpus-fast names the same thread IDs before and after, and
    lagvisor did not rebuild the VM (its log would say so);
  - a second reset, this time from the paused state (as libvirt's reboot
    after powerdown does), works the same;
  - a guest's own reset (hog.reset_ms: port 0xcf9, as Linux's reboot=pci)
    resets it in place again and again, each with RESET {"guest": true},
    the same threads throughout, as QEMU does; with -no-reboot the guest's
    reset ends it: SHUTDOWN {"reason": "guest-reset"} and lagvisor exits.

  front_reset.py LAGVISOR_QEMU HOG_ELF SETTINGS
SETTINGS is the -lagvisor value, e.g. sched=eevdf (user irqchip) or
sched=host (KVM's irqchip).
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
ONLINE = "2 of 2 vCPUs online"


class Qmp:
    def __init__(self, path, deadline):
        while True:
            try:
                self.s = socket.socket(socket.AF_UNIX)
                self.s.connect(path)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.f = self.s.makefile("rw")
        self.events = []
        json.loads(self.f.readline())  # greeting
        self.cmd("qmp_capabilities")

    def read_event(self, timeout_s):
        # Events that came while waiting for a reply are in self.events.
        self.s.settimeout(timeout_s)
        try:
            line = self.f.readline()
        except (socket.timeout, OSError):
            return None
        finally:
            self.s.settimeout(None)
        if not line:
            return None
        r = json.loads(line)
        if "event" in r:
            self.events.append(r)
        return r

    def cmd(self, name, **args):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.f.write(json.dumps(msg) + "\n")
        self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise RuntimeError(f"{name}: {r['error']}")
            return r["return"]


def tids(q):
    return sorted(c["thread-id"] for c in q.cmd("query-cpus-fast"))


def wait_count(path, text, n, timeout_s):
    end = time.time() + timeout_s
    while time.time() < end:
        try:
            with open(path, errors="replace") as f:
                if f.read().count(text) >= n:
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.2)
    return False


def start(emu, elf, settings, work, append, extra=()):
    """lagvisor-qemu paused (-S) with a QMP socket and a file serial; its
    stderr goes to work/err.log (appended). Returns (process, socket, serial)."""
    sock, serial, log = (os.path.join(work, n) for n in ("qmp.sock", "serial.log", "err.log"))
    for path in (sock, serial):
        if os.path.exists(path):
            os.unlink(path)
    p = subprocess.Popen(
        [emu, "-S", "-nodefaults", "-smp", "2", "-m", "32", "-kernel", elf,
         "-append", append, "-serial", "file:" + serial,
         "-qmp", f"unix:{sock},server=on,wait=off", *extra,
         "-lagvisor", settings + ",verbose=1"],
        stdout=subprocess.DEVNULL, stderr=open(log, "a"))
    return p, sock, serial


def guest_resets(emu, elf, settings, work, check):
    """The guest resets itself every 300 ms of its run."""
    append = "hog.duration_ms=0 hog.report_ms=100 hog.reset_ms=300"
    p, sock, serial = start(emu, elf, settings, work, append)
    try:
        q = Qmp(sock, time.time() + 30)
        before = tids(q)
        q.cmd("cont")
        check(wait_count(serial, ONLINE, 3, 90), "guest resets: booted 3 times in place")
        end = time.time() + 30
        while time.time() < end and sum(
                e["event"] == "RESET" and e["data"] == {"guest": True, "reason": "guest-reset"}
                for e in q.events) < 2:
            q.read_event(1)
        check(sum(e["event"] == "RESET" and e["data"].get("guest") is True
                  for e in q.events) >= 2, "guest resets: RESET {guest: true} events")
        check(tids(q) == before, "guest resets: same vCPU threads")
        q.cmd("quit")
        p.wait(30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    # -no-reboot: the guest's reset ends it.
    p, sock, serial = start(emu, elf, settings, work, append, ["-no-reboot"])
    try:
        q = Qmp(sock, time.time() + 30)
        q.cmd("cont")
        end = time.time() + 60
        while time.time() < end and not any(e["event"] == "SHUTDOWN" for e in q.events):
            if q.read_event(1) is None and p.poll() is not None:
                break
        check(any(e["event"] == "SHUTDOWN" and e["data"].get("reason") == "guest-reset"
                  for e in q.events), "-no-reboot: SHUTDOWN reason guest-reset")
        try:
            rc = p.wait(30)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, f"-no-reboot: lagvisor exited (status {rc})")
        check(open(serial).read().count(ONLINE) == 1, "-no-reboot: booted once")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    emu, elf, settings = sys.argv[1:4]
    if not os.path.exists("/dev/kvm"):
        print("SKIP: no /dev/kvm on this host (scripts/test runs the guest suite "
              "under scripts/nested-kvm there)")
        return SKIP
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + what)
        failures += not ok

    with tempfile.TemporaryDirectory(prefix="lagvisor-reset.") as work:
        log = os.path.join(work, "err.log")
        p, sock, serial = start(emu, elf, settings, work, "hog.duration_ms=0 hog.report_ms=200")
        try:
            q = Qmp(sock, time.time() + 30)
            before = tids(q)
            check(len(before) == 2 and all(t > 0 for t in before),
                  f"query-cpus-fast: vCPU threads {before}")
            q.cmd("cont")
            check(wait_count(serial, ONLINE, 1, 60), "first boot: both vCPUs online")
            check(wait_count(serial, "hog: t=", 2, 60), "first boot: hog running")
            q.cmd("system_reset")
            check(wait_count(serial, ONLINE, 2, 60),
                  "reset while running: booted again, AP started again by SIPI")
            check(tids(q) == before, "reset while running: same vCPU threads")
            q.cmd("stop")
            q.cmd("system_reset")
            time.sleep(0.5)
            check(not wait_count(serial, ONLINE, 3, 0.1),
                  "reset while paused: the guest stays paused")
            q.cmd("cont")
            check(wait_count(serial, ONLINE, 3, 60),
                  "reset while paused, then cont: booted again")
            check(wait_count(serial, "hog: t=", 1 + open(serial).read().count("hog: t="), 30),
                  "after the resets: the guest keeps running")
            check(tids(q) == before, "after both resets: same vCPU threads")
            q.cmd("quit")
            p.wait(30)
        except Exception as e:  # noqa: BLE001 - any failure is the test's
            check(False, f"{type(e).__name__}: {e}")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        with open(log, errors="replace") as f:
            err = f.read()
        check("rebuild" not in err, "no rebuild of the VM in lagvisor's log")
        try:
            guest_resets(emu, elf, settings, work, check)
        except Exception as e:  # noqa: BLE001 - any failure is the test's
            check(False, f"guest resets: {type(e).__name__}: {e}")
        with open(log, errors="replace") as f:
            err = f.read()
        check("rebuild" not in err, "guest resets: no rebuild of the VM")
        if failures:
            print("--- lagvisor log (tail) ---\n" + "\n".join(err.splitlines()[-40:]))
            with open(serial, errors="replace") as f:
                print("--- serial (tail) ---\n" + "\n".join(f.read().splitlines()[-20:]))
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
