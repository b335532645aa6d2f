/*
 * Multiboot v1 header parsing, kernel placement and the information block
 * (see multiboot.h). Every field read from the file is checked against the
 * file length before use.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmm/x86/bytes.h"
#include "vmm/x86/multiboot.h"

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -ENOEXEC; } while (0)

/* Requirement bits (0-15) this loader meets: modules are page-aligned and
 * memory information is always present. */
#define MB_REQUIRED_OK (X86_MB_HF_PAGE_ALIGN | X86_MB_HF_MEMINFO)

static size_t search_end(size_t len)
{
	size_t end = len < X86_MB_SEARCH_BYTES ? len : X86_MB_SEARCH_BYTES;

	return end >= 12 ? end - 12 : 0;
}

bool x86_multiboot_detect(const uint8_t *img, size_t len)
{
	if (len < 12)
		return false;
	for (size_t off = 0; off <= search_end(len); off += 4)
		if (get_le32(img + off) == X86_MB_HEADER_MAGIC)
			return true;
	return false;
}

/* The a.out kludge fields, header_addr .. entry_addr (offsets 12..28). */
static int parse_aout(const uint8_t *img, size_t len, struct x86_multiboot *mb,
		      char *why, size_t whylen)
{
	const uint8_t *h = img + mb->header_off;
	uint32_t header_addr, load_addr, load_end, bss_end;

	if (!range_ok(mb->header_off, 32, len))
		FAIL("multiboot header at offset 0x%zx is truncated (address fields)",
		     mb->header_off);
	header_addr = get_le32(h + 12);
	load_addr = get_le32(h + 16);
	load_end = get_le32(h + 20);
	bss_end = get_le32(h + 24);
	mb->entry = get_le32(h + 28);

	/* The header's file offset and header_addr pin the file to memory:
	 * file byte header_off is loaded at header_addr. */
	if (load_addr > header_addr || header_addr - load_addr > mb->header_off)
		FAIL("multiboot load_addr 0x%x / header_addr 0x%x do not match the header's file offset 0x%zx",
		     load_addr, header_addr, mb->header_off);
	mb->file_off = mb->header_off - (header_addr - load_addr);
	if (load_end == 0)
		mb->file_len = len - mb->file_off;
	else if (load_end <= load_addr || !range_ok(mb->file_off, load_end - load_addr, len))
		FAIL("multiboot load_end_addr 0x%x is before load_addr 0x%x or past the end of the file",
		     load_end, load_addr);
	else
		mb->file_len = load_end - load_addr;
	mb->load_start = load_addr;
	mb->load_end = load_addr + mb->file_len;
	if (bss_end) {
		if (bss_end < mb->load_end)
			FAIL("multiboot bss_end_addr 0x%x is below the loaded image's end 0x%llx",
			     bss_end, (unsigned long long)mb->load_end);
		mb->load_end = bss_end;
	}
	if (mb->load_end > X86_4G)
		FAIL("multiboot image [0x%x, 0x%llx) goes past 4 GiB", load_addr,
		     (unsigned long long)mb->load_end);
	return 0;
}

int x86_multiboot_parse(const uint8_t *img, size_t len, struct x86_multiboot *mb,
			char *why, size_t whylen)
{
	size_t off, first = SIZE_MAX;
	uint32_t required;
	int ret;

	memset(mb, 0, sizeof(*mb));
	for (off = 0; len >= 12 && off <= search_end(len); off += 4) {
		const uint8_t *h = img + off;

		if (get_le32(h) != X86_MB_HEADER_MAGIC)
			continue;
		if (first == SIZE_MAX)
			first = off;
		/* magic + flags + checksum == 0 (mod 2^32) */
		if ((uint32_t)(get_le32(h) + get_le32(h + 4) + get_le32(h + 8)) == 0)
			break;
	}
	if (first == SIZE_MAX)
		FAIL("no multiboot header in the first %u bytes", X86_MB_SEARCH_BYTES);
	if (len < 12 || off > search_end(len))
		FAIL("multiboot header at offset 0x%zx has a bad checksum", first);
	mb->header_off = off;
	mb->flags = get_le32(img + off + 4);

	required = mb->flags & 0xffffu;
	if (required & X86_MB_HF_VIDEO)
		FAIL("multiboot kernel asks for a video mode (header flag 2); lagvisor has no display");
	if (required & ~MB_REQUIRED_OK)
		FAIL("multiboot header requires features 0x%x this loader does not know",
		     required & ~MB_REQUIRED_OK);

	if (mb->flags & X86_MB_HF_AOUT_KLUDGE) {
		mb->aout = true;
		ret = parse_aout(img, len, mb, why, whylen);
		if (ret)
			return ret;
	} else if (x86_elf_detect(img, len)) {
		struct x86_elf_pvh elf;
		char ewhy[160];

		ret = x86_elf_exec_parse(img, len, &elf, ewhy, sizeof(ewhy));
		if (ret)
			FAIL("multiboot ELF: %s", ewhy);
		mb->load_start = elf.load_start;
		mb->load_end = elf.load_end;
		mb->entry = elf.entry;
	} else {
		FAIL("multiboot header without address fields (flag 16) in a file that is not ELF");
	}
	if (mb->load_start < X86_HIGH_MEM_GPA)
		FAIL("multiboot image starts at 0x%llx, below 1 MiB where the boot structures live",
		     (unsigned long long)mb->load_start);
	if (mb->entry < mb->load_start || mb->entry >= mb->load_end)
		FAIL("multiboot entry 0x%x is outside the loaded image [0x%llx, 0x%llx)",
		     mb->entry, (unsigned long long)mb->load_start,
		     (unsigned long long)mb->load_end);
	return 0;
}

