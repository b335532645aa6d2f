/*
 * An address bus (one for port I/O, one for MMIO): an ordered table of
 * non-overlapping ranges, each owned by one device. Lookup is a binary search.
 * The bus does no locking; devices that can be reached from several vCPU
 * threads lock inside their handlers.
 */
#ifndef LAGVISOR_DEVICES_BUS_H
#define LAGVISOR_DEVICES_BUS_H

#include <stdint.h>

#include "devices/device.h"

#define BUS_MAX_RANGES 64

struct bus_range {
	uint64_t base;
	uint64_t len;
	const struct device_ops *ops;
	void *opaque;
};

struct bus {
	const char *name;                       /* "pio" or "mmio", for messages */
	unsigned nr;                            /* ranges in use, sorted by base */
	struct bus_range ranges[BUS_MAX_RANGES];
};

void bus_init(struct bus *bus, const char *name);

/*
 * Claim [base, base+len) for a device. Returns 0, -EINVAL for len 0 or a
 * range that wraps past 2^64, -EEXIST if it overlaps a registered range,
 * -ENOSPC when the table is full.
 */
int bus_register(struct bus *bus, uint64_t base, uint64_t len,
		 const struct device_ops *ops, void *opaque);

/*
 * Release the range that starts exactly at `base` (for unwinding a device
 * whose attach failed half-way). Returns 0 or -ENOENT.
 */
int bus_unregister(struct bus *bus, uint64_t base);

/*
 * Dispatch an access of len bytes at addr to the device whose range holds
 * addr, with the offset inside that range. Returns 0, or -ENOENT when no
 * device claims addr (the caller applies the unhandled-access policy).
 */
int bus_read(const struct bus *bus, uint64_t addr, void *data, unsigned len);
int bus_write(const struct bus *bus, uint64_t addr, const void *data,
	      unsigned len);

#endif
