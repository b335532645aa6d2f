/*
 * Multiboot v1: header search and validation (a.out kludge and ELF), the
 * information block, and x86_load_kernel end to end on files: what lands
 * where, the entry registers, and each corrupt header refused with its
 * reason. Offsets are written from the Multiboot spec 0.6.96, not taken
 * from multiboot.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/multiboot.h"
#include "vmm/x86/regs.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

#define MEM_BYTES (64ULL << 20)

static char dir[] = "/tmp/lagvisor-mb-test-XXXXXX";

static char *write_file(const char *name, const void *data, size_t len)
{
	static char paths[8][128];
	static unsigned next;
	char *path = paths[next++ % 8];
	int fd;

	snprintf(path, 128, "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		CHECK(!"write test file");
	if (fd >= 0)
		close(fd);
	return path;
}

static void test_parse(void)
{
	struct x86_multiboot mb;
	char why[200];
	size_t len;
	uint8_t *img = make_aout(&len);

	CHECK(x86_multiboot_detect(img, len));
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), 0);
	CHECK(mb.aout);
	CHECK_EQ(mb.header_off, AOUT_HDR);
	CHECK_EQ(mb.file_off, 0);
	CHECK_EQ(mb.file_len, AOUT_LEN);
	CHECK_EQ(mb.load_start, AOUT_LOAD);
	CHECK_EQ(mb.load_end, AOUT_LOAD + 0x5000);
	CHECK_EQ(mb.entry, AOUT_LOAD + 0x100);

	/* load_end_addr given: only that much of the file */
	wr(img + AOUT_HDR + 20, 4, AOUT_LOAD + 0x1000);
	mb_put_header(img + AOUT_HDR, 0x00010003);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), 0);
	CHECK_EQ(mb.file_len, 0x1000);

	/* bad checksum: named, with the offset */
	wr(img + AOUT_HDR + 8, 4, 0x12345678);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "checksum") && strstr(why, "0x40"));
	/* a video mode is required: refused */
	mb_put_header(img + AOUT_HDR, 0x00010007);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "video"));
	/* an unknown requirement bit */
	mb_put_header(img + AOUT_HDR, 0x00010103);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "0x100"));
	/* header_addr - load_addr larger than the header's file offset */
	mb_put_header(img + AOUT_HDR, 0x00010003);
	wr(img + AOUT_HDR + 12, 4, AOUT_LOAD + 0x1000);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "header_addr"));
	wr(img + AOUT_HDR + 12, 4, AOUT_LOAD + AOUT_HDR);
	/* load_end past the file */
	wr(img + AOUT_HDR + 20, 4, AOUT_LOAD + AOUT_LEN + 1);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "load_end_addr"));
	wr(img + AOUT_HDR + 20, 4, 0);
	/* bss ending inside the image */
	wr(img + AOUT_HDR + 24, 4, AOUT_LOAD + 0x10);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "bss_end_addr"));
	wr(img + AOUT_HDR + 24, 4, 0);
	/* entry outside */
	wr(img + AOUT_HDR + 28, 4, AOUT_LOAD - 4);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "entry"));
	wr(img + AOUT_HDR + 28, 4, AOUT_LOAD);
	/* below 1 MiB: the boot structures */
	wr(img + AOUT_HDR + 12, 4, 0x80000 + AOUT_HDR);
	wr(img + AOUT_HDR + 16, 4, 0x80000);
	wr(img + AOUT_HDR + 28, 4, 0x80000);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "below 1 MiB"));
	/* truncated: the header's address fields cut off */
	CHECK_EQ(x86_multiboot_parse(img, AOUT_HDR + 20, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "truncated"));
	/* no header in the first 8 KiB (the magic at 8 KiB does not count) */
	memset(img, 0, AOUT_LEN);
	mb_put_header(img + 8192, 0);
	CHECK(!x86_multiboot_detect(img, len));
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "no multiboot header"));
	/* a non-ELF without flag 16 */
	mb_put_header(img + 4, 0);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "not ELF"));
	/* tiny files */
	CHECK(!x86_multiboot_detect(img, 11));
	CHECK_EQ(x86_multiboot_parse(img, 3, &mb, why, sizeof(why)), -ENOEXEC);
	free(img);

	img = make_mb_elf(&len);
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), 0);
	CHECK(!mb.aout);
	CHECK_EQ(mb.entry, ELF_ENTRY);
	CHECK_EQ(mb.load_start, 0x100000);
	CHECK_EQ(mb.load_end, 0x102100);
	wr(img + 24, 4, 0x90000);             /* e_entry outside the segments */
	CHECK_EQ(x86_multiboot_parse(img, len, &mb, why, sizeof(why)), -ENOEXEC);
	CHECK(strstr(why, "entry"));
	free(img);
}

