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
#include "vmm/x86/pvm.h"

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
	uint64_t param_gpa;     /* zero page (RSI), PVH start info or multiboot info (EBX) */
	uint32_t entry_eax;     /* PVH32 entry: EAX (multiboot: 0x2BADB002, PVH: 0) */
	const char *format;     /* "bzImage", "ELF (PVH)", ..., for messages */
	enum irqchip_mode irqchip; /* copied from the config by x86_load_kernel:
				    * x86_vcpu_init's CPUID and LAPIC setup depend on it */
	bool no_x2apic;            /* the same: --no-x2apic */
	uint64_t vif_gpa;          /* the guest's VIF pages (x86/pvm.h), 0: it */
	uint32_t vif_pages;        /* declares none */
	bool native;               /* x86_native_setup: register them */
	const char *native_why;    /* why (not), for -v */
};

/*
 * Split cfg->mem_bytes into slots (below the hole, above 4 GiB) and fill
 * `slots` with gpa/size (hva left NULL: the caller maps them). Returns the
 * slot count (1 or 2), or 0 if mem_bytes is below VM_MIN_MEM_BYTES, not a
 * multiple of VM_MEM_ALIGN_BYTES, or needs more than max_slots.
 */
unsigned x86_mem_layout(uint64_t mem_bytes, struct guest_mem_slot *slots,
			unsigned max_slots);

/*
 * Detect the kernel format, load it, the initrd and the command line, and
 * build the boot structures (zero page + e820, or PVH start info + memory
 * map; MP table with nr_cpus CPUs and the IOAPIC). On failure returns
 * -errno and writes a one-line reason naming the file into err.
 * Formats, tried in this order: a bzImage (boot protocol >= 2.12 with the
 * 64-bit entry), loaded at 1 MiB; an ELF32/ELF64 with a
 * XEN_ELFNOTE_PHYS32_ENTRY note (Linux vmlinux, the freestanding test
 * guests), segments at p_paddr >= 1 MiB; a Multiboot v1 kernel (ELF or
 * a.out kludge, at >= 1 MiB; the initrd is module 0), entered like PVH
 * with EAX = 0x2BADB002 and EBX = the multiboot info (vmm/x86/multiboot.h).
 * Guest physical map of the boot data: vmm/x86/boot.h. The MP table wires
 * ISA IRQ 0 (PIT) to IOAPIC pin 2 and IRQ n to pin n otherwise; the
 * IOAPIC's APIC ID is nr_cpus, so nr_cpus must be <= 254.
 */
int x86_load_kernel(const struct guest_mem *mem, const struct vm_config *cfg,
		    struct x86_boot_info *out, char *err, size_t errlen);

/*
 * After x86_load_kernel, before any vCPU exists: decide whether the vCPUs
 * run natively on a PVM backend (x86/pvm.h): the guest declares VIF pages
 * for at least nr_cpus vCPUs, --native is not off, and the KVM behind
 * kvm_fd takes them. If so, append "pvm.vif=0xGPA" to the loaded command
 * line and set boot->native; x86_vcpu_init then registers page n for vCPU
 * n. boot->native_why says why or why not. 0, or -errno with err set.
 */
int x86_native_setup(int kvm_fd, const struct guest_mem *mem,
		     const struct vm_config *cfg, struct x86_boot_info *boot,
		     char *err, size_t errlen);

/* vCPU index's VIF page (boot->native). */
static inline uint64_t x86_native_vif_gpa(const struct x86_boot_info *boot, unsigned index)
{
	return boot->vif_gpa + (uint64_t)index * X86_PVM_PAGE_BYTES;
}

/*
 * Before any vCPU exists: TSS and identity-map addresses (both modes), and
 * for IRQCHIP_KERNEL the in-kernel irqchip, GSI routing matching the MP
 * table (GSI 0 -> IOAPIC pin 2) and the PIT. Returns 0 or -errno (logged).
 */
int x86_vm_init(int vm_fd, const struct vm_config *cfg);

/*
 * Per-vCPU setup: CPUID (KVM_GET_SUPPORTED_CPUID filtered, APIC ID, the
 * "KVMKVMKVM" signature), and for the boot vCPU (index 0) the registers
 * for `boot`'s entry mode. APs are left in reset state for INIT/SIPI.
 * The APIC ID is `index`, so the KVM vcpu id must be `index` too. Every
 * vCPU also gets IA32_MISC_ENABLE and MTRRdefType (WB); with
 * IRQCHIP_KERNEL the boot vCPU's LINT0 = ExtINT, LINT1 = NMI.
 * Call before the vCPU's first KVM_RUN. Returns 0 or -errno (logged).
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
