/* LAPIC registers: reset values, IDs and version, x2APIC MSR #GP rules,
 * xAPIC MMIO, IA32_APIC_BASE mode transitions, TPR/PPR/APR and the
 * IRR/ISR acceptance rules, EOI (with level-triggered broadcast), ESR,
 * software disable and LVT masks, CR8. */
#include <errno.h>

#include "apic_fixture.h"

static struct apic_fx F;

static void test_reset_and_ids(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 20, false, false);
	CHECK_EQ(lapic_apic_base(&f->l[0]),
		 0xfee00000ull | APIC_BASE_EN | APIC_BASE_BSP);
	CHECK_EQ(lapic_apic_base(&f->l[1]), 0xfee00000ull | APIC_BASE_EN);
	CHECK_EQ(xr(f, 3, APIC_ID), 3u << 24);
	CHECK_EQ(xr(f, 3, APIC_LVR), 0x50014);  /* 6 LVTs, no directed EOI */
	CHECK_EQ(xr(f, 3, APIC_DFR), 0xffffffffu);
	CHECK_EQ(xr(f, 3, APIC_LVT0), APIC_LVT_MASKED);
	CHECK_EQ(xr(f, 3, APIC_LVTERR), APIC_LVT_MASKED);
	CHECK(lapic_waiting_for_sipi(&f->l[1]));
	CHECK(!lapic_waiting_for_sipi(&f->l[0]));
	/* The xAPIC ID takes writes (bits 31:24 only); x2APIC puts back the
	 * initial ID, and so does power-on. */
	xw(f, 5, APIC_ID, 0x07abcdefu);
	CHECK_EQ(xr(f, 5, APIC_ID), 7u << 24);
	CHECK_EQ(base_w(f, 5, 0xfee00000ull | APIC_BASE_EN | APIC_BASE_EXTD), 0);
	CHECK_EQ(x2r(f, 5, APIC_ID), 5);
	CHECK_EQ(base_w(f, 5, 0), 0);
	CHECK_EQ(base_w(f, 5, 0xfee00000ull | APIC_BASE_EN), 0);
	CHECK_EQ(xr(f, 5, APIC_ID), 5u << 24);
	xw(f, 4, APIC_ID, 9u << 24);
	lapic_reset(&f->l[4]);
	CHECK_EQ(xr(f, 4, APIC_ID), 4u << 24);
	/* xAPIC -> disabled -> xAPIC, the guest's "reset the APIC". */
	xw(f, 6, APIC_ID, 9u << 24);
	CHECK_EQ(base_w(f, 6, 0xfee00000ull), 0);
	CHECK_EQ(base_w(f, 6, 0xfee00000ull | APIC_BASE_EN), 0);
	CHECK_EQ(xr(f, 6, APIC_ID), 6u << 24);
	/* x2APIC MSRs #GP in xAPIC mode. */
	CHECK_EQ(x2rc(f, 3, APIC_ID), -EINVAL);
	CHECK_EQ(x2w(f, 3, APIC_TPR, 0), -EINVAL);

	CHECK_EQ(base_w(f, 19, 0xfee00000ull | APIC_BASE_EN | APIC_BASE_EXTD),
		 0);
	CHECK_EQ(x2r(f, 19, APIC_ID), 19);
	/* Cluster 1 (19 >> 4), member bit 3 (19 & 15). */
	CHECK_EQ(x2r(f, 19, APIC_LDR), (1u << 16) | (1u << 3));
	CHECK_EQ(x2r(f, 19, APIC_LVR), 0x50014);
	fx_destroy(f);
}

