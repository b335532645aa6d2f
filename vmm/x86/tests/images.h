/*
 * Synthetic kernels and guest memory for the vmm/x86 tests. Field offsets
 * are written from the specs (boot.rst, the ELF gABI) rather than taken
 * from the loader's headers, so a wrong offset there shows up here.
 */
#ifndef LAGVISOR_VMM_X86_TESTS_IMAGES_H
#define LAGVISOR_VMM_X86_TESTS_IMAGES_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "vmm/guest_mem.h"
#include "le_bytes.h"

/*
 * A bzImage of protocol 2.15: setup_sects 4 (5 * 512 bytes of setup),
 * then kernel_bytes of protected-mode kernel filled with 0xA5.
 * Relocatable, alignment 2 MiB, pref_address 16 MiB, init_size 8 MiB,
 * initrd_addr_max 0x7fffffff, cmdline_size 2047.
 */
static inline uint8_t *make_bzimage(size_t kernel_bytes, size_t *len)
{
	size_t n = 5 * 512 + kernel_bytes;
	uint8_t *img = calloc(1, n);

	img[0x1f1] = 4;                        /* setup_sects */
	wr(img + 0x1fe, 2, 0xaa55);            /* boot_flag */
	img[0x200] = 0xeb;                     /* jmp short */
	img[0x201] = 0x6a;                     /* header ends at 0x26c */
	memcpy(img + 0x202, "HdrS", 4);
	wr(img + 0x206, 2, 0x020f);            /* version 2.15 */
	img[0x211] = 0x01;                     /* loadflags: LOADED_HIGH */
	wr(img + 0x214, 4, 0x100000);          /* code32_start */
	wr(img + 0x22c, 4, 0x7fffffff);        /* initrd_addr_max */
	wr(img + 0x230, 4, 0x200000);          /* kernel_alignment */
	img[0x234] = 1;                        /* relocatable_kernel */
	img[0x235] = 21;                       /* min_alignment */
	wr(img + 0x236, 2, 0x3);               /* xloadflags: KERNEL_64 | CAN_BE_LOADED_ABOVE_4G */
	wr(img + 0x238, 4, 2047);              /* cmdline_size */
	wr(img + 0x258, 8, 0x1000000);         /* pref_address */
	wr(img + 0x260, 4, 0x800000);          /* init_size */
	wr(img + 0x268, 4, 0x1234);            /* kernel_info_offset */
	wr(img + 0x270, 4, 0xdeadbeef);        /* past the header: must not be copied */
	memset(img + 5 * 512, 0xa5, kernel_bytes);
	*len = n;
	return img;
}

/*
 * An ELF executable (32- or 64-bit) with a PT_NOTE holding a "GNU" note
 * and then the Xen PHYS32_ENTRY note (descriptor desc_bytes wide), and two
 * PT_LOAD segments: text at 1 MiB (0x1000 bytes of 0x90 in the file) and
 * data at 1 MiB + 0x2000 (0x10 bytes of 0x5a, memsz 0x100: the rest bss).
 * Entry 0x100010. If note_in_section, the note is only reachable through a
 * SHT_NOTE section header (the PT_NOTE is turned into PT_NULL). The file
 * ends where the notes end.
 */
#define ELF_TEXT_OFF   0x1000
#define ELF_DATA_OFF   0x2000
#define ELF_NOTE_OFF   0x2010     /* last in the file: overruns leave the buffer */
#define ELF_XEN_NOTE   (ELF_NOTE_OFF + 24)
#define ELF_SHDR_OFF   0x800
#define ELF_MAX_LEN    (ELF_NOTE_OFF + 48)
#define ELF_ENTRY      0x100010

