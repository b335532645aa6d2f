/*
 * bzImage header parsing, the kernel's extent, and the zero page it gets,
 * on a synthetic image; every rejection case once. Offsets are those of
 * boot.rst / zero-page.rst, cross-checked against the kernel's own
 * <asm/bootparam.h>.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <asm/bootparam.h>

#include "vmm/x86/boot.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

static void test_offsets_match_kernel_header(void)
{
	CHECK_EQ(offsetof(struct boot_params, ext_ramdisk_image), 0x0c0);
	CHECK_EQ(offsetof(struct boot_params, e820_entries), 0x1e8);
	CHECK_EQ(offsetof(struct boot_params, sentinel), 0x1ef);
	CHECK_EQ(offsetof(struct boot_params, hdr), 0x1f1);
	CHECK_EQ(offsetof(struct boot_params, hdr.type_of_loader), 0x210);
	CHECK_EQ(offsetof(struct boot_params, hdr.ramdisk_image), 0x218);
	CHECK_EQ(offsetof(struct boot_params, hdr.ramdisk_size), 0x21c);
	CHECK_EQ(offsetof(struct boot_params, hdr.cmd_line_ptr), 0x228);
	CHECK_EQ(offsetof(struct boot_params, hdr.initrd_addr_max), 0x22c);
	CHECK_EQ(offsetof(struct boot_params, hdr.xloadflags), 0x236);
	CHECK_EQ(offsetof(struct boot_params, hdr.cmdline_size), 0x238);
	CHECK_EQ(offsetof(struct boot_params, hdr.pref_address), 0x258);
	CHECK_EQ(offsetof(struct boot_params, hdr.init_size), 0x260);
	CHECK_EQ(offsetof(struct boot_params, e820_table), 0x2d0);
	CHECK_EQ(sizeof(struct boot_e820_entry), 20);
	CHECK_EQ(sizeof(struct boot_params), 4096);
}

static void test_parse(void)
{
	size_t len;
	uint8_t *img = make_bzimage(0x3000, &len);
	struct x86_bzimage bz;
	char why[160] = "";

	CHECK(x86_bzimage_detect(img, len));
	CHECK_EQ(x86_bzimage_parse(img, len, &bz, why, sizeof(why)), 0);
	CHECK_EQ(bz.version, 0x020f);
	CHECK_EQ(bz.setup_bytes, 2560);
	CHECK_EQ(bz.kernel_bytes, 0x3000);
	CHECK_EQ(bz.hdr_end, 0x26c);
	CHECK_EQ(bz.relocatable, 1);
	CHECK_EQ(bz.kernel_alignment, 0x200000);
	CHECK_EQ(bz.initrd_addr_max, 0x7fffffff);
	CHECK_EQ(bz.cmdline_size, 2047);
	CHECK_EQ(bz.pref_address, 0x1000000);
	CHECK_EQ(bz.init_size, 0x800000);
	/* runs at pref_address 16 MiB (above 1 MiB aligned to 2 MiB) for 8 MiB */
	CHECK_EQ(x86_bzimage_end(&bz), 0x1800000);

	bz.relocatable = false;
	CHECK_EQ(x86_bzimage_end(&bz), 0x1800000);
	bz.relocatable = true;
	bz.pref_address = 0x100000;           /* 1 MiB aligned up to 2 MiB */
	CHECK_EQ(x86_bzimage_end(&bz), 0xa00000);
	bz.init_size = 0x1000;                /* image itself larger: 1 MiB + 0x3000 */
	bz.kernel_alignment = 0x1000;
	CHECK_EQ(x86_bzimage_end(&bz), 0x103000);

	img[0x1f1] = 0;                       /* setup_sects 0 means 4 */
	CHECK_EQ(x86_bzimage_parse(img, len, &bz, why, sizeof(why)), 0);
	CHECK_EQ(bz.setup_bytes, 2560);
	free(img);
}

/* Apply one corruption to a fresh image and expect -ENOEXEC with a reason. */
static void expect_reject(const char *what, void (*mutate)(uint8_t *img, size_t *len))
{
	size_t len;
	uint8_t *img = make_bzimage(0x1000, &len);
	struct x86_bzimage bz;
	char why[160] = "";
	int ret;

	mutate(img, &len);
	ret = x86_bzimage_parse(img, len, &bz, why, sizeof(why));
	if (ret != -ENOEXEC || !why[0]) {
		fprintf(stderr, "bzImage with %s: ret %d why '%s'\n", what, ret, why);
		check_failures++;
	}
	free(img);
}

