/*
 * boot_image: run x86_load_kernel into anonymous memory and write what a
 * QEMU TCG machine needs to start from exactly that memory: a 128 KiB
 * firmware (guest bytes 0xe0000..0xff000, so the MP table, then the
 * trampoline tramp.bin with the entry mode/address/parameter filled in)
 * and one file per run of non-zero RAM. Prints the QEMU arguments.
 *
 * usage: boot_image OUTDIR TRAMP_BIN KERNEL MEM_MIB CPUS CMDLINE [INITRD]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "../images.h"

#define ROM_BYTES     0x20000ULL         /* QEMU wants a multiple of 64 KiB */
#define ROM_BASE      0xe0000ULL
#define TRAMP_GPA     0xff000ULL
#define PARAMS_GPA    0xffe00ULL

static int write_blob(const char *path, const uint8_t *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(p, 1, len, f) != len) {
		fprintf(stderr, "boot_image: cannot write %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f);
}

static bool page_zero(const uint8_t *p)
{
	for (unsigned i = 0; i < 4096; i++)
		if (p[i])
			return false;
	return true;
}

int main(int argc, char **argv)
{
	struct vm_config cfg = { 0 };
	struct x86_boot_info boot;
	struct guest_mem mem;
	char err[512], path[4096];
	uint8_t rom[ROM_BYTES], *g;
	FILE *tf;
	size_t tn;

	if (argc < 7) {
		fprintf(stderr, "usage: boot_image OUTDIR TRAMP_BIN KERNEL MEM_MIB CPUS CMDLINE [INITRD]\n");
		return 2;
	}
	cfg.kernel_path = argv[3];
	cfg.mem_bytes = strtoull(argv[4], NULL, 0) << 20;
	cfg.nr_cpus = (unsigned)strtoul(argv[5], NULL, 0);
	cfg.cmdline = argv[6];
	cfg.initrd_path = argc > 7 ? argv[7] : NULL;
	cfg.irqchip = IRQCHIP_KERNEL;
	if (cfg.mem_bytes > X86_MMIO_HOLE_START || test_mem_init(&mem, cfg.mem_bytes)) {
		fprintf(stderr, "boot_image: bad memory size\n");
		return 2;
	}
	g = mem.slots[0].hva;
	if (x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err))) {
		fprintf(stderr, "boot_image: %s\n", err);
		return 1;
	}
	for (uint64_t a = 0xa0000; a < ROM_BASE; a += 4096)
		if (!page_zero(g + a)) {
			fprintf(stderr, "boot_image: data at 0x%llx, where QEMU has VGA/option ROMs\n",
				(unsigned long long)a);
			return 1;
		}

	memcpy(rom, g + ROM_BASE, ROM_BYTES);
	tf = fopen(argv[2], "rb");
	tn = tf ? fread(rom + (TRAMP_GPA - ROM_BASE), 1, 4096, tf) : 0;
	if (tf)
		fclose(tf);
	if (tn != 4096) {
		fprintf(stderr, "boot_image: %s is not a 4 KiB trampoline\n", argv[2]);
		return 1;
	}
	for (uint64_t a = TRAMP_GPA; a < 0x100000; a++)
		if (g[a]) {
			fprintf(stderr, "boot_image: guest data at 0x%llx overlaps the trampoline\n",
				(unsigned long long)a);
			return 1;
		}
	put_le32(rom + (PARAMS_GPA - ROM_BASE), boot.mode == X86_ENTRY_PVH32);
	put_le64(rom + (PARAMS_GPA - ROM_BASE) + 8, boot.entry_gpa);
	put_le64(rom + (PARAMS_GPA - ROM_BASE) + 16, boot.param_gpa);
	snprintf(path, sizeof(path), "%s/bios.bin", argv[1]);
	if (write_blob(path, rom, ROM_BYTES))
		return 1;
	printf("-bios %s", path);

	/* RAM outside the legacy hole: runs of non-zero pages, one loader each. */
	for (uint64_t a = 0; a < cfg.mem_bytes;) {
		uint64_t end;

		if ((a >= 0xa0000 && a < 0x100000) || page_zero(g + a)) {
			a += 4096;
			continue;
		}
		for (end = a + 4096; end < cfg.mem_bytes && !(end >= 0xa0000 && end < 0x100000) &&
				     !page_zero(g + end); end += 4096)
			;
		snprintf(path, sizeof(path), "%s/ram-%llx.bin", argv[1], (unsigned long long)a);
		if (write_blob(path, g + a, end - a))
			return 1;
		printf(" -device loader,file=%s,addr=0x%llx,force-raw=on", path,
		       (unsigned long long)a);
		a = end;
	}
	printf("\n");
	fprintf(stderr, "boot_image: %s, entry 0x%llx, param 0x%llx\n", boot.format,
		(unsigned long long)boot.entry_gpa, (unsigned long long)boot.param_gpa);
	test_mem_free(&mem);
	return 0;
}
