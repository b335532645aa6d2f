/* Unhandled I/O: all-ones reads, dropped writes, once-per-address memory,
 * strict mode, and dispatch to a claimed range. */
#include <errno.h>
#include <stdint.h>

#include "devices/bus.h"
#include "vmm/io_policy.h"
#include "common/test_check.h"

static unsigned reads, writes;
static uint64_t last_offset;

static void dev_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	(void)opaque;
	reads++;
	last_offset = offset;
	device_data_put(data, len, 0x12345678);
}

static void dev_write(void *opaque, uint64_t offset, const void *data, unsigned len)
{
	(void)opaque;
	(void)data;
	(void)len;
	writes++;
	last_offset = offset;
}

static const struct device_ops dev_ops = {
	.name = "test", .read = dev_read, .write = dev_write,
};

int main(void)
{
	struct io_policy p;
	struct bus bus;
	uint8_t data[8];
	char buf[96];

	bus_init(&bus, "pio");
	CHECK(bus_register(&bus, 0x3f8, 8, &dev_ops, NULL) == 0);
	CHECK(io_policy_init(&p, false) == 0);

	/* Claimed: the device sees the offset inside its range. */
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x3fa, data, 1, false) == 0);
	CHECK(reads == 1 && last_offset == 2 && data[0] == 0x78);
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x3f8, data, 1, true) == 0);
	CHECK(writes == 1 && last_offset == 0);

	/* Unclaimed read: all ones, of exactly len bytes. */
	memset(data, 0, sizeof(data));
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x80, data, 2, false) == 0);
	CHECK(data[0] == 0xff && data[1] == 0xff && data[2] == 0);
	/* Unclaimed write: dropped, data untouched. */
	data[0] = 0x42;
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x81, data, 1, true) == 0);
	CHECK(data[0] == 0x42);
	CHECK(reads == 1 && writes == 1);

	/* Once per (space, address), not once per call site. */
	CHECK(p.nr_seen == 2);
	CHECK(!io_policy_first_seen(&p, IO_SPACE_PIO, 0x80));
	CHECK(!io_policy_first_seen(&p, IO_SPACE_PIO, 0x81));
	CHECK(io_policy_first_seen(&p, IO_SPACE_MMIO, 0x80));
	CHECK(io_policy_first_seen(&p, IO_SPACE_PIO, 0x82));
	CHECK(p.nr_seen == 4);
	for (uint64_t a = 0; a < 2 * IO_POLICY_SEEN_MAX; a++)
		io_policy_first_seen(&p, IO_SPACE_MMIO, 0x1000 + a);
	CHECK(p.nr_seen == IO_POLICY_SEEN_MAX && p.overflowed);
	CHECK(!io_policy_first_seen(&p, IO_SPACE_MMIO, 0xdead0000));
	io_policy_destroy(&p);

	/* Strict: unclaimed is an error, claimed still works. */
	CHECK(io_policy_init(&p, true) == 0);
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x80, data, 1, true) == -EPERM);
	CHECK(io_dispatch(&p, &bus, IO_SPACE_MMIO, 0xfed00000, data, 4, false) == -EPERM);
	CHECK(io_dispatch(&p, &bus, IO_SPACE_PIO, 0x3f9, data, 1, false) == 0);
	io_policy_destroy(&p);

	io_access_describe(buf, sizeof(buf), IO_SPACE_PIO, 0x80, 1, true);
	CHECK(!strcmp(buf, "1-byte write to port 0x80"));
	io_access_describe(buf, sizeof(buf), IO_SPACE_MMIO, 0xfed00000, 4, false);
	CHECK(!strcmp(buf, "4-byte read from MMIO 0xfed00000"));
	return check_report("test_io_policy");
}