static void test_x2apic_gp(void)
{
	struct apic_fx *f = &F;
	uint64_t v;

	fx_init(f, 2, true, false);
	/* Absent, xAPIC-only and write-only registers. */
	static const unsigned no_read[] = {
		0x000, 0x010, APIC_APR, APIC_EOI, APIC_RRD, APIC_DFR,
		APIC_CMCI, APIC_ICR2, APIC_SELF_IPI, 0x3a0, 0x400, 0xff0,
	};
	for (unsigned i = 0; i < ARRAY_SIZE(no_read); i++)
		CHECK_EQ(x2rc(f, 1, no_read[i]), -EINVAL);
	/* Read-only registers. */
	static const unsigned ro[] = {
		APIC_ID, APIC_LVR, APIC_PPR, APIC_LDR, APIC_ISR, APIC_TMR + 0x70,
		APIC_IRR + 0x30, APIC_TMCCT, APIC_DFR, APIC_ICR2, APIC_CMCI,
		APIC_APR,
	};
	for (unsigned i = 0; i < ARRAY_SIZE(ro); i++)
		CHECK_EQ(x2w(f, 1, ro[i], 0), -EINVAL);
	/* Bits 63:32 are reserved except in ICR. */
	CHECK_EQ(x2w(f, 1, APIC_TPR, 1ull << 32), -EINVAL);
	CHECK_EQ(x2w(f, 1, APIC_LVTT, 1ull << 40), -EINVAL);
	/* ESR and EOI take only 0. */
	CHECK_EQ(x2w(f, 1, APIC_ESR, 1), -EINVAL);
	CHECK_EQ(x2w(f, 1, APIC_EOI, 1), -EINVAL);
	CHECK_EQ(x2w(f, 1, APIC_ESR, 0), 0);
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	/* Not an APIC MSR. */
	CHECK_EQ(lapic_msr_read(&f->l[1], 0x10, &v, 0), -ENOENT);
	CHECK_EQ(lapic_msr_write(&f->l[1], 0x6e0, 0, 0), -ENOENT);
	/* ICR is one 64-bit register in x2APIC mode. */
	CHECK_EQ(x2w(f, 1, APIC_ICR, (5ull << 32) | 0x4030), 0);
	CHECK_EQ(x2r(f, 1, APIC_ICR), (5ull << 32) | 0x4030);
	fx_destroy(f);
}

static void test_apic_base(void)
{
	struct apic_fx *f = &F;
	const uint64_t b = 0xfee00000ull, en = APIC_BASE_EN,
		       x2 = APIC_BASE_EN | APIC_BASE_EXTD;
	struct lapic_config cfg = { .phys_addr_bits = 36, .no_x2apic = true };
	struct lapic narrow;

	fx_init(f, 2, false, false);
	CHECK_EQ(base_w(f, 1, b | APIC_BASE_EXTD), -EINVAL);   /* EXTD w/o EN */
	CHECK_EQ(base_w(f, 1, b | en | (1u << 9)), -EINVAL);   /* reserved */
	CHECK_EQ(base_w(f, 1, b | en | 0x1), -EINVAL);
	CHECK_EQ(base_w(f, 1, b | x2), 0);                      /* xAPIC -> x2 */
	CHECK(lapic_x2apic_mode(&f->l[1]));
	CHECK(!lapic_mmio_claims(&f->l[1], b));
	CHECK_EQ(base_w(f, 1, b | en), -EINVAL);                /* x2 -> xAPIC */
	CHECK(lapic_x2apic_mode(&f->l[1]));
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0x20), 0);
	CHECK_EQ(base_w(f, 1, b), 0);                           /* -> disabled */
	CHECK(!lapic_x2apic_mode(&f->l[1]));
	CHECK_EQ(base_w(f, 1, b | x2), -EINVAL);                /* off -> x2 */
	CHECK_EQ(base_w(f, 1, b | en), 0);                      /* off -> xAPIC */
	/* Disabling reset the registers. */
	CHECK_EQ(xr(f, 1, APIC_TPR), 0);
	CHECK_EQ(xr(f, 1, APIC_SVR), 0xff);
	CHECK_EQ(xr(f, 1, APIC_LVTT), APIC_LVT_MASKED);
	/* BSP is the platform's: writes do not change it. */
	CHECK_EQ(base_w(f, 0, b | en), 0);
	CHECK(lapic_apic_base(&f->l[0]) & APIC_BASE_BSP);
	CHECK_EQ(base_w(f, 1, b | en | APIC_BASE_BSP), 0);
	CHECK(!(lapic_apic_base(&f->l[1]) & APIC_BASE_BSP));
	/* Relocation moves the page. */
	CHECK(lapic_mmio_claims(&f->l[1], b + 0xff0));
	CHECK(!lapic_mmio_claims(&f->l[1], b + 0x1000));
	CHECK_EQ(base_w(f, 1, 0xfed00000ull | en), 0);
	CHECK(lapic_mmio_claims(&f->l[1], 0xfed00020ull));
	CHECK(!lapic_mmio_claims(&f->l[1], b));

	/* MAXPHYADDR 36: bit 36 up is reserved; no x2APIC: EXTD is. */
	CHECK_EQ(lapic_init(&narrow, &f->bus, 5, &cfg), 0);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE,
				 (1ull << 36) | b | en, 0), -EINVAL);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE,
				 (1ull << 35) | b | en, 0), 0);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE, b | x2, 0),
		 -EINVAL);
	CHECK_EQ(lapic_init(&narrow, &f->bus, 5, &cfg), -EINVAL); /* taken */
	/* Narrowed later, once the guest's CPUID is known (kvm-unit-tests
	 * apic "reserved physaddr bits"); EXTD stays reserved. */
	CHECK_EQ(lapic_set_phys_addr_bits(&narrow, 53), -EINVAL);
	CHECK_EQ(lapic_set_phys_addr_bits(&narrow, 34), 0);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE,
				 (1ull << 35) | b | en, 0), -EINVAL);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE,
				 (1ull << 33) | b | en, 0), 0);
	CHECK_EQ(lapic_msr_write(&narrow, MSR_IA32_APIC_BASE, b | x2, 0),
		 -EINVAL);
	CHECK_EQ(lapic_set_phys_addr_bits(&f->l[1], 40), 0);
	CHECK_EQ(base_w(f, 1, (1ull << 40) | b | en), -EINVAL);
	CHECK_EQ(base_w(f, 1, (1ull << 39) | b | en), 0);
	lapic_destroy(&narrow);
	fx_destroy(f);
}

