#!/usr/bin/env bash
# The Linux wakebench inside the guest image: build the image with it
# (scripts/mkguest --add), boot it with 2 vCPUs, and check that /init ran it
# and its table is complete (check-wakebench.py --log).
#
#   image-test.sh qemu     -        MKGUEST WAKEBENCH CHECKER   (suite 'guest-qemu')
#   image-test.sh lagvisor LAGVISOR MKGUEST WAKEBENCH CHECKER   (suite 'guest')
#
# Under lagvisor this needs a KVM that runs unmodified guests: without
# /dev/kvm, or on a PVM-backend KVM (whose instruction emulator stops a
# Debian kernel at its FPU init, see ARCHITECTURE.md §6), it SKIPs (77) saying
# which; guest-tests/linux/boot-test.sh checks the early boot there.
# Environment: LAGVISOR_GUEST_DIR (image cache, for mkguest),
# LAGVISOR_BOOT_TIMEOUT (seconds, default 300).
set -uo pipefail

vmm=${1:-}; lagvisor=${2:-}; mkguest=${3:-}; prog=${4:-}; checker=${5:-}
case $vmm in qemu|lagvisor) ;; *)
	echo "usage: image-test.sh qemu|lagvisor LAGVISOR|- MKGUEST WAKEBENCH CHECKER" >&2
	exit 2 ;;
esac
[ -x "$prog" ] || { echo "FAIL: wakebench '$prog' not built"; exit 1; }
timeout_s=${LAGVISOR_BOOT_TIMEOUT:-300}
wb_args="-m,1,-t,2,-r,2,-w,1,-s,1000,-c,50"
cmdline="console=ttyS0 panic=-1 wakebench.args=$wb_args"

if [ "$vmm" = lagvisor ]; then
	[ -e /dev/kvm ] || { echo "no /dev/kvm on this host; SKIP"; exit 77; }
	if [ -d /sys/module/kvm_pvm ] && ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo "/dev/kvm is a PVM-backend KVM: a Linux guest stops at its FPU init there, before init; SKIP"
		exit 77
	fi
	[ -x "$lagvisor" ] || { echo "FAIL: lagvisor '$lagvisor' not built"; exit 1; }
else
	command -v qemu-system-x86_64 >/dev/null ||
		{ echo "qemu-system-x86_64 is not installed; SKIP"; exit 77; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lagvisor-wbimg.XXXXXX")
trap 'rm -rf "$work"' EXIT
if ! "$mkguest" --add "$prog" >"$work/mkguest.log" 2>&1; then
	cat "$work/mkguest.log"
	echo "FAIL: scripts/mkguest --add $prog failed (see above)"
	exit 1
fi
env_file=$(sed -n 's/^mkguest: env *//p' "$work/mkguest.log")
[ -f "$env_file" ] || { cat "$work/mkguest.log"; echo "FAIL: mkguest reported no env file"; exit 1; }
# shellcheck disable=SC1090
. "$env_file"
echo "image: $VMLINUX + $INITRD"

if [ "$vmm" = lagvisor ]; then
	cmd=("$lagvisor" run --kernel "$VMLINUX" --initrd "$INITRD" --cmdline "$cmdline"
	     --cpus 2 --memory 512M --serial stdio)
else
	cmd=(qemu-system-x86_64 -accel tcg -kernel "$VMLINUX" -initrd "$INITRD"
	     -append "$cmdline" -smp 2 -m 512 -display none -serial stdio
	     -monitor none -no-reboot)
fi
echo "running:$(printf " %q" "${cmd[@]}")"
timeout -k 5 "$timeout_s" "${cmd[@]}" </dev/null >"$work/console.log" 2>&1
st=$?
# The guest's own lines, and lagvisor's errors and warnings (a triple
# fault, an emulation failure) wherever the run ended.
tr -d '\r' <"$work/console.log" |
	grep -E '^lagvisor-guest:|^wakebench:|^Wakeup|^	|^average rps|^lagvisor: (error|warning)'
[ $st -ne 124 ] || { echo "FAIL: no power-off within $timeout_s s"; exit 1; }
grep -q "lagvisor-guest: run wakebench" "$work/console.log" ||
	{ tail -n 30 "$work/console.log"; echo "FAIL: /init did not run wakebench"; exit 1; }
grep -q "lagvisor-guest: wakebench exit 0" "$work/console.log" ||
	{ echo "FAIL: wakebench did not exit 0 in the guest"; exit 1; }
"$checker" --log "$work/console.log"
