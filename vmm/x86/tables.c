/*
 * The descriptor table and page tables the boot vCPU starts with. KVM
 * takes the segment registers' hidden parts from KVM_SET_SREGS, but the
 * guest reloads selectors from the GDT in memory (Linux does so before
 * installing its own GDT), so both must agree: regs.c builds the sregs
 * from the same descriptor values.
 */
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "vmm/x86/regs.h"

/*
 * Segment descriptor: limit[15:0] | base[23:0] << 16 | access << 40 |
 * limit[19:16] << 48 | flags << 52 | base[31:24] << 56.
 */
uint64_t x86_gdt_entry(uint8_t access, uint8_t flags, uint32_t base, uint32_t limit)
{
	return (limit & 0xffffULL) | ((uint64_t)(base & 0xffffff) << 16) |
	       ((uint64_t)access << 40) | ((uint64_t)((limit >> 16) & 0xf) << 48) |
	       ((uint64_t)(flags & 0xf) << 52) | ((uint64_t)(base >> 24) << 56);
}

void x86_gdt_build(uint64_t gdt[X86_GDT_ENTRIES], bool long_mode)
{
	memset(gdt, 0, X86_GDT_ENTRIES * sizeof(gdt[0]));
	gdt[X86_SEL_CS / 8] = x86_gdt_entry(X86_ACCESS_CODE,
					    long_mode ? X86_FLAGS_CODE64 : X86_FLAGS_32,
					    0, 0xfffff);
	gdt[X86_SEL_DS / 8] = x86_gdt_entry(X86_ACCESS_DATA, X86_FLAGS_32, 0, 0xfffff);
	/* A busy TSS, base 0 limit 0x67 (what PVH requires of TR); in long
	 * mode the next slot is its upper half, base[63:32] = 0. */
	gdt[X86_SEL_TSS / 8] = x86_gdt_entry(X86_ACCESS_TSS, 0, 0, 0x67);
}

void x86_page_tables_build(uint8_t *buf, uint64_t base_gpa)
{
	uint8_t *pml4 = buf, *pdpt = buf + 4096, *pd = buf + 2 * 4096;

	memset(buf, 0, X86_PAGE_TABLE_BYTES);
	put_le64(pml4, (base_gpa + 4096) | X86_PTE_P | X86_PTE_RW);
	for (unsigned i = 0; i < 4; i++)
		put_le64(pdpt + 8 * i, (base_gpa + (2 + i) * 4096ULL) | X86_PTE_P | X86_PTE_RW);
	/* 4 x 512 PD entries, each a 2 MiB page: PD i entry j maps (i*512+j) << 21. */
	for (unsigned j = 0; j < 4 * 512; j++)
		put_le64(pd + 8 * j, ((uint64_t)j << 21) | X86_PTE_P | X86_PTE_RW | X86_PTE_PS);
}
