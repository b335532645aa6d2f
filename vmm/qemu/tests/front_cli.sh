#!/usr/bin/env bash
# lagvisor-qemu as a process (suite 'unit', no KVM, no root): the probe is
# exec'd with the same argv, -version, bad values exit 2 with one line,
# and a -daemonize'd stand-in writes its pidfile, serves QMP on its own
# -qmp socket, and exits after `quit` with SHUTDOWN sent.
set -uo pipefail
emu=${1:?lagvisor-qemu}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
work=$(mktemp -d /tmp/lagvisor-front-cli.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The probe: the real QEMU replaced by a script that records its argv.
cat >"$work/fake-qemu" <<'EOS'
#!/bin/sh
printf '%s\n' "$0" "$@" >"$FAKE_QEMU_OUT"
exit 42
EOS
chmod +x "$work/fake-qemu"
FAKE_QEMU_OUT=$work/argv LAGVISOR_QEMU_BINARY=$work/fake-qemu \
	"$emu" -S -no-user-config -machine none,accel=kvm:tcg -qmp unix:/x,server=on,wait=off
rc=$?
[ $rc = 42 ] || fail "probe: exit $rc, not the real QEMU's 42"
printf '%s\n' "$work/fake-qemu" -S -no-user-config -machine none,accel=kvm:tcg \
	-qmp unix:/x,server=on,wait=off | cmp -s - "$work/argv" || fail "probe: argv changed: $(cat "$work/argv")"
LAGVISOR_QEMU_BINARY=$work/missing "$emu" -M none 2>"$work/err"
[ $? = 1 ] && grep -q "cannot run $work/missing" "$work/err" || fail "probe without QEMU: $(cat "$work/err")"

"$emu" -version | grep -q "^QEMU emulator version 7.2.0 (lagvisor" || fail "-version"

# VALUE|MESSAGE: 255 is over the MP table's limit, refused before any VM.
for bad in "two|-smp two" "255|-smp 255: lagvisor supports at most 254 vCPUs"; do
	"$emu" -smp "${bad%%|*}" -kernel /k 2>"$work/err"
	rc=$?
	[ $rc = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] && grep -q -- "${bad#*|}" "$work/err" ||
		fail "bad -smp ${bad%%|*}: exit $rc, $(cat "$work/err")"
done

# -daemonize: the parent returns once QMP listens; quit ends the child.
"$emu" -daemonize -pidfile "$work/pid" -smp 2 -kernel /nonexistent -nodefaults \
	-qmp "unix:$work/qmp.sock,server=on,wait=off" -lagvisor machine=standin 2>"$work/err"
rc=$?
[ $rc = 0 ] || fail "-daemonize: parent exit $rc: $(cat "$work/err")"
pid=$(cat "$work/pid" 2>/dev/null)
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || fail "-pidfile: no live process ($pid)"
out=$(/usr/bin/python3 - "$work/qmp.sock" <<'EOP'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
f = s.makefile("rw")
print(f.readline().strip())
for c in ("qmp_capabilities", "query-status", "quit"):
    f.write('{"execute":"%s"}\r\n' % c)
    f.flush()
try:
    for line in f:
        print(line.strip())
except OSError:
    pass
EOP
)
grep -q '"status":"running"' <<<"$out" || fail "daemon QMP: $out"
grep -q '"reason":"host-qmp-quit"' <<<"$out" || fail "quit: no SHUTDOWN: $out"
for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	fail "daemon still running after quit"
	kill -KILL "$pid"
fi

[ $failures = 0 ] && echo "front_cli: ok"
[ $failures = 0 ]
