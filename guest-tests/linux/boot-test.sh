#!/usr/bin/env bash
# Boot the Linux guest image (scripts/mkguest) with 2 vCPUs and check what
# its serial console shows.
#
#   boot-test.sh lagvisor vmlinux|bzimage LAGVISOR MKGUEST [ARGS...]  (suite 'guest')
#     ARGS: more lagvisor run options (e.g. --sched eevdf)
#   boot-test.sh qemu     vmlinux|bzimage -        MKGUEST   (suite 'guest-qemu')
#
# Under lagvisor the expectation depends on the host, and the test says which
# case it saw:
#  (i)   no /dev/kvm: SKIP (exit 77) with the reason.
#  (ii)  /dev/kvm is a PVM-backend KVM (kvm_pvm loaded, no vmx/svm in
#        /proc/cpuinfo): an unmodified guest runs in KVM's instruction
#        emulator and stops at the first instruction it cannot emulate.
#        vmlinux: the banner "Linux version", the early line "Command line:",
#        then lagvisor's "cannot emulate" report and a non-zero exit.
#        bzImage: the decompressor's first output. This Debian kernel is built
#        without CONFIG_X86_VERBOSE_BOOTUP, so "Decompressing Linux..." is
#        compiled out; with nokaslr its first (and, before the kernel proper,
#        only) line is "KASLR disabled: 'nokaslr' on cmdline." Decompressing
#        8 MB of xz at ~2 M emulated instructions/s would take hours, so the
#        test stops lagvisor once the line is there.
#  (iii) ordinary KVM: both forms reach /init and print
#        "lagvisor-guest: 2 vCPUs online".
# Under QEMU (TCG) both forms must reach /init and power off; this checks
# the image itself on hosts without usable KVM.
#
# The image is built (or found cached) with scripts/mkguest; if that fails
# the test FAILS with mkguest's reason (it needs apt and the network once).
# Environment: LAGVISOR_GUEST_DIR (image cache, passed on to mkguest),
# LAGVISOR_BOOT_TIMEOUT (seconds per boot, default 300),
# LAGVISOR_HOST_CASE=none|pvm|full overrides the host detection (only for
# checking this script itself, e.g. with a stand-in for lagvisor).
set -uo pipefail

vmm=${1:-}; form=${2:-}; lagvisor=${3:-}; mkguest=${4:-}
extra=("${@:5}")
case "$vmm/$form" in
lagvisor/vmlinux|lagvisor/bzimage|qemu/vmlinux|qemu/bzimage) ;;
*) echo "usage: boot-test.sh lagvisor|qemu vmlinux|bzimage LAGVISOR MKGUEST" >&2; exit 2 ;;
esac
[ -n "$mkguest" ] || { echo "boot-test: no mkguest path given" >&2; exit 2; }

timeout_s=${LAGVISOR_BOOT_TIMEOUT:-300}
cmdline="console=ttyS0 earlyprintk=serial,ttyS0,115200 nokaslr panic=-1"
init_line="lagvisor-guest: 2 vCPUs online"
kaslr_line="KASLR disabled: 'nokaslr' on cmdline."

fail() { echo "FAIL: $*"; exit 1; }

# --- which host is this? (lagvisor only) ------------------------------------
detect_case() {
	if [ -n "${LAGVISOR_HOST_CASE:-}" ]; then
		echo "$LAGVISOR_HOST_CASE"
	elif [ ! -e /dev/kvm ]; then
		echo none
	elif [ -d /sys/module/kvm_pvm ] && ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo pvm
	else
		echo full
	fi
}

if [ "$vmm" = lagvisor ]; then
	hcase=$(detect_case)
	case $hcase in
	none)
		why="/dev/kvm does not exist"
		if [ -d /sys/module/kvm_pvm ]; then
			why+=" (kvm_pvm is loaded but did not bind: this host is itself a PVM guest)"
		elif [ ! -d /sys/module/kvm ]; then
			why+=" (the kvm module is not loaded)"
		fi
		echo "host case (i): $why; SKIP"
		exit 77 ;;
	pvm) echo "host case (ii): /dev/kvm is a PVM-backend KVM (kvm_pvm loaded, no vmx/svm): unmodified guests stop in KVM's instruction emulator; checking the boot up to that stop" ;;
	full) echo "host case (iii): ordinary KVM: the guest must reach init" ;;
	*) fail "LAGVISOR_HOST_CASE='$hcase' is not none, pvm or full" ;;
	esac
	if [ -z "${LAGVISOR_HOST_CASE:-}" ] && { [ ! -r /dev/kvm ] || [ ! -w /dev/kvm ]; }; then
		fail "/dev/kvm exists but this user cannot open it read-write"
	fi
	[ -x "$lagvisor" ] || fail "lagvisor binary '$lagvisor' is missing or not executable (build it first)"
