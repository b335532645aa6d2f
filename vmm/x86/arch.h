/*
 * The x86 side of the machine, behind a few hooks so that the generic vmm/
 * code has no x86 knowledge: memory layout, kernel loading and boot
 * structures, per-vCPU CPUID and registers, in-kernel irqchip setup.
 */
#ifndef LAGVISOR_VMM_X86_ARCH_H
#define LAGVISOR_VMM_X86_ARCH_H

#include <stddef.h>
#include <stdint.h>

#include "vmm/config.h"
#include "vmm/guest_mem.h"

/* Guest physical layout. RAM is split around [X86_MMIO_HOLE_START, 4 GiB). */
#define X86_MMIO_HOLE_START 0xc0000000ULL   /* 3 GiB */
#define X86_IOAPIC_GPA      0xfec00000ULL
#define X86_LAPIC_GPA       0xfee00000ULL

/* How the boot vCPU enters the kernel. */
enum x86_entry_mode {
	X86_ENTRY_LINUX64,   /* 64-bit boot protocol: long mode, RSI = zero page */
	X86_ENTRY_PVH32,     /* PVH: 32-bit protected, paging off, EBX = start info */
};

struct x86_boot_info {
	enum x86_entry_mode mode;
	uint64_t entry_gpa;     /* where the boot vCPU starts */
	uint64_t param_gpa;     /* zero page (RSI) or PVH start info (EBX) */
	const char *format;     /* "bzImage" or "ELF (PVH)", for messages */
	enum irqchip_mode irqchip; /* copied from the config by x86_load_kernel:
				    * x86_vcpu_init's CPUID and LAPIC setup depend on it */
};

/*
 * Split cfg->mem_bytes into slots (below the hole, above 4 GiB) and fill
 * `slots` with gpa/size (hva left NULL: the caller maps them). Returns the
 * slot count.
 */
unsigned x86_mem_layout(uint64_t mem_bytes, struct guest_mem_slot *slots,
			unsigned max_slots);

/*
 * Detect the kernel format, load it, the initrd and the command line, and
 * build the boot structures (zero page + e820, or PVH start info + memory
 * map; MP table with nr_cpus CPUs and the IOAPIC). On failure returns
 * -errno and writes a one-line reason naming the file into err.
 */
int x86_load_kernel(const struct guest_mem *mem, const struct vm_config *cfg,
		    struct x86_boot_info *out, char *err, size_t errlen);

/* In-kernel irqchip, PIT, TSS/identity-map addresses (IRQCHIP_KERNEL). */
int x86_vm_init(int vm_fd, const struct vm_config *cfg);

/*
 * Per-vCPU setup: CPUID (KVM_GET_SUPPORTED_CPUID filtered, APIC ID, the
 * "KVMKVMKVM" signature), and for the boot vCPU (index 0) the registers
 * for `boot`'s entry mode. APs are left in reset state for INIT/SIPI.
 */
int x86_vcpu_init(int kvm_fd, int vcpu_fd, unsigned index, unsigned nr_cpus,
		  const struct x86_boot_info *boot);

/*
 * Userspace irqchip only: start an application processor as a startup IPI
 * with `vector` would (real mode, CS:IP = vector << 8 : 0). KVM does this
 * itself when it owns the local APICs.
 */
int x86_vcpu_sipi(int vcpu_fd, uint8_t vector);

#endif
