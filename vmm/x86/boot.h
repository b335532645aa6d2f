/*
 * Internal to vmm/x86: where the boot structures live in guest physical
 * memory, and the pure builders/parsers behind x86_load_kernel. None of
 * this touches KVM or files, so each piece is unit-tested on byte buffers.
 *
 * Low memory map (all below 1 MiB, which e820 reports as RAM up to the
 * EBDA and reserved from there):
 *   0x00400  BIOS data area: word at 0x40e = EBDA segment
 *   0x00500  GDT (X86_GDT_ENTRIES descriptors)
 *   0x07000  zero page (bzImage) or PVH start info + modlist + memmap
 *   0x08ff0  initial stack pointer (grows down into 0x8000..)
 *   0x09000  PML4, 0xa000 PDPT, 0xb000..0xefff four PDs (64-bit entry)
 *   0x20000  kernel command line (X86_CMDLINE_MAX bytes)
 *   0x9fc00  EBDA: MP floating pointer
 *   0xf0000  MP configuration table (BIOS area, reserved in e820)
 *   0x100000 kernel (bzImage protected-mode part; PVH segments >= here)
 */
#ifndef LAGVISOR_VMM_X86_BOOT_H
#define LAGVISOR_VMM_X86_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/config.h"
#include "vmm/guest_mem.h"

#define X86_BDA_EBDA_SEG_GPA  0x40eULL
#define X86_GDT_GPA           0x500ULL
#define X86_PARAM_GPA         0x7000ULL     /* zero page / PVH start info */
#define X86_BOOT_STACK_GPA    0x8ff0ULL
#define X86_PML4_GPA          0x9000ULL
#define X86_PAGE_TABLE_BYTES  (6 * 4096)    /* PML4 + PDPT + 4 PDs */
#define X86_CMDLINE_GPA       0x20000ULL
#define X86_CMDLINE_MAX       0x10000ULL    /* bytes, NUL included */
#define X86_EBDA_GPA          0x9fc00ULL
#define X86_MPTABLE_GPA       0xf0000ULL
#define X86_MPTABLE_MAX       0x10000ULL    /* up to the end of the BIOS area */
#define X86_HIGH_MEM_GPA      0x100000ULL   /* 1 MiB: kernel load address */
#define X86_4G                0x100000000ULL

/* PVH: the start info, one module entry and the memory map share a page. */
#define X86_PVH_MODLIST_OFF   0x40
#define X86_PVH_MEMMAP_OFF    0x80

/* GDT selectors: Linux's boot protocol names 0x10 (__BOOT_CS), 0x18 (__BOOT_DS). */
#define X86_GDT_ENTRIES       6             /* null, null, CS, DS, TSS (16 bytes) */
#define X86_SEL_CS            0x10
#define X86_SEL_DS            0x18
#define X86_SEL_TSS           0x20

/* ---- memory map (e820.c) ---- */
#define X86_E820_RAM          1
#define X86_E820_RESERVED     2
#define X86_E820_MAX          4

struct x86_e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
};

/* End of the RAM below the MMIO hole for a guest of mem_bytes. */
uint64_t x86_low_ram_end(uint64_t mem_bytes);

/*
 * The guest's memory map: [0, EBDA) RAM, [EBDA, 1 MiB) reserved, [1 MiB,
 * low end) RAM, [4 GiB, ...) RAM for what did not fit below the hole.
 * Returns the entry count, or 0 if mem_bytes is below VM_MIN_MEM_BYTES or
 * `max` is too small.
 */
unsigned x86_e820_build(uint64_t mem_bytes, struct x86_e820_entry *e, unsigned max);

/* ---- MP table (mptable.c) ---- */
/* Bytes of the configuration table for nr_cpus (header + all entries). */
size_t x86_mptable_size(unsigned nr_cpus);

/*
 * Intel MP spec 1.4 floating pointer (16 bytes) pointing at config_gpa and
 * configuration table (x86_mptable_size bytes) for nr_cpus CPUs with APIC
 * IDs 0..nr_cpus-1 (0 is the BSP) and an IOAPIC with ID nr_cpus.
 * Returns 0, or -EINVAL (nr_cpus 0 or no APIC ID left for the IOAPIC),
 * -ENOSPC (cfg_len too small).
 */
int x86_mptable_build(unsigned nr_cpus, uint32_t config_gpa, uint8_t fp[16],
		      uint8_t *cfg, size_t cfg_len);

/* Build both parts and write them (and the BDA's EBDA pointer) into the guest. */
int x86_mptable_write(const struct guest_mem *mem, unsigned nr_cpus,
		      char *why, size_t whylen);

/* ---- bzImage (bzimage.c) and zero page (zeropage.c) ---- */
#define X86_ZERO_PAGE_SIZE    4096