static void test_info(void)
{
	static uint8_t page[4096];
	struct x86_e820_entry e820[X86_E820_MAX];
	unsigned n = x86_e820_build(MEM_BYTES, e820, X86_E820_MAX);
	uint8_t *map;

	memset(page, 0xee, sizeof(page));
	CHECK_EQ(x86_multiboot_info_build(page, &(struct x86_multiboot_args){
		.base_gpa = 0x7000, .mem_bytes = MEM_BYTES, .cmdline_gpa = 0x20000,
		.module_gpa = 0x3ff0000, .module_size = 100, .e820 = e820, .nr_e820 = n }), 0);
	CHECK_EQ(rd(page + 0, 4), 0x24d);                     /* mem, cmdline, mods, mmap, name */
	CHECK_EQ(rd(page + 4, 4), 639);                       /* mem_lower KiB (EBDA at 0x9fc00) */
	CHECK_EQ(rd(page + 8, 4), (MEM_BYTES - 0x100000) / 1024);
	CHECK_EQ(rd(page + 12, 4), 0);                        /* boot_device not given */
	CHECK_EQ(rd(page + 16, 4), 0x20000);
	CHECK_EQ(rd(page + 20, 4), 1);
	CHECK_EQ(rd(page + 24, 4), 0x7080);
	CHECK_EQ(rd(page + 0x80, 4), 0x3ff0000);              /* mod_start */
	CHECK_EQ(rd(page + 0x84, 4), 0x3ff0064);              /* mod_end (exclusive) */
	CHECK_EQ(page[rd(page + 0x88, 4) - 0x7000], 0);       /* empty module string */
	CHECK_EQ(rd(page + 44, 4), 24 * n);                   /* mmap_length */
	CHECK_EQ(rd(page + 48, 4), 0x7100);
	map = page + 0x100;
	CHECK(rd(map + 0, 4) == 20 && rd(map + 4, 8) == 0 && rd(map + 12, 8) == 0x9fc00 &&
	      rd(map + 20, 4) == 1);
	CHECK(rd(map + 24 + 4, 8) == 0x9fc00 && rd(map + 24 + 20, 4) == 2);
	CHECK(rd(map + 48 + 4, 8) == 0x100000 && rd(map + 48 + 12, 8) == MEM_BYTES - 0x100000);
	CHECK(!strcmp((char *)page + rd(page + 64, 4) - 0x7000, "lagvisor"));

	/* no module: count 0 */
	CHECK_EQ(x86_multiboot_info_build(page, &(struct x86_multiboot_args){
		.base_gpa = 0x7000, .mem_bytes = MEM_BYTES, .e820 = e820, .nr_e820 = n }), 0);
	CHECK_EQ(rd(page + 20, 4), 0);
	CHECK_EQ(rd(page + 0x80, 4), 0);
	/* a memory map that would overrun the strings */
	CHECK_EQ(x86_multiboot_info_build(page, &(struct x86_multiboot_args){
		.base_gpa = 0x7000, .mem_bytes = MEM_BYTES, .e820 = e820, .nr_e820 = 20 }), -E2BIG);
}

