/*
 * x86_load_kernel: read the kernel, pick the boot protocol from its
 * format, and lay out everything the boot vCPU finds in memory (see the
 * map in boot.h). Every failure is one line naming the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/bytes.h"
#include "vmm/x86/multiboot.h"

#define KERNEL_MAX_BYTES (1ULL << 30)

struct load_ctx {
	const struct guest_mem *mem;
	const struct vm_config *cfg;
	struct x86_e820_entry e820[X86_E820_MAX];
	unsigned nr_e820;
	uint64_t initrd_gpa, initrd_size;
	char *err;
	size_t errlen;
};

/* Read exactly len bytes (a file that shrinks while being read is an error). */
static int read_full(int fd, uint8_t *dst, uint64_t len)
{
	while (len) {
		ssize_t n = read(fd, dst, len > (1U << 30) ? (1U << 30) : len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		dst += n;
		len -= (uint64_t)n;
	}
	return 0;
}

static int open_sized(const char *what, const char *path, uint64_t *size,
		      char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s %s: %s", what, path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		snprintf(err, errlen, "%s %s: not a non-empty regular file", what, path);
		close(fd);
		return -EINVAL;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

static int read_kernel(const char *path, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
	uint64_t size;
	int ret, fd = open_sized("kernel", path, &size, err, errlen);

	if (fd < 0)
		return fd;
	if (size > KERNEL_MAX_BYTES) {
		snprintf(err, errlen, "kernel %s: %llu bytes is too large", path,
			 (unsigned long long)size);
		close(fd);
		return -EFBIG;
	}
	*buf = malloc(size);
	if (!*buf) {
		close(fd);
		snprintf(err, errlen, "kernel %s: out of memory", path);
		return -ENOMEM;
	}
	ret = read_full(fd, *buf, size);
	close(fd);
	if (ret) {
		snprintf(err, errlen, "kernel %s: read failed: %s", path, strerror(-ret));
		free(*buf);
		*buf = NULL;
		return ret;
	}
	*len = size;
	return 0;
}

/*
 * Put the initrd as high as possible in [floor, ceiling), page-aligned
 * (boot.rst: as high as the kernel allows, for the kernel's own
 * decompression room below it). floor is the kernel's end.
 */
static int load_initrd(struct load_ctx *c, uint64_t floor, uint64_t ceiling)
{
	const char *path = c->cfg->initrd_path;
	uint64_t size, gpa;
	uint8_t *dst;
	int ret, fd;

	if (!path)
		return 0;
	fd = open_sized("initrd", path, &size, c->err, c->errlen);
	if (fd < 0)
		return fd;
	if (ceiling < floor || size > ceiling - floor ||
	    ((ceiling - size) & ~4095ULL) < floor) {
		snprintf(c->err, c->errlen,
			 "initrd %s: %llu bytes do not fit between the kernel (ends 0x%llx) and 0x%llx",
			 path, (unsigned long long)size, (unsigned long long)floor,
			 (unsigned long long)ceiling);
		close(fd);
		return -ENOSPC;
	}
	gpa = (ceiling - size) & ~4095ULL;
	dst = guest_mem_ptr(c->mem, gpa, size);
	ret = dst ? read_full(fd, dst, size) : -ENOSPC;
	close(fd);
	if (ret) {
		snprintf(c->err, c->errlen, "initrd %s: read failed: %s", path, strerror(-ret));
		return ret;
	}
	c->initrd_gpa = gpa;
	c->initrd_size = size;
	return 0;
}

static int put_cmdline(struct load_ctx *c, uint64_t max_len)
{
	size_t len = strlen(c->cfg->cmdline);
	uint8_t *dst = guest_mem_ptr(c->mem, X86_CMDLINE_GPA, len + 1);

	if (len > max_len || len + 1 > X86_CMDLINE_MAX || !dst) {
		snprintf(c->err, c->errlen, "kernel %s: command line of %zu bytes exceeds its limit of %llu",
			 c->cfg->kernel_path, len,
			 (unsigned long long)(max_len < X86_CMDLINE_MAX - 1 ? max_len : X86_CMDLINE_MAX - 1));
		return -E2BIG;
	}
	memcpy(dst, c->cfg->cmdline, len + 1);
	return 0;
}

/* GDT, MP table and (long mode) page tables: the parts both formats share. */
static int put_tables(struct load_ctx *c, bool long_mode)
{
	uint64_t gdt[X86_GDT_ENTRIES];
	uint8_t *g = guest_mem_ptr(c->mem, X86_GDT_GPA, sizeof(gdt));
	char why[160];
	int ret;

	if (!g) {
		snprintf(c->err, c->errlen, "guest memory has no room for the GDT");
		return -ENOSPC;
	}
	x86_gdt_build(gdt, long_mode);
	for (unsigned i = 0; i < X86_GDT_ENTRIES; i++)
		put_le64(g + 8 * i, gdt[i]);
	if (long_mode) {
		uint8_t *pt = guest_mem_ptr(c->mem, X86_PML4_GPA, X86_PAGE_TABLE_BYTES);

		if (!pt) {
			snprintf(c->err, c->errlen, "guest memory has no room for page tables");
			return -ENOSPC;
		}
		x86_page_tables_build(pt, X86_PML4_GPA);
	}
	ret = x86_mptable_write(c->mem, c->cfg->nr_cpus, why, sizeof(why));
	if (ret)
		snprintf(c->err, c->errlen, "%s", why);
	return ret;
}

static int load_bzimage(struct load_ctx *c, const uint8_t *img, size_t len,
			struct x86_boot_info *out)
{
	const char *path = c->cfg->kernel_path;
	uint64_t low_end = x86_low_ram_end(c->cfg->mem_bytes), end, ceiling;
	struct x86_bzimage bz;
	char why[160];
	uint8_t *dst, *zp;
	int ret;

	ret = x86_bzimage_parse(img, len, &bz, why, sizeof(why));
	if (ret) {
		snprintf(c->err, c->errlen, "kernel %s: %s", path, why);
		return ret;
	}
	end = x86_bzimage_end(&bz);
	dst = guest_mem_ptr(c->mem, X86_HIGH_MEM_GPA, bz.kernel_bytes);
	if (!dst || end > low_end) {
		snprintf(c->err, c->errlen, "kernel %s: needs RAM up to 0x%llx, guest RAM below 4 GiB ends at 0x%llx",
			 path, (unsigned long long)end, (unsigned long long)low_end);
		return -ENOSPC;
	}
	memcpy(dst, img + bz.setup_bytes, bz.kernel_bytes);

	ret = put_cmdline(c, bz.cmdline_size);
	if (ret)
		return ret;
	ceiling = (uint64_t)bz.initrd_addr_max + 1 < low_end ? (uint64_t)bz.initrd_addr_max + 1 : low_end;
	ret = load_initrd(c, end, ceiling);
	if (ret)
		return ret;
	ret = put_tables(c, true);
	if (ret)
		return ret;

	zp = guest_mem_ptr(c->mem, X86_PARAM_GPA, X86_ZERO_PAGE_SIZE);
	if (!zp) {
		snprintf(c->err, c->errlen, "guest memory has no room for the zero page");
		return -ENOSPC;
	}
	x86_zero_page_build(zp, img, &bz, &(struct x86_zero_page_args){
		.cmdline_gpa = (uint32_t)X86_CMDLINE_GPA,
		.initrd_gpa = (uint32_t)c->initrd_gpa,
		.initrd_size = (uint32_t)c->initrd_size,
		.e820 = c->e820, .nr_e820 = c->nr_e820 });

	out->mode = X86_ENTRY_LINUX64;
	out->entry_gpa = X86_HIGH_MEM_GPA + 0x200;   /* boot.rst: 64-bit entry */
	out->param_gpa = X86_PARAM_GPA;
	out->format = "bzImage";
	return 0;
}

static int load_pvh(struct load_ctx *c, const uint8_t *img, size_t len,
		    struct x86_boot_info *out)
{
	const char *path = c->cfg->kernel_path;
	struct x86_elf_pvh elf;
	char why[160];
	uint8_t *page;
	int ret;

	ret = x86_elf_pvh_parse(img, len, &elf, why, sizeof(why));
	if (!ret)
		ret = x86_elf_pvh_load(img, len, c->mem, why, sizeof(why));
	if (ret) {
		snprintf(c->err, c->errlen, "kernel %s: %s", path, why);
		return ret;
	}
	ret = put_cmdline(c, X86_CMDLINE_MAX - 1);
	if (ret)
		return ret;
	ret = load_initrd(c, (elf.load_end + 4095) & ~4095ULL,
			  x86_low_ram_end(c->cfg->mem_bytes));
	if (ret)
		return ret;
	ret = put_tables(c, false);
	if (ret)
		return ret;

	page = guest_mem_ptr(c->mem, X86_PARAM_GPA, 4096);
	ret = page ? x86_pvh_start_info_build(page, &(struct x86_pvh_args){
		.base_gpa = X86_PARAM_GPA, .cmdline_gpa = X86_CMDLINE_GPA,
		.initrd_gpa = c->initrd_gpa, .initrd_size = c->initrd_size,
		.e820 = c->e820, .nr_e820 = c->nr_e820 }) : -ENOSPC;
	if (ret) {
		snprintf(c->err, c->errlen, "guest memory has no room for the PVH start info");
		return ret;
	}

	out->mode = X86_ENTRY_PVH32;
	out->entry_gpa = elf.entry;
	out->param_gpa = X86_PARAM_GPA;
	out->format = "ELF (PVH)";
	out->vif_gpa = elf.vif_gpa;
	out->vif_pages = elf.vif_pages;
	return 0;
}

/*
 * Multiboot loaders (GRUB's "multiboot FILE ARGS", QEMU's -kernel) pass the
 * kernel's file name as the first word of the command line, and kernels
 * rely on it (kvm-unit-tests takes it as argv[0]).
 */
static int put_mb_cmdline(struct load_ctx *c)
{
	size_t plen = strlen(c->cfg->kernel_path), len = strlen(c->cfg->cmdline);
	uint8_t *dst = guest_mem_ptr(c->mem, X86_CMDLINE_GPA, X86_CMDLINE_MAX);

	if (!dst || plen + 1 + len + 1 > X86_CMDLINE_MAX) {
		snprintf(c->err, c->errlen, "kernel %s: file name and command line (%zu bytes) exceed the limit of %llu",
			 c->cfg->kernel_path, plen + 1 + len, (unsigned long long)X86_CMDLINE_MAX - 1);
		return -E2BIG;
	}
	memcpy(dst, c->cfg->kernel_path, plen);
	dst[plen] = ' ';
	memcpy(dst + plen + 1, c->cfg->cmdline, len + 1);
	if (!len)
		dst[plen] = '\0';
	return 0;
}

static int load_multiboot(struct load_ctx *c, const uint8_t *img, size_t len,
			  struct x86_boot_info *out)
{
	const char *path = c->cfg->kernel_path;
	struct x86_multiboot mb;
	char why[160];
	uint8_t *page;
	int ret;

	ret = x86_multiboot_parse(img, len, &mb, why, sizeof(why));
	if (!ret)
		ret = x86_multiboot_load(img, len, &mb, c->mem, why, sizeof(why));
	if (ret) {
		snprintf(c->err, c->errlen, "kernel %s: %s", path, why);
		return ret;
	}
	ret = put_mb_cmdline(c);
	if (ret)
		return ret;
	ret = load_initrd(c, (mb.load_end + 4095) & ~4095ULL,
			  x86_low_ram_end(c->cfg->mem_bytes));
	if (ret)
		return ret;
	ret = put_tables(c, false);
	if (ret)
		return ret;

	page = guest_mem_ptr(c->mem, X86_PARAM_GPA, 4096);
	ret = page ? x86_multiboot_info_build(page, &(struct x86_multiboot_args){
		.base_gpa = X86_PARAM_GPA, .mem_bytes = c->cfg->mem_bytes,
		.cmdline_gpa = (uint32_t)X86_CMDLINE_GPA,
		.module_gpa = (uint32_t)c->initrd_gpa, .module_size = (uint32_t)c->initrd_size,
		.e820 = c->e820, .nr_e820 = c->nr_e820 }) : -ENOSPC;
	if (ret) {
		snprintf(c->err, c->errlen, "guest memory has no room for the multiboot info");
		return ret;
	}

	out->mode = X86_ENTRY_PVH32;
	out->entry_gpa = mb.entry;
	out->param_gpa = X86_PARAM_GPA;
	out->entry_eax = X86_MB_BOOT_MAGIC;
	out->format = mb.aout ? "multiboot (a.out kludge)" : "multiboot (ELF)";
	return 0;
}

/* An ELF whose PVH note parses is PVH even if it also has a multiboot
 * header (Linux's vmlinux and the test guests keep their PVH boot). */
static bool is_multiboot(const uint8_t *img, size_t len)
{
	struct x86_elf_pvh elf;
	char why[160];

	if (!x86_multiboot_detect(img, len))
		return false;
	return !x86_elf_detect(img, len) ||
	       x86_elf_pvh_parse(img, len, &elf, why, sizeof(why)) != 0;
}

int x86_load_kernel(const struct guest_mem *mem, const struct vm_config *cfg,
		    struct x86_boot_info *out, char *err, size_t errlen)
{
	struct load_ctx c = { .mem = mem, .cfg = cfg, .err = err, .errlen = errlen };
	uint8_t *img = NULL;
	size_t len = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	out->irqchip = cfg->irqchip;
	out->no_x2apic = cfg->no_x2apic;
	c.nr_e820 = x86_e820_build(cfg->mem_bytes, c.e820, X86_E820_MAX);
	if (!c.nr_e820 || !guest_mem_ptr(mem, 0, X86_HIGH_MEM_GPA)) {
		snprintf(err, errlen, "guest memory (%llu bytes) is too small to boot from",
			 (unsigned long long)cfg->mem_bytes);
		return -EINVAL;
	}
	ret = read_kernel(cfg->kernel_path, &img, &len, err, errlen);
	if (ret)
		return ret;
	if (x86_bzimage_detect(img, len)) {
		ret = load_bzimage(&c, img, len, out);
	} else if (is_multiboot(img, len)) {
		ret = load_multiboot(&c, img, len, out);
	} else if (x86_elf_detect(img, len)) {
		ret = load_pvh(&c, img, len, out);
	} else {
		snprintf(err, errlen, "kernel %s: neither a bzImage nor an ELF file nor a multiboot kernel",
			 cfg->kernel_path);
		ret = -ENOEXEC;
	}
	free(img);
	if (!ret)
		log_info("kernel %s: %s, entry 0x%llx, %u CPUs, initrd %llu bytes at 0x%llx",
			 cfg->kernel_path, out->format, (unsigned long long)out->entry_gpa,
			 cfg->nr_cpus, (unsigned long long)c.initrd_size,
			 (unsigned long long)c.initrd_gpa);
	return ret;
}
