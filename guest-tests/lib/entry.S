/*
 * PVH entry, the AP trampoline, long-mode setup and the interrupt stubs.
 *
 * PVH (x86/HVM direct boot ABI): the VMM starts the boot CPU in 32-bit
 * protected mode, flat segments, paging off, interrupts off, EBX = physical
 * address of struct hvm_start_info, at the address named by the
 * XEN_ELFNOTE_PHYS32_ENTRY note below.
 *
 * From there boot CPU and APs take one path: our GDT, PAE page tables that
 * identity-map the first 4 GiB with 2 MiB pages (the last GiB, where the
 * IOAPIC and LAPIC live, uncached), EFER.LME, paging on, a far jump to
 * 64-bit code, a per-CPU stack, then C (cpu_entry in setup.c).
 *
 * Every page-table level has U/S set. At CPL 0 without SMEP/SMAP that
 * changes nothing; a PVM backend runs guest supervisor code in hardware
 * ring 3, and with a supervisor-only entry anywhere its vCPU never runs
 * (see pvm.c).
 *
 * The 16- and 32-bit code lives in non-executable-flagged sections on
 * purpose: tools/build-guest.py disassembles the executable sections as
 * 64-bit code to prove no FPU/SSE/int3/vmcall crept in, and code of another
 * width would disassemble as nonsense.
 */
#include "layout.h"

#define PTE_P    0x001
#define PTE_RW   0x002
#define PTE_US   0x004
#define PTE_PWT  0x008
#define PTE_PCD  0x010
#define PTE_PS   0x080

#define MSR_EFER 0xc0000080
#define EFER_LME 0x100
#define CR0_PE   0x00000001
#define CR0_PG   0x80000000
#define CR4_PAE  0x20

/* --- ELF note: where a PVH loader enters us ----------------------------- */
	.section .note.Xen, "a", @note
	.balign 4
	.long 2f - 1f                 /* namesz */
	.long 4f - 3f                 /* descsz: 8, as Linux does on x86-64 */
	.long 18                      /* XEN_ELFNOTE_PHYS32_ENTRY */
1:	.asciz "Xen"
2:	.balign 4
3:	.quad pvh_start
4:	.balign 4

/*
 * --- ELF note: we can run natively on a PVM backend (lib/pvm.c) --------
 * lagvisor's note (name "lagvisor", type 1): one VIF page per APIC ID in
 * pvm_vif_pages, MAX_CPUS of them. A VMM that registers them tells us
 * with pvm.vif= on the command line.
 */
	.section .note.lagvisor, "a", @note
	.balign 4
	.long 2f - 1f                 /* namesz */
	.long 4f - 3f                 /* descsz: u64 GPA, u32 pages */
	.long 1
1:	.asciz "lagvisor"
2:	.balign 4
3:	.quad pvm_vif_pages
	.long MAX_CPUS
4:	.balign 4

/* --- GDT and page tables (static: no table-building loop to emulate) --- */
	.data
	.balign 16
	.globl gdt
gdt:
	.quad 0
	.quad 0x00af9a000000ffff      /* SEL_CODE64: 64-bit code, DPL 0 */
	.quad 0x00cf92000000ffff      /* SEL_DATA: flat 4 GiB data */
	.quad 0x00cf9a000000ffff      /* SEL_CODE32: flat 4 GiB code */
gdt_end:

	.balign 8
	.globl gdt_desc
gdt_desc:
	.word gdt_end - gdt - 1
	.quad gdt                     /* lgdt in 32-bit mode reads 4 bytes */

	.globl pvh_start_info_pa
pvh_start_info_pa:
	.long 0

	.balign 4096
pml4:
	.quad pdpt + PTE_P + PTE_RW + PTE_US
	.fill 511, 8, 0
pdpt:
	.quad pd + 0x0000 + PTE_P + PTE_RW + PTE_US
	.quad pd + 0x1000 + PTE_P + PTE_RW + PTE_US
	.quad pd + 0x2000 + PTE_P + PTE_RW + PTE_US
	.quad pd + 0x3000 + PTE_P + PTE_RW + PTE_US
	.fill 508, 8, 0
