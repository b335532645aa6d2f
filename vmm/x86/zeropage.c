/*
 * The zero page (struct boot_params) for the 64-bit boot protocol: the
 * image's setup header copied in, then the fields a boot loader owns.
 */
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "vmm/x86/bzimage.h"

void x86_zero_page_build(uint8_t *zp, const uint8_t *img, const struct x86_bzimage *bz,
			 const struct x86_zero_page_args *a)
{
	unsigned n = a->nr_e820 < ZP_E820_MAX ? a->nr_e820 : ZP_E820_MAX;

	memset(zp, 0, X86_ZERO_PAGE_SIZE);
	/* boot.rst: copy from 0x1f1 to the end of the header (0x202 + jump
	 * displacement); the sentinel at 0x1ef stays 0. */
	memcpy(zp + BZ_HDR_START, img + BZ_HDR_START, bz->hdr_end - BZ_HDR_START);

	zp[BZ_TYPE_OF_LOADER] = BZ_LOADER_UNDEFINED;
	put_le32(zp + BZ_CMD_LINE_PTR, a->cmdline_gpa);
	put_le32(zp + BZ_RAMDISK_IMAGE, a->initrd_gpa);
	put_le32(zp + BZ_RAMDISK_SIZE, a->initrd_size);

	zp[ZP_E820_ENTRIES] = (uint8_t)n;
	for (unsigned i = 0; i < n; i++) {
		uint8_t *e = zp + ZP_E820_TABLE + i * ZP_E820_ENTRY_BYTES;

		put_le64(e, a->e820[i].addr);
		put_le64(e + 8, a->e820[i].size);
		put_le32(e + 16, a->e820[i].type);
	}
}
