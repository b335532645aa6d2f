/*
 * The memory map handed to the guest (zero page e820 table or PVH memmap).
 * The 1 KiB below 640 KiB is the EBDA (it holds the MP floating pointer)
 * and 640 KiB..1 MiB is the legacy VGA/BIOS area holding the MP
 * configuration table: both reserved, as on a PC, so the guest neither
 * allocates over the MP table nor expects RAM where there is none.
 */
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"

unsigned x86_e820_build(uint64_t mem_bytes, struct x86_e820_entry *e, unsigned max)
{
	uint64_t low = x86_low_ram_end(mem_bytes);
	unsigned n = 0;

	if (mem_bytes < VM_MIN_MEM_BYTES || max < (mem_bytes > low ? 4u : 3u))
		return 0;
	e[n++] = (struct x86_e820_entry){ 0, X86_EBDA_GPA, X86_E820_RAM };
	e[n++] = (struct x86_e820_entry){ X86_EBDA_GPA, X86_HIGH_MEM_GPA - X86_EBDA_GPA,
					  X86_E820_RESERVED };
	e[n++] = (struct x86_e820_entry){ X86_HIGH_MEM_GPA, low - X86_HIGH_MEM_GPA,
					  X86_E820_RAM };
	if (mem_bytes > low)
		e[n++] = (struct x86_e820_entry){ X86_4G, mem_bytes - low, X86_E820_RAM };
	return n;
}
