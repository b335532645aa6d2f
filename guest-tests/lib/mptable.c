/* MP table discovery and parsing (see mptable.h). */
#include "mptable.h"

#include "string.h"

struct mp_floating {
	char signature[4];        /* "_MP_" */
	uint32_t config_pa;
	uint8_t length;           /* in 16-byte units: 1 */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t features[5];
} __attribute__((packed));

struct mp_config {
	char signature[4];        /* "PCMP" */
	uint16_t length;          /* base table, header included */
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_table_pa;
	uint16_t oem_table_size;
	uint16_t entry_count;
	uint32_t lapic_pa;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mp_processor {
	uint8_t type;             /* 0 */
	uint8_t apic_id;
	uint8_t apic_version;
	uint8_t flags;            /* bit 0 enabled, bit 1 BSP */
	uint32_t signature;
	uint32_t features;
	uint32_t reserved[2];
} __attribute__((packed));

struct mp_ioapic {
	uint8_t type;             /* 2 */
	uint8_t id;
	uint8_t version;
	uint8_t flags;            /* bit 0 usable */
	uint32_t pa;
} __attribute__((packed));

/*
 * Low physical addresses as pointers. The empty asm hides the constant from
 * GCC, which otherwise treats a dereference of e.g. 0x40e as a null-page
 * access (-Warray-bounds).
 */
static const void *phys(uint64_t pa)
{
	asm("" : "+r"(pa));
	return (const void *)pa;
}

static uint8_t checksum(const void *p, unsigned len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return sum;
}

static const struct mp_floating *scan(uint64_t start, uint64_t len)
{
	for (uint64_t pa = start & ~15ull; pa + 16 <= start + len; pa += 16) {
		const struct mp_floating *f = phys(pa);

		if (!memcmp(f->signature, "_MP_", 4) && f->length == 1 &&
		    checksum(f, 16) == 0)
			return f;
	}
	return 0;
}

static const struct mp_floating *find_floating(void)
{
	/* MP spec 4: EBDA first KiB, last KiB of base memory, BIOS ROM. */
	uint64_t ebda = (uint64_t)*(const volatile uint16_t *)phys(0x40e) << 4;
	uint64_t basemem = (uint64_t)*(const volatile uint16_t *)phys(0x413) * 1024;
	const struct mp_floating *f = 0;

	if (ebda >= 0x80000 && ebda < 0xa0000)
		f = scan(ebda, 1024);
	if (!f && basemem >= 0x80000 && basemem <= 0xa0000)
		f = scan(basemem - 1024, 1024);
	if (!f)
		f = scan(0x9fc00, 1024);
	if (!f)
		f = scan(0xf0000, 0x10000);
	return f;
}

void mptable_parse(struct mp_info *mp)
{
	const struct mp_floating *f = find_floating();
	const struct mp_config *c;
	const uint8_t *p, *end;

	memset(mp, 0, sizeof(*mp));
	if (!f) {
		mp->error = "no MP floating pointer structure";
		return;
	}
	mp->floating_pa = (uint32_t)(uint64_t)f;
	mp->config_pa = f->config_pa;
	c = phys(f->config_pa);
	if (!f->config_pa || f->config_pa >= 0x100000 - sizeof(*c) ||
	    memcmp(c->signature, "PCMP", 4)) {
		mp->error = "MP configuration table missing (default configs unsupported)";
		return;
	}
	if (c->length < sizeof(*c) || f->config_pa + c->length > 0x100000 ||
	    checksum(c, c->length) != 0) {
		mp->error = "MP configuration table checksum/length bad";
		return;
	}
	mp->lapic_pa = c->lapic_pa;
	p = (const uint8_t *)(c + 1);
	end = (const uint8_t *)c + c->length;
	for (unsigned i = 0; i < c->entry_count && p < end; i++) {
		if (*p == 0) {
			const struct mp_processor *e = (const void *)p;

			if (p + sizeof(*e) > end)
				break;
			if ((e->flags & 1) && mp->nr_cpus < MAX_CPUS) {
				if (e->flags & 2)
					mp->bsp = mp->nr_cpus;
				mp->apic_ids[mp->nr_cpus++] = e->apic_id;
			}
			p += sizeof(*e);
		} else if (*p <= 4) {
			if (*p == 2 && (p[3] & 1)) {
				const struct mp_ioapic *io = (const void *)p;

				if (!mp->nr_ioapics++)
					mp->ioapic_pa = io->pa;
			}
			p += 8;
		} else {
			mp->error = "unknown MP table entry type";
			return;
		}
	}
	mp->found = true;
}
