/* A VM's worth of interrupt controllers for the APIC unit tests: an APIC
 * bus with up to APIC_FX_MAX LAPICs, a fake clock, and recorders for the
 * callbacks (kicks, timer arms, EOI broadcasts). Register helpers name
 * registers by xAPIC offset in both modes. */
#ifndef LAGVISOR_DEVICES_TESTS_APIC_FIXTURE_H
#define LAGVISOR_DEVICES_TESTS_APIC_FIXTURE_H

#include <string.h>

#include "devices/lapic_internal.h"
#include "common/test_check.h"

#define APIC_FX_MAX 32

struct apic_fx {
	struct apic_bus bus;
	struct lapic l[APIC_FX_MAX];
	unsigned n;
	uint64_t now;                   /* the fake clock, ns */
	unsigned kicks[APIC_FX_MAX];
	unsigned arms[APIC_FX_MAX];
	uint64_t armed[APIC_FX_MAX];    /* last arm_timer deadline */
	int eoi_log[64];                /* when no IOAPIC listens */
	unsigned neoi;
};

static void fx_kick(void *opaque, unsigned vcpu)
{
	struct apic_fx *f = opaque;

	f->kicks[vcpu]++;
}

static void fx_arm(void *opaque, unsigned vcpu, uint64_t deadline_ns)
{
	struct apic_fx *f = opaque;

	f->arms[vcpu]++;
	f->armed[vcpu] = deadline_ns;
}

static uint64_t fx_now(void *opaque)
{
	return ((struct apic_fx *)opaque)->now;
}

static void fx_eoi(void *opaque, uint8_t vector)
{
	struct apic_fx *f = opaque;

	if (f->neoi < 64)
		f->eoi_log[f->neoi++] = vector;
}

static const struct apic_bus_ops fx_ops = {
	.kick = fx_kick,
	.arm_timer = fx_arm,
	.now_ns = fx_now,
};

/* x2APIC register access (MSR 0x800 + off / 16); returns 0 or -errno. */
static inline int x2w(struct apic_fx *f, unsigned i, unsigned off,
		      uint64_t val)
{
	return lapic_msr_write(&f->l[i], MSR_X2APIC_FIRST + (off >> 4), val,
			       f->now);
}

static inline uint64_t x2r(struct apic_fx *f, unsigned i, unsigned off)
{
	uint64_t v = 0xdeadbeefdeadbeefull;

	if (lapic_msr_read(&f->l[i], MSR_X2APIC_FIRST + (off >> 4), &v,
			   f->now))
		return 0xbadbadbadull;
	return v;
}

static inline int x2rc(struct apic_fx *f, unsigned i, unsigned off)
{
	uint64_t v;

	return lapic_msr_read(&f->l[i], MSR_X2APIC_FIRST + (off >> 4), &v,
			      f->now);
}

/* xAPIC MMIO access at the page offset. */
static inline void xw(struct apic_fx *f, unsigned i, unsigned off,
		      uint32_t val)
{
	uint8_t b[4];

	device_data_put(b, 4, val);
	lapic_mmio_write(&f->l[i], off, b, 4, f->now);
}

static inline uint32_t xr(struct apic_fx *f, unsigned i, unsigned off)
{
	uint8_t b[4];

	lapic_mmio_read(&f->l[i], off, b, 4, f->now);
	return (uint32_t)device_data_get(b, 4);
}

/* Mode-independent: x2APIC if the LAPIC is in it, else MMIO. */
static inline void rw(struct apic_fx *f, unsigned i, unsigned off,
		      uint32_t val)
{
	if (lapic_x2apic_mode(&f->l[i]))
		CHECK_EQ(x2w(f, i, off, val), 0);
	else
		xw(f, i, off, val);
}

static inline uint32_t rr(struct apic_fx *f, unsigned i, unsigned off)
{
	if (lapic_x2apic_mode(&f->l[i]))
		return (uint32_t)x2r(f, i, off);
	return xr(f, i, off);
}

static inline int base_w(struct apic_fx *f, unsigned i, uint64_t val)
{
	return lapic_msr_write(&f->l[i], MSR_IA32_APIC_BASE, val, f->now);
}

/* n LAPICs, each enabled in x2APIC (x2 = true) or xAPIC mode, software
 * enabled (SVR 0x1ff). With eoi = true the fixture records EOIs. */
static inline void fx_init(struct apic_fx *f, unsigned n, bool x2, bool eoi)
{
	memset(f, 0, sizeof(*f));
	f->n = n;
	apic_bus_init(&f->bus, &fx_ops, f);
	if (eoi)
		apic_bus_set_eoi_listener(&f->bus, fx_eoi, f);
	for (unsigned i = 0; i < n; i++) {
		f->armed[i] = LAPIC_NO_DEADLINE;
		CHECK_EQ(lapic_init(&f->l[i], &f->bus, i, NULL), 0);
		if (x2)
			CHECK_EQ(base_w(f, i, LAPIC_DEFAULT_BASE | APIC_BASE_EN |
					      APIC_BASE_EXTD), 0);
		rw(f, i, APIC_SVR, 0x1ff);
	}
}

static inline void fx_destroy(struct apic_fx *f)
{
	for (unsigned i = 0; i < f->n; i++)
		lapic_destroy(&f->l[i]);
}

/* Bit `v` of a 256-bit register read through the register file. */
static inline bool reg_bit(struct apic_fx *f, unsigned i, unsigned base,
			   unsigned v)
{
	return rr(f, i, base + (v >> 5) * 0x10) & (1u << (v & 31));
}

static inline struct apic_msg msg_fixed(uint32_t dest, uint8_t vector)
{
	return (struct apic_msg){ .dest = dest, .vector = vector,
				  .mode = APIC_DM_FIXED, .src = -1 };
}

#endif
