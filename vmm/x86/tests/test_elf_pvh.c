/* ELF + PVH note parsing and segment loading on synthetic images. */
#include <errno.h>
#include <stdlib.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/pvm.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

static void test_variants(void)
{
	/* ELF64 with 8- and 4-byte descriptors, ELF32, note only as a section */
	struct { bool is64; unsigned desc; bool in_section; } v[] = {
		{ true, 8, false }, { true, 4, false }, { false, 4, false },
		{ true, 8, true }, { false, 4, true },
	};

	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t len;
		uint8_t *img = make_elf(v[i].is64, v[i].desc, v[i].in_section, &len);
		struct x86_elf_pvh info;
		char why[160] = "";
		int ret = x86_elf_pvh_parse(img, len, &info, why, sizeof(why));

		if (ret)
			fprintf(stderr, "variant %u: %s\n", i, why);
		CHECK_EQ(ret, 0);
		CHECK_EQ(info.is64, v[i].is64);
		CHECK_EQ(info.entry, 0x100010);
		CHECK_EQ(info.nr_load, 2);
		CHECK_EQ(info.load_start, 0x100000);
		CHECK_EQ(info.load_end, 0x102100);
		free(img);
	}
}

static void test_load(void)
{
	size_t len;
	uint8_t *img = make_elf(true, 8, false, &len);
	struct guest_mem mem;
	char why[160] = "";
	uint8_t *g;

	if (test_mem_init(&mem, 4 << 20)) {
		CHECK(!"mmap");
		return;
	}
	g = mem.slots[0].hva;
	memset(g + 0x102000, 0xee, 0x200);    /* stale bytes where bss goes */
	CHECK_EQ(x86_elf_pvh_load(img, len, &mem, why, sizeof(why)), 0);
	CHECK_EQ(g[0x100000], 0x90);
	CHECK_EQ(g[0x100fff], 0x90);
	CHECK_EQ(g[0x101000], 0);
	CHECK_EQ(g[0x102000], 0x5a);
	CHECK_EQ(g[0x10200f], 0x5a);
	CHECK_EQ(g[0x102010], 0);             /* bss zeroed ... */
	CHECK_EQ(g[0x1020ff], 0);
	CHECK_EQ(g[0x102100], 0xee);          /* ... up to p_memsz only */

	/* data segment moved below 1 MiB: refused */
	wr(img + 64 + 2 * 56 + 24, 8, 0x9000);
	CHECK_EQ(x86_elf_pvh_load(img, len, &mem, why, sizeof(why)), -ENOSPC);
	CHECK(strstr(why, "below 1 MiB") != NULL);
	/* beyond guest RAM (4 MiB) */
	wr(img + 64 + 2 * 56 + 24, 8, 0x3fff80);
	CHECK_EQ(x86_elf_pvh_load(img, len, &mem, why, sizeof(why)), -ENOSPC);
	CHECK(strstr(why, "outside guest RAM") != NULL);
	test_mem_free(&mem);
	free(img);
}

struct reject_case {
	const char *what;
	unsigned off, bytes;       /* field to overwrite in the ELF64 image */
	uint64_t value;
};

