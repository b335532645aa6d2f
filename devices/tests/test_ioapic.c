/* IOAPIC: registers through the MMIO window, edge pins (rising edges,
 * masked edges lost), level pins (remote IRR, EOI broadcast from the
 * LAPIC, redelivery while asserted, unmask of an asserted pin), delivery
 * modes and destinations, and guest mistakes that must stay contained. */
#include "devices/bus.h"
#include "devices/ioapic.h"
#include "apic_fixture.h"

static struct apic_fx F;
static struct ioapic IO;
static struct bus MMIO;

static uint32_t io_rd(uint8_t index)
{
	uint32_t v;

	CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE, &index, 1), 0);
	CHECK_EQ(bus_read(&MMIO, IOAPIC_DEFAULT_BASE + 0x10, &v, 4), 0);
	return v;
}

static void io_wr(uint8_t index, uint32_t v)
{
	uint32_t sel = index;

	CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE, &sel, 4), 0);
	CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE + 0x10, &v, 4), 0);
}

static void route(unsigned pin, uint64_t entry)
{
	io_wr((uint8_t)(0x11 + 2 * pin), (uint32_t)(entry >> 32));
	io_wr((uint8_t)(0x10 + 2 * pin), (uint32_t)entry);
}

static uint64_t entry(unsigned pin)
{
	return io_rd((uint8_t)(0x10 + 2 * pin)) |
	       (uint64_t)io_rd((uint8_t)(0x11 + 2 * pin)) << 32;
}

#define DEST(id) ((uint64_t)(id) << 56)
#define LEVEL (1ull << 15)
#define MASKED (1ull << 16)
#define RIRR (1ull << 14)

/* Take vector v on LAPIC i if it is requested (and EOI it); returns
 * whether it was. */
static bool take(unsigned i, uint8_t v)
{
	if (lapic_pending_vector(&F.l[i]) != v)
		return false;
	lapic_ack(&F.l[i], v);
	xw(&F, i, APIC_EOI, 0);
	return true;
}

static void setup(void)
{
	fx_init(&F, 4, false, false);
	CHECK_EQ(ioapic_init(&IO, &F.bus, 4), 0);
	bus_init(&MMIO, "mmio");
	CHECK_EQ(ioapic_attach(&IO, &MMIO, IOAPIC_DEFAULT_BASE), 0);
}

static void teardown(void)
{
	ioapic_destroy(&IO);
	fx_destroy(&F);
}

static void test_registers(void)
{
	setup();
	CHECK_EQ(io_rd(0x00), 4u << 24);
	CHECK_EQ(io_rd(0x01), 0x170011);
	CHECK_EQ(io_rd(0x02), 4u << 24);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		CHECK_EQ(entry(pin), MASKED);
	io_wr(0x00, 9u << 24);
	CHECK_EQ(io_rd(0x00), 9u << 24);
	/* Only ID bits 27:24 are writable (kvm-unit-tests "id register
	 * only bits [24:27] writable": it writes the complement). */
	io_wr(0x00, ~(9u << 24));
	CHECK_EQ(io_rd(0x00), 6u << 24);
	io_wr(0x00, 9u << 24);
	io_wr(0x01, 0);                         /* read-only */
	CHECK_EQ(io_rd(0x01), 0x170011);
	/* Delivery status and remote IRR are read-only, 55:17 reserved. */
	route(3, 0xffffffffffffffffull);
	CHECK_EQ(entry(3), 0xff0000000001afffull);
	CHECK_EQ(io_rd(0x40), 0);               /* beyond entry 23 */
	CHECK_EQ(io_rd(0x03), 0);
	{
		uint32_t sel = 0;
		uint8_t b;

		CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE, &sel, 4), 0);
		CHECK_EQ(bus_read(&MMIO, IOAPIC_DEFAULT_BASE + 0x13, &b, 1),
			 0);
		CHECK_EQ(b, 9);                 /* byte 3 of the ID */
		CHECK_EQ(bus_read(&MMIO, IOAPIC_DEFAULT_BASE + 0x20, &sel, 4),
			 0);
		CHECK_EQ(sel, 0);
	}
	teardown();
}

