/* LAPIC timer arithmetic against a fake clock: one-shot deadline and
 * current count for each of the 8 divide encodings, periodic re-arm on
 * the period grid (late expiries do not drift, missed ones coalesce),
 * masked timers, writes of 0, divide changes mid-count, mode switches,
 * TSC-deadline conversion and rounding. */
#include "apic_fixture.h"

static struct apic_fx F;

#define VEC 0x30

static bool timer_irq(struct apic_fx *f, unsigned i)
{
	bool set = reg_bit(f, i, APIC_IRR, VEC);

	if (set) {
		CHECK_EQ(lapic_accept(&f->l[i]), VEC);
		rw(f, i, APIC_EOI, 0);
	}
	return set;
}

static void test_oneshot_dividers(void)
{
	static const struct { uint32_t tdcr, div; } d[] = {
		{ 0x0, 2 }, { 0x1, 4 }, { 0x2, 8 }, { 0x3, 16 },
		{ 0x8, 32 }, { 0x9, 64 }, { 0xa, 128 }, { 0xb, 1 },
	};
	struct apic_fx *f = &F;

	fx_init(f, 1, true, false);
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC), 0);
	for (unsigned k = 0; k < ARRAY_SIZE(d); k++) {
		uint64_t t0 = 1000000 * (k + 1), dl = t0 + 1000ull * d[k].div;

		f->now = t0;
		CHECK_EQ(x2w(f, 0, APIC_TDCR, d[k].tdcr), 0);
		CHECK_EQ(x2r(f, 0, APIC_TDCR), d[k].tdcr);
		CHECK_EQ(x2w(f, 0, APIC_TMICT, 1000), 0);
		CHECK_EQ(f->armed[0], dl);
		CHECK_EQ(lapic_timer_deadline_ns(&f->l[0]), dl);
		CHECK_EQ(x2r(f, 0, APIC_TMCCT), 1000);
		f->now = t0 + 10 * d[k].div;
		CHECK_EQ(x2r(f, 0, APIC_TMCCT), 990);
		f->now = t0 + 10 * d[k].div + d[k].div - 1;
		CHECK_EQ(x2r(f, 0, APIC_TMCCT), 990);
		/* Early expiry call: nothing, armed again. */
		lapic_timer_expire(&f->l[0], dl - 1);
		CHECK(!timer_irq(f, 0));
		CHECK_EQ(f->armed[0], dl);
		f->now = dl;
		CHECK_EQ(x2r(f, 0, APIC_TMCCT), 0);
		lapic_timer_expire(&f->l[0], dl);
		CHECK(timer_irq(f, 0));
		CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
		CHECK_EQ(x2r(f, 0, APIC_TMCCT), 0);
		CHECK_EQ(x2r(f, 0, APIC_TMICT), 1000);  /* count stays */
		lapic_timer_expire(&f->l[0], dl + 5);    /* once only */
		CHECK(!timer_irq(f, 0));
	}
	CHECK(f->kicks[0] >= ARRAY_SIZE(d));
	fx_destroy(f);
}

