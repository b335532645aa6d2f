/*
 * ELF kernels entered through the PVH boot ABI (Xen's x86/HVM direct boot,
 * also what QEMU -kernel accepts): a note of type XEN_ELFNOTE_PHYS32_ENTRY
 * with name "Xen" gives the 32-bit physical entry point, and PT_LOAD
 * segments are placed at their physical addresses (p_paddr). Both ELF32
 * and ELF64 are accepted; Linux's vmlinux is ELF64 with an 8-byte (older)
 * or 4-byte (newer) descriptor in the note.
 *
 * Every offset, size and count read from the file is checked against the
 * file length before use, so a corrupt image gets a reason, not a crash.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "vmm/x86/pvm.h"

#define EM_386                3
#define EM_X86_64             62
#define ET_EXEC               2
#define PT_LOAD               1
#define PT_NOTE               4
#define SHT_NOTE              7
#define XEN_ELFNOTE_PHYS32_ENTRY 18

struct elf_file {
	const uint8_t *img;
	size_t len;
	bool is64;
	uint64_t phoff, shoff;
	unsigned phnum, shnum;
	unsigned phentsize, shentsize;
};

struct elf_seg {
	uint32_t type;
	uint64_t offset, paddr, filesz, memsz, align;
};

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return -ENOEXEC; } while (0)

bool x86_elf_detect(const uint8_t *img, size_t len)
{
	return len >= 4 && memcmp(img, "\177ELF", 4) == 0;
}

static int elf_open(struct elf_file *f, const uint8_t *img, size_t len,
		    char *why, size_t whylen)
{
	const uint8_t *h = img;
	unsigned machine;

	memset(f, 0, sizeof(*f));
	f->img = img;
	f->len = len;
	if (!x86_elf_detect(img, len) || len < 52)
		FAIL("not an ELF file or truncated ELF header (%zu bytes)", len);
	if (h[4] != 1 && h[4] != 2)
		FAIL("ELF class %u is neither 32- nor 64-bit", h[4]);
	f->is64 = h[4] == 2;
	if (h[5] != 1 || h[6] != 1)
		FAIL("ELF is not little-endian version 1");
	if (f->is64 && len < 64)
		FAIL("truncated ELF64 header (%zu bytes)", len);
	if (get_le16(h + 16) != ET_EXEC)
		FAIL("ELF type %u is not an executable", get_le16(h + 16));
	machine = get_le16(h + 18);
	if (machine != EM_386 && machine != EM_X86_64)
		FAIL("ELF machine %u is not x86", machine);

	if (f->is64) {
		f->phoff = get_le64(h + 32);
		f->shoff = get_le64(h + 40);
		f->phentsize = get_le16(h + 54);
		f->phnum = get_le16(h + 56);
		f->shentsize = get_le16(h + 58);
		f->shnum = get_le16(h + 60);
	} else {
		f->phoff = get_le32(h + 28);
		f->shoff = get_le32(h + 32);
		f->phentsize = get_le16(h + 42);
		f->phnum = get_le16(h + 44);
		f->shentsize = get_le16(h + 46);
		f->shnum = get_le16(h + 48);
	}
	if (f->phentsize != (f->is64 ? 56u : 32u) || f->phnum == 0 || f->phnum == 0xffff ||
	    !range_ok(f->phoff, (uint64_t)f->phnum * f->phentsize, len))
		FAIL("ELF program headers are missing or outside the file");
	/* Section headers are optional (only searched for a note): ignore bad ones. */
	if (f->shentsize != (f->is64 ? 64u : 40u) ||
	    !range_ok(f->shoff, (uint64_t)f->shnum * f->shentsize, len))
		f->shnum = 0;
	return 0;
}

static void elf_phdr(const struct elf_file *f, unsigned i, struct elf_seg *s)
{
	const uint8_t *p = f->img + f->phoff + (uint64_t)i * f->phentsize;

	s->type = get_le32(p);
	if (f->is64) {
		s->offset = get_le64(p + 8);
		s->paddr = get_le64(p + 24);
		s->filesz = get_le64(p + 32);
		s->memsz = get_le64(p + 40);
		s->align = get_le64(p + 48);
	} else {
		s->offset = get_le32(p + 4);
		s->paddr = get_le32(p + 12);
		s->filesz = get_le32(p + 16);
		s->memsz = get_le32(p + 20);
		s->align = get_le32(p + 28);
	}
}

