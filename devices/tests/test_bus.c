/* Bus: dispatch by address with device-relative offsets, and every way
 * bus_register must refuse a range. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "devices/bus.h"
#include "common/test_check.h"

/* A device that records its last access; reads return its id in byte 0
 * and the offset in byte 1. */
struct probe {
	uint8_t id;
	uint64_t last_off;
	unsigned last_len;
	uint64_t last_val;
	int writes;
};

static void probe_read(void *opaque, uint64_t offset, void *data,
		       unsigned len)
{
	struct probe *p = opaque;

	p->last_off = offset;
	p->last_len = len;
	memset(data, 0, len);
	((uint8_t *)data)[0] = p->id;
	if (len > 1)
		((uint8_t *)data)[1] = (uint8_t)offset;
}

static void probe_write(void *opaque, uint64_t offset, const void *data,
			unsigned len)
{
	struct probe *p = opaque;

	p->last_off = offset;
	p->last_len = len;
	p->last_val = device_data_get(data, len);
	p->writes++;
}

static const struct device_ops probe_ops = {
	.name = "probe", .read = probe_read, .write = probe_write,
};

static const struct device_ops write_only_ops = {
	.name = "wo", .write = probe_write,
};

static void test_dispatch(void)
{
	struct bus bus;
	struct probe a = { .id = 0xa }, b = { .id = 0xb }, c = { .id = 0xc };
	uint8_t buf[4];
	uint32_t v = 0x11223344;

	bus_init(&bus, "pio");
	/* Registered out of order: the table must sort them. */
	CHECK_EQ(bus_register(&bus, 0x3f8, 8, &probe_ops, &b), 0);
	CHECK_EQ(bus_register(&bus, 0x70, 2, &probe_ops, &a), 0);
	CHECK_EQ(bus_register(&bus, 0xcf8, 1, &probe_ops, &c), 0);
	CHECK_EQ(bus.nr, 3);
	CHECK(bus.ranges[0].base == 0x70 && bus.ranges[1].base == 0x3f8 &&
	      bus.ranges[2].base == 0xcf8);

	CHECK_EQ(bus_read(&bus, 0x71, buf, 2), 0);
	CHECK_EQ(buf[0], 0xa);
	CHECK_EQ(buf[1], 1);                    /* offset, not address */
	CHECK_EQ(bus_read(&bus, 0x3f8 + 5, buf, 1), 0);
	CHECK_EQ(buf[0], 0xb);
	CHECK_EQ(b.last_off, 5);
	CHECK_EQ(bus_read(&bus, 0x3ff, buf, 1), 0);     /* last port */
	CHECK_EQ(b.last_off, 7);

	CHECK_EQ(bus_write(&bus, 0xcf8, &v, 4), 0);
	CHECK_EQ(c.last_off, 0);
	CHECK_EQ(c.last_len, 4);
	CHECK_EQ(c.last_val, 0x11223344);

	/* Holes: just before, just after, between, far away. */
	CHECK_EQ(bus_read(&bus, 0x6f, buf, 1), -ENOENT);
	CHECK_EQ(bus_read(&bus, 0x72, buf, 1), -ENOENT);
	CHECK_EQ(bus_read(&bus, 0x400, buf, 1), -ENOENT);
	CHECK_EQ(bus_write(&bus, 0xcf9, &v, 1), -ENOENT);
	CHECK_EQ(bus_read(&bus, 0, buf, 1), -ENOENT);
	CHECK_EQ(bus_read(&bus, UINT64_MAX, buf, 1), -ENOENT);
	CHECK_EQ(a.writes + b.writes, 0);
}

static void test_missing_handler(void)
{
	struct bus bus;
	struct probe p = { .id = 1 };
	uint8_t buf[1] = { 0x5a };

	bus_init(&bus, "mmio");
	CHECK_EQ(bus_register(&bus, 0x1000, 0x10, &write_only_ops, &p), 0);
	CHECK_EQ(bus_read(&bus, 0x1000, buf, 1), -ENOENT);
	CHECK_EQ(bus_write(&bus, 0x100f, buf, 1), 0);
	CHECK_EQ(p.last_off, 0xf);
}

