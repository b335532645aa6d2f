/*
 * Seed inputs for vmm/x86/fuzz/fuzz_load.c, written at build time:
 *     fuzz_x86_seeds load DIR
 * The kernels are the unit tests' own synthetic images
 * (vmm/x86/tests/images.h: make_bzimage, make_elf, elf_with_vif_note,
 * make_aout, make_mb_elf), each behind fuzz_load.c's header (flags,
 * memory, vCPUs, command-line and initrd lengths).
 */
#include <stdbool.h>

#include "common/fuzz_seeds.h"
#include "vmm/x86/tests/images.h"

static struct fz_out o;

/* fuzz_load.c's memory choices: 0 2M, 2 16M, 3 64M, 4 256M, 6 3G+64M */
static void seed(const char *name, unsigned flags, unsigned msel, unsigned cpus,
		 unsigned cl_len, unsigned initrd_len, const uint8_t *img, size_t len)
{
	o.len = 0;
	fz_put(&o, 1, flags);
	fz_put(&o, 1, msel);
	fz_put(&o, 1, cpus - 1);
	fz_put(&o, 2, cl_len);
	fz_put(&o, 2, initrd_len);
	fz_put_bytes(&o, img, len);
	fz_emit(name, &o);
}

static void seeds_load(void)
{
	size_t len;
	uint8_t *img;

	img = make_bzimage(0x5000, &len);
	seed("bzimage-initrd", 1 | 2, 3, 2, 19, 10000, img, len);
	seed("bzimage-above-4g", 0, 6, 4, 0, 0, img, len);
	free(img);
	img = make_bzimage(0x200, &len);
	seed("bzimage-small-mem", 1, 0, 1, 2047, 300, img, len);
	free(img);

	img = make_elf(true, 8, false, &len);
	seed("elf64-pvh-initrd", 1 | 2, 2, 2, 40, 5000, img, len);
	free(img);
	img = make_elf(false, 4, false, &len);
	seed("elf32-pvh", 2, 3, 1, 10, 0, img, len);
	free(img);
	img = make_elf(true, 8, true, &len);
	seed("elf64-pvh-note-in-section", 4, 3, 3, 0, 0, img, len);
	free(img);
	img = elf_with_vif_note(0x100000, 2, &len);
	seed("elf64-vif-note", 2, 3, 2, 30, 0, img, len);
	free(img);
	img = elf_with_vif_note(0x101000, 1, &len);
	seed("elf64-vif-note-long-cmdline", 2 | 8, 3, 1, 0x7ff0, 0, img, len);
	free(img);

	img = make_aout(&len);
	seed("multiboot-aout-initrd", 1 | 2, 3, 2, 12, 4096, img, len);
	free(img);
	img = make_mb_elf(&len);
	seed("multiboot-elf", 2, 2, 1, 5, 0, img, len);
	free(img);
}

static const struct fz_seed_gen gens[] = {
	{ "load", seeds_load },
};

int main(int argc, char **argv)
{
	return fz_seeds_main(argc, argv, gens, sizeof(gens) / sizeof(gens[0]));
}
