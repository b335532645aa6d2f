/*
 * Multiboot v1 kernels (the GNU Multiboot Specification 0.6.96), the format
 * kvm-unit-tests and many small test kernels use: a 12- or 32-byte header
 * somewhere in the first 8192 bytes, 4-byte aligned; the kernel is entered
 * in 32-bit protected mode with paging off, EAX = 0x2BADB002 and EBX = the
 * physical address of the multiboot information block.
 *
 * Where the kernel goes: with header flag 16 (the "a.out kludge") from the
 * header's address fields, otherwise from the ELF program headers (p_paddr)
 * with e_entry. The pure parts (find, parse, build the info block) are
 * here and unit-tested on byte buffers; load.c does the file and memory
 * work.
 */
#ifndef LAGVISOR_VMM_X86_MULTIBOOT_H
#define LAGVISOR_VMM_X86_MULTIBOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/guest_mem.h"
#include "vmm/x86/boot.h"

#define X86_MB_HEADER_MAGIC   0x1badb002u
#define X86_MB_BOOT_MAGIC     0x2badb002u   /* EAX at entry */
#define X86_MB_SEARCH_BYTES   8192

/* Header flags: bits 0-15 are requirements (a loader that cannot meet one
 * must refuse the kernel), bits 16-31 optional. */
#define X86_MB_HF_PAGE_ALIGN  (1u << 0)    /* modules page-aligned: always true here */
#define X86_MB_HF_MEMINFO     (1u << 1)    /* mem_* fields: always given */
#define X86_MB_HF_VIDEO       (1u << 2)    /* a video mode: no display, refused */
#define X86_MB_HF_AOUT_KLUDGE (1u << 16)   /* load from the address fields */

/* Info block flags (which fields are valid). */
#define X86_MB_IF_MEM         (1u << 0)
#define X86_MB_IF_CMDLINE     (1u << 2)
#define X86_MB_IF_MODS        (1u << 3)
#define X86_MB_IF_MMAP        (1u << 6)
#define X86_MB_IF_LOADER_NAME (1u << 9)

/*
 * Where the info block and what it points to live: the page boot.h gives
 * the boot parameters (X86_PARAM_GPA). The command line is at
 * X86_CMDLINE_GPA as for the other formats.
 */
#define X86_MB_INFO_SIZE      0x78          /* up to the framebuffer fields */
#define X86_MB_MODS_OFF       0x80          /* one 16-byte module entry */
#define X86_MB_MMAP_OFF       0x100         /* 24-byte entries (size field included) */
#define X86_MB_STRINGS_OFF    0x200         /* module string "", loader name */

struct x86_multiboot {
	size_t header_off;       /* file offset of the magic */
	uint32_t flags;          /* header flags */
	bool aout;               /* loaded from the address fields (flag 16) */
	/* a.out kludge only: file bytes [file_off, file_off + file_len) go to
	 * load_start; [load_start + file_len, load_end) is zeroed (bss). */
	uint64_t file_off, file_len;
	uint64_t load_start, load_end;
	uint32_t entry;
};

/* True if the magic appears at a 4-byte aligned offset in the first 8192 bytes. */
bool x86_multiboot_detect(const uint8_t *img, size_t len);

/*
 * Find the first header whose checksum holds and validate it: no
 * requirement flag this loader cannot meet, and for the a.out kludge
 * address fields that are consistent with the file and load at or above
 * 1 MiB (below are the boot structures), with the entry inside what is
 * loaded. For an ELF image without flag 16, the ELF program headers are
 * checked and give the load range and the entry. Returns 0 or -ENOEXEC
 * with the reason in why.
 */
int x86_multiboot_parse(const uint8_t *img, size_t len, struct x86_multiboot *mb,
			char *why, size_t whylen);

/*
 * Copy the kernel into guest memory as parse described (the ELF segments,
 * or the a.out kludge range with its bss zeroed). Returns 0 or -ENOSPC /
 * -ENOEXEC with the reason in why.
 */
int x86_multiboot_load(const uint8_t *img, size_t len, const struct x86_multiboot *mb,
		       const struct guest_mem *mem, char *why, size_t whylen);

struct x86_multiboot_args {
	uint64_t base_gpa;          /* where page will be placed */
	uint64_t mem_bytes;         /* guest RAM, for mem_lower / mem_upper */
	uint32_t cmdline_gpa;
	uint32_t module_gpa;        /* module 0 (the initrd); size 0: no module */
	uint32_t module_size;
	const struct x86_e820_entry *e820;
	unsigned nr_e820;
};

/*
 * The information block at page + 0, the module list at
 * + X86_MB_MODS_OFF, the memory map at + X86_MB_MMAP_OFF, strings after
 * X86_MB_STRINGS_OFF. mem_lower is the KiB of RAM below the EBDA,
 * mem_upper the KiB from 1 MiB to the end of RAM below the MMIO hole.
 * page is 4096 bytes (zeroed here first). Returns 0 or -E2BIG.
 */
int x86_multiboot_info_build(uint8_t *page, const struct x86_multiboot_args *a);

#endif