else
	hcase=full
	command -v qemu-system-x86_64 >/dev/null ||
		{ echo "qemu-system-x86_64 is not installed (Debian package qemu-system-x86); SKIP"; exit 77; }
fi

# --- the image --------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/lagvisor-boot.XXXXXX")
vm_pid=""
cleanup() {
	exec 3>&- 2>/dev/null
	if [ -n "$vm_pid" ] && kill -0 "$vm_pid" 2>/dev/null; then
		kill -TERM "$vm_pid" 2>/dev/null
		sleep 1
		kill -KILL "$vm_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if ! "$mkguest" >"$work/mkguest.log" 2>&1; then
	cat "$work/mkguest.log"
	fail "scripts/mkguest could not build the guest image (see above)"
fi
env_file=$(sed -n 's/^mkguest: env *//p' "$work/mkguest.log")
[ -f "$env_file" ] || { cat "$work/mkguest.log"; fail "mkguest did not report its image.env"; }
# shellcheck disable=SC1090
. "$env_file"
if [ "$form" = vmlinux ]; then kernel=$VMLINUX; else kernel=$VMLINUZ; fi
echo "image: kernel $KERNEL_VERSION ($form: $kernel), initrd $INITRD"
grep -E '^mkguest: (kernel .*: (cached|fetching)|initramfs:|done in)' "$work/mkguest.log"

# --- boot -------------------------------------------------------------------
log="$work/console.log"
if [ "$vmm" = lagvisor ]; then
	cmd=("$lagvisor" run --kernel "$kernel" --initrd "$INITRD" --cmdline "$cmdline"
	     --cpus 2 --memory 512M --serial stdio "${extra[@]}")
else
	cmd=(qemu-system-x86_64 -accel tcg -kernel "$kernel" -initrd "$INITRD"
	     -append "$cmdline" -smp 2 -m 512 -nographic -no-reboot)
fi
echo "running:$(printf " %q" "${cmd[@]}")"
# stdin is a pipe that stays open (not /dev/null), so a console that stops
# at end of input does not end the run early.
mkfifo "$work/stdin"
"${cmd[@]}" <"$work/stdin" >"$log" 2>&1 &
vm_pid=$!
vm_st=""
exec 3>"$work/stdin"
t0=$(date +%s.%N)

elapsed() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
line_of() { grep -n -m1 -F -- "$1" "$log" | cut -d: -f1; }
show_console() {
	echo "--- console (last 40 lines) ---"
	tail -n 40 "$log" | tr -d '\r'
	echo "---"
}

# wait_for PATTERN...: until every pattern is in the log, the VM exits or
# the timeout passes. Returns 0 when all are there.
wait_for() {
	local p missing alive
	while :; do
		# Liveness before the scan: a VM that prints and exits in between
		# is then seen with all of its output.
		alive=1; kill -0 "$vm_pid" 2>/dev/null || alive=0
		missing=0
		for p in "$@"; do grep -qF -- "$p" "$log" || { missing=1; break; }; done
		[ $missing -eq 1 ] || return 0
		[ $alive -eq 1 ] || return 1
		[ "$(awk -v a="$t0" -v b="$(date +%s.%N)" -v t="$timeout_s" 'BEGIN { print (b - a > t) }')" = 0 ] || return 2
		sleep 0.2
	done
}

# vm_wait SECS: wait up to SECS for the VM to exit; sets st to its exit
# status or "running". Not in a $(...) subshell: only this shell can wait.
vm_wait() {
	local i
	st=running
	[ -n "$vm_pid" ] || { st=$vm_st; return; }
	for ((i = 0; i < $1 * 5; i++)); do
		if ! kill -0 "$vm_pid" 2>/dev/null; then
			wait "$vm_pid"; st=$?; vm_st=$st; vm_pid=""; return
		fi
		sleep 0.2
	done
}

# in_order A B ...: each pattern's first line comes after the previous one's.
in_order() {
	local prev=0 p n
	for p in "$@"; do
		n=$(line_of "$p")
		[ -n "$n" ] && [ "$n" -ge "$prev" ] || { echo "'$p' is missing or out of order"; return 1; }
		prev=$n
	done
}

# why_stopped R: the reason wait_for returned R, as the start of a sentence.
why_stopped() {
	case $1 in
	1) vm_wait 1; why="the VM exited (status $st) before" ;;
	*) why="no sign after ${timeout_s}s of" ;;
	esac
}

