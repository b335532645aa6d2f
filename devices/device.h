/*
 * The one interface every device model implements, and the two ways a device
 * talks back to the machine. devices/ knows nothing of KVM or of vmm types:
 * a device sees offsets inside its own range (never where it is mapped), and
 * it signals the outside world only through callbacks it was handed.
 */
#ifndef LAGVISOR_DEVICES_DEVICE_H
#define LAGVISOR_DEVICES_DEVICE_H

#include <stdint.h>

/*
 * Access handlers. `offset` is relative to the start of the range the device
 * was registered at; `len` is 1, 2, 4 or 8. A read must fill all `len` bytes
 * of `data` (little endian). Handlers never fail: a guest doing something odd
 * gets a logged, contained effect (reads of nothing return all ones).
 */
struct device_ops {
	const char *name;
	void (*read)(void *opaque, uint64_t offset, void *data, unsigned len);
	void (*write)(void *opaque, uint64_t offset, const void *data,
		      unsigned len);
};

/*
 * An interrupt line: the device calls irq_line_set(line, 1/0) to raise or
 * lower it (edge devices pulse 1 then 0). Whoever wires the device decides
 * where `gsi` goes (KVM_IRQ_LINE, or the userspace IOAPIC).
 */
struct irq_line {
	void (*set)(void *opaque, unsigned gsi, int level);
	void *opaque;
	unsigned gsi;
};

static inline void irq_line_set(const struct irq_line *line, int level)
{
	if (line && line->set)
		line->set(line->opaque, line->gsi, level);
}

/* Little-endian helpers for handlers that take 1..8-byte accesses. */
static inline uint64_t device_data_get(const void *data, unsigned len)
{
	const uint8_t *p = data;
	uint64_t v = 0;

	for (unsigned i = 0; i < len && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void device_data_put(void *data, unsigned len, uint64_t v)
{
	uint8_t *p = data;

	for (unsigned i = 0; i < len && i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#endif
