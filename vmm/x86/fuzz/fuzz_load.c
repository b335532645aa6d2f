/*
 * libFuzzer target: the whole kernel load path, x86_load_kernel, as
 * vm_create runs it: the kernel (and an initrd) read from files, the
 * format detected (bzImage, multiboot, ELF with the PVH note and
 * lagvisor's VIF note), the image, command line, initrd and boot
 * structures written into guest memory laid out by x86_mem_layout, then
 * the command-line word native mode appends (x86_native_setup's part that
 * needs no KVM).
 *
 * Guest memory is mapped with an inaccessible page on each side of every
 * slot, so a write past a slot faults. A kernel whose segments span more
 * than 256 MiB gets only 256 MiB of RAM (see load_span).
 *
 * Input: u8 flags (bit 0 initrd, bit 1 irqchip user, bit 2 no x2APIC,
 * bit 3 multiboot-style long command line), u8 memory size choice, u8
 * vCPUs - 1 (1..254), u16 command-line length, u16 initrd length, then
 * the kernel file. vmm/x86/fuzz/seeds.c writes the seeds.
 *
 * Beyond ASan/UBSan and leaks: a refusal is one non-empty line; a loaded
 * kernel's entry is in guest RAM; a bzImage's protected-mode code is at
 * 1 MiB intact; the initrd lies page-aligned above the kernel and holds
 * the file's bytes; the command line in guest memory is the one given; a
 * declared VIF array is whole pages of guest RAM inside the image.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/fuzz_target.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "vmm/x86/multiboot.h"
#include "vmm/x86/pvm.h"

#define PAGE 4096ull

#define ZERO_FILL_MAX (256ull << 20)

static int kernel_fd = -1, initrd_fd = -1;
static bool verbose;                    /* FUZZ_VERBOSE=1: say what each input did */
static char kernel_path[64], initrd_path[64];

/*
 * The command line and initrd contents are fixed patterns, written once:
 * filling up to 64 KiB byte by byte on every input (instrumented code)
 * took half the target's time.
 */
static char cl_pattern[X86_CMDLINE_MAX + 16];
static uint8_t initrd[65536];

static const uint64_t mem_sizes[] = {
	2ull << 20, (2ull << 20) + PAGE, 16ull << 20, 64ull << 20, 256ull << 20,
	3ull << 30, (3ull << 30) + (64ull << 20),        /* the last one has RAM above 4 GiB */
};

static uint8_t *g_map[GUEST_MEM_MAX_SLOTS];
static size_t g_map_len[GUEST_MEM_MAX_SLOTS];

/* x86_mem_layout's slots, each between two PROT_NONE pages. */
static int mem_map(struct guest_mem *mem, uint64_t bytes)
{
	memset(mem, 0, sizeof(*mem));
	mem->nr = x86_mem_layout(bytes, mem->slots, GUEST_MEM_MAX_SLOTS);
	FZ_ASSERT(mem->nr >= 1);
	for (unsigned i = 0; i < mem->nr; i++) {
		size_t len = mem->slots[i].size + 2 * PAGE;
		uint8_t *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				  -1, 0);

		FZ_ASSERT(p != MAP_FAILED);
		FZ_ASSERT(!mprotect(p + PAGE, mem->slots[i].size, PROT_READ | PROT_WRITE));
		g_map[i] = p;
		g_map_len[i] = len;
		mem->slots[i].hva = p + PAGE;
	}
	return 0;
}

static void mem_unmap(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nr; i++)
		munmap(g_map[i], g_map_len[i]);
	mem->nr = 0;
}

/*
 * How much guest memory loading img writes at most, as far as the parsers
 * say (ELF segments and multiboot bss are zero-filled to their end). A
 * kernel of more than ZERO_FILL_MAX is given no more RAM than that, so the
 * loader refuses it rather than zero gigabytes of a big guest, which only
 * runs into the fuzzer's memory limit (a real guest may have that bss).
 */
static uint64_t load_span(const uint8_t *img, size_t len)
{
	struct x86_multiboot mb;
	struct x86_elf_pvh e;
	uint64_t span = 0;
	char why[160];

	if (x86_multiboot_parse(img, len, &mb, why, sizeof(why)) == 0)
		span = mb.load_end - mb.load_start;
	if (x86_elf_pvh_parse(img, len, &e, why, sizeof(why)) == 0 && e.load_end - e.load_start > span)
		span = e.load_end - e.load_start;
	return span;
}