/* Section header i as a segment (type = sh_type), for the note search. */
static void elf_shdr(const struct elf_file *f, unsigned i, struct elf_seg *s)
{
	const uint8_t *p = f->img + f->shoff + (uint64_t)i * f->shentsize;

	memset(s, 0, sizeof(*s));
	s->type = get_le32(p + 4);
	if (f->is64) {
		s->offset = get_le64(p + 24);
		s->filesz = get_le64(p + 32);
		s->align = get_le64(p + 48);
	} else {
		s->offset = get_le32(p + 16);
		s->filesz = get_le32(p + 20);
		s->align = get_le32(p + 32);
	}
}

/*
 * Find the note (name, type) in one note area. Notes are padded to 4 bytes
 * (what every x86 toolchain emits); an area aligned to 8 uses 8, as the
 * gABI allows. Returns 1 with *desc and *descsz set, or 0 not found.
 */
static int elf_note_find(const struct elf_file *f, const struct elf_seg *s,
			 const char *name, uint32_t type, const uint8_t **desc,
			 uint64_t *descsz)
{
	uint64_t a = s->align == 8 ? 8 : 4, want = strlen(name) + 1;
	uint64_t off = 0;

	if (!range_ok(s->offset, s->filesz, f->len))
		return 0;
	while (s->filesz - off >= 12) {
		const uint8_t *n = f->img + s->offset + off;
		uint64_t namesz = get_le32(n), dsz = get_le32(n + 4);
		uint64_t d = 12 + ((namesz + a - 1) & ~(a - 1));
		uint64_t next = d + ((dsz + a - 1) & ~(a - 1));

		if (next > s->filesz - off)
			return 0;
		if (get_le32(n + 8) == type && namesz == want &&
		    memcmp(n + 12, name, want) == 0) {
			*desc = n + d;
			*descsz = dsz;
			return 1;
		}
		off += next;
	}
	return 0;
}

/* The PVH entry note: 1 found, 0 not found, -ENOEXEC malformed. */
static int elf_find_pvh_note(const struct elf_file *f, const struct elf_seg *s,
			     uint32_t *entry, char *why, size_t whylen)
{
	const uint8_t *desc;
	uint64_t descsz;

	if (!elf_note_find(f, s, "Xen", XEN_ELFNOTE_PHYS32_ENTRY, &desc, &descsz))
		return 0;
	if (descsz == 4) {
		*entry = get_le32(desc);
	} else if (descsz == 8 && get_le64(desc) < X86_4G) {
		*entry = (uint32_t)get_le64(desc);
	} else {
		snprintf(why, whylen, "PVH entry note has a bad descriptor (%llu bytes)",
			 (unsigned long long)descsz);
		return -ENOEXEC;
	}
	return 1;
}

/*
 * lagvisor's native-mode note (vmm/x86/pvm.h), in a PT_NOTE segment: its
 * pages must lie inside what the image loads, or the guest's claim is
 * refused (a bad note is a bad kernel, not a reason to guess).
 */
static int elf_find_vif_note(const struct elf_file *f, struct x86_elf_pvh *info,
			     char *why, size_t whylen)
{
	const uint8_t *desc;
	uint64_t descsz;
	struct elf_seg s;

	for (unsigned i = 0; i < f->phnum; i++) {
		elf_phdr(f, i, &s);
		if (s.type != PT_NOTE ||
		    !elf_note_find(f, &s, X86_PVM_NOTE_NAME, X86_PVM_NOTE_VIF, &desc, &descsz))
			continue;
		if (x86_pvm_note_parse(desc, descsz, &info->vif_gpa, &info->vif_pages,
				       why, whylen))
			return -ENOEXEC;
		if (info->vif_gpa < info->load_start ||
		    info->vif_gpa + (uint64_t)info->vif_pages * X86_PVM_PAGE_BYTES > info->load_end) {
			snprintf(why, whylen, "lagvisor VIF note: pages at 0x%llx are outside "
				 "the loaded segments", (unsigned long long)info->vif_gpa);
			return -ENOEXEC;
		}
		return 0;
	}
	return 0;
}

/*
 * Validate the headers and the PT_LOAD segments into info. With want_note,
 * the entry is the PVH note's; without, it is e_entry (a multiboot ELF's
 * entry, which must be a 32-bit physical address since paging is off).
 */
