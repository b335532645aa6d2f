/*
 * Entry of the PVH test guest: 32-bit protected mode, paging off,
 * EBX = hvm_start_info. The note is what makes the ELF a PVH kernel.
 */
	.section .text.entry, "ax"
	.code32
	.globl _start
_start:
	movl	$stack_top, %esp
	pushl	%ebx
	call	pvh_main
1:	hlt
	jmp	1b

	.section .note.Xen, "a", @note
	.balign 4
	.long	4		/* namesz: "Xen\0" */
	.long	4		/* descsz */
	.long	18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz	"Xen"
	.long	_start

	.section .note.GNU-stack, "", @progbits

	.section .bss
	.balign 16
	.space	16384
stack_top:
