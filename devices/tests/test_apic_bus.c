/* ICR decoding and delivery over the APIC bus: physical and logical
 * (flat, cluster, x2APIC cluster) destinations, broadcast, shorthands,
 * SELF_IPI, lowest priority, NMI, INIT/SIPI for AP start, the modes that
 * are refused, and mixed xAPIC/x2APIC senders and targets. */
#include "apic_fixture.h"

static struct apic_fx F;

/* Which LAPICs have vector v requested, as a bit mask; then clear IRR by
 * accepting and EOIing everything. */
static uint32_t who_has(struct apic_fx *f, uint8_t v)
{
	uint32_t mask = 0;

	for (unsigned i = 0; i < f->n; i++) {
		if (reg_bit(f, i, APIC_IRR, v))
			mask |= 1u << i;
		while (lapic_accept(&f->l[i]) >= 0)
			rw(f, i, APIC_EOI, 0);
	}
	return mask;
}

static void xapic_ipi(struct apic_fx *f, unsigned from, uint8_t dest,
		      uint32_t icr)
{
	xw(f, from, APIC_ICR2, (uint32_t)dest << 24);
	xw(f, from, APIC_ICR, icr);
}

static void test_xapic_destinations(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 4, false, false);
	xapic_ipi(f, 0, 2, 0x4041);
	CHECK_EQ(who_has(f, 0x41), 1u << 2);
	CHECK_EQ(f->kicks[2], 1);
	CHECK_EQ(f->kicks[0] + f->kicks[1] + f->kicks[3], 0);
	xapic_ipi(f, 0, 9, 0x4041);             /* no such APIC */
	CHECK_EQ(who_has(f, 0x41), 0);
	xapic_ipi(f, 1, 0xff, 0x4042);          /* physical broadcast */
	CHECK_EQ(who_has(f, 0x42), 0xf);
	/* Shorthands ignore the destination field. */
	xapic_ipi(f, 1, 3, 0x4043 | (1u << 18));
	CHECK_EQ(who_has(f, 0x43), 1u << 1);
	xapic_ipi(f, 1, 3, 0x4044 | (2u << 18));
	CHECK_EQ(who_has(f, 0x44), 0xf);
	xapic_ipi(f, 1, 3, 0x4045 | (3u << 18));
	CHECK_EQ(who_has(f, 0x45), 0xd);

	/* Logical flat: LDR bit i for APIC i; any common bit matches. */
	for (unsigned i = 0; i < 4; i++)
		xw(f, i, APIC_LDR, 1u << (24 + i));
	xapic_ipi(f, 0, 0x05, 0x4846);
	CHECK_EQ(who_has(f, 0x46), 0x5);
	xapic_ipi(f, 0, 0xff, 0x4847);          /* logical broadcast */
	CHECK_EQ(who_has(f, 0x47), 0xf);
	/* Logical cluster: dest[7:4] cluster, [3:0] members. */
	for (unsigned i = 0; i < 4; i++) {
		xw(f, i, APIC_DFR, 0x0fffffff);
		xw(f, i, APIC_LDR, (((i >> 1) << 4) | (1u << (i & 1))) << 24);
	}
	xapic_ipi(f, 0, 0x13, 0x4848);          /* cluster 1, both */
	CHECK_EQ(who_has(f, 0x48), 0xc);
	xapic_ipi(f, 0, 0x02, 0x4849);          /* cluster 0, member 1 */
	CHECK_EQ(who_has(f, 0x49), 0x2);
	xapic_ipi(f, 0, 0x24, 0x484a);          /* nobody */
	CHECK_EQ(who_has(f, 0x4a), 0);
	fx_destroy(f);
}

/* A rewritten xAPIC ID is what physical destinations match, and two
 * LAPICs given one ID both take an IPI to it (kvm-unit-tests apic,
 * "IPI to aliased xAPIC physical IDs"). */
static void test_xapic_aliased_ids(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 4, false, false);
	xw(f, 1, APIC_ID, 0x20u << 24);
	xw(f, 2, APIC_ID, 0x20u << 24);
	xapic_ipi(f, 0, 0x20, 0x4051);
	CHECK_EQ(who_has(f, 0x51), 0x6);
	CHECK_EQ(f->kicks[1], 1);
	CHECK_EQ(f->kicks[2], 1);
	xapic_ipi(f, 0, 1, 0x4052);             /* the old ID: nobody */
	CHECK_EQ(who_has(f, 0x52), 0);
	xapic_ipi(f, 1, 3, 0x4053);             /* untouched IDs still match */
	CHECK_EQ(who_has(f, 0x53), 1u << 3);
	xw(f, 3, APIC_ID, 0);                   /* aliased with the BSP */
	xapic_ipi(f, 1, 0, 0x4054);
	CHECK_EQ(who_has(f, 0x54), 0x9);
	fx_destroy(f);
}

static void test_x2apic_destinations(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 20, true, false);
	CHECK_EQ(x2w(f, 0, APIC_ICR, (17ull << 32) | 0x4051), 0);
	CHECK_EQ(who_has(f, 0x51), 1u << 17);
	CHECK_EQ(x2w(f, 0, APIC_ICR, (0xffffffffull << 32) | 0x4052), 0);
	CHECK_EQ(who_has(f, 0x52), 0xfffff);
	/* 0xff is an ordinary ID in x2APIC format: nobody has it here. */
	CHECK_EQ(x2w(f, 0, APIC_ICR, (0xffull << 32) | 0x4053), 0);
	CHECK_EQ(who_has(f, 0x53), 0);
	/* Logical: cluster 1 (IDs 16-31), members 0 and 2 = IDs 16, 18. */
	CHECK_EQ(x2w(f, 0, APIC_ICR, (((1ull << 16) | 0x5) << 32) | 0x4854),
		 0);
	CHECK_EQ(who_has(f, 0x54), (1u << 16) | (1u << 18));
	CHECK_EQ(x2w(f, 0, APIC_ICR, (0x8003ull << 32) | 0x4855), 0);
	CHECK_EQ(who_has(f, 0x55), (1u << 0) | (1u << 1) | (1u << 15));
	CHECK_EQ(x2w(f, 0, APIC_ICR, (0xffffffffull << 32) | 0x4856), 0);
	CHECK_EQ(who_has(f, 0x56), 0xfffff);
	/* SELF_IPI. */
	CHECK_EQ(x2w(f, 5, APIC_SELF_IPI, 0x57), 0);
	CHECK_EQ(who_has(f, 0x57), 1u << 5);
	/* Shorthand all-but-self from an x2APIC sender. */
	CHECK_EQ(x2w(f, 19, APIC_ICR, 0x4058 | (3u << 18)), 0);
	CHECK_EQ(who_has(f, 0x58), 0x7ffff);
	fx_destroy(f);
}

static void test_mixed_modes(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 3, false, false);
	CHECK_EQ(base_w(f, 2, LAPIC_DEFAULT_BASE | APIC_BASE_EN |
			      APIC_BASE_EXTD), 0);
	/* xAPIC sender (8-bit dest) to an x2APIC target, and back. */
	xapic_ipi(f, 0, 2, 0x4061);
	CHECK_EQ(who_has(f, 0x61), 1u << 2);
	xapic_ipi(f, 0, 0xff, 0x4062);
	CHECK_EQ(who_has(f, 0x62), 0x7);
	CHECK_EQ(x2w(f, 2, APIC_ICR, (1ull << 32) | 0x4063), 0);
	CHECK_EQ(who_has(f, 0x63), 1u << 1);
	CHECK_EQ(x2w(f, 2, APIC_ICR, (0x101ull << 32) | 0x4064), 0);
	CHECK_EQ(who_has(f, 0x64), 0);          /* > 0xff: no xAPIC has it */
	fx_destroy(f);
}

static void test_lowest_priority(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 4, false, false);
	xw(f, 0, APIC_TPR, 0x50);
	xw(f, 1, APIC_TPR, 0x20);
	xw(f, 2, APIC_TPR, 0x30);
	xw(f, 3, APIC_TPR, 0x10);
	xw(f, 3, APIC_SVR, 0xff);               /* soft-disabled: skipped */
	xapic_ipi(f, 0, 0xff, 0x4171);
	CHECK_EQ(who_has(f, 0x71), 1u << 1);
	/* Among a logical set only. */
	for (unsigned i = 0; i < 4; i++)
		xw(f, i, APIC_LDR, 1u << (24 + i));
	xapic_ipi(f, 0, 0x5, 0x4972);
	CHECK_EQ(who_has(f, 0x72), 1u << 2);
	/* Equal priority: the lowest index. */
	xw(f, 0, APIC_TPR, 0x30);
	xapic_ipi(f, 0, 0x5, 0x4973);
	CHECK_EQ(who_has(f, 0x73), 1u << 0);
	fx_destroy(f);
}

/* Two NMIs before the vCPU takes one are two (one handled, one latched:
 * kvm-unit-tests apic "multiple nmi" lost one when they merged); a third
 * merges. */
