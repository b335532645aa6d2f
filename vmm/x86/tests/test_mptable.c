/*
 * MP table bytes for 2 CPUs, written out by hand from the Intel MP spec
 * 1.4 (chapter 4): floating pointer, header, processor, bus, IOAPIC, I/O
 * interrupt and local interrupt entries.
 */
#include <errno.h>
#include <stdlib.h>

#include "vmm/x86/boot.h"
#include "common/test_check.h"
#include "le_bytes.h"
#include "images.h"

static unsigned sum8(const uint8_t *p, size_t n)
{
	unsigned s = 0;

	for (size_t i = 0; i < n; i++)
		s += p[i];
	return s & 0xff;
}

static void test_two_cpus(void)
{
	static const uint8_t fp_expect[16] = {
		'_', 'M', 'P', '_', 0x00, 0x00, 0x0f, 0x00, /* config table at 0xf0000 */
		0x01, 0x04,     /* 1 paragraph, spec 1.4 */
		0x91,           /* 0x100 - (0x5f+0x4d+0x50+0x5f+0x0f+0x01+0x04) & 0xff */
		0, 0, 0, 0, 0,
	};
	uint8_t expect[236] = {
		/* header: signature, length 236, rev 4, checksum (checked below) */
		'P', 'C', 'M', 'P', 0xec, 0x00, 0x04, 0x00,
		'L', 'A', 'G', 'V', 'I', 'S', 'O', 'R',
		'L', 'A', 'G', 'V', 'I', 'S', 'O', 'R', ' ', ' ', ' ', ' ',
		0, 0, 0, 0,  0, 0,      /* no OEM table */
		21, 0,                  /* 2 CPUs + bus + IOAPIC + 15 I/O ints + 2 LINTs */
		0x00, 0x00, 0xe0, 0xfe, /* local APIC 0xfee00000 */
		0, 0, 0, 0,
		/* CPU 0: APIC ID 0, version 0x14, enabled + BSP, family 6, FPU|APIC */
		0, 0, 0x14, 0x03, 0x00, 0x06, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		/* CPU 1: enabled */
		0, 1, 0x14, 0x01, 0x00, 0x06, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		/* bus 0 ISA */
		1, 0, 'I', 'S', 'A', ' ', ' ', ' ',
		/* IOAPIC ID 2, version 0x11, enabled, 0xfec00000 */
		2, 2, 0x11, 0x01, 0x00, 0x00, 0xc0, 0xfe,
		/* I/O interrupts: INT, conforming, bus 0, irq, IOAPIC 2, pin */
		3, 0, 0, 0, 0, 0, 2, 2,     /* IRQ 0 (PIT) -> pin 2 */
		3, 0, 0, 0, 0, 1, 2, 1,
		3, 0, 0, 0, 0, 3, 2, 3,     /* no IRQ 2: the cascade */
		3, 0, 0, 0, 0, 4, 2, 4,
		3, 0, 0, 0, 0, 5, 2, 5,
		3, 0, 0, 0, 0, 6, 2, 6,
		3, 0, 0, 0, 0, 7, 2, 7,
		3, 0, 0, 0, 0, 8, 2, 8,
		3, 0, 0, 0, 0, 9, 2, 9,
		3, 0, 0, 0, 0, 10, 2, 10,
		3, 0, 0, 0, 0, 11, 2, 11,
		3, 0, 0, 0, 0, 12, 2, 12,
		3, 0, 0, 0, 0, 13, 2, 13,
		3, 0, 0, 0, 0, 14, 2, 14,
		3, 0, 0, 0, 0, 15, 2, 15,
		/* local interrupts: ExtINT -> BSP LINT0, NMI -> all LINT1 */
		4, 3, 0, 0, 0, 0, 0x00, 0,
		4, 1, 0, 0, 0, 0, 0xff, 1,
	};
	uint8_t fp[16], cfg[300];

	CHECK_EQ(x86_mptable_size(2), 236);
	memset(cfg, 0xcc, sizeof(cfg));
	CHECK_EQ(x86_mptable_build(2, 0xf0000, fp, cfg, sizeof(cfg)), 0);
	CHECK(memcmp(fp, fp_expect, 16) == 0);
	CHECK_EQ(sum8(fp, 16), 0);
	CHECK_EQ(sum8(cfg, 236), 0);
	expect[7] = cfg[7];              /* the checksum, proven by the sum above */
	for (unsigned i = 0; i < 236; i++)
		if (cfg[i] != expect[i]) {
			fprintf(stderr, "MP config byte %u: 0x%02x, expected 0x%02x\n",
				i, cfg[i], expect[i]);
			check_failures++;
			break;
		}
	CHECK_EQ(cfg[236], 0xcc);        /* nothing written past the table */
}

static void test_limits(void)
{
	uint8_t fp[16], *cfg = malloc(x86_mptable_size(254));

	CHECK_EQ(x86_mptable_build(0, 0xf0000, fp, cfg, 4096), -EINVAL);
	CHECK_EQ(x86_mptable_build(255, 0xf0000, fp, cfg, 8192), -EINVAL);
	CHECK_EQ(x86_mptable_build(2, 0xf0000, fp, cfg, 235), -ENOSPC);
	CHECK_EQ(x86_mptable_build(254, 0xf0000, fp, cfg, x86_mptable_size(254)), 0);
	CHECK_EQ(x86_mptable_size(254), 196 + 20 * 254);
	CHECK_EQ(sum8(cfg, x86_mptable_size(254)), 0);
	CHECK_EQ(rd(cfg + 34, 2), 254 + 19);
	CHECK_EQ(cfg[44 + 253 * 20 + 1], 253);      /* last CPU's APIC ID */
	CHECK_EQ(cfg[44 + 254 * 20 + 8 + 1], 254);  /* IOAPIC ID */
	free(cfg);
}

static void test_write(void)
{
	struct guest_mem mem;
	char why[128];
	uint8_t *g;

	if (test_mem_init(&mem, 4 << 20)) {
		CHECK(!"mmap");
		return;
	}
	g = mem.slots[0].hva;
	CHECK_EQ(x86_mptable_write(&mem, 4, why, sizeof(why)), 0);
	CHECK(memcmp(g + 0x9fc00, "_MP_", 4) == 0);
	CHECK_EQ(rd(g + 0x9fc04, 4), 0xf0000);
	CHECK(memcmp(g + 0xf0000, "PCMP", 4) == 0);
	CHECK_EQ(rd(g + 0x40e, 2), 0x9fc0);         /* BDA: EBDA segment */
	CHECK_EQ(x86_mptable_write(&mem, 255, why, sizeof(why)), -EINVAL);
	CHECK(strstr(why, "IOAPIC") != NULL);
	test_mem_free(&mem);
}

int main(void)
{
	test_two_cpus();
	test_limits();
	test_write();
	return check_report("x86_test_mptable");
}