int x86_multiboot_load(const uint8_t *img, size_t len, const struct x86_multiboot *mb,
		       const struct guest_mem *mem, char *why, size_t whylen)
{
	uint8_t *dst;

	if (!mb->aout)
		return x86_elf_pvh_load(img, len, mem, why, whylen);
	if (!range_ok(mb->file_off, mb->file_len, len))
		FAIL("multiboot image range is outside the file");
	dst = guest_mem_ptr(mem, mb->load_start, mb->load_end - mb->load_start);
	if (!dst) {
		snprintf(why, whylen, "multiboot image [0x%llx, 0x%llx) is outside guest RAM",
			 (unsigned long long)mb->load_start, (unsigned long long)mb->load_end);
		return -ENOSPC;
	}
	memcpy(dst, img + mb->file_off, mb->file_len);
	memset(dst + mb->file_len, 0, mb->load_end - mb->load_start - mb->file_len);
	return 0;
}

int x86_multiboot_info_build(uint8_t *page, const struct x86_multiboot_args *a)
{
	static const char loader[] = "lagvisor";
	uint32_t base = (uint32_t)a->base_gpa;
	uint32_t flags = X86_MB_IF_MEM | X86_MB_IF_CMDLINE | X86_MB_IF_MODS |
			 X86_MB_IF_MMAP | X86_MB_IF_LOADER_NAME;
	uint64_t low_end = x86_low_ram_end(a->mem_bytes);
	uint8_t *mods = page + X86_MB_MODS_OFF, *map = page + X86_MB_MMAP_OFF;
	uint8_t *strings = page + X86_MB_STRINGS_OFF;

	if (X86_MB_MMAP_OFF + 24 * a->nr_e820 > X86_MB_STRINGS_OFF || a->base_gpa >= X86_4G)
		return -E2BIG;
	memset(page, 0, 4096);
	put_le32(page + 0, flags);
	put_le32(page + 4, (uint32_t)(X86_EBDA_GPA / 1024));       /* mem_lower, KiB */
	put_le32(page + 8, (uint32_t)((low_end - X86_HIGH_MEM_GPA) / 1024)); /* mem_upper */
	put_le32(page + 16, a->cmdline_gpa);
	/* Module 0 is the initrd, with an empty string as its command line
	 * (strings + 0 stays 0). */
	put_le32(page + 20, a->module_size ? 1 : 0);               /* mods_count */
	put_le32(page + 24, base + X86_MB_MODS_OFF);               /* mods_addr */
	if (a->module_size) {
		put_le32(mods + 0, a->module_gpa);
		put_le32(mods + 4, a->module_gpa + a->module_size);
		put_le32(mods + 8, base + X86_MB_STRINGS_OFF);
	}
	/* mmap entries: size (20, excluding itself), base, length, type. */
	for (unsigned i = 0; i < a->nr_e820; i++, map += 24) {
		put_le32(map + 0, 20);
		put_le64(map + 4, a->e820[i].addr);
		put_le64(map + 12, a->e820[i].size);
		put_le32(map + 20, a->e820[i].type);
	}
	put_le32(page + 44, 24 * a->nr_e820);                      /* mmap_length */
	put_le32(page + 48, base + X86_MB_MMAP_OFF);               /* mmap_addr */
	memcpy(strings + 16, loader, sizeof(loader));
	put_le32(page + 64, base + X86_MB_STRINGS_OFF + 16);       /* boot_loader_name */
	return 0;
}