static void test_load(void)
{
	struct vm_config cfg = { .cmdline = "x86/apic.flat -smp 2", .nr_cpus = 2,
				 .mem_bytes = MEM_BYTES, .irqchip = IRQCHIP_KERNEL };
	const char env[] = "NR_CPUS=2\nTEST_DEVICE=0\n";
	struct x86_boot_info boot;
	struct guest_mem mem;
	struct kvm_regs regs;
	char err[256] = "";
	size_t len;
	uint8_t *img = make_aout(&len), *g, *info;

	if (test_mem_init(&mem, MEM_BYTES)) {
		CHECK(!"mmap");
		free(img);
		return;
	}
	g = mem.slots[0].hva;
	cfg.kernel_path = write_file("mb-aout", img, len);
	cfg.initrd_path = write_file("env", env, sizeof(env) - 1);
	memset(g + AOUT_LOAD + AOUT_LEN, 0x77, 0x100);        /* bss must be zeroed */
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(boot.mode, X86_ENTRY_PVH32);
	CHECK_EQ(boot.entry_gpa, AOUT_LOAD + 0x100);
	CHECK_EQ(boot.param_gpa, 0x7000);
	CHECK_EQ(boot.entry_eax, 0x2badb002);
	CHECK(strstr(boot.format, "multiboot"));
	CHECK_EQ(g[AOUT_LOAD], 0xc3);
	CHECK_EQ(rd(g + AOUT_LOAD + AOUT_HDR, 4), 0x1badb002);
	CHECK_EQ(g[AOUT_LOAD + AOUT_LEN], 0);
	CHECK_EQ(g[AOUT_LOAD + 0x4fff], 0);
	info = g + 0x7000;
	/* the kernel's file name comes first, as GRUB and QEMU pass it */
	{
		char want[300];

		snprintf(want, sizeof(want), "%s x86/apic.flat -smp 2", cfg.kernel_path);
		CHECK(!strcmp((char *)g + rd(info + 16, 4), want));
	}
	CHECK_EQ(rd(info + 20, 4), 1);
	CHECK(!memcmp(g + rd(g + rd(info + 24, 4), 4), env, sizeof(env) - 1));
	CHECK_EQ(rd(g + rd(info + 24, 4) + 4, 4) - rd(g + rd(info + 24, 4), 4), sizeof(env) - 1);
	CHECK_EQ(rd(g + 0xf0000 + 34, 2), 2 + 19);            /* MP table still written */

	x86_boot_regs(&regs, &boot);
	CHECK_EQ(regs.rax, 0x2badb002);
	CHECK_EQ(regs.rbx, 0x7000);
	CHECK_EQ(regs.rip, AOUT_LOAD + 0x100);
	free(img);

	/* ELF multiboot: segments from the program headers, entry e_entry */
	img = make_mb_elf(&len);
	cfg.kernel_path = write_file("mb-elf", img, len);
	cfg.initrd_path = NULL;
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	CHECK_EQ(boot.entry_gpa, ELF_ENTRY);
	CHECK_EQ(boot.entry_eax, 0x2badb002);
	CHECK_EQ(rd(g + 0x7000 + 20, 4), 0);
	CHECK_EQ(g[0x102000], 0x5a);
	/* no command line: just the file name */
	cfg.cmdline = "";
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	CHECK(!strcmp((char *)g + rd(g + 0x7000 + 16, 4), cfg.kernel_path));

	/* the same ELF with its PVH note back: PVH wins, EAX 0 */
	wr(img + ELF_XEN_NOTE + 8, 4, 18);
	cfg.kernel_path = write_file("mb-pvh", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	CHECK_EQ(boot.entry_eax, 0);
	CHECK(strstr(boot.format, "PVH"));

	/* corrupt checksum: refused, the file and the reason named */
	wr(img + ELF_XEN_NOTE + 8, 4, 17);
	wr(img + ELF_TEXT_OFF + 8, 4, 0);
	cfg.kernel_path = write_file("mb-bad", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOEXEC);
	CHECK(strstr(err, "mb-bad") && strstr(err, "checksum"));
	free(img);
	test_mem_free(&mem);
}

/*
 * Random byte mutations of both image kinds (headers, address fields, ELF
 * headers), parsed and, when accepted, loaded: under the sanitizers any
 * read or write outside the file or guest memory fails the test.
 */
static void test_fuzz(void)
{
	struct guest_mem mem;
	struct x86_multiboot mb;
	char why[200];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	unsigned accepted = 0;

	if (test_mem_init(&mem, MEM_BYTES)) {
		CHECK(!"mmap");
		return;
	}
	for (unsigned round = 0; round < 6000; round++) {
		size_t len;
		uint8_t *img = round & 1 ? make_mb_elf(&len) : make_aout(&len);
		size_t hdr = round & 1 ? ELF_TEXT_OFF : AOUT_HDR;

		for (unsigned k = 0; k < 1 + round % 4; k++) {
			size_t at;

			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			/* half the mutations hit the multiboot header, half anywhere near the front */
			at = (x & 1) ? hdr + (x >> 8) % 32 : (x >> 8) % (len < 256 ? len : 256);
			img[at] = (uint8_t)(x >> 40);
		}
		if ((round & 2) && !(round & 1))   /* keep a.out checksums valid often */
			wr(img + AOUT_HDR + 8, 4, (uint32_t)(0u - rd(img + AOUT_HDR, 4) -
							     rd(img + AOUT_HDR + 4, 4)));
		if (x86_multiboot_parse(img, len, &mb, why, sizeof(why)) == 0) {
			accepted++;
			CHECK(mb.entry >= mb.load_start && mb.entry < mb.load_end);
			CHECK(mb.load_start >= 0x100000);
			(void)x86_multiboot_load(img, len, &mb, &mem, why, sizeof(why));
		}
		free(img);
	}
	printf("fuzz: 6000 mutated multiboot images, %u accepted\n", accepted);
	CHECK(accepted > 100);
	test_mem_free(&mem);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse();
	test_info();
	test_load();
	test_fuzz();
	for (unsigned i = 0; i < 5; i++) {
		static const char *names[] = { "mb-aout", "env", "mb-elf", "mb-pvh", "mb-bad" };
		char path[160];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
	return check_report("test_multiboot");
}
