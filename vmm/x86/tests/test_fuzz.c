/*
 * Corrupt-header fuzzing: thousands of mutated bzImage and ELF headers
 * (byte flips, extreme field values, truncation) through every parser and
 * loader. Passing means no crash and no out-of-bounds access (run under
 * ASan+UBSan to see the latter), and that anything accepted still obeys
 * the invariants the loader relies on. Deterministic: fixed seed.
 */
#include <errno.h>
#include <stdlib.h>

#include "vmm/x86/boot.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

#define ITERATIONS 3000
#define MEM_BYTES_FUZZ (8ULL << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static const uint64_t extremes[] = {
	0, 1, 0x7f, 0xff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0xfffffffc,
	0x100000, 0x2000, 0x2010, 0x2028, 0x2038, 0x30, 0x2c, 0x18, 0xffffffffffffffffULL, 0x8000000000000000ULL,
};

/* Byte ranges of a seed worth mutating (headers and notes, not payload). */
struct region {
	size_t off, len;
};

static size_t pick(const struct region *r, unsigned nr, size_t room)
{
	const struct region *x = &r[rng() % nr];

	return x->off + rng() % (x->len > room ? x->len - room : 1);
}

/* Mutate a copy of seed inside its regions; returns an exact-size buffer. */
static uint8_t *mutate(const uint8_t *seed, size_t seed_len, const struct region *r,
		       unsigned nr, size_t *len)
{
	uint8_t *img = malloc(seed_len);
	unsigned kind = rng() % 4;

	memcpy(img, seed, seed_len);
	*len = seed_len;
	if (kind == 0 || kind == 3) {                  /* flip 1..8 bytes */
		for (unsigned n = 1 + rng() % 8; n; n--)
			img[pick(r, nr, 1)] ^= (uint8_t)(1 + rng() % 255);
	}
	if (kind == 1 || kind == 3) {                  /* an extreme field value */
		size_t off = pick(r, nr, 8) & ~3ULL;

		wr(img + off, rng() % 2 ? 4 : 8, extremes[rng() % (sizeof(extremes) / 8)]);
	}
	if (kind == 2) {                               /* truncate */
		uint8_t *cut;

		*len = rng() % seed_len;
		cut = malloc(*len ? *len : 1);
		memcpy(cut, img, *len);
		free(img);
		img = cut;
	}
	return img;
}

static unsigned accepted_bz, accepted_elf;

static void run_parsers(const uint8_t *img, size_t len, struct guest_mem *mem)
{
	struct x86_bzimage bz;
	struct x86_elf_pvh elf;
	char why[256];

	if (x86_bzimage_parse(img, len, &bz, why, sizeof(why)) == 0) {
		uint8_t *zp = malloc(X86_ZERO_PAGE_SIZE);
		struct x86_e820_entry e820[X86_E820_MAX];
		unsigned n = x86_e820_build(MEM_BYTES_FUZZ, e820, X86_E820_MAX);

		accepted_bz++;
		CHECK(bz.setup_bytes < len);
		CHECK(bz.setup_bytes + bz.kernel_bytes == len);
		CHECK(bz.hdr_end >= 0x264 && bz.hdr_end <= 0x290 && bz.hdr_end <= len);
		CHECK(x86_bzimage_end(&bz) >= 0x100000 + bz.kernel_bytes);
		x86_zero_page_build(zp, img, &bz, &(struct x86_zero_page_args){
			.cmdline_gpa = 0x20000, .e820 = e820, .nr_e820 = n });
		free(zp);
	}
	if (x86_elf_pvh_parse(img, len, &elf, why, sizeof(why)) == 0) {
		accepted_elf++;
		CHECK(elf.nr_load > 0);
		CHECK(elf.entry >= elf.load_start && elf.entry < elf.load_end);
		x86_elf_pvh_load(img, len, mem, why, sizeof(why));
	}
}



int main(void)
{
	struct { uint8_t *img; size_t len; struct region r[3]; unsigned nr; } seeds[4];
	struct guest_mem mem;
	unsigned total = 0;

	if (test_mem_init(&mem, MEM_BYTES_FUZZ))
		return 1;
	seeds[0].img = make_bzimage(0x2000, &seeds[0].len);
	seeds[0].r[0] = (struct region){ 0x1e0, 0xa0 };   /* setup header */
	seeds[0].nr = 1;
	seeds[1].img = make_elf(true, 8, false, &seeds[1].len);
	seeds[2].img = make_elf(false, 4, false, &seeds[2].len);
	seeds[3].img = make_elf(true, 4, true, &seeds[3].len);
	for (unsigned s = 1; s < 4; s++) {
		seeds[s].r[0] = (struct region){ 0, 0x100 };                 /* ELF + program headers */
		seeds[s].r[1] = (struct region){ ELF_SHDR_OFF, 0x80 };       /* section headers */
		seeds[s].r[2] = (struct region){ ELF_NOTE_OFF, seeds[s].len - ELF_NOTE_OFF };
		seeds[s].nr = 3;
	}
	/* the unmutated seeds must be accepted, or the fuzzing proves little */
	run_parsers(seeds[0].img, seeds[0].len, &mem);
	CHECK_EQ(accepted_bz, 1);
	for (unsigned s = 1; s < 4; s++)
		run_parsers(seeds[s].img, seeds[s].len, &mem);
	CHECK_EQ(accepted_elf, 3);

	for (unsigned s = 0; s < 4; s++) {
		for (unsigned i = 0; i < ITERATIONS; i++, total++) {
			size_t len;
			uint8_t *img = mutate(seeds[s].img, seeds[s].len, seeds[s].r, seeds[s].nr, &len);

			run_parsers(img, len, &mem);
			free(img);
		}
		free(seeds[s].img);
	}
	printf("fuzz: %u mutated images, %u accepted as bzImage, %u as PVH ELF\n",
	       total, accepted_bz, accepted_elf);
	test_mem_free(&mem);
	return check_report("x86_test_fuzz");
}