pd:
	/* 2048 x 2 MiB = 4 GiB; entries from 3 GiB on (MMIO hole) uncached. */
	.set i, 0
	.rept 2048
	.if i < 1536
	.quad (i << 21) + PTE_P + PTE_RW + PTE_US + PTE_PS
	.else
	.quad (i << 21) + PTE_P + PTE_RW + PTE_US + PTE_PS + PTE_PCD + PTE_PWT
	.endif
	.set i, i + 1
	.endr

/* --- Per-CPU stacks: not zeroed by us, not loaded from the file -------- */
	.section .stacks, "aw", @nobits
	.balign STACK_SIZE
	.globl stacks
stacks:
	.skip STACK_SIZE * MAX_CPUS

	.bss
	.balign 4
	.globl smp_next_index
smp_next_index:
	.long 0

/* --- 32-bit code: boot CPU entry and the common way into long mode ----- */
	.section .boot32, "a"
	.code32
	.globl pvh_start
pvh_start:
	cli
	cld
	mov %ebx, %ebp
	lgdt gdt_desc
	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	ljmp $SEL_CODE32, $1f
1:
	/* Zero .bss ourselves rather than trust every loader to. */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	shr $2, %ecx
	xor %eax, %eax
	rep stosl
	mov %ebp, pvh_start_info_pa
	xor %esi, %esi                /* ESI = 0: boot CPU */
	jmp enter_long_mode

	.globl ap_start32
ap_start32:
	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	mov $1, %esi                  /* ESI = 1: AP */

enter_long_mode:
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $EFER_LME, %eax
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_PE), %eax
	mov %eax, %cr0
	ljmp $SEL_CODE64, $long_entry

/* --- AP trampoline: copied to AP_TRAMPOLINE_PA, entered by SIPI -------- */
	.section .rodata.trampoline, "a"
	.code16
	.globl ap_trampoline_start, ap_trampoline_end
ap_trampoline_start:
	cli
	cld
	mov %cs, %ax                  /* CS = SIPI vector << 8, IP = 0 */
	mov %ax, %ds
	lgdtl (ap_trampoline_gdtr - ap_trampoline_start)
	mov %cr0, %eax
	or $CR0_PE, %eax
	mov %eax, %cr0
	ljmpl $SEL_CODE32, $ap_start32
	.balign 8
ap_trampoline_gdtr:
	.word gdt_end - gdt - 1
	.long gdt                     /* the real GDT, above 1 MiB */
ap_trampoline_end:

/* --- 64-bit code ------------------------------------------------------- */
	.text
	.code64
long_entry:
	mov $SEL_DATA, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	xor %eax, %eax                /* boot CPU: index 0 */
	test %esi, %esi
	jz 2f
	mov $1, %eax                  /* AP: next free index, 1.. */
	lock xadd %eax, smp_next_index(%rip)
	inc %eax
	cmp $MAX_CPUS, %eax
	jae park
2:
	mov %eax, %edi                /* cpu_entry(index) */
	lea 1(%rax), %rdx
	shl $STACK_SHIFT, %rdx
	lea stacks(%rip), %rsp
	add %rdx, %rsp
	xor %ebp, %ebp
	call cpu_entry
park:
	cli
	hlt
	jmp park

/*
 * Interrupt stubs: one per vector, 16 bytes apart (traps.c computes the
 * gate addresses from that stride). Each makes the frame uniform by pushing
 * a zero where the CPU pushes no error code, then the vector number.
 */
	.balign 16
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.balign 16
	/* vectors with a CPU-pushed error code: #DF #TS #NP #SS #GP #PF #AC #CP #VC #SX */
	.if !(vec == 8 || (vec >= 10 && vec <= 14) || vec == 17 || vec == 21 || vec == 29 || vec == 30)
	pushq $0
	.endif
	pushq $vec
	jmp isr_common
	.set vec, vec + 1
	.endr

/*
 * Stack on entry (CPL 0, no IST): SS RSP RFLAGS CS RIP error vector = 7
 * quadwords on a 16-byte boundary the CPU aligned; 15 GPRs more make 22,
 * so RSP is 16-byte aligned again at the call, as the ABI wants.
 */
isr_common:
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, %rdi
	cld
	call trap_dispatch
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	add $16, %rsp
	iretq

	.section .note.GNU-stack, "", @progbits
