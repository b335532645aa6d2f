#!/usr/bin/env bash
# The sandbox is on (vmm/seccomp.h): with LAGVISOR_SECCOMP_SELFTEST=ROLE the
# first thread of that role calls socket(2) right after its filter is in,
# and lagvisor must die by SIGSYS with the one-line message; with
# --no-seccomp (lagvisor-qemu: -lagvisor seccomp=off) the same call runs
# and the VM ends as the guest says. Guests that never make a forbidden
# call run to their end with the filters on. lagvisor run's roles under
# both schedulers; lagvisor-qemu's on a real VM and on the stand-in. Needs
# /dev/kvm: exit 77 (SKIP) without it.
#   seccomp.sh LAGVISOR LAGVISOR_QEMU GUEST_ELF_DIR
set -u
bin=$1
emu=$2
elfs=$3
if [ ! -e /dev/kvm ]; then
	echo "seccomp: SKIP: no /dev/kvm on this host"
	exit 77
fi
hello=$elfs/hello.elf
smp=$elfs/smp.elf
for f in "$bin" "$emu" "$hello" "$smp"; do
	[ -e "$f" ] || { echo "seccomp: $f is not built"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
SIGSYS_STATUS=$((128 + 31))
GUEST_OK=85                       # debug-exit 42: the guest passed

# check NAME WANT_STATUS STDERR_PART SELFTEST_ROLE CMD...
check() {
	local name=$1 want=$2 err_want=$3 role=$4; shift 4
	local rc
	LAGVISOR_SECCOMP_SELFTEST=$role timeout -s KILL 120 "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" != "$want" ] || ! grep -qF -- "$err_want" "$tmp/err"; then
		echo "FAIL: $name: want status $want, stderr ~ '$err_want'"
		echo "  got status $rc, stderr:"
		sed 's/^/    /' "$tmp/err" | tail -20
		fail=1
	else
		echo "ok: $name -> $rc"
	fi
}

forbidden() { echo "lagvisor: seccomp: thread $1 made forbidden syscall 41 (socket)"; }
allowed="seccomp self-test: socket(2) succeeded"
run=("$bin" run --kernel "$hello" --memory 32M --serial none)

for sched in eevdf host; do
	for role in vcpu io main; do
		check "$sched: $role thread killed" $SIGSYS_STATUS "$(forbidden $role)" $role \
			"${run[@]}" --sched $sched
		check "$sched: $role thread, --no-seccomp" $GUEST_OK "$allowed" $role \
			"${run[@]}" --sched $sched --no-seccomp
	done
	# No forbidden call: the guest runs to its end, nothing is trapped.
	check "$sched: smp-4 runs filtered" $GUEST_OK "seccomp: on" "" \
		"$bin" run --kernel "$smp" --cpus 4 --memory 32M --serial none --cmdline cpus=4 \
		--sched $sched -v
	if grep -q "forbidden syscall" "$tmp/err"; then
		echo "FAIL: $sched: smp-4 trapped: $(grep forbidden "$tmp/err")"
		fail=1
	fi
done
check "-v says off" $GUEST_OK "seccomp: off (--no-seccomp)" "" "${run[@]}" --no-seccomp -v

# lagvisor-qemu on a real VM: its main thread (which would rebuild the VM)
# and the VM's threads under it.
qemu=("$emu" -kernel "$hello" -smp 1 -m 32 -nodefaults)
for role in qemu-main vcpu io; do
	check "qemu: $role thread killed" $SIGSYS_STATUS "$(forbidden $role)" $role "${qemu[@]}"
	check "qemu: $role thread, seccomp=off" $GUEST_OK "$allowed" $role \
		"${qemu[@]}" -lagvisor seccomp=off
done
check "qemu: the VM runs filtered" $GUEST_OK "seccomp: on" "" "${qemu[@]}" -lagvisor verbose=1

# The QMP thread: the stand-in machine serves QMP until `quit`.
qmp_quit() {
	/usr/bin/python3 - "$1" <<'EOP'
import socket, sys, time
for _ in range(50):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(sys.argv[1])
        break
    except OSError:
        time.sleep(0.1)
f = s.makefile("rw")
f.readline()
# A first client that leaves, as libvirtd does when it restarts: the
# server takes the next one (a fresh eventfd holds the client's fd).
f.write('{"execute":"qmp_capabilities"}\r\n{"execute":"query-status"}\r\n')
f.flush()
f.readline()
f.readline()
f.close()
s.close()
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
f.write('{"execute":"qmp_capabilities"}\r\n{"execute":"quit"}\r\n')
f.flush()
try:
    f.read()
except OSError:
    pass
EOP
}
standin=("$emu" -smp 1 -kernel /nonexistent -nodefaults -qmp "unix:$tmp/qmp.sock,server=on,wait=off")
check "qemu: qmp thread killed" $SIGSYS_STATUS "$(forbidden qmp)" qmp \
	"${standin[@]}" -lagvisor machine=standin
rm -f "$tmp/qmp.sock"
(sleep 0.5; qmp_quit "$tmp/qmp.sock" >/dev/null 2>&1) &
check "qemu: qmp thread, seccomp=off" 0 "$allowed" qmp \
	"${standin[@]}" -lagvisor machine=standin,seccomp=off
wait
rm -f "$tmp/qmp.sock"
(sleep 0.5; qmp_quit "$tmp/qmp.sock" >/dev/null 2>&1) &
check "qemu: QMP served filtered" 0 "seccomp: on" "" \
	"${standin[@]}" -lagvisor machine=standin,verbose=1
wait

[ $fail = 0 ] && echo "seccomp: ok"
exit $fail
