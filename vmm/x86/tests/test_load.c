/*
 * x86_load_kernel end to end on files: what lands where in guest memory
 * for a bzImage and a PVH ELF, and each bad input refused with a line that
 * names the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

#define MEM_BYTES (64ULL << 20)

static char dir[] = "/tmp/lagvisor-x86-test-XXXXXX";

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

static struct vm_config base_cfg(const char *kernel)
{
	return (struct vm_config){ .kernel_path = kernel, .cmdline = "console=ttyS0 quiet",
				   .nr_cpus = 2, .mem_bytes = MEM_BYTES,
				   .irqchip = IRQCHIP_USER };
}

static void test_bzimage(void)
{
	size_t len;
	uint8_t *img = make_bzimage(0x5000, &len);
	uint8_t initrd[10000];
	char *kpath = write_file("bzImage", img, len), *ipath;
	struct vm_config cfg = base_cfg(kpath);
	struct x86_boot_info boot;
	struct guest_mem mem;
	char err[256] = "";
	uint8_t *g, *zp;

	for (unsigned i = 0; i < sizeof(initrd); i++)
		initrd[i] = (uint8_t)(i * 7);
	ipath = write_file("initrd", initrd, sizeof(initrd));
	cfg.initrd_path = ipath;
	if (test_mem_init(&mem, MEM_BYTES)) {
		CHECK(!"mmap");
		return;
	}
	g = mem.slots[0].hva;
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(boot.mode, X86_ENTRY_LINUX64);
	CHECK_EQ(boot.entry_gpa, 0x100200);
	CHECK_EQ(boot.param_gpa, 0x7000);
	CHECK_EQ(boot.irqchip, IRQCHIP_USER);
	CHECK(strcmp(boot.format, "bzImage") == 0);

	CHECK_EQ(g[0x100000], 0xa5);                      /* protected-mode kernel */
	CHECK_EQ(g[0x104fff], 0xa5);
	CHECK_EQ(g[0x105000], 0);
	CHECK(strcmp((char *)g + 0x20000, "console=ttyS0 quiet") == 0);

	zp = g + 0x7000;
	CHECK(memcmp(zp + 0x202, "HdrS", 4) == 0);
	CHECK_EQ(zp[0x210], 0xff);
	CHECK_EQ(rd(zp + 0x228, 4), 0x20000);
	/* initrd: top of RAM (64 MiB < initrd_addr_max), 10000 bytes, page-aligned down */
	CHECK_EQ(rd(zp + 0x218, 4), 0x3ffd000);
	CHECK_EQ(rd(zp + 0x21c, 4), 10000);
	CHECK(memcmp(g + 0x3ffd000, initrd, sizeof(initrd)) == 0);
	CHECK_EQ(zp[0x1e8], 3);
	CHECK_EQ(rd(zp + 0x2f8 + 8, 8), MEM_BYTES - 0x100000);

	CHECK_EQ(rd(g + 0x510, 8), 0x00af9b000000ffffULL);   /* GDT: 64-bit CS */
	CHECK_EQ(rd(g + 0x9000, 8), 0xa003);                  /* PML4 */
	CHECK(memcmp(g + 0x9fc00, "_MP_", 4) == 0);
	CHECK_EQ(rd(g + 0xf0000 + 34, 2), 2 + 19);            /* MP entries for 2 CPUs */

	/* initrd_addr_max below RAM's end caps the initrd */
	wr(img + 0x22c, 4, 0x1ffffff);
	kpath = write_file("bzImage-lowinitrd", img, len);
	cfg.kernel_path = kpath;
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	CHECK_EQ(rd(g + 0x7000 + 0x218, 4), 0x1ffd000);

	/* command line longer than cmdline_size */
	wr(img + 0x238, 4, 10);
	cfg.kernel_path = write_file("bzImage-shortcmd", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -E2BIG);
	CHECK(strstr(err, "bzImage-shortcmd") && strstr(err, "command line"));
	wr(img + 0x238, 4, 2047);

	/* init_size larger than RAM */
	wr(img + 0x260, 4, 0x4000000);
	cfg.kernel_path = write_file("bzImage-huge", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOSPC);
	CHECK(strstr(err, "bzImage-huge") != NULL);
	/* initrd does not fit between the kernel's end and initrd_addr_max */
	wr(img + 0x260, 4, 0x1fff000);          /* kernel to 16 MiB + 0x1fff000 */
	cfg.kernel_path = write_file("bzImage-tight", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOSPC);
	CHECK(strstr(err, "initrd") && strstr(err, ipath));
	/* garbage protocol version: the reason names the file */
	wr(img + 0x206, 2, 0x0200);
	cfg.kernel_path = write_file("bzImage-old", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOEXEC);
	CHECK(strstr(err, "bzImage-old") && strstr(err, "2.00"));

	test_mem_free(&mem);
	free(img);
}

