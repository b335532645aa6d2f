#!/bin/sh
# Cross-check the PVH boot format against QEMU (TCG, no KVM needed):
#  1. QEMU's own -kernel loader boots the PVH test guest (ELF32 and ELF64),
#     so the file format lagvisor accepts is one QEMU accepts too, and the
#     guest's checks hold for QEMU's start info;
#  2. the same guests boot from memory laid out by lagvisor's
#     x86_load_kernel (boot_image + tramp.bin stand in for KVM_SET_SREGS),
#     and the guest checks lagvisor's start info, memory map, initrd
#     module and MP table (2 CPUs) the same way.
# The guest exits through isa-debug-exit: status 99 means all checks passed.
# Optional: LAGVISOR_X86_LINUX=/path/to/bzImage-or-vmlinux also boots that
# kernel (slow under TCG) and expects "Run /init" or a panic for lack of
# root after the kernel parsed lagvisor's e820 and MP table.
# usage: qemu_boot.sh BOOT_IMAGE TRAMP_BIN PVH32_ELF PVH64_ELF
set -u
boot_image=$1 tramp=$2
shift 2
qemu=$(command -v qemu-system-x86_64) || { echo "SKIP: qemu-system-x86_64 not installed"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# initrd of 5000 bytes starting with the magic the guest looks for
{ printf 'LGVI'; head -c 4996 /dev/zero | tr '\0' 'x'; } > "$tmp/initrd"

qemu_run() { # name, expected cpus, qemu args...
	name=$1 cpus=$2
	shift 2
	timeout 60 "$qemu" -M pc -accel tcg -m 128 -smp 2 -nodefaults -display none \
		-no-reboot -serial "file:$tmp/$name.log" \
		-device isa-debug-exit,iobase=0xf4,iosize=0x04 "$@" </dev/null
	status=$?
	if [ "$status" -eq 99 ]; then
		echo "ok: $name"
	else
		echo "FAIL: $name (status $status)"
		sed 's/^/  | /' "$tmp/$name.log"
		fail=1
	fi
}

for elf in "$@"; do
	base=$(basename "$elf")
	# SeaBIOS lists only the boot CPU in its MP table here: expect 1.
	qemu_run "qemu-kernel-$base" 1 -kernel "$elf" -initrd "$tmp/initrd" \
		-append "pvhtest cpus=1 initrd=5000"
	mkdir -p "$tmp/$base"
	args=$("$boot_image" "$tmp/$base" "$tramp" "$elf" 128 2 \
		"pvhtest cpus=2 initrd=5000" "$tmp/initrd") || { echo "FAIL: boot_image $base"; fail=1; continue; }
	# shellcheck disable=SC2086  # args is a list of QEMU options
	qemu_run "lagvisor-layout-$base" 2 $args
done

if [ -n "${LAGVISOR_X86_LINUX:-}" ]; then
	mkdir -p "$tmp/linux"
	args=$("$boot_image" "$tmp/linux" "$tramp" "$LAGVISOR_X86_LINUX" 256 2 \
		"console=ttyS0 earlyprintk=serial,ttyS0 panic=-1") || fail=1
	# shellcheck disable=SC2086
	timeout 300 "$qemu" -M pc -accel tcg -cpu max -m 256 -smp 2 -nodefaults -display none \
		-no-reboot -serial "file:$tmp/linux.log" $args </dev/null
	if grep -q "MPTABLE: OEM ID: LAGVISOR" "$tmp/linux.log" &&
	   grep -q "Brought up 1 node, 2 CPUs" "$tmp/linux.log"; then
		echo "ok: Linux $LAGVISOR_X86_LINUX (e820, MP table, 2 CPUs)"
	else
		echo "FAIL: Linux $LAGVISOR_X86_LINUX"; tail -20 "$tmp/linux.log"; fail=1
	fi
fi
exit $fail