static void test_reject(void)
{
	struct bus bus;
	struct probe p = { 0 };

	bus_init(&bus, "mmio");
	CHECK_EQ(bus_register(&bus, 0x100, 0x100, &probe_ops, &p), 0);
	/* Zero length, no ops, wrap past 2^64. */
	CHECK_EQ(bus_register(&bus, 0x1000, 0, &probe_ops, &p), -EINVAL);
	CHECK_EQ(bus_register(&bus, 0x1000, 1, NULL, &p), -EINVAL);
	CHECK_EQ(bus_register(&bus, UINT64_MAX, 2, &probe_ops, &p), -EINVAL);
	CHECK_EQ(bus_register(&bus, 2, UINT64_MAX, &probe_ops, &p), -EINVAL);
	/* Overlaps: same, inside, covering, straddling either end. */
	CHECK_EQ(bus_register(&bus, 0x100, 0x100, &probe_ops, &p), -EEXIST);
	CHECK_EQ(bus_register(&bus, 0x180, 1, &probe_ops, &p), -EEXIST);
	CHECK_EQ(bus_register(&bus, 0x0, 0x1000, &probe_ops, &p), -EEXIST);
	CHECK_EQ(bus_register(&bus, 0xff, 2, &probe_ops, &p), -EEXIST);
	CHECK_EQ(bus_register(&bus, 0x1ff, 2, &probe_ops, &p), -EEXIST);
	CHECK_EQ(bus.nr, 1);
	/* Exactly adjacent on both sides is fine. */
	CHECK_EQ(bus_register(&bus, 0xff, 1, &probe_ops, &p), 0);
	CHECK_EQ(bus_register(&bus, 0x200, 1, &probe_ops, &p), 0);
	/* The very top of the address space, without wrapping. */
	CHECK_EQ(bus_register(&bus, UINT64_MAX, 1, &probe_ops, &p), 0);
	CHECK_EQ(bus_register(&bus, UINT64_MAX - 0xf, 0x10, &probe_ops, &p),
		 -EEXIST);
	CHECK_EQ(bus_register(&bus, UINT64_MAX - 0xf, 0xf, &probe_ops, &p), 0);
	CHECK_EQ(bus.nr, 5);
}

static void test_full_and_unregister(void)
{
	struct bus bus;
	struct probe p = { .id = 7 };
	uint8_t buf[1];

	bus_init(&bus, "pio");
	for (unsigned i = 0; i < BUS_MAX_RANGES; i++)
		CHECK_EQ(bus_register(&bus, 0x1000 - 0x10 * i, 4, &probe_ops,
				      &p), 0);
	CHECK_EQ(bus.nr, BUS_MAX_RANGES);
	CHECK_EQ(bus_register(&bus, 0x2000, 4, &probe_ops, &p), -ENOSPC);
	for (unsigned i = 1; i < bus.nr; i++)
		CHECK(bus.ranges[i - 1].base < bus.ranges[i].base);
	/* Every range still dispatches with its own offset. */
	for (unsigned i = 0; i < BUS_MAX_RANGES; i++) {
		CHECK_EQ(bus_read(&bus, 0x1000 - 0x10 * i + 3, buf, 1), 0);
		CHECK_EQ(p.last_off, 3);
	}

	CHECK_EQ(bus_unregister(&bus, 0x1001), -ENOENT);   /* not a base */
	CHECK_EQ(bus_unregister(&bus, 0x1000 - 0x10 * 5), 0);
	CHECK_EQ(bus_unregister(&bus, 0x1000 - 0x10 * 5), -ENOENT);
	CHECK_EQ(bus.nr, BUS_MAX_RANGES - 1);
	CHECK_EQ(bus_read(&bus, 0x1000 - 0x10 * 5, buf, 1), -ENOENT);
	CHECK_EQ(bus_read(&bus, 0x1000 - 0x10 * 4, buf, 1), 0);
	CHECK_EQ(bus_read(&bus, 0x1000 - 0x10 * 6, buf, 1), 0);
	CHECK_EQ(bus_register(&bus, 0x2000, 4, &probe_ops, &p), 0);
}

int main(void)
{
	test_dispatch();
	test_missing_handler();
	test_reject();
	test_full_and_unregister();
	return check_report("test_bus");
}