struct x86_bzimage {
	uint16_t version;          /* boot protocol, 0x020c = 2.12 */
	uint8_t loadflags;
	uint16_t xloadflags;
	bool relocatable;
	uint32_t kernel_alignment;
	uint32_t initrd_addr_max;  /* highest byte address the initrd may use */
	uint32_t cmdline_size;     /* longest command line, NUL excluded */
	uint32_t init_size;        /* bytes the kernel needs from its run address */
	uint64_t pref_address;     /* where the kernel wants to run */
	size_t setup_bytes;        /* file offset of the protected-mode kernel */
	size_t kernel_bytes;       /* length of the protected-mode kernel */
	size_t hdr_end;            /* file offset just past the setup header */
};

/* "HdrS" at 0x202: the Linux boot protocol's signature. */
bool x86_bzimage_detect(const uint8_t *img, size_t len);

/*
 * Validate the setup header for a 64-bit boot (protocol >= 2.12,
 * LOADED_HIGH, XLF_KERNEL_64) and fill bz. Returns 0 or -ENOEXEC/-EINVAL
 * with the reason in why.
 */
int x86_bzimage_parse(const uint8_t *img, size_t len, struct x86_bzimage *bz,
		      char *why, size_t whylen);

/*
 * First byte above everything the kernel may touch while it decompresses
 * and starts when loaded at X86_HIGH_MEM_GPA: the loaded image and
 * [run address, run address + init_size), where the run address is
 * pref_address, or for a relocatable kernel the load address aligned up to
 * kernel_alignment if that is higher (what the decompressor computes).
 */
uint64_t x86_bzimage_end(const struct x86_bzimage *bz);

struct x86_zero_page_args {
	uint32_t cmdline_gpa;
	uint32_t initrd_gpa;       /* 0: no initrd */
	uint32_t initrd_size;
	const struct x86_e820_entry *e820;
	unsigned nr_e820;
};

/* Fill zp (X86_ZERO_PAGE_SIZE bytes) for a parsed image. */
void x86_zero_page_build(uint8_t *zp, const uint8_t *img, const struct x86_bzimage *bz,
			 const struct x86_zero_page_args *a);

/* ---- ELF with a PVH note (elf_pvh.c) and start info (pvh.c) ---- */
struct x86_elf_pvh {
	bool is64;
	uint32_t entry;            /* XEN_ELFNOTE_PHYS32_ENTRY */
	unsigned nr_load;          /* PT_LOAD segments with p_memsz > 0 */
	uint64_t load_start;       /* lowest p_paddr of them */
	uint64_t load_end;         /* highest p_paddr + p_memsz */
	uint64_t vif_gpa;          /* lagvisor VIF note (pvm.h); 0: none */
	uint32_t vif_pages;
};

bool x86_elf_detect(const uint8_t *img, size_t len);

/*
 * Validate the ELF header, every program header and the note that gives
 * the PVH entry (PT_NOTE segments first, then SHT_NOTE sections). Returns
 * 0 or -ENOEXEC with the reason in why.
 */
int x86_elf_pvh_parse(const uint8_t *img, size_t len, struct x86_elf_pvh *info,
		      char *why, size_t whylen);

/*
 * The same checks without the note: entry = e_entry (below 4 GiB), for
 * kernels that say how to enter them some other way (multiboot).
 */
int x86_elf_exec_parse(const uint8_t *img, size_t len, struct x86_elf_pvh *info,
		       char *why, size_t whylen);

/*
 * Copy every PT_LOAD segment to its p_paddr (zero-filling to p_memsz).
 * Refuses segments below X86_HIGH_MEM_GPA (boot structures) or outside
 * guest RAM. Call after x86_elf_pvh_parse succeeded.
 */
int x86_elf_pvh_load(const uint8_t *img, size_t len, const struct guest_mem *mem,
		     char *why, size_t whylen);

#define X86_PVH_MAGIC         0x336ec578u

struct x86_pvh_args {
	uint64_t base_gpa;         /* where page will be placed */
	uint64_t cmdline_gpa;
	uint64_t initrd_gpa;       /* 0 with initrd_size 0: no module */
	uint64_t initrd_size;
	const struct x86_e820_entry *e820;
	unsigned nr_e820;
};

/*
 * hvm_start_info (version 1) at page+0, the initrd's hvm_modlist_entry at
 * +X86_PVH_MODLIST_OFF and the hvm_memmap_table_entry array at
 * +X86_PVH_MEMMAP_OFF. page is 4096 bytes. Returns 0 or -E2BIG.
 */
int x86_pvh_start_info_build(uint8_t *page, const struct x86_pvh_args *a);

/* ---- GDT and page tables (tables.c) ---- */
/* Flat 4 GiB descriptors: CS is 64-bit (long) or 32-bit; DS; busy TSS. */
void x86_gdt_build(uint64_t gdt[X86_GDT_ENTRIES], bool long_mode);

/*
 * Identity map of the first 4 GiB with 2 MiB pages: PML4 at base, PDPT at
 * base + 4 KiB, four page directories after it. buf is X86_PAGE_TABLE_BYTES.
 */
void x86_page_tables_build(uint8_t *buf, uint64_t base_gpa);

#endif