static int elf_scan(const uint8_t *img, size_t len, struct x86_elf_pvh *info,
		    bool want_note, char *why, size_t whylen)
{
	struct elf_file f;
	struct elf_seg s;
	int found = 0, ret;

	memset(info, 0, sizeof(*info));
	ret = elf_open(&f, img, len, why, whylen);
	if (ret)
		return ret;
	info->is64 = f.is64;
	if (!want_note) {
		uint64_t e = f.is64 ? get_le64(img + 24) : get_le32(img + 24);

		if (e >= X86_4G)
			FAIL("ELF entry 0x%llx is not a 32-bit physical address",
			     (unsigned long long)e);
		info->entry = (uint32_t)e;
		found = 1;
	}
	info->load_start = UINT64_MAX;
	for (unsigned i = 0; i < f.phnum; i++) {
		elf_phdr(&f, i, &s);
		if (s.type == PT_NOTE && !found) {
			found = elf_find_pvh_note(&f, &s, &info->entry, why, whylen);
			if (found < 0)
				return found;
		}
		if (s.type != PT_LOAD || s.memsz == 0)
			continue;
		if (s.filesz > s.memsz || !range_ok(s.offset, s.filesz, len) ||
		    s.paddr + s.memsz < s.paddr)
			FAIL("ELF segment %u is corrupt (offset 0x%llx, filesz 0x%llx, memsz 0x%llx)",
			     i, (unsigned long long)s.offset, (unsigned long long)s.filesz,
			     (unsigned long long)s.memsz);
		info->nr_load++;
		if (s.paddr < info->load_start)
			info->load_start = s.paddr;
		if (s.paddr + s.memsz > info->load_end)
			info->load_end = s.paddr + s.memsz;
	}
	for (unsigned i = 0; i < f.shnum && !found; i++) {
		elf_shdr(&f, i, &s);
		if (s.type != SHT_NOTE)
			continue;
		found = elf_find_pvh_note(&f, &s, &info->entry, why, whylen);
		if (found < 0)
			return found;
	}
	if (!found)
		FAIL("ELF has no PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY): not a PVH kernel");
	if (info->nr_load == 0)
		FAIL("ELF has no loadable segments");
	if (info->entry < info->load_start || info->entry >= info->load_end)
		FAIL("%s entry 0x%x is outside the loaded segments [0x%llx, 0x%llx)",
		     want_note ? "PVH" : "ELF", info->entry,
		     (unsigned long long)info->load_start,
		     (unsigned long long)info->load_end);
	return elf_find_vif_note(&f, info, why, whylen);
}

int x86_elf_pvh_parse(const uint8_t *img, size_t len, struct x86_elf_pvh *info,
		      char *why, size_t whylen)
{
	return elf_scan(img, len, info, true, why, whylen);
}

int x86_elf_exec_parse(const uint8_t *img, size_t len, struct x86_elf_pvh *info,
		       char *why, size_t whylen)
{
	return elf_scan(img, len, info, false, why, whylen);
}

int x86_elf_pvh_load(const uint8_t *img, size_t len, const struct guest_mem *mem,
		     char *why, size_t whylen)
{
	struct elf_file f;
	struct elf_seg s;
	int ret = elf_open(&f, img, len, why, whylen);

	if (ret)
		return ret;
	for (unsigned i = 0; i < f.phnum; i++) {
		uint8_t *dst;

		elf_phdr(&f, i, &s);
		if (s.type != PT_LOAD || s.memsz == 0)
			continue;
		if (s.filesz > s.memsz || !range_ok(s.offset, s.filesz, len))
			FAIL("ELF segment %u is corrupt", i);
		if (s.paddr < X86_HIGH_MEM_GPA) {
			snprintf(why, whylen, "ELF segment %u at 0x%llx is below 1 MiB, where the boot structures live",
				 i, (unsigned long long)s.paddr);
			return -ENOSPC;
		}
		dst = guest_mem_ptr(mem, s.paddr, s.memsz);
		if (!dst) {
			snprintf(why, whylen, "ELF segment %u [0x%llx, +0x%llx) is outside guest RAM",
				 i, (unsigned long long)s.paddr, (unsigned long long)s.memsz);
			return -ENOSPC;
		}
		memcpy(dst, img + s.offset, s.filesz);
		memset(dst + s.filesz, 0, s.memsz - s.filesz);
	}
	return 0;
}
