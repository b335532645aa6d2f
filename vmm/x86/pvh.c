/*
 * hvm_start_info for the PVH boot ABI (xen/include/public/arch-x86/hvm/
 * start_info.h), version 1 so that it carries the memory map: a PVH guest
 * has no BIOS to ask. Layout (all little-endian):
 *   start info:  0 magic, 4 version, 8 flags, 12 nr_modules, 16 modlist_paddr,
 *                24 cmdline_paddr, 32 rsdp_paddr, 40 memmap_paddr,
 *                48 memmap_entries, 52 reserved                  (56 bytes)
 *   modlist entry: 0 paddr, 8 size, 16 cmdline_paddr, 24 reserved (32 bytes)
 *   memmap entry:  0 addr, 8 size, 16 type (e820 values), 20 reserved (24)
 * There is no ACPI, so rsdp_paddr is 0 and the guest uses the MP table.
 */
#include <errno.h>
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"

#define PVH_MEMMAP_ENTRY_BYTES 24

int x86_pvh_start_info_build(uint8_t *page, const struct x86_pvh_args *a)
{
	uint8_t *si = page;
	uint8_t *mod = page + X86_PVH_MODLIST_OFF;
	uint8_t *map = page + X86_PVH_MEMMAP_OFF;

	if (X86_PVH_MEMMAP_OFF + (size_t)a->nr_e820 * PVH_MEMMAP_ENTRY_BYTES > 4096)
		return -E2BIG;
	memset(page, 0, 4096);
	put_le32(si + 0, X86_PVH_MAGIC);
	put_le32(si + 4, 1);
	put_le64(si + 24, a->cmdline_gpa);
	if (a->initrd_size) {
		put_le32(si + 12, 1);
		put_le64(si + 16, a->base_gpa + X86_PVH_MODLIST_OFF);
		put_le64(mod + 0, a->initrd_gpa);
		put_le64(mod + 8, a->initrd_size);
	}
	put_le64(si + 40, a->base_gpa + X86_PVH_MEMMAP_OFF);
	put_le32(si + 48, a->nr_e820);
	for (unsigned i = 0; i < a->nr_e820; i++) {
		uint8_t *e = map + i * PVH_MEMMAP_ENTRY_BYTES;

		put_le64(e, a->e820[i].addr);
		put_le64(e + 8, a->e820[i].size);
		put_le32(e + 16, a->e820[i].type);
	}
	return 0;
}