static void inject(struct apic_fx *f, unsigned i, uint8_t v, bool level)
{
	struct apic_msg m = msg_fixed(i, v);

	m.level = level;
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 1);
}

static void test_priority(void)
{
	struct apic_fx *f = &F;
	struct lapic *l;

	fx_init(f, 2, true, false);
	l = &f->l[1];
	CHECK_EQ(lapic_pending_vector(l), -1);
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0x35), 0);
	CHECK_EQ(x2r(f, 1, APIC_PPR), 0x35);
	/* TPR masks its own class and below. */
	inject(f, 1, 0x3f, false);
	CHECK_EQ(lapic_pending_vector(l), -1);
	CHECK(reg_bit(f, 1, APIC_IRR, 0x3f));
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0x2f), 0);
	CHECK_EQ(lapic_pending_vector(l), 0x3f);
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0), 0);

	/* Nesting: in service 0x3f masks its class (0x31), not 0x51. */
	CHECK_EQ(lapic_accept(l), 0x3f);
	CHECK(reg_bit(f, 1, APIC_ISR, 0x3f));
	CHECK(!reg_bit(f, 1, APIC_IRR, 0x3f));
	CHECK_EQ(x2r(f, 1, APIC_PPR), 0x30);
	inject(f, 1, 0x31, false);
	inject(f, 1, 0x20, false);
	CHECK_EQ(lapic_pending_vector(l), -1);
	inject(f, 1, 0x51, false);
	CHECK_EQ(lapic_pending_vector(l), 0x51);
	lapic_ack(l, 0x51);
	CHECK_EQ(x2r(f, 1, APIC_PPR), 0x50);
	/* TPR above the in-service class wins. */
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0x67), 0);
	CHECK_EQ(x2r(f, 1, APIC_PPR), 0x67);
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0), 0);
	/* EOI retires the highest in service first. */
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	CHECK(!reg_bit(f, 1, APIC_ISR, 0x51));
	CHECK(reg_bit(f, 1, APIC_ISR, 0x3f));
	CHECK_EQ(lapic_pending_vector(l), -1);  /* 0x31: same class as 0x3f */
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	CHECK_EQ(lapic_accept(l), 0x31);
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	CHECK_EQ(lapic_accept(l), 0x20);
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	CHECK_EQ(lapic_accept(l), -1);
	CHECK_EQ(x2r(f, 1, APIC_ISR + 0x10), 0);
	/* EOI with nothing in service, ack of a vector never requested. */
	CHECK_EQ(x2w(f, 1, APIC_EOI, 0), 0);
	lapic_ack(l, 0x77);
	lapic_ack(l, 300);
	CHECK(!reg_bit(f, 1, APIC_ISR, 0x77));

	/* CR8 is TPR[7:4]; an unchanged CR8 keeps TPR[3:0]. */
	lapic_cr8_write(l, 5);
	CHECK_EQ(x2r(f, 1, APIC_TPR), 0x50);
	CHECK_EQ(x2w(f, 1, APIC_TPR, 0x57), 0);
	lapic_cr8_write(l, 5);
	CHECK_EQ(x2r(f, 1, APIC_TPR), 0x57);
	CHECK_EQ(lapic_cr8_read(l), 5);
	lapic_cr8_write(l, 0);
	fx_destroy(f);

	/* APR (xAPIC only): max of the classes unless TPR covers them. */
	fx_init(f, 2, false, false);
	xw(f, 1, APIC_TPR, 0x25);
	CHECK_EQ(xr(f, 1, APIC_APR), 0x25);
	inject(f, 1, 0x45, false);
	CHECK_EQ(xr(f, 1, APIC_APR), 0x40);
	xw(f, 1, APIC_TPR, 0x4a);
	CHECK_EQ(xr(f, 1, APIC_APR), 0x4a);
	CHECK_EQ(xr(f, 1, APIC_PPR), 0x4a);
	fx_destroy(f);
}