static inline uint8_t *make_elf(bool is64, unsigned desc_bytes, bool note_in_section,
				size_t *len)
{
	uint8_t *img = calloc(1, ELF_MAX_LEN);
	unsigned phent = is64 ? 56 : 32, shent = is64 ? 64 : 40;
	uint8_t *ph = img + (is64 ? 64 : 52), *note = img + ELF_NOTE_OFF;
	unsigned note_len;

	memcpy(img, "\177ELF", 4);
	img[4] = is64 ? 2 : 1;                 /* EI_CLASS */
	img[5] = 1;                            /* EI_DATA: little-endian */
	img[6] = 1;                            /* EI_VERSION */
	wr(img + 16, 2, 2);                    /* e_type ET_EXEC */
	wr(img + 18, 2, is64 ? 62 : 3);        /* e_machine */
	wr(img + 20, 4, 1);                    /* e_version */

	/* notes: "GNU" type 3 with 8-byte desc, then "Xen" type 18 */
	wr(note + 0, 4, 4); wr(note + 4, 4, 8); wr(note + 8, 4, 3);
	memcpy(note + 12, "GNU", 4);
	note_len = 12 + 4 + 8;
	wr(note + note_len, 4, 4); wr(note + note_len + 4, 4, desc_bytes);
	wr(note + note_len + 8, 4, 18);
	memcpy(note + note_len + 12, "Xen", 4);
	wr(note + note_len + 16, desc_bytes, ELF_ENTRY);
	note_len += 16 + ((desc_bytes + 3) & ~3u);

	memset(img + ELF_TEXT_OFF, 0x90, 0x1000);
	memset(img + ELF_DATA_OFF, 0x5a, 0x10);

	struct { uint32_t type; uint64_t off, paddr, filesz, memsz, align; } segs[3] = {
		{ note_in_section ? 0 : 4, ELF_NOTE_OFF, 0, note_len, note_len, 4 },
		{ 1, ELF_TEXT_OFF, 0x100000, 0x1000, 0x1000, 0x1000 },
		{ 1, ELF_DATA_OFF, 0x102000, 0x10, 0x100, 0x1000 },
	};
	for (unsigned i = 0; i < 3; i++, ph += phent) {
		if (is64) {
			wr(ph + 0, 4, segs[i].type);
			wr(ph + 8, 8, segs[i].off);
			wr(ph + 16, 8, segs[i].paddr + 0xffffffff80000000ULL);  /* p_vaddr */
			wr(ph + 24, 8, segs[i].paddr);
			wr(ph + 32, 8, segs[i].filesz);
			wr(ph + 40, 8, segs[i].memsz);
			wr(ph + 48, 8, segs[i].align);
		} else {
			wr(ph + 0, 4, segs[i].type);
			wr(ph + 4, 4, segs[i].off);
			wr(ph + 8, 4, segs[i].paddr + 0xc0000000u);
			wr(ph + 12, 4, segs[i].paddr);
			wr(ph + 16, 4, segs[i].filesz);
			wr(ph + 20, 4, segs[i].memsz);
			wr(ph + 28, 4, segs[i].align);
		}
	}
	if (is64) {
		wr(img + 24, 8, ELF_ENTRY + 0xffffffff80000000ULL);   /* e_entry (virtual) */
		wr(img + 32, 8, 64);                  /* e_phoff */
		wr(img + 40, 8, ELF_SHDR_OFF);        /* e_shoff */
		wr(img + 52, 2, 64);                  /* e_ehsize */
		wr(img + 54, 2, phent); wr(img + 56, 2, 3);
		wr(img + 58, 2, shent); wr(img + 60, 2, 2);
	} else {
		wr(img + 24, 4, ELF_ENTRY);
		wr(img + 28, 4, 52);
		wr(img + 32, 4, ELF_SHDR_OFF);
		wr(img + 40, 2, 52);
		wr(img + 42, 2, phent); wr(img + 44, 2, 3);
		wr(img + 46, 2, shent); wr(img + 48, 2, 2);
	}
	/* section 0 is SHN_UNDEF (zero); section 1 is the SHT_NOTE */
	uint8_t *sh = img + ELF_SHDR_OFF + shent;
	wr(sh + 4, 4, 7);                              /* sh_type SHT_NOTE */
	if (is64) {
		wr(sh + 24, 8, ELF_NOTE_OFF); wr(sh + 32, 8, note_len); wr(sh + 48, 8, 4);
	} else {
		wr(sh + 16, 4, ELF_NOTE_OFF); wr(sh + 20, 4, note_len); wr(sh + 32, 4, 4);
	}
	*len = ELF_NOTE_OFF + note_len;
	return img;
}

