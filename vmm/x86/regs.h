/*
 * Boot register state, as pure functions over KVM's structs (no ioctls),
 * so the exact values are unit-tested; vcpu_init.c applies them.
 */
#ifndef LAGVISOR_VMM_X86_REGS_H
#define LAGVISOR_VMM_X86_REGS_H

#include <stdint.h>
#include <linux/kvm.h>

#include "vmm/x86/arch.h"

#define X86_ACCESS_CODE   0x9b   /* present, DPL 0, code, execute/read, accessed */
#define X86_ACCESS_DATA   0x93   /* present, DPL 0, data, read/write, accessed */
#define X86_ACCESS_TSS    0x8b   /* present, system, busy 32/64-bit TSS */
#define X86_FLAGS_CODE64  0xa    /* G (4 KiB granularity) | L (64-bit) */
#define X86_FLAGS_32      0xc    /* G | D/B (32-bit) */

#define X86_PTE_P         0x1ULL
#define X86_PTE_RW        0x2ULL
#define X86_PTE_PS        0x80ULL   /* 2 MiB page in a PD entry */

#define X86_CR0_PE        0x1ULL
#define X86_CR0_ET        0x10ULL
#define X86_CR0_PG        0x80000000ULL
#define X86_CR4_PAE       0x20ULL
#define X86_EFER_LME      0x100ULL
#define X86_EFER_LMA      0x400ULL
#define X86_RFLAGS_FIXED  0x2ULL    /* bit 1 is always set; IF clear */

uint64_t x86_gdt_entry(uint8_t access, uint8_t flags, uint32_t base, uint32_t limit);

/* The hidden segment state KVM wants for a descriptor loaded with selector. */
struct kvm_segment x86_segment_from_desc(uint64_t desc, uint16_t selector);

/*
 * Segment, control and descriptor-table registers for the entry mode:
 * LINUX64: long mode, CS 0x10 64-bit, DS/ES/FS/GS/SS 0x18, paging on with
 * the identity map at X86_PML4_GPA; PVH32: protected mode, paging off,
 * flat 32-bit CS 0x10 and data 0x18, CR0 = PE (ET is read-only 1), CR4 = 0.
 * Both: GDT at X86_GDT_GPA, TR = busy TSS 0x20, IDT limit 0. Fields not
 * named here (APIC base, LDT, interrupt bitmap) keep what s held, which
 * should come from KVM_GET_SREGS.
 */
void x86_boot_sregs(struct kvm_sregs *s, enum x86_entry_mode mode);

/* RIP = entry, RFLAGS = 2, RSI (LINUX64) or RBX (PVH32) = param, stack;
 * PVH32 also EAX = entry_eax (the multiboot magic for multiboot kernels). */
void x86_boot_regs(struct kvm_regs *r, const struct x86_boot_info *boot);

/*
 * An application processor after INIT and a startup IPI with `vector`:
 * real mode at vector * 4 KiB (CS = vector << 8, IP = 0). For the
 * userspace irqchip, which delivers INIT/SIPI itself.
 */
void x86_sipi_regs(struct kvm_sregs *s, struct kvm_regs *r, uint8_t vector);

#endif
