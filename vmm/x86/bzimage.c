/*
 * Linux bzImage setup header (Documentation/arch/x86/boot.rst). lagvisor
 * uses the 64-bit boot protocol: the real-mode setup code is skipped, the
 * protected-mode kernel is loaded at 1 MiB and entered in long mode at
 * load address + 0x200. That entry exists from protocol 2.12 on, where
 * xloadflags says whether the image has it (XLF_KERNEL_64).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "vmm/x86/bzimage.h"

bool x86_bzimage_detect(const uint8_t *img, size_t len)
{
	return len >= BZ_HEADER + 4 && memcmp(img + BZ_HEADER, "HdrS", 4) == 0;
}

int x86_bzimage_parse(const uint8_t *img, size_t len, struct x86_bzimage *bz,
		      char *why, size_t whylen)
{
	unsigned setup_sects;

	memset(bz, 0, sizeof(*bz));
	if (!x86_bzimage_detect(img, len) || len < BZ_HDR_MIN_END) {
		snprintf(why, whylen, "not a bzImage or truncated setup header (%zu bytes)", len);
		return -ENOEXEC;
	}
	bz->version = get_le16(img + BZ_VERSION);
	if (bz->version < 0x020c) {
		snprintf(why, whylen,
			 "bzImage boot protocol %u.%02u is too old (the 64-bit entry needs 2.12)",
			 bz->version >> 8, bz->version & 0xff);
		return -ENOEXEC;
	}
	/* The header ends where its initial short jump lands (0x202 + disp8). */
	bz->hdr_end = BZ_HEADER + img[BZ_JUMP + 1];
	if (bz->hdr_end < BZ_HDR_MIN_END) {
		snprintf(why, whylen, "bzImage setup header ends at 0x%zx, before the 2.12 fields",
			 bz->hdr_end);
		return -ENOEXEC;
	}
	if (bz->hdr_end > BZ_HDR_MAX_END)
		bz->hdr_end = BZ_HDR_MAX_END;

	setup_sects = img[BZ_SETUP_SECTS] ? img[BZ_SETUP_SECTS] : 4;
	bz->setup_bytes = (size_t)(setup_sects + 1) * 512;
	if (bz->setup_bytes >= len) {
		snprintf(why, whylen, "bzImage truncated: %zu setup bytes but the file has %zu",
			 bz->setup_bytes, len);
		return -ENOEXEC;
	}
	bz->kernel_bytes = len - bz->setup_bytes;

	bz->loadflags = img[BZ_LOADFLAGS];
	bz->xloadflags = get_le16(img + BZ_XLOADFLAGS);
	if (!(bz->loadflags & BZ_LOADED_HIGH) || !(bz->xloadflags & BZ_XLF_KERNEL_64)) {
		snprintf(why, whylen, "bzImage has no 64-bit entry point (loadflags 0x%x, xloadflags 0x%x)",
			 bz->loadflags, bz->xloadflags);
		return -ENOEXEC;
	}
	bz->relocatable = img[BZ_RELOCATABLE] != 0;
	bz->kernel_alignment = get_le32(img + BZ_KERNEL_ALIGNMENT);
	bz->initrd_addr_max = get_le32(img + BZ_INITRD_ADDR_MAX);
	bz->cmdline_size = get_le32(img + BZ_CMDLINE_SIZE);
	bz->pref_address = get_le64(img + BZ_PREF_ADDRESS);
	bz->init_size = get_le32(img + BZ_INIT_SIZE);

	if (bz->relocatable && (bz->kernel_alignment == 0 ||
				(bz->kernel_alignment & (bz->kernel_alignment - 1)) ||
				bz->kernel_alignment > (1u << 30))) {
		snprintf(why, whylen, "bzImage kernel_alignment 0x%x is not a power of two <= 1 GiB",
			 bz->kernel_alignment);
		return -ENOEXEC;
	}
	if (bz->pref_address >= X86_4G ||
	    (!bz->relocatable && bz->pref_address < X86_HIGH_MEM_GPA)) {
		snprintf(why, whylen, "bzImage pref_address 0x%llx is unusable",
			 (unsigned long long)bz->pref_address);
		return -ENOEXEC;
	}
	if (bz->init_size == 0) {
		snprintf(why, whylen, "bzImage init_size is 0");
		return -ENOEXEC;
	}
	return 0;
}

uint64_t x86_bzimage_end(const struct x86_bzimage *bz)
{
	uint64_t load = X86_HIGH_MEM_GPA;
	uint64_t run = bz->pref_address;
	uint64_t end;

	if (bz->relocatable) {
		uint64_t aligned = (load + bz->kernel_alignment - 1) &
				   ~(uint64_t)(bz->kernel_alignment - 1);

		if (aligned > run)
			run = aligned;
	}
	end = run + bz->init_size;
	if (load + bz->kernel_bytes > end)
		end = load + bz->kernel_bytes;
	return (end + 4095) & ~4095ULL;
}
