#include "devices/debug_exit.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"

int debug_exit_status(uint32_t value)
{
	/* The shift is done unsigned (no overflow UB); a value with bit 30 or
	 * 31 set gives a negative int, as QEMU's exit() would truncate it. */
	return (int)((value << 1) | 1u);
}

static void debug_exit_read(void *opaque, uint64_t offset, void *data,
			    unsigned len)
{
	(void)opaque;
	(void)offset;
	memset(data, 0xff, len);
}

static void debug_exit_write(void *opaque, uint64_t offset, const void *data,
			     unsigned len)
{
	struct debug_exit *d = opaque;

	if (offset != 0 || len > 4) {
		log_once(LOG_WARN, "debug-exit: ignoring %u-byte write at "
			 "offset %llu", len, (unsigned long long)offset);
		return;
	}
	d->exit(d->opaque,
		debug_exit_status((uint32_t)device_data_get(data, len)));
}

static const struct device_ops debug_exit_ops = {
	.name = "debug-exit",
	.read = debug_exit_read,
	.write = debug_exit_write,
};

int debug_exit_attach(struct debug_exit *d, struct bus *pio, uint16_t base)
{
	if (!d->exit)
		return -EINVAL;
	return bus_register(pio, base, 1, &debug_exit_ops, d);
}