static void test_periodic(void)
{
	struct apic_fx *f = &F;
	const uint64_t p = 1000000;             /* 1 ms, above LAPIC_MIN_PERIOD_NS */

	fx_init(f, 1, false, false);
	f->now = 5000;
	xw(f, 0, APIC_TDCR, 0xb);               /* divide by 1 */
	xw(f, 0, APIC_LVTT, VEC | (1u << 17));
	xw(f, 0, APIC_TMICT, (uint32_t)p);
	CHECK_EQ(f->armed[0], 5000 + p);
	f->now = 5000 + p + 30000;
	lapic_timer_expire(&f->l[0], f->now);   /* 30 us late */
	CHECK(timer_irq(f, 0));
	CHECK_EQ(f->armed[0], 5000 + 2 * p);    /* on the grid, no drift */
	CHECK_EQ(xr(f, 0, APIC_TMCCT), p - 30000);
	f->now = 5000 + 4 * p + 50000;          /* missed 3 periods */
	CHECK_EQ(xr(f, 0, APIC_TMCCT), p - 50000);
	lapic_timer_expire(&f->l[0], f->now);
	CHECK(timer_irq(f, 0));
	CHECK(!timer_irq(f, 0));                /* coalesced: one interrupt */
	CHECK_EQ(f->armed[0], 5000 + 5 * p);
	/* 1000 periods with jittered host lateness: still on the grid. */
	for (unsigned k = 0; k < 1000; k++) {
		uint64_t dl = f->armed[0];

		f->now = dl + (k * 37) % 90 * 10000;
		lapic_timer_expire(&f->l[0], f->now);
		CHECK(timer_irq(f, 0));
		CHECK_EQ(f->armed[0], dl + p);
	}
	CHECK_EQ(f->armed[0], 5000 + 1005 * p);
	/* Periodic -> one-shot keeps counting, then stops. */
	xw(f, 0, APIC_LVTT, VEC);
	f->now = f->armed[0];
	lapic_timer_expire(&f->l[0], f->now);
	CHECK(timer_irq(f, 0));
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	/* Writing 0 stops a running timer. */
	xw(f, 0, APIC_LVTT, VEC | (1u << 17));
	xw(f, 0, APIC_TMICT, 100);
	CHECK(f->armed[0] != LAPIC_NO_DEADLINE);
	xw(f, 0, APIC_TMICT, 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	CHECK_EQ(xr(f, 0, APIC_TMCCT), 0);
	f->now += 1000;
	lapic_timer_expire(&f->l[0], f->now);
	CHECK(!timer_irq(f, 0));
	fx_destroy(f);
}

static void test_masked_and_divide_change(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 1, false, false);
	xw(f, 0, APIC_TDCR, 0xb);
	xw(f, 0, APIC_LVTT, VEC | APIC_LVT_MASKED);
	xw(f, 0, APIC_TMICT, 1000);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);   /* masked: not armed */
	f->now = 400;
	CHECK_EQ(xr(f, 0, APIC_TMCCT), 600);        /* but counting */
	xw(f, 0, APIC_LVTT, VEC);                   /* unmask */
	CHECK_EQ(f->armed[0], 1000);
	xw(f, 0, APIC_LVTT, VEC | APIC_LVT_MASKED);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	f->now = 1500;                              /* expires masked */
	xw(f, 0, APIC_LVTT, VEC);
	CHECK(!timer_irq(f, 0));
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	lapic_timer_expire(&f->l[0], 2000);
	CHECK(!timer_irq(f, 0));

	/* Divide change mid-count keeps the current count. */
	f->now = 10000;
	xw(f, 0, APIC_TMICT, 1000);
	f->now = 10400;
	xw(f, 0, APIC_TDCR, 0x0);                   /* divide by 2 */
	CHECK_EQ(xr(f, 0, APIC_TMCCT), 600);
	CHECK_EQ(f->armed[0], 10400 + 1200);
	f->now = 11000;
	CHECK_EQ(xr(f, 0, APIC_TMCCT), 300);

	/* Software disable masks the timer LVT and disarms it. */
	xw(f, 0, APIC_SVR, 0xff);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	lapic_timer_expire(&f->l[0], 20000);
	CHECK(!timer_irq(f, 0));
	fx_destroy(f);
}