static void test_reject(void)
{
	/* ELF64 offsets: header (gABI), phdr i at 64 + 56 * i, the Xen note */
	const struct reject_case cases[] = {
		{ "32-bit class 3", 4, 1, 3 },
		{ "big-endian", 5, 1, 2 },
		{ "ET_DYN", 16, 2, 3 },
		{ "ARM machine", 18, 2, 40 },
		{ "phentsize 32", 54, 2, 32 },
		{ "no program headers", 56, 2, 0 },
		{ "phoff past the end", 32, 8, ELF_NOTE_OFF },
		{ "phoff overflowing", 32, 8, 0xfffffffffffffff0ULL },
		{ "text filesz > memsz", 64 + 56 + 32, 8, 0x2000 },
		{ "text offset past the end", 64 + 56 + 8, 8, 0x1100 + ELF_NOTE_OFF - 0x1000 },
		{ "text paddr+memsz wraps", 64 + 56 + 24, 8, 0xfffffffffffff800ULL },
		{ "note name Xem", ELF_XEN_NOTE + 12, 4, 0x006d6558 },
		{ "note type 17", ELF_XEN_NOTE + 8, 4, 17 },
		{ "note descsz 2", ELF_XEN_NOTE + 4, 4, 2 },
		{ "entry above 4 GiB", ELF_XEN_NOTE + 16, 8, 0x100000010ULL },
		{ "entry outside segments", ELF_XEN_NOTE + 16, 8, 0x200000 },
		{ "no loadable segment", 64 + 56, 4, 0 },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		uint8_t *img = make_elf(true, 8, false, &len);
		struct x86_elf_pvh info;
		char why[160] = "";
		int ret;

		wr(img + cases[i].off, cases[i].bytes, cases[i].value);
		if (!strcmp(cases[i].what, "no loadable segment"))
			wr(img + 64 + 2 * 56, 4, 0);      /* both PT_LOADs gone */
		if (!strcmp(cases[i].what, "note type 17") ||
		    !strcmp(cases[i].what, "note name Xem"))
			wr(img + 60, 2, 0);               /* and no section headers */
		ret = x86_elf_pvh_parse(img, len, &info, why, sizeof(why));
		if (ret != -ENOEXEC || !why[0]) {
			fprintf(stderr, "ELF with %s: ret %d why '%s'\n", cases[i].what, ret, why);
			check_failures++;
		}
		free(img);
	}
	/* truncated at every length below the header must be refused cleanly */
	for (size_t cut = 0; cut < 64; cut++) {
		size_t len;
		uint8_t *img = make_elf(true, 8, false, &len);
		struct x86_elf_pvh info;
		char why[160];

		CHECK_EQ(x86_elf_pvh_parse(img, cut, &info, why, sizeof(why)), -ENOEXEC);
		free(img);
	}
}

static void test_vif_note(void)
{
	struct { uint64_t gpa; uint32_t pages; int ret; } c[] = {
		{ 0x100000, 1, 0 },
		{ 0x101000, 1, 0 },
		{ 0x102000, 1, -ENOEXEC },      /* past the last segment's end */
		{ 0x100000, 3, -ENOEXEC },
		{ 0x100800, 1, -ENOEXEC },      /* not a page */
		{ 0x100000, 0, -ENOEXEC },
		{ 0x80000, 1, -ENOEXEC },       /* below the image */
	};
	struct x86_elf_pvh info;
	char why[160];
	size_t len;
	uint8_t *img = make_elf(true, 8, false, &len);

	CHECK_EQ(x86_elf_pvh_parse(img, len, &info, why, sizeof(why)), 0);
	CHECK_EQ(info.vif_gpa, 0);              /* no note: not native */
	free(img);
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		img = elf_with_vif_note(c[i].gpa, c[i].pages, &len);
		why[0] = 0;
		CHECK_EQ(x86_elf_pvh_parse(img, len, &info, why, sizeof(why)), c[i].ret);
		if (!c[i].ret) {
			CHECK_EQ(info.vif_gpa, c[i].gpa);
			CHECK_EQ(info.vif_pages, c[i].pages);
			CHECK_EQ(info.entry, ELF_ENTRY);
		} else {
			CHECK(strstr(why, "VIF note") != NULL);
		}
		free(img);
	}
}

/* The command-line word that tells the guest where its pages are. */
static void test_vif_cmdline(void)
{
	char buf[32] = "console=ttyS0";
	char tiny[12] = "abc";
	char empty[24] = "";

	CHECK_EQ(x86_pvm_cmdline_append(buf, sizeof(buf), 0x10e000), 0);
	CHECK(!strcmp(buf, "console=ttyS0 pvm.vif=0x10e000"));
	CHECK_EQ(x86_pvm_cmdline_append(tiny, sizeof(tiny), 0x10e000), -E2BIG);
	CHECK(!strcmp(tiny, "abc"));             /* unchanged when it does not fit */
	CHECK_EQ(x86_pvm_cmdline_append(empty, sizeof(empty), 0x1000), 0);
	CHECK(!strcmp(empty, "pvm.vif=0x1000"));
}

int main(void)
{
	test_variants();
	test_vif_note();
	test_vif_cmdline();
	test_load();
	test_reject();
	return check_report("x86_test_elf_pvh");
}