static void test_eoi_broadcast(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 2, false, true);
	inject(f, 1, 0x61, true);
	inject(f, 1, 0x62, false);
	CHECK(reg_bit(f, 1, APIC_TMR, 0x61));
	CHECK(!reg_bit(f, 1, APIC_TMR, 0x62));
	CHECK_EQ(lapic_accept(&f->l[1]), 0x62);
	xw(f, 1, APIC_EOI, 0);
	CHECK_EQ(f->neoi, 0);                   /* edge: no broadcast */
	CHECK_EQ(lapic_accept(&f->l[1]), 0x61);
	xw(f, 1, APIC_EOI, 0);
	CHECK_EQ(f->neoi, 1);
	CHECK_EQ(f->eoi_log[0], 0x61);
	xw(f, 1, APIC_EOI, 0);                  /* nothing in service */
	CHECK_EQ(f->neoi, 1);
	fx_destroy(f);
}

static void test_esr(void)
{
	struct apic_fx *f = &F;
	struct apic_msg m;

	fx_init(f, 2, false, false);
	/* Send illegal vector: ICR fixed with vector 5 sends nothing. */
	xw(f, 0, APIC_ICR2, 1u << 24);
	xw(f, 0, APIC_ICR, 0x4005);
	CHECK_EQ(f->kicks[1], 0);
	CHECK_EQ(xr(f, 0, APIC_ESR), 0);        /* not latched yet */
	xw(f, 0, APIC_ESR, 0);
	CHECK_EQ(xr(f, 0, APIC_ESR), ESR_SEND_ILLEGAL_VECTOR);
	xw(f, 0, APIC_ESR, 0);
	CHECK_EQ(xr(f, 0, APIC_ESR), 0);
	/* Receive illegal vector, and the error LVT fires for it. */
	xw(f, 1, APIC_LVTERR, 0xee);
	m = msg_fixed(1, 3);
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 0);
	CHECK(!reg_bit(f, 1, APIC_IRR, 3));
	CHECK(reg_bit(f, 1, APIC_IRR, 0xee));
	xw(f, 1, APIC_ESR, 0);
	CHECK_EQ(xr(f, 1, APIC_ESR), ESR_RECV_ILLEGAL_VECTOR);
	/* Reserved register: illegal register address. */
	CHECK_EQ(xr(f, 1, APIC_CMCI), 0);
	xw(f, 1, 0x3f0, 1);
	xw(f, 1, APIC_ESR, 0);
	CHECK_EQ(xr(f, 1, APIC_ESR), ESR_ILLEGAL_REGISTER);
	/* An error LVT with an illegal vector reports it, no loop. */
	xw(f, 0, APIC_LVTERR, 0x02);
	xw(f, 0, APIC_ICR, 0x4001);
	xw(f, 0, APIC_ESR, 0);
	CHECK_EQ(xr(f, 0, APIC_ESR),
		 ESR_SEND_ILLEGAL_VECTOR | ESR_RECV_ILLEGAL_VECTOR);
	CHECK_EQ(lapic_pending_vector(&f->l[0]), -1);
	/* Odd-sized and misaligned MMIO: contained. */
	{
		uint8_t b[8] = { 0 };

		lapic_mmio_write(&f->l[1], APIC_TPR, b, 8, 0);
		lapic_mmio_write(&f->l[1], APIC_TPR + 4, b, 4, 0);
		lapic_mmio_read(&f->l[1], APIC_LVR + 2, b, 2, 0);
		CHECK_EQ(b[0], 5);              /* max LVT */
		lapic_mmio_read(&f->l[1], APIC_LVR + 2, b, 4, 0);
		CHECK_EQ(b[0], 0);
		lapic_mmio_read(&f->l[1], 0x2000, b, 4, 0);
	}
	fx_destroy(f);
}

