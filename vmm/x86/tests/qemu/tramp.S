/*
 * A 4 KiB stand-in firmware for checking lagvisor's boot structures under
 * QEMU TCG, where there is no KVM_SET_SREGS: from the reset vector it puts
 * the CPU in the state regs.c gives the boot vCPU and jumps to the kernel.
 * It uses the GDT (0x500) and page tables (0x9000) that x86_load_kernel
 * wrote, so those are exercised too. Linked at 0xff000 (the top of the
 * 128 KiB BIOS image, which QEMU maps below 1 MiB); boot_image.c fills the
 * parameter block at 0xffe00.
 */
	.text
	.code16
	.globl start
start:
	cli
	cld
	movw	$0xf000, %ax
	movw	%ax, %ds
	inb	$0x92, %al		/* fast A20 on: the kernel lives at 1 MiB */
	orb	$2, %al
	outb	%al, $0x92
	lgdtl	(gdtr - 0xf0000)
	movl	(params_mode - 0xf0000), %eax
	testl	%eax, %eax
	jnz	pvh32

	/* X86_ENTRY_LINUX64: CR4.PAE, CR3 = PML4, EFER.LME, CR0 = PE|ET|PG */
	movl	%cr4, %eax
	orl	$0x20, %eax
	movl	%eax, %cr4
	movl	$0x9000, %eax
	movl	%eax, %cr3
	movl	$0xc0000080, %ecx
	rdmsr
	orl	$0x100, %eax
	wrmsr
	movl	%cr0, %eax
	andl	$0x9fffffff, %eax	/* caches on (CD, NW clear), as KVM's sregs */
	orl	$0x80000001, %eax
	movl	%eax, %cr0
	ljmpl	$0x10, $long64

pvh32:	/* X86_ENTRY_PVH32: CR0 = PE|ET, paging off */
	movl	%cr0, %eax
	andl	$0x9fffffff, %eax
	orl	$1, %eax
	movl	%eax, %cr0
	ljmpl	$0x10, $prot32

	.code32
prot32:
	movw	$0x18, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %fs
	movw	%ax, %gs
	movw	%ax, %ss
	movl	params_param, %ebx
	movl	$0x8ff0, %esp
	jmp	*params_entry

	.code64
long64:
	movw	$0x18, %ax
	movw	%ax, %ds
	movw	%ax, %es
	movw	%ax, %fs
	movw	%ax, %gs
	movw	%ax, %ss
	movq	params_param(%rip), %rsi
	movq	$0x8ff0, %rsp
	jmpq	*params_entry(%rip)

	.org	0xe00
params_mode:	.long 0		/* 0 LINUX64, 1 PVH32 */
	.org	0xe08
params_entry:	.quad 0
params_param:	.quad 0
	.org	0xe20
gdtr:	.word	47		/* X86_GDT_ENTRIES * 8 - 1 */
	.long	0x500

	.code16
	.org	0xff0		/* reset vector: F000:FFF0 */
	ljmp	$0xf000, $0xf000
	.org	0x1000