static void test_tsc_deadline(void)
{
	struct apic_fx *f = &F;
	const uint64_t khz = 2000000;               /* 2 GHz guest TSC */
	struct lapic *l;

	fx_init(f, 1, true, false);
	l = &f->l[0];
	f->now = 1000000;
	/* Not in TSC-deadline mode: writes ignored, reads 0. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 5000, 1000, khz, f->now), 0);
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	/* A running one-shot stops when switching to TSC-deadline mode. */
	CHECK_EQ(x2w(f, 0, APIC_TMICT, 1000), 0);
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC | (2u << 17)), 0);
	CHECK_EQ(x2r(f, 0, APIC_TMICT), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	CHECK_EQ(x2w(f, 0, APIC_TMICT, 1000), 0);   /* ignored in this mode */
	CHECK_EQ(x2r(f, 0, APIC_TMICT), 0);

	/* 2000 ticks at 2 GHz = 1000 ns. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 12000, 10000, khz, f->now), 0);
	CHECK_EQ(lapic_tsc_deadline_read(l), 12000);
	CHECK_EQ(f->armed[0], f->now + 1000);
	/* 3 ticks = 1.5 ns: rounded up, never early. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 10003, 10000, khz, f->now), 0);
	CHECK_EQ(f->armed[0], f->now + 2);
	/* A 3 GHz-ish odd rate: 1e9 ticks at 2999999 kHz. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 1000010000ull, 10000, 2999999,
					  f->now), 0);
	CHECK_EQ(f->armed[0], f->now + 333333445);  /* ceil(1e15/2999999) */
	/* Far future: no overflow. */
	CHECK_EQ(lapic_tsc_deadline_write(l, UINT64_MAX, 0, 1, f->now), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE - 1);
	/* 0 disarms. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 0, 10000, khz, f->now), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	CHECK_EQ(lapic_tsc_deadline_write(l, 1, 1, 0, f->now), -EINVAL);

	/* Fires at expiry, then reads 0. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 12000, 10000, khz, f->now), 0);
	lapic_timer_expire(l, f->now + 999);
	CHECK(!timer_irq(f, 0));
	lapic_timer_expire(l, f->now + 1000);
	CHECK(timer_irq(f, 0));
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	/* A deadline already passed fires at once. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 9000, 10000, khz, f->now), 0);
	CHECK(timer_irq(f, 0));
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	/* Masked: consumed without an interrupt. */
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC | (2u << 17) | APIC_LVT_MASKED), 0);
	CHECK_EQ(lapic_tsc_deadline_write(l, 12000, 10000, khz, f->now), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	f->now += 5000;
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC | (2u << 17)), 0);
	CHECK(!timer_irq(f, 0));
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	/* Leaving TSC-deadline mode disarms a pending deadline. */
	CHECK_EQ(lapic_tsc_deadline_write(l, 20000, 10000, khz, f->now), 0);
	CHECK(f->armed[0] != LAPIC_NO_DEADLINE);
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC), 0);
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	CHECK_EQ(lapic_tsc_deadline_read(l), 0);
	/* The INIT reset stops everything. */
	CHECK_EQ(x2w(f, 0, APIC_TMICT, 100), 0);
	CHECK(f->armed[0] != LAPIC_NO_DEADLINE);
	{
		struct apic_msg m = msg_fixed(0, 0);

		m.mode = APIC_DM_INIT;
		CHECK_EQ(apic_bus_deliver(&f->bus, &m), 1);
	}
	CHECK_EQ(f->armed[0], LAPIC_NO_DEADLINE);
	CHECK_EQ(x2r(f, 0, APIC_TMICT), 0);
	fx_destroy(f);
}

/* A 1-tick period (1 ns) fires at most every LAPIC_MIN_PERIOD_NS: before,
 * each expiry armed the next one 1 ns later, so a vCPU re-armed its host
 * timer at every entry and never ran (the chaos guest hung in it). */
static void test_periodic_min(void)
{
	struct apic_fx *f = &F;

	fx_init(f, 1, true, false);
	f->now = 1000;
	CHECK_EQ(x2w(f, 0, APIC_TDCR, 0xb), 0);
	CHECK_EQ(x2w(f, 0, APIC_LVTT, VEC | (1u << 17)), 0);
	CHECK_EQ(x2w(f, 0, APIC_TMICT, 3), 0);
	CHECK_EQ(f->armed[0], 1003);            /* the first period as written */
	for (unsigned k = 0; k < 100; k++) {
		uint64_t dl = f->armed[0];

		f->now = dl;
		lapic_timer_expire(&f->l[0], f->now);
		CHECK(timer_irq(f, 0));
		CHECK(f->armed[0] >= dl + LAPIC_MIN_PERIOD_NS);
		CHECK(f->armed[0] < dl + LAPIC_MIN_PERIOD_NS + 3);
		CHECK_EQ((f->armed[0] - 1000) % 3, 0);  /* on the guest's grid */
		CHECK(x2r(f, 0, APIC_TMCCT) >= 1 && x2r(f, 0, APIC_TMCCT) <= 3);
	}
	fx_destroy(f);
}

int main(void)
{
	test_oneshot_dividers();
	test_periodic();
	test_periodic_min();
	test_masked_and_divide_change();
	test_tsc_deadline();
	return check_report("test_lapic_timer");
}
