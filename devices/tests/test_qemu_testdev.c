/* --qemu-testdev: fw_cfg items as a guest reads them (select, then byte
 * reads), pc-testdev IRQ-line levels, the scratch and flush ports, and
 * attach refusing bad setups and overlaps without leaving ranges behind. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "devices/qemu_testdev.h"
#include "common/test_check.h"

struct irq_rec {
	int calls;
	unsigned last_line;
	int level[QEMU_TESTDEV_IRQ_LINES];
};

static void on_irq(void *opaque, unsigned line, int level)
{
	struct irq_rec *r = opaque;

	r->calls++;
	r->last_line = line;
	if (line < QEMU_TESTDEV_IRQ_LINES)
		r->level[line] = level;
}

static void select_key(struct bus *bus, uint16_t key)
{
	CHECK_EQ(bus_write(bus, 0x510, &key, 2), 0);
}

static uint64_t read_item(struct bus *bus, uint16_t key, unsigned bytes)
{
	uint64_t v = 0;

	select_key(bus, key);
	for (unsigned i = 0; i < bytes; i++) {
		uint8_t b = 0xaa;

		CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
		v |= (uint64_t)b << (8 * i);
	}
	return v;
}

static void test_fwcfg(struct bus *bus)
{
	char sig[5] = { 0 };
	uint8_t b;

	select_key(bus, 0x00);
	for (unsigned i = 0; i < 4; i++)
		CHECK_EQ(bus_read(bus, 0x511, &sig[i], 1), 0);
	CHECK(!strcmp(sig, "QEMU"));
	CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
	CHECK_EQ(b, 0);                                   /* past the end */

	CHECK_EQ(read_item(bus, 0x05, 2), 3);             /* CPU count */
	CHECK_EQ(read_item(bus, 0x0f, 2), 3);
	CHECK_EQ(read_item(bus, 0x03, 8), 0x123456789000ULL);  /* RAM bytes, LE */
	CHECK_EQ(read_item(bus, 0x01, 4), 1);             /* traditional interface */
	CHECK_EQ(read_item(bus, 0x11, 8), 0);             /* unknown: 0 */
	CHECK_EQ(read_item(bus, 0x8000, 4), 0);
	/* selecting again restarts at byte 0 */
	select_key(bus, 0x03);
	CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
	CHECK_EQ(read_item(bus, 0x03, 1), 0x00);
	select_key(bus, 0x03);
	CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
	CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
	CHECK_EQ(b, 0x90);
	/* a byte write to the selector is ignored (QEMU's is 16-bit) */
	b = 0x05;
	CHECK_EQ(bus_write(bus, 0x510, &b, 1), 0);
	CHECK_EQ(bus_read(bus, 0x511, &b, 1), 0);
	CHECK_EQ(b, 0x78);                                /* still item 3, byte 2 */
}

static void test_irq_lines(struct bus *bus, struct irq_rec *rec)
{
	uint8_t v;

	v = 1;
	CHECK_EQ(bus_write(bus, 0x200e, &v, 1), 0);
	CHECK_EQ(rec->calls, 1);
	CHECK_EQ(rec->last_line, 14);
	CHECK_EQ(rec->level[14], 1);
	v = 0x80;                                         /* any non-zero is 1 */
	CHECK_EQ(bus_write(bus, 0x2000, &v, 1), 0);
	CHECK_EQ(rec->last_line, 0);
	CHECK_EQ(rec->level[0], 1);
	v = 0;
	CHECK_EQ(bus_write(bus, 0x200e, &v, 1), 0);
	CHECK_EQ(rec->level[14], 0);
	CHECK_EQ(rec->level[0], 1);                       /* other lines stay */
	v = 1;
	CHECK_EQ(bus_write(bus, 0x2017, &v, 1), 0);
	CHECK_EQ(rec->last_line, 23);
	CHECK_EQ(bus_write(bus, 0x2018, &v, 1), -ENOENT); /* 24 lines only */
	v = 0xff;
	CHECK_EQ(bus_read(bus, 0x2003, &v, 1), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(rec->calls, 4);
}

static void test_io(struct bus *bus, struct irq_rec *rec)
{
	uint32_t w = 0x11223344, r = 0;
	uint8_t b;
	int calls = rec->calls;

	CHECK_EQ(bus_write(bus, 0xe0, &w, 4), 0);
	CHECK_EQ(bus_read(bus, 0xe0, &r, 4), 0);
	CHECK_EQ(r, 0x11223344);
	b = 0xaa;
	CHECK_EQ(bus_write(bus, 0xe9, &b, 1), 0);         /* byte view, byte 1 */
	CHECK_EQ(bus_read(bus, 0xe0, &r, 4), 0);
	CHECK_EQ(r, 0x1122aa44);
	CHECK_EQ(bus_read(bus, 0xeb, &b, 1), 0);
	CHECK_EQ(b, 0x11);
	/* flush port: accepted, changes nothing, reads 0 */
	w = 0x123000;
	CHECK_EQ(bus_write(bus, 0xe4, &w, 4), 0);
	CHECK_EQ(bus_read(bus, 0xe4, &r, 4), 0);
	CHECK_EQ(r, 0);
	CHECK_EQ(bus_read(bus, 0xe0, &r, 4), 0);
	CHECK_EQ(r, 0x1122aa44);
	CHECK_EQ(rec->calls, calls);
}

static void test_attach_errors(void)
{
	struct irq_rec rec = { 0 };
	struct qemu_testdev none = { .nr_cpus = 1 };
	struct qemu_testdev nocpu = { .irq_set = on_irq, .irq_opaque = &rec };
	struct qemu_testdev t = { .nr_cpus = 1, .irq_set = on_irq, .irq_opaque = &rec };
	struct bus bus;
	uint8_t b = 1;

	bus_init(&bus, "pio");
	CHECK_EQ(qemu_testdev_attach(&none, &bus), -EINVAL);
	CHECK_EQ(qemu_testdev_attach(&nocpu, &bus), -EINVAL);
	CHECK_EQ(bus.nr, 0);
	/* 0xe8 already taken: attach fails and leaves only the other owner */
	CHECK_EQ(bus_register(&bus, 0xe8, 1, &(const struct device_ops){ .name = "x" }, NULL), 0);
	CHECK_EQ(qemu_testdev_attach(&t, &bus), -EEXIST);
	CHECK_EQ(bus.nr, 1);
	CHECK_EQ(bus_write(&bus, 0x200e, &b, 1), -ENOENT);
	CHECK_EQ(rec.calls, 0);
}

/* Without the device the ports are simply unclaimed: what a VM without
 * --qemu-testdev has. */
static void test_absent(void)
{
	struct bus bus;
	uint8_t b = 1;

	bus_init(&bus, "pio");
	CHECK_EQ(bus_write(&bus, 0x510, &b, 1), -ENOENT);
	CHECK_EQ(bus_write(&bus, 0x2000, &b, 1), -ENOENT);
	CHECK_EQ(bus_write(&bus, 0xe4, &b, 1), -ENOENT);
}

int main(void)
{
	struct irq_rec rec = { 0 };
	struct qemu_testdev t = { .ram_bytes = 0x123456789000ULL, .nr_cpus = 3,
				  .irq_set = on_irq, .irq_opaque = &rec };
	struct bus bus;

	bus_init(&bus, "pio");
	CHECK_EQ(qemu_testdev_attach(&t, &bus), 0);
	test_fwcfg(&bus);
	test_irq_lines(&bus, &rec);
	test_io(&bus, &rec);
	qemu_testdev_destroy(&t);
	test_attach_errors();
	test_absent();
	return check_report("test_qemu_testdev");
}