/*
 * Multiboot v1 kernels (the Multiboot spec 0.6.96): a flat binary with the
 * a.out kludge, and an ELF with a multiboot header.
 */
#define AOUT_LEN  0x3000
#define AOUT_HDR  0x40            /* file offset of the header */
#define AOUT_LOAD 0x200000        /* file offset 0 lands here */

static inline void mb_put_header(uint8_t *h, uint32_t flags)
{
	wr(h + 0, 4, 0x1badb002);
	wr(h + 4, 4, flags);
	wr(h + 8, 4, (uint32_t)(0u - 0x1badb002u - flags));
}

/* A flat binary with the a.out kludge: whole file at 2 MiB, bss to +0x5000,
 * entry at +0x100. */
static inline uint8_t *make_aout(size_t *len)
{
	uint8_t *img = calloc(1, AOUT_LEN);

	memset(img, 0xc3, AOUT_LEN);
	mb_put_header(img + AOUT_HDR, 0x00010003);
	wr(img + AOUT_HDR + 12, 4, AOUT_LOAD + AOUT_HDR);   /* header_addr */
	wr(img + AOUT_HDR + 16, 4, AOUT_LOAD);              /* load_addr */
	wr(img + AOUT_HDR + 20, 4, 0);                      /* load_end_addr: whole file */
	wr(img + AOUT_HDR + 24, 4, AOUT_LOAD + 0x5000);     /* bss_end_addr */
	wr(img + AOUT_HDR + 28, 4, AOUT_LOAD + 0x100);      /* entry_addr */
	*len = AOUT_LEN;
	return img;
}

/* make_elf's ELF without its PVH note, with a flags-0 multiboot header in
 * the text (what kvm-unit-tests' .flat files look like). */
static inline uint8_t *make_mb_elf(size_t *len)
{
	uint8_t *img = make_elf(false, 4, false, len);

	wr(img + ELF_XEN_NOTE + 8, 4, 17);
	wr(img + 48, 2, 0);                   /* e_shnum */
	mb_put_header(img + ELF_TEXT_OFF, 0);
	return img;
}

/* make_elf's image with lagvisor's VIF note (x86/pvm.h: name "lagvisor", type 1,
 * u64 GPA of the pages, u32 page count) after its notes. */
static inline uint8_t *elf_with_vif_note(uint64_t gpa, uint32_t pages, size_t *len)
{
	uint8_t *img = make_elf(true, 8, false, len), *n;
	uint64_t filesz = rd(img + 64 + 32, 8);

	img = realloc(img, *len + 36);
	n = img + *len;
	memset(n, 0, 36);
	wr(n + 0, 4, 9); wr(n + 4, 4, 12); wr(n + 8, 4, 1 /* X86_PVM_NOTE_VIF */);
	memcpy(n + 12, "lagvisor", 9);
	wr(n + 24, 8, gpa); wr(n + 32, 4, pages);
	wr(img + 64 + 32, 8, filesz + 36);    /* the PT_NOTE's p_filesz */
	wr(img + 64 + 40, 8, filesz + 36);
	*len += 36;
	return img;
}

/* One slot of `bytes` at GPA 0, anonymous memory (zeroed). */
static inline int test_mem_init(struct guest_mem *mem, uint64_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	mem->nr = 1;
	mem->slots[0] = (struct guest_mem_slot){ .gpa = 0, .size = bytes, .hva = p };
	return 0;
}

static inline void test_mem_free(struct guest_mem *mem)
{
	munmap(mem->slots[0].hva, mem->slots[0].size);
	mem->nr = 0;
}

#endif