static void test_svr_and_lvt(void)
{
	struct apic_fx *f = &F;
	struct apic_msg m;

	fx_init(f, 2, false, false);
	/* Writable bits of each LVT. */
	xw(f, 1, APIC_LVT0, 0xffffffffu);
	CHECK_EQ(xr(f, 1, APIC_LVT0), 0x1a7ff);
	xw(f, 1, APIC_LVTERR, 0xffffffffu & ~(3u << 17));
	CHECK_EQ(xr(f, 1, APIC_LVTERR), 0x100ff);
	xw(f, 1, APIC_LVTPC, 0x4fe);
	CHECK_EQ(xr(f, 1, APIC_LVTPC), 0x4fe);
	xw(f, 1, APIC_LVTT, 0x20030);           /* periodic, vector 0x30 */
	CHECK_EQ(xr(f, 1, APIC_LVTT), 0x20030);
	xw(f, 1, APIC_LVTT, 0x60031);           /* mode 3: reserved */
	CHECK_EQ(xr(f, 1, APIC_LVTT), 0x20031);
	CHECK_EQ(xr(f, 1, APIC_SVR), 0x1ff);
	xw(f, 1, APIC_SVR, 0xffffffffu);
	CHECK_EQ(xr(f, 1, APIC_SVR), 0x1ff);    /* no focus, no EOI suppr. */

	/* Software disable masks every LVT, and they stay masked. */
	xw(f, 1, APIC_SVR, 0xff);
	for (unsigned off = APIC_LVTT; off <= APIC_LVTERR; off += 0x10)
		CHECK(xr(f, 1, off) & APIC_LVT_MASKED);
	xw(f, 1, APIC_LVT1, 0x400);
	CHECK_EQ(xr(f, 1, APIC_LVT1), 0x10400);
	/* A soft-disabled APIC drops fixed interrupts, takes NMI/INIT. */
	m = msg_fixed(1, 0x40);
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 0);
	m.mode = APIC_DM_NMI;
	CHECK_EQ(apic_bus_deliver(&f->bus, &m), 1);
	CHECK(lapic_take_nmi(&f->l[1]));
	xw(f, 1, APIC_SVR, 0x1ff);
	CHECK_EQ(xr(f, 1, APIC_LVT1), 0x10400); /* enabling does not unmask */
	xw(f, 1, APIC_LVT1, 0x400);
	CHECK_EQ(xr(f, 1, APIC_LVT1), 0x400);

	/* Read-only and write-only registers in xAPIC mode. */
	xw(f, 1, APIC_PPR, 0xff);
	xw(f, 1, APIC_ISR, 0xff);
	CHECK_EQ(xr(f, 1, APIC_PPR), 0);
	CHECK_EQ(xr(f, 1, APIC_ISR), 0);
	CHECK_EQ(xr(f, 1, APIC_EOI), 0);
	xw(f, 1, APIC_ESR, 0);
	CHECK_EQ(xr(f, 1, APIC_ESR), 0);        /* none of that is an error */
	/* LDR / DFR keep their defined bits. */
	xw(f, 1, APIC_LDR, 0x12345678);
	CHECK_EQ(xr(f, 1, APIC_LDR), 0x12000000);
	xw(f, 1, APIC_DFR, 0);
	CHECK_EQ(xr(f, 1, APIC_DFR), 0x0fffffff);
	/* ICR: busy reads 0, reserved bits dropped; ICR2 keeps 31:24. */
	xw(f, 1, APIC_ICR2, 0xffffffffu);
	CHECK_EQ(xr(f, 1, APIC_ICR2), 0xff000000u);
	xw(f, 1, APIC_ICR, 0xfff3f040 | ICR_BUSY);
	CHECK_EQ(xr(f, 1, APIC_ICR) & ICR_BUSY, 0);
	CHECK_EQ(xr(f, 1, APIC_ICR) & 0xfff30000u, 0);
	fx_destroy(f);
}

/* A system reset (vm_reset) puts back what lapic_init left, where an
 * INIT keeps the base and the mode: x2APIC mode, TPR, LVT and divide,
 * pending vectors, a running timer and a pending SIPI are all gone. */