static void test_pvh(void)
{
	size_t len;
	uint8_t *img = make_elf(true, 4, false, &len);
	uint8_t initrd[5000];
	struct vm_config cfg = base_cfg(write_file("vmlinux", img, len));
	struct x86_boot_info boot;
	struct guest_mem mem;
	char err[256] = "";
	uint8_t *g, *si, *map;

	memset(initrd, 0x3c, sizeof(initrd));
	cfg.initrd_path = write_file("initrd-pvh", initrd, sizeof(initrd));
	cfg.irqchip = IRQCHIP_KERNEL;
	cfg.nr_cpus = 4;
	if (test_mem_init(&mem, MEM_BYTES)) {
		CHECK(!"mmap");
		return;
	}
	g = mem.slots[0].hva;
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	if (err[0])
		fprintf(stderr, "%s\n", err);
	CHECK_EQ(boot.mode, X86_ENTRY_PVH32);
	CHECK_EQ(boot.entry_gpa, 0x100010);
	CHECK_EQ(boot.param_gpa, 0x7000);
	CHECK_EQ(boot.irqchip, IRQCHIP_KERNEL);
	CHECK_EQ(g[0x100000], 0x90);

	si = g + 0x7000;
	CHECK_EQ(rd(si + 0, 4), 0x336ec578);            /* magic */
	CHECK_EQ(rd(si + 4, 4), 1);                     /* version */
	CHECK_EQ(rd(si + 8, 4), 0);                     /* flags */
	CHECK_EQ(rd(si + 12, 4), 1);                    /* nr_modules */
	CHECK_EQ(rd(si + 16, 8), 0x7040);               /* modlist_paddr */
	CHECK_EQ(rd(si + 24, 8), 0x20000);              /* cmdline_paddr */
	CHECK_EQ(rd(si + 32, 8), 0);                    /* rsdp_paddr */
	CHECK_EQ(rd(si + 40, 8), 0x7080);               /* memmap_paddr */
	CHECK_EQ(rd(si + 48, 4), 3);                    /* memmap_entries */
	CHECK_EQ(rd(si + 52, 4), 0);
	/* module 0 = initrd at the top of RAM: 64 MiB - 5000 rounded down to 4 KiB */
	CHECK_EQ(rd(g + 0x7040, 8), 0x3ffe000);
	CHECK_EQ(rd(g + 0x7048, 8), 5000);
	CHECK_EQ(rd(g + 0x7050, 8), 0);
	CHECK_EQ(g[0x3ffe000], 0x3c);
	map = g + 0x7080;                               /* 24-byte entries */
	CHECK(rd(map + 0, 8) == 0 && rd(map + 8, 8) == 0x9fc00 && rd(map + 16, 4) == 1);
	CHECK(rd(map + 24, 8) == 0x9fc00 && rd(map + 32, 8) == 0x60400 && rd(map + 40, 4) == 2);
	CHECK(rd(map + 48, 8) == 0x100000 && rd(map + 56, 8) == MEM_BYTES - 0x100000 &&
	      rd(map + 64, 4) == 1);
	CHECK_EQ(rd(g + 0x510, 8), 0x00cf9b000000ffffULL);   /* GDT: 32-bit CS */
	CHECK_EQ(rd(g + 0xf0000 + 34, 2), 4 + 19);

	/* no initrd: no module */
	cfg.initrd_path = NULL;
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), 0);
	CHECK_EQ(rd(si + 12, 4), 0);
	CHECK_EQ(rd(si + 16, 8), 0);

	/* ELF without the PVH note */
	wr(img + ELF_XEN_NOTE + 8, 4, 17);
	wr(img + 60, 2, 0);
	cfg.kernel_path = write_file("vmlinux-nonote", img, len);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOEXEC);
	CHECK(strstr(err, "vmlinux-nonote") && strstr(err, "PVH"));
	test_mem_free(&mem);
	free(img);
}

static void test_bad_files(void)
{
	struct guest_mem mem;
	struct x86_boot_info boot;
	struct vm_config cfg;
	char err[256];
	char path[160];

	if (test_mem_init(&mem, MEM_BYTES)) {
		CHECK(!"mmap");
		return;
	}
	snprintf(path, sizeof(path), "%s/does-not-exist", dir);
	cfg = base_cfg(path);
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOENT);
	CHECK(strstr(err, path) != NULL);

	cfg = base_cfg(dir);                                   /* a directory */
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, dir) != NULL);

	cfg = base_cfg(write_file("empty", "", 0));
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -EINVAL);

	cfg = base_cfg(write_file("text", "#!/bin/sh\necho hello\n", 21));
	CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOEXEC);
	CHECK(strstr(err, "neither a bzImage nor an ELF") && strstr(err, "text"));

	/* a good kernel with a missing initrd */
	{
		size_t len;
		uint8_t *img = make_bzimage(0x1000, &len);

		cfg = base_cfg(write_file("bz-ok", img, len));
		snprintf(path, sizeof(path), "%s/no-initrd", dir);
		cfg.initrd_path = path;
		CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -ENOENT);
		CHECK(strstr(err, "initrd") && strstr(err, path));
		/* too many CPUs for the MP table */
		cfg.initrd_path = NULL;
		cfg.nr_cpus = 255;
		CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -EINVAL);
		/* too little memory to boot from */
		cfg.nr_cpus = 1;
		cfg.mem_bytes = 1 << 20;
		CHECK_EQ(x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err)), -EINVAL);
		free(img);
	}
	test_mem_free(&mem);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_bzimage();
	test_pvh();
	test_bad_files();
	{
		char cmd[200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return check_report("x86_test_load");
}