if [ "$hcase" = pvm ] && [ "$form" = vmlinux ]; then
	wait_for "Linux version" "Command line:" "cannot emulate"; r=$?
	[ $r -eq 0 ] || { show_console; why_stopped $r; fail "$why the banner, early boot lines and lagvisor's emulation stop"; }
	vm_wait 30
	msg=$(in_order "Linux version" "Command line:" "cannot emulate") ||
		{ show_console; fail "$msg"; }
	for p in "Linux version" "Command line:" "cannot emulate"; do
		grep -F -m1 "$p" "$log" | tr -d '\r'
	done
	[ "$st" != running ] || fail "lagvisor printed 'cannot emulate' but is still running 30 s later"
	[ "$st" -ne 0 ] || fail "lagvisor stopped on an emulation failure but exited 0"
	echo "PASS: banner and early boot on the console after $(elapsed)s, then the emulation stop (lagvisor exit status $st)"
	exit 0
fi

if [ "$hcase" = pvm ]; then
	wait_for "$kaslr_line"; r=$?
	[ $r -eq 0 ] || { show_console; why_stopped $r; fail "$why the decompressor's first line \"$kaslr_line\""; }
	echo "decompressor: $(grep -F -m1 "$kaslr_line" "$log" | tr -d '\r') (after $(elapsed)s)"
	if grep -qF "cannot emulate" "$log"; then
		grep -F -m1 "cannot emulate" "$log" | tr -d '\r'
	fi
	echo "PASS: the bzImage decompressor runs and prints on the serial console (stopping it: decompression under emulation takes hours)"
	exit 0
fi

# Full boot (ordinary KVM, or QEMU).
wait_for "Linux version" "$init_line"; r=$?
if [ $r -ne 0 ]; then
	show_console
	grep -qF "cannot emulate" "$log" &&
		echo "note: lagvisor hit an emulation failure: is this host's KVM really able to run unmodified guests?"
	why_stopped $r
	fail "$why \"$init_line\""
fi
t_init=$(elapsed)
msg=$(in_order "Linux version" "$init_line") || { show_console; fail "$msg"; }
if [ "$form" = bzimage ]; then
	grep -qF "$kaslr_line" "$log" || { show_console; fail "the bzImage decompressor's line \"$kaslr_line\" is missing"; }
fi
grep -F -m1 "$init_line" "$log" | tr -d '\r'
vm_wait 30
if [ "$vmm" = qemu ]; then
	[ "$st" = 0 ] || { show_console; fail "QEMU did not power off cleanly after init (status $st)"; }
	echo "PASS: reached init in ${t_init}s, powered off (QEMU TCG)"
else
	# Powering off needs ACPI or a poweroff device; without one the kernel
	# halts every vCPU with interrupts off. KVM's irqchip keeps that to
	# itself (the VM idles on); lagvisor's (--irqchip user, the default
	# with --sched eevdf) sees every vCPU stuck and ends the VM with 0.
	if [[ " ${extra[*]} " == *" --sched host "* && " ${extra[*]} " != *" --irqchip user "* ]]; then
		[ "$st" != running ] || st="still running 30 s after init powered off (stopped by the test)"
	else
		[ "$st" = 0 ] || { show_console; fail "lagvisor did not end with status 0 after the guest powered off (status: $st)"; }
	fi
	echo "PASS: reached init in ${t_init}s (lagvisor exit: $st)"
fi
exit 0