static void no_magic(uint8_t *img, size_t *len) { (void)len; img[0x203] = 'X'; }
static void old_proto(uint8_t *img, size_t *len) { (void)len; wr(img + 0x206, 2, 0x020b); }
static void not_high(uint8_t *img, size_t *len) { (void)len; img[0x211] = 0; }
static void no_64(uint8_t *img, size_t *len) { (void)len; wr(img + 0x236, 2, 0x2); }
static void truncated_setup(uint8_t *img, size_t *len) { (void)img; *len = 2560; }
static void truncated_hdr(uint8_t *img, size_t *len) { (void)img; *len = 0x240; }
static void short_hdr(uint8_t *img, size_t *len) { (void)len; img[0x201] = 0x40; }
static void bad_align(uint8_t *img, size_t *len) { (void)len; wr(img + 0x230, 4, 0x300000); }
static void zero_align(uint8_t *img, size_t *len) { (void)len; wr(img + 0x230, 4, 0); }
static void pref_high(uint8_t *img, size_t *len) { (void)len; wr(img + 0x258, 8, 0x100000000ULL); }
static void pref_low_fixed(uint8_t *img, size_t *len)
{
	(void)len;
	img[0x234] = 0;
	wr(img + 0x258, 8, 0x8000);
}
static void no_init_size(uint8_t *img, size_t *len) { (void)len; wr(img + 0x260, 4, 0); }

static void test_reject(void)
{
	expect_reject("no HdrS", no_magic);
	expect_reject("protocol 2.11", old_proto);
	expect_reject("no LOADED_HIGH", not_high);
	expect_reject("no XLF_KERNEL_64", no_64);
	expect_reject("setup only", truncated_setup);
	expect_reject("truncated header", truncated_hdr);
	expect_reject("header ending at 0x242", short_hdr);
	expect_reject("alignment 3 MiB", bad_align);
	expect_reject("alignment 0", zero_align);
	expect_reject("pref_address 4 GiB", pref_high);
	expect_reject("non-relocatable at 32 KiB", pref_low_fixed);
	expect_reject("init_size 0", no_init_size);
	CHECK(!x86_bzimage_detect((const uint8_t *)"HdrS", 4));
}

static void test_zero_page(void)
{
	size_t len;
	uint8_t *img = make_bzimage(0x1000, &len);
	struct x86_e820_entry e820[3] = {
		{ 0, 0x9fc00, 1 }, { 0x9fc00, 0x60400, 2 }, { 0x100000, 0x7f00000, 1 },
	};
	struct x86_bzimage bz;
	uint8_t zp[4096];
	char why[160];

	CHECK_EQ(x86_bzimage_parse(img, len, &bz, why, sizeof(why)), 0);
	memset(zp, 0xcc, sizeof(zp));
	x86_zero_page_build(zp, img, &bz, &(struct x86_zero_page_args){
		.cmdline_gpa = 0x20000, .initrd_gpa = 0x7c00000, .initrd_size = 0x123456,
		.e820 = e820, .nr_e820 = 3 });

	CHECK_EQ(zp[0x1ef], 0);                         /* sentinel */
	CHECK_EQ(zp[0x1f1], 4);                         /* setup_sects copied */
	CHECK_EQ(rd(zp + 0x1fe, 2), 0xaa55);
	CHECK(memcmp(zp + 0x202, "HdrS", 4) == 0);
	CHECK_EQ(rd(zp + 0x206, 2), 0x020f);
	CHECK_EQ(zp[0x210], 0xff);                      /* type_of_loader */
	CHECK_EQ(zp[0x211], 0x01);                      /* loadflags kept */
	CHECK_EQ(rd(zp + 0x218, 4), 0x7c00000);         /* ramdisk_image */
	CHECK_EQ(rd(zp + 0x21c, 4), 0x123456);          /* ramdisk_size */
	CHECK_EQ(rd(zp + 0x228, 4), 0x20000);           /* cmd_line_ptr */
	CHECK_EQ(rd(zp + 0x0c0, 4), 0);                 /* ext_ramdisk_image */
	CHECK_EQ(rd(zp + 0x0c8, 4), 0);                 /* ext_cmd_line_ptr */
	CHECK_EQ(rd(zp + 0x268, 4), 0x1234);            /* last header field copied */
	CHECK_EQ(rd(zp + 0x270, 4), 0);                 /* past hdr_end: not copied */
	CHECK_EQ(rd(zp + 0x000, 8), 0);                 /* screen_info zero */
	CHECK_EQ(zp[0x1e8], 3);                         /* e820_entries */
	CHECK_EQ(rd(zp + 0x2d0 + 0, 8), 0);
	CHECK_EQ(rd(zp + 0x2d0 + 8, 8), 0x9fc00);
	CHECK_EQ(rd(zp + 0x2d0 + 16, 4), 1);
	CHECK_EQ(rd(zp + 0x2e4 + 0, 8), 0x9fc00);
	CHECK_EQ(rd(zp + 0x2e4 + 8, 8), 0x60400);
	CHECK_EQ(rd(zp + 0x2e4 + 16, 4), 2);
	CHECK_EQ(rd(zp + 0x2f8 + 0, 8), 0x100000);
	CHECK_EQ(rd(zp + 0x2f8 + 8, 8), 0x7f00000);
	CHECK_EQ(rd(zp + 0x2f8 + 16, 4), 1);
	CHECK_EQ(rd(zp + 0x30c, 8), 0);                 /* nothing after entry 3 */
	CHECK_EQ(zp[4095], 0);
	free(img);
}

int main(void)
{
	test_offsets_match_kernel_header();
	test_parse();
	test_reject();
	test_zero_page();
	return check_report("x86_test_bzimage");
}