static void test_edge(void)
{
	setup();
	route(4, DEST(1) | 0x34);
	ioapic_set_irq(&IO, 4, 1);
	CHECK(take(1, 0x34));
	ioapic_set_irq(&IO, 4, 1);              /* still high: no edge */
	CHECK(!take(1, 0x34));
	ioapic_set_irq(&IO, 4, 0);
	ioapic_set_irq(&IO, 4, 1);
	CHECK(take(1, 0x34));
	CHECK_EQ(F.kicks[1], 2);
	/* A masked edge is lost, also after unmasking. */
	ioapic_set_irq(&IO, 4, 0);
	route(4, DEST(1) | 0x34 | MASKED);
	ioapic_set_irq(&IO, 4, 1);
	route(4, DEST(1) | 0x34);
	CHECK(!take(1, 0x34));
	CHECK_EQ(F.kicks[1], 2);
	/* Through an irq_line, as devices use it. */
	{
		struct irq_line line = { .set = ioapic_irq_line_set,
					 .opaque = &IO, .gsi = 5 };

		route(5, DEST(2) | 0x35);
		irq_line_set(&line, 1);
		irq_line_set(&line, 0);
		CHECK(take(2, 0x35));
	}
	/* Edge EOIs broadcast nothing. */
	CHECK(!(entry(4) & RIRR));
	teardown();
}

static void test_level(void)
{
	setup();
	route(9, DEST(2) | LEVEL | 0x59);
	ioapic_set_irq(&IO, 9, 1);
	CHECK(entry(9) & RIRR);
	CHECK(reg_bit(&F, 2, APIC_TMR, 0x59));
	CHECK_EQ(lapic_pending_vector(&F.l[2]), 0x59);
	/* Still asserted, remote IRR set: nothing more is sent. */
	ioapic_set_irq(&IO, 9, 1);
	CHECK_EQ(F.kicks[2], 1);
	/* EOI while still asserted: redelivered. */
	CHECK(take(2, 0x59));
	CHECK(entry(9) & RIRR);
	CHECK_EQ(F.kicks[2], 2);
	CHECK_EQ(lapic_pending_vector(&F.l[2]), 0x59);
	/* Deassert, then EOI: remote IRR clears, nothing sent. */
	ioapic_set_irq(&IO, 9, 0);
	CHECK(take(2, 0x59));
	CHECK(!(entry(9) & RIRR));
	CHECK_EQ(F.kicks[2], 2);
	CHECK_EQ(lapic_pending_vector(&F.l[2]), -1);
	/* Re-assert after EOI: delivered again. */
	ioapic_set_irq(&IO, 9, 1);
	CHECK(take(2, 0x59));                   /* EOI while asserted ... */
	ioapic_set_irq(&IO, 9, 0);
	CHECK(take(2, 0x59));                   /* ... gave one more */
	CHECK(!(entry(9) & RIRR));

	/* Masked level pin: held until unmasked. */
	route(10, DEST(3) | LEVEL | 0x5a | MASKED);
	ioapic_set_irq(&IO, 10, 1);
	CHECK_EQ(lapic_pending_vector(&F.l[3]), -1);
	CHECK(!(entry(10) & RIRR));
	route(10, DEST(3) | LEVEL | 0x5a);
	CHECK(entry(10) & RIRR);
	ioapic_set_irq(&IO, 10, 0);
	CHECK(take(3, 0x5a));
	CHECK(!(entry(10) & RIRR));

	/* The EOI register (0x40) clears remote IRR like a broadcast. */
	ioapic_set_irq(&IO, 10, 1);
	CHECK(entry(10) & RIRR);
	ioapic_set_irq(&IO, 10, 0);
	{
		uint32_t v = 0x5a;

		CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE + 0x40, &v, 4),
			 0);
	}
	CHECK(!(entry(10) & RIRR));
	/* An EOI for another vector leaves it alone. */
	ioapic_set_irq(&IO, 10, 1);
	ioapic_eoi(&IO, 0x5b);
	CHECK(entry(10) & RIRR);
	ioapic_set_irq(&IO, 10, 0);
	CHECK(take(3, 0x5a));

	/* A level message nobody takes does not wedge the pin. */
	route(11, DEST(7) | LEVEL | 0x5b);
	ioapic_set_irq(&IO, 11, 1);
	CHECK(!(entry(11) & RIRR));
	ioapic_set_irq(&IO, 11, 0);
	/* Switching the entry to edge drops remote IRR. */
	route(12, DEST(1) | LEVEL | 0x5c);
	ioapic_set_irq(&IO, 12, 1);
	CHECK(entry(12) & RIRR);
	route(12, DEST(1) | 0x5c);
	CHECK(!(entry(12) & RIRR));
	teardown();
}