static void put_file(int fd, const void *p, size_t n)
{
	FZ_ASSERT(ftruncate(fd, 0) == 0);
	FZ_ASSERT(pwrite(fd, p, n, 0) == (ssize_t)n);
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Where the loader says it put the initrd, from the boot structure. */
static void initrd_placed(const struct guest_mem *mem, const struct x86_boot_info *b,
			  uint64_t *gpa, uint64_t *size)
{
	const uint8_t *page = guest_mem_ptr(mem, X86_PARAM_GPA, PAGE);

	FZ_ASSERT(page);
	if (b->mode == X86_ENTRY_LINUX64) {             /* zero page: ramdisk_image/size */
		*gpa = le(page + 0x218, 4);
		*size = le(page + 0x21c, 4);
	} else if (b->entry_eax == X86_MB_BOOT_MAGIC) { /* multiboot module 0 */
		*gpa = le(page + X86_MB_MODS_OFF, 4);
		*size = le(page + X86_MB_MODS_OFF + 4, 4) - *gpa;
	} else {                                        /* PVH modlist entry 0 */
		*gpa = le(page + X86_PVH_MODLIST_OFF, 8);
		*size = le(page + X86_PVH_MODLIST_OFF + 8, 8);
	}
}

static void check_loaded(const struct guest_mem *mem, const struct vm_config *cfg,
			 const struct x86_boot_info *b, const uint8_t *img, size_t len,
			 const uint8_t *initrd, size_t initrd_len)
{
	uint64_t kstart = X86_HIGH_MEM_GPA, kend = 0, igpa, isize;
	const char *cl;
	char why[160];

	FZ_ASSERT(b->format);
	FZ_ASSERT(b->param_gpa == X86_PARAM_GPA);
	FZ_ASSERT(guest_mem_ptr(mem, b->entry_gpa, 1));
	FZ_ASSERT(b->irqchip == cfg->irqchip && b->no_x2apic == cfg->no_x2apic);

	if (b->mode == X86_ENTRY_LINUX64) {
		struct x86_bzimage bz;
		const uint8_t *k;

		FZ_ASSERT(x86_bzimage_parse(img, len, &bz, why, sizeof(why)) == 0);
		k = guest_mem_ptr(mem, X86_HIGH_MEM_GPA, bz.kernel_bytes);
		FZ_ASSERT(k && !memcmp(k, img + bz.setup_bytes, bz.kernel_bytes));
		kend = x86_bzimage_end(&bz);
	} else if (b->entry_eax == X86_MB_BOOT_MAGIC) {
		struct x86_multiboot mb;

		FZ_ASSERT(x86_multiboot_parse(img, len, &mb, why, sizeof(why)) == 0);
		kstart = mb.load_start;
		kend = mb.load_end;
	} else {
		struct x86_elf_pvh e;

		FZ_ASSERT(x86_elf_pvh_parse(img, len, &e, why, sizeof(why)) == 0);
		kstart = e.load_start;
		kend = e.load_end;
		FZ_ASSERT(e.vif_gpa == b->vif_gpa && e.vif_pages == b->vif_pages);
	}
	FZ_ASSERT(kstart >= X86_HIGH_MEM_GPA && kend >= kstart);

	/* the command line, as given (multiboot: the file name first) */
	cl = guest_mem_ptr(mem, X86_CMDLINE_GPA, X86_CMDLINE_MAX);
	FZ_ASSERT(cl && memchr(cl, 0, X86_CMDLINE_MAX));
	if (b->entry_eax == X86_MB_BOOT_MAGIC) {
		size_t plen = strlen(cfg->kernel_path);

		FZ_ASSERT(!strncmp(cl, cfg->kernel_path, plen));
		FZ_ASSERT(cfg->cmdline[0] ? cl[plen] == ' ' && !strcmp(cl + plen + 1, cfg->cmdline)
					  : cl[plen] == 0);
	} else {
		FZ_ASSERT(!strcmp(cl, cfg->cmdline));
	}

	if (initrd) {
		const uint8_t *p;

		initrd_placed(mem, b, &igpa, &isize);
		FZ_ASSERT(isize == initrd_len && igpa % PAGE == 0);
		FZ_ASSERT(igpa >= kend || igpa + isize <= kstart);
		p = guest_mem_ptr(mem, igpa, isize);
		FZ_ASSERT(p && !memcmp(p, initrd, initrd_len));
	}

	if (b->vif_gpa) {
		FZ_ASSERT(b->vif_gpa % PAGE == 0 && b->vif_pages >= 1);
		FZ_ASSERT(guest_mem_ptr(mem, b->vif_gpa, (uint64_t)b->vif_pages * PAGE));
		FZ_ASSERT(b->vif_gpa >= kstart && b->vif_gpa + (uint64_t)b->vif_pages * PAGE <= kend);
		/* x86_native_setup on a PVM backend */
		if (b->vif_pages >= cfg->nr_cpus) {
			char *cmd = (char *)guest_mem_ptr(mem, X86_CMDLINE_GPA, X86_CMDLINE_MAX);
			size_t before = strlen(cmd);
			int r = x86_pvm_cmdline_append(cmd, X86_CMDLINE_MAX, b->vif_gpa);

			FZ_ASSERT(r == 0 || r == -E2BIG);
			FZ_ASSERT(memchr(cmd, 0, X86_CMDLINE_MAX));
			FZ_ASSERT(r ? strlen(cmd) == before : strlen(cmd) > before);
		}
	}
}

void fz_setup(void)
{
	for (size_t i = 0; i < sizeof(cl_pattern); i++)
		cl_pattern[i] = (char)('a' + i % 26);
	for (size_t i = 0; i < sizeof(initrd); i++)
		initrd[i] = (uint8_t)(i * 7 + 1);
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	kernel_fd = memfd_create("fuzz-kernel", 0);
	initrd_fd = memfd_create("fuzz-initrd", 0);
	FZ_ASSERT(kernel_fd >= 0 && initrd_fd >= 0);
	snprintf(kernel_path, sizeof(kernel_path), "/proc/self/fd/%d", kernel_fd);
	snprintf(initrd_path, sizeof(initrd_path), "/proc/self/fd/%d", initrd_fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char cmdline[X86_CMDLINE_MAX + 16];
	struct fz_in in = { data, size };
	uint8_t flags = fz_u8(&in), msel = fz_u8(&in), cpus = fz_u8(&in);
	size_t cl_len = fz_u16(&in), initrd_len = fz_u16(&in) % sizeof(initrd);
	struct vm_config cfg = {
		.kernel_path = kernel_path, .cmdline = cmdline,
		.nr_cpus = 1 + cpus % VM_MAX_CPUS,
		.mem_bytes = mem_sizes[msel % (sizeof(mem_sizes) / sizeof(mem_sizes[0]))],
		.irqchip = (flags & 2) ? IRQCHIP_USER : IRQCHIP_KERNEL,
		.no_x2apic = flags & 4,
	};
	struct x86_boot_info boot;
	struct guest_mem mem;
	char err[512];
	int r;

	if (cfg.mem_bytes > ZERO_FILL_MAX && load_span(in.p, in.len) > ZERO_FILL_MAX)
		cfg.mem_bytes = ZERO_FILL_MAX;
	if (flags & 8)
		cl_len += X86_CMDLINE_MAX - 0x8000;             /* near the limits */
	if (cl_len > X86_CMDLINE_MAX + 8)
		cl_len = X86_CMDLINE_MAX + 8;
	memcpy(cmdline, cl_pattern, cl_len);
	cmdline[cl_len] = 0;
	if (flags & 1) {
		if (!initrd_len)
			initrd_len = 1;
		put_file(initrd_fd, initrd, initrd_len);
		cfg.initrd_path = initrd_path;
	}
	put_file(kernel_fd, in.p, in.len);

	mem_map(&mem, cfg.mem_bytes);
	err[0] = 0;
	r = x86_load_kernel(&mem, &cfg, &boot, err, sizeof(err));
	if (verbose)
		fprintf(stderr, "fuzz_load: %s\n", r ? err : boot.format);
	if (r) {
		FZ_ASSERT(r < 0);
		FZ_ASSERT(err[0] && !strchr(err, '\n'));
	} else {
		check_loaded(&mem, &cfg, &boot, in.p, in.len, cfg.initrd_path ? initrd : NULL,
			     initrd_len);
	}
	mem_unmap(&mem);
	return 0;
}