static void test_power_on_reset(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 2, true, false);
	rw(f, 1, APIC_TPR, 0x20);
	rw(f, 1, APIC_LVTT, 0x40);
	rw(f, 1, APIC_TDCR, 0xb);
	rw(f, 1, APIC_TMICT, 1000);
	CHECK(f->armed[1] != LAPIC_NO_DEADLINE);
	CHECK_EQ(x2w(f, 0, APIC_ICR, 1ull << 32 | 0x4031), 0);  /* fixed 0x31 to 1 */
	CHECK(reg_bit(f, 1, APIC_IRR, 0x31));
	CHECK_EQ(x2w(f, 0, APIC_ICR, 1ull << 32 | 0x4600 | 0x9a), 0); /* SIPI */
	CHECK(lapic_has_event(&f->l[1]));

	lapic_reset(&f->l[1]);
	lapic_reset(&f->l[0]);
	CHECK_EQ(lapic_apic_base(&f->l[1]), 0xfee00000ull | APIC_BASE_EN);
	CHECK_EQ(lapic_apic_base(&f->l[0]),
		 0xfee00000ull | APIC_BASE_EN | APIC_BASE_BSP);
	CHECK(!lapic_x2apic_mode(&f->l[1]));
	CHECK_EQ(xr(f, 1, APIC_ID), 1u << 24);
	CHECK_EQ(xr(f, 1, APIC_LDR), 0);
	CHECK_EQ(xr(f, 1, APIC_TPR), 0);
	CHECK_EQ(xr(f, 1, APIC_SVR), 0xff);
	CHECK_EQ(xr(f, 1, APIC_LVTT), APIC_LVT_MASKED);
	CHECK_EQ(xr(f, 1, APIC_TMICT), 0);
	CHECK_EQ(xr(f, 1, APIC_TDCR), 0);
	CHECK_EQ(f->armed[1], LAPIC_NO_DEADLINE);
	CHECK(!reg_bit(f, 1, APIC_IRR, 0x31));
	CHECK_EQ(lapic_pending_vector(&f->l[1]), -1);
	CHECK(!lapic_has_event(&f->l[1]));
	CHECK(lapic_waiting_for_sipi(&f->l[1]));
	CHECK(!lapic_waiting_for_sipi(&f->l[0]));
	CHECK_EQ(lapic_tsc_deadline_read(&f->l[1]), 0);
	fx_destroy(f);
}

/* PV EOI's two LAPIC calls: when an EOI may be made in guest memory, and
 * its effect once made (vmm/x86/pv_eoi.h). */
static void test_eoi_deferrable(void)
{
	struct apic_fx *f = &F;
	struct lapic *l;

	fx_init(f, 2, false, true);
	l = &f->l[1];
	CHECK(!lapic_eoi_deferrable(l));        /* nothing in service */
	inject(f, 1, 0x62, false);
	CHECK(!lapic_eoi_deferrable(l));        /* requested, not in service */
	CHECK_EQ(lapic_accept(l), 0x62);
	CHECK(lapic_eoi_deferrable(l));
	inject(f, 1, 0x41, false);              /* requested behind it: an EOI */
	CHECK(!lapic_eoi_deferrable(l));        /* must come to us to deliver */
	lapic_eoi(l);
	CHECK(!reg_bit(f, 1, APIC_ISR, 0x62));
	CHECK_EQ(lapic_accept(l), 0x41);
	CHECK(lapic_eoi_deferrable(l));
	lapic_eoi(l);
	CHECK_EQ(xr(f, 1, APIC_ISR + 0x40), 0);
	CHECK_EQ(f->neoi, 0);
	/* Level-triggered: its EOI goes on to the IOAPIC, never deferred;
	 * lapic_eoi still broadcasts it like the register would. */
	inject(f, 1, 0x61, true);
	CHECK_EQ(lapic_accept(l), 0x61);
	CHECK(!lapic_eoi_deferrable(l));
	lapic_eoi(l);
	CHECK_EQ(f->neoi, 1);
	CHECK_EQ(f->eoi_log[0], 0x61);
	lapic_eoi(l);                           /* nothing in service: no effect */
	CHECK_EQ(f->neoi, 1);
	fx_destroy(f);
}

int main(void)
{
	test_reset_and_ids();
	test_x2apic_gp();
	test_apic_base();
	test_priority();
	test_eoi_broadcast();
	test_eoi_deferrable();
	test_esr();
	test_svr_and_lvt();
	test_power_on_reset();
	return check_report("test_lapic");
}
