/*
 * A PVH test guest (freestanding, 32-bit, no FPU): checks what it was
 * booted with and reports over COM1, then exits through QEMU's
 * isa-debug-exit (port 0xf4): 0x31 on success (QEMU exit status 99), else
 * 0x10 + the number of the first failed check. The same file boots
 * under QEMU's own -kernel PVH path and under lagvisor's loader, so both
 * must produce start info, memory map, initrd module and MP table it
 * accepts. Command line: "pvhtest cpus=N initrd=SIZE".
 */
#include <stdint.h>

#define COM1 0x3f8
#define DEBUG_EXIT 0xf4
#define PASS 0x31

struct start_info {
	uint32_t magic, version, flags, nr_modules;
	uint64_t modlist_paddr, cmdline_paddr, rsdp_paddr, memmap_paddr;
	uint32_t memmap_entries, reserved;
};

struct mod {
	uint64_t paddr, size, cmdline_paddr, reserved;
};

struct memmap {
	uint64_t addr, size;
	uint32_t type, reserved;
};

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static void putc_(char c)
{
	outb(COM1, (uint8_t)c);
}

static void puts_(const char *s)
{
	while (*s)
		putc_(*s++);
}

static void puthex(uint64_t v)
{
	puts_("0x");
	for (int i = 60; i >= 0; i -= 4)
		if ((v >> i) || i == 0)
			putc_("0123456789abcdef"[(v >> i) & 0xf]);
}

static void __attribute__((noreturn)) finish(unsigned failed)
{
	if (failed)
		puts_("pvhtest: FAIL check "), puthex(failed), putc_('\n');
	else
		puts_("pvhtest: PASS\n");
	outb(DEBUG_EXIT, (uint8_t)(failed ? 0x10 + failed : PASS));
	for (;;)
		__asm__ volatile("hlt");
}

#define CHECK(n, cond) do { if (!(cond)) finish(n); } while (0)

/* Value of "key=" in the command line as a decimal number, or 0. */
static uint64_t cmdline_num(const char *cl, const char *key)
{
	for (const char *p = cl; *p; p++) {
		const char *k = key, *q = p;

		while (*k && *q == *k)
			k++, q++;
		if (!*k) {
			uint64_t v = 0;

			while (*q >= '0' && *q <= '9')
				v = v * 10 + (uint64_t)(*q++ - '0');
			return v;
		}
	}
	return 0;
}

static uint8_t sum(const uint8_t *p, uint32_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

/* Intel MP spec: floating pointer on a 16-byte boundary in the given range. */
static const uint8_t *mp_find(uintptr_t start, uintptr_t end)
{
	for (uintptr_t a = start; a < end; a += 16) {
		const uint8_t *p = (const uint8_t *)a;

		if (p[0] == '_' && p[1] == 'M' && p[2] == 'P' && p[3] == '_' && sum(p, 16) == 0)
			return p;
	}
	return 0;
}

static unsigned mp_check(unsigned *cpus)
{
	const uint8_t *fp = mp_find(0x9fc00, 0xa0000), *cfg, *e;
	unsigned len, count, bsp = 0;

	if (!fp)
		fp = mp_find(0xf0000, 0x100000);
	if (!fp)
		return 1;
	cfg = (const uint8_t *)(uintptr_t)*(const uint32_t *)(fp + 4);
	if (cfg[0] != 'P' || cfg[1] != 'C' || cfg[2] != 'M' || cfg[3] != 'P')
		return 2;
	len = *(const uint16_t *)(cfg + 4);
	if (sum(cfg, len) != 0)
		return 3;
	count = *(const uint16_t *)(cfg + 34);
	puts_("mp: table at "), puthex((uintptr_t)cfg), puts_(" entries "), puthex(count);
	puts_(" lapic "), puthex(*(const uint32_t *)(cfg + 36)), putc_('\n');
	*cpus = 0;
	e = cfg + 44;
	for (unsigned i = 0; i < count; i++) {
		if (e >= cfg + len)
			return 4;
		if (e[0] == 0) {
			if (e[3] & 1)
				(*cpus)++;
			if (e[3] & 2)
				bsp++;
			e += 20;
		} else {
			if (e[0] == 2)
				puts_("mp: ioapic id "), puthex(e[1]), puts_(" at "),
					puthex(*(const uint32_t *)(e + 4)), putc_('\n');
			e += 8;
		}
	}
	return bsp == 1 ? 0 : 5;
}

void pvh_main(const struct start_info *si)
{
	const char *cl;
	uint64_t want_cpus, want_initrd, ram_at_1m = 0;
	unsigned cpus = 0;

	puts_("pvhtest: start_info at "), puthex((uintptr_t)si), putc_('\n');
	CHECK(1, si->magic == 0x336ec578);
	CHECK(2, si->version >= 1);
	CHECK(3, si->cmdline_paddr != 0);
	cl = (const char *)(uintptr_t)si->cmdline_paddr;
	puts_("cmdline: "), puts_(cl), putc_('\n');
	want_cpus = cmdline_num(cl, "cpus=");
	want_initrd = cmdline_num(cl, "initrd=");
	CHECK(4, want_cpus != 0);

	puts_("memmap: "), puthex(si->memmap_entries), puts_(" entries\n");
	CHECK(5, si->memmap_entries > 0 && si->memmap_paddr != 0);
	for (uint32_t i = 0; i < si->memmap_entries; i++) {
		const struct memmap *m = (const struct memmap *)(uintptr_t)si->memmap_paddr + i;

		puts_("  "), puthex(m->addr), puts_(" +"), puthex(m->size);
		puts_(" type "), puthex(m->type), putc_('\n');
		if (m->type == 1 && m->addr <= 0x100000 && m->addr + m->size >= 0x200000)
			ram_at_1m = m->addr + m->size;
	}
	CHECK(6, ram_at_1m != 0);

	puts_("modules: "), puthex(si->nr_modules), putc_('\n');
	if (want_initrd) {
		const struct mod *m = (const struct mod *)(uintptr_t)si->modlist_paddr;
		const char *d;

		CHECK(7, si->nr_modules == 1);
		puts_("  initrd at "), puthex(m->paddr), puts_(" size "), puthex(m->size), putc_('\n');
		CHECK(8, m->size == want_initrd);
		d = (const char *)(uintptr_t)m->paddr;
		CHECK(9, d[0] == 'L' && d[1] == 'G' && d[2] == 'V' && d[3] == 'I');
		CHECK(10, m->paddr + m->size <= ram_at_1m);
	}

	CHECK(11, mp_check(&cpus) == 0);
	puts_("mp: cpus "), puthex(cpus), putc_('\n');
	CHECK(12, cpus == want_cpus);
	finish(0);
}