static void test_modes_and_mistakes(void)
{
	setup();
	/* Logical flat destination, lowest priority. */
	for (unsigned i = 0; i < 4; i++)
		xw(&F, i, APIC_LDR, 1u << (24 + i));
	xw(&F, 0, APIC_TPR, 0x40);
	route(1, DEST(0x3) | (1ull << 11) | (1ull << 8) | 0x61);
	ioapic_set_irq(&IO, 1, 1);
	CHECK(take(1, 0x61));
	CHECK(!take(0, 0x61));
	/* NMI entry (level-triggered by mistake: treated as edge). */
	route(2, DEST(3) | LEVEL | (4ull << 8));
	ioapic_set_irq(&IO, 2, 1);
	CHECK(lapic_take_nmi(&F.l[3]));
	CHECK(!(entry(2) & RIRR));
	/* Illegal vector: the LAPIC flags it, nothing is requested. */
	route(6, DEST(1) | 0x05);
	ioapic_set_irq(&IO, 6, 1);
	CHECK_EQ(lapic_pending_vector(&F.l[1]), -1);
	xw(&F, 1, APIC_ESR, 0);
	CHECK_EQ(xr(&F, 1, APIC_ESR), ESR_RECV_ILLEGAL_VECTOR);
	/* ExtINT, SMI and the reserved modes send nothing. */
	route(7, DEST(1) | (7ull << 8) | 0x40);
	route(8, DEST(1) | (2ull << 8) | 0x40);
	route(13, DEST(1) | (6ull << 8) | 0x40);
	route(14, DEST(1) | (3ull << 8) | 0x40);
	ioapic_set_irq(&IO, 7, 1);
	ioapic_set_irq(&IO, 8, 1);
	ioapic_set_irq(&IO, 13, 1);
	ioapic_set_irq(&IO, 14, 1);
	CHECK(!lapic_has_event(&F.l[1]));
	/* Out-of-range pin and odd MMIO accesses. */
	ioapic_set_irq(&IO, 24, 1);
	ioapic_set_irq(&IO, 1000, 1);
	{
		uint64_t v = ~0ull;
		uint16_t h = 0x1234;

		CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE + 0x10, &h, 2),
			 0);
		CHECK_EQ(bus_write(&MMIO, IOAPIC_DEFAULT_BASE + 0x20, &v, 8),
			 0);
		CHECK_EQ(bus_read(&MMIO, IOAPIC_DEFAULT_BASE + 0x10, &v, 8),
			 0);
		CHECK_EQ(v, 0);
	}
	/* Broadcast destination reaches everyone. */
	route(15, DEST(0xff) | 0x6f);
	ioapic_set_irq(&IO, 15, 1);
	for (unsigned i = 0; i < 4; i++)
		CHECK(reg_bit(&F, i, APIC_IRR, 0x6f));
	teardown();
}

/* System reset: ID back to ioapic_init's, entries masked, IOREGSEL 0; an
 * asserted pin stays asserted and is delivered once the new guest unmasks
 * it. */
static void test_reset(void)
{
	setup();
	io_wr(0x00, 9u << 24);
	route(5, 0x45 | LEVEL | DEST(1));
	ioapic_set_irq(&IO, 5, 1);
	CHECK_EQ(lapic_pending_vector(&F.l[1]), 0x45);
	ioapic_reset(&IO);
	CHECK_EQ(io_rd(0x00), 4u << 24);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++)
		CHECK_EQ(entry(pin), MASKED);
	lapic_reset(&F.l[1]);
	CHECK_EQ(lapic_pending_vector(&F.l[1]), -1);
	xw(&F, 1, APIC_SVR, 0x1ff);
	route(5, 0x46 | LEVEL | DEST(1));
	CHECK_EQ(lapic_pending_vector(&F.l[1]), 0x46);
	teardown();
}

int main(void)
{
	test_registers();
	test_edge();
	test_level();
	test_modes_and_mistakes();
	test_reset();
	return check_report("test_ioapic");
}
