#include "devices/bus.h"

#include <errno.h>
#include <string.h>

void bus_init(struct bus *bus, const char *name)
{
	memset(bus, 0, sizeof(*bus));
	bus->name = name;
}

/* Index of the first range whose base is > addr (ranges are sorted). */
static unsigned bus_upper(const struct bus *bus, uint64_t addr)
{
	unsigned lo = 0, hi = bus->nr;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (bus->ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int bus_register(struct bus *bus, uint64_t base, uint64_t len,
		 const struct device_ops *ops, void *opaque)
{
	unsigned pos;

	if (len == 0 || base + len - 1 < base || !ops)
		return -EINVAL;
	if (bus->nr == BUS_MAX_RANGES)
		return -ENOSPC;
	pos = bus_upper(bus, base);
	/* The range before must end before base; the one after must start
	 * after our last byte. Comparisons use last bytes so that a range
	 * ending at 2^64-1 does not overflow. */
	if (pos > 0) {
		const struct bus_range *prev = &bus->ranges[pos - 1];

		if (prev->base + prev->len - 1 >= base)
			return -EEXIST;
	}
	if (pos < bus->nr && bus->ranges[pos].base <= base + len - 1)
		return -EEXIST;
	memmove(&bus->ranges[pos + 1], &bus->ranges[pos],
		(bus->nr - pos) * sizeof(bus->ranges[0]));
	bus->ranges[pos] = (struct bus_range){ base, len, ops, opaque };
	bus->nr++;
	return 0;
}

int bus_unregister(struct bus *bus, uint64_t base)
{
	unsigned pos = bus_upper(bus, base);

	if (pos == 0 || bus->ranges[pos - 1].base != base)
		return -ENOENT;
	memmove(&bus->ranges[pos - 1], &bus->ranges[pos],
		(bus->nr - pos) * sizeof(bus->ranges[0]));
	bus->nr--;
	return 0;
}

static const struct bus_range *bus_find(const struct bus *bus, uint64_t addr)
{
	unsigned pos = bus_upper(bus, addr);
	const struct bus_range *r;

	if (pos == 0)
		return NULL;
	r = &bus->ranges[pos - 1];
	return addr - r->base < r->len ? r : NULL;
}

int bus_read(const struct bus *bus, uint64_t addr, void *data, unsigned len)
{
	const struct bus_range *r = bus_find(bus, addr);

	if (!r || !r->ops->read)
		return -ENOENT;
	r->ops->read(r->opaque, addr - r->base, data, len);
	return 0;
}

int bus_write(const struct bus *bus, uint64_t addr, const void *data,
	      unsigned len)
{
	const struct bus_range *r = bus_find(bus, addr);

	if (!r || !r->ops->write)
		return -ENOENT;
	r->ops->write(r->opaque, addr - r->base, data, len);
	return 0;
}