static void test_nmi_latch(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 3, false, false);
	xapic_ipi(f, 0, 1, 0x4400);
	xapic_ipi(f, 2, 1, 0x4400);
	xapic_ipi(f, 0, 1, 0x4400);
	CHECK(lapic_take_nmi(&f->l[1]));
	CHECK(lapic_has_nmi(&f->l[1]));
	CHECK(lapic_take_nmi(&f->l[1]));
	CHECK(!lapic_take_nmi(&f->l[1]));
	CHECK(!lapic_has_nmi(&f->l[1]));
	fx_destroy(f);
}

static void test_nmi_init_sipi(void)
{
	struct apic_fx *f = &F;
	uint8_t vec = 0;

	fx_init(f, 3, false, false);
	xapic_ipi(f, 0, 1, 0x4400);             /* NMI */
	CHECK(lapic_has_nmi(&f->l[1]));
	CHECK(lapic_has_event(&f->l[1]));
	CHECK(lapic_take_nmi(&f->l[1]));
	CHECK(!lapic_take_nmi(&f->l[1]));
	CHECK(!lapic_has_nmi(&f->l[2]));

	/* AP start as Linux does it: INIT assert, INIT de-assert (a no-op),
	 * SIPI, SIPI. */
	xw(f, 1, APIC_TPR, 0x40);
	xw(f, 1, APIC_LVT0, 0x700);
	xapic_ipi(f, 0, 1, 0xc500);             /* INIT, level, assert */
	CHECK_EQ(f->kicks[1], 2);
	CHECK_EQ(xr(f, 1, APIC_TPR), 0);        /* INIT reset the registers */
	CHECK_EQ(xr(f, 1, APIC_SVR), 0xff);
	CHECK_EQ(xr(f, 1, APIC_LVT0), APIC_LVT_MASKED);
	CHECK_EQ(xr(f, 1, APIC_ID), 1u << 24);
	xapic_ipi(f, 0, 1, 0x8500);             /* INIT de-assert */
	CHECK_EQ(f->kicks[1], 2);
	xapic_ipi(f, 0, 1, 0x4698);             /* SIPI before INIT taken */
	CHECK(!lapic_take_sipi(&f->l[1], &vec));
	CHECK(lapic_take_init(&f->l[1]));
	CHECK(!lapic_take_init(&f->l[1]));
	CHECK(lapic_waiting_for_sipi(&f->l[1]));
	CHECK(lapic_take_sipi(&f->l[1], &vec));
	CHECK_EQ(vec, 0x98);
	CHECK(!lapic_waiting_for_sipi(&f->l[1]));
	xapic_ipi(f, 0, 1, 0x4699);             /* second SIPI: ignored */
	CHECK(!lapic_take_sipi(&f->l[1], &vec));
	CHECK(!lapic_has_event(&f->l[1]));
	/* An AP waits for SIPI from power-up; the BSP does not. */
	xapic_ipi(f, 1, 2, 0x4610);
	CHECK(lapic_take_sipi(&f->l[2], &vec));
	CHECK_EQ(vec, 0x10);
	xapic_ipi(f, 1, 0, 0x4611);
	CHECK(!lapic_take_sipi(&f->l[0], &vec));
	fx_destroy(f);
}

static void test_refused(void)
{
	struct apic_fx *f = &F;
	struct apic_msg m;

	fx_init(f, 2, false, false);
	xapic_ipi(f, 0, 1, 0x4240);             /* SMI */
	xapic_ipi(f, 0, 1, 0x4740);             /* ExtINT */
	xapic_ipi(f, 0, 1, 0x4340);             /* reserved mode 3 */
	CHECK_EQ(f->kicks[1], 0);
	CHECK(!lapic_has_event(&f->l[1]));
	m = msg_fixed(1, 0x40);
	m.mode = APIC_DM_SMI;
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 0);
	m.mode = APIC_DM_EXTINT;
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 0);
	/* A disabled (IA32_APIC_BASE) LAPIC takes nothing, not even NMI,
	 * and has no pending vector even with IRR bits. */
	m = msg_fixed(1, 0x40);
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 1);
	CHECK_EQ(base_w(f, 1, LAPIC_DEFAULT_BASE), 0);
	CHECK_EQ(lapic_pending_vector(&f->l[1]), -1);
	m.mode = APIC_DM_NMI;
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 0);
	CHECK(!lapic_has_nmi(&f->l[1]));
	/* The xAPIC page is not decoded then. */
	xw(f, 1, APIC_TPR, 0x30);
	CHECK_EQ(xr(f, 1, APIC_TPR), 0);
	fx_destroy(f);
}

int main(void)
{
	test_xapic_destinations();
	test_xapic_aliased_ids();
	test_x2apic_destinations();
	test_mixed_modes();
	test_lowest_priority();
	test_nmi_init_sipi();
	test_nmi_latch();
	test_refused();
	return check_report("test_apic_bus");
}
