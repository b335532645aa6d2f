#include "devices/qemu_testdev.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/log.h"

uint8_t qemu_fwcfg_byte(const struct qemu_testdev *t, uint16_t key, uint32_t offset)
{
	uint64_t v;
	unsigned size;

	switch (key) {
	case QEMU_FWCFG_SIGNATURE:
		return offset < 4 ? (uint8_t)"QEMU"[offset] : 0;
	case QEMU_FWCFG_ID:
		v = 1;
		size = 4;
		break;
	case QEMU_FWCFG_RAM_SIZE:
		v = t->ram_bytes;
		size = 8;
		break;
	case QEMU_FWCFG_NB_CPUS:
	case QEMU_FWCFG_MAX_CPUS:
		v = t->nr_cpus;
		size = 2;
		break;
	default:
		return 0;
	}
	return offset < size ? (uint8_t)(v >> (8 * offset)) : 0;
}

/* ---- fw_cfg: 0x510 selector, 0x511 data ---- */
static void fwcfg_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	struct qemu_testdev *t = opaque;
	uint8_t *p = data;

	memset(data, 0, len);
	if (offset != 1)            /* the selector reads back nothing useful */
		return;
	mutex_lock(&t->lock);
	/* Wider reads of the data port return one byte per access in QEMU's
	 * legacy interface; only the low byte carries data. */
	p[0] = qemu_fwcfg_byte(t, t->selector, t->offset);
	if (t->offset < UINT32_MAX)
		t->offset++;
	mutex_unlock(&t->lock);
}

static void fwcfg_write(void *opaque, uint64_t offset, const void *data, unsigned len)
{
	struct qemu_testdev *t = opaque;

	if (offset != 0 || len < 2) {
		log_once(LOG_WARN, "fw_cfg: ignoring %u-byte write at port 0x%llx",
			 len, (unsigned long long)(QEMU_FWCFG_PORT + offset));
		return;
	}
	mutex_lock(&t->lock);
	t->selector = (uint16_t)device_data_get(data, 2);
	t->offset = 0;
	mutex_unlock(&t->lock);
}

static const struct device_ops fwcfg_ops = {
	.name = "fw_cfg",
	.read = fwcfg_read,
	.write = fwcfg_write,
};

/* ---- pc-testdev IRQ lines: 0x2000 + n ---- */
static void irq_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	(void)opaque;
	(void)offset;
	memset(data, 0, len);
}

static void irq_write(void *opaque, uint64_t offset, const void *data, unsigned len)
{
	struct qemu_testdev *t = opaque;

	/* QEMU takes byte accesses only; a wider one is split by the bus
	 * there, here it sets each line it covers from its own byte. */
	for (unsigned i = 0; i < len && offset + i < QEMU_TESTDEV_IRQ_LINES; i++)
		t->irq_set(t->irq_opaque, (unsigned)(offset + i),
			   ((const uint8_t *)data)[i] != 0);
}

static const struct device_ops irq_ops = {
	.name = "pc-testdev-irq",
	.read = irq_read,
	.write = irq_write,
};

/* ---- pc-testdev 0xe0..0xeb: scratch register and the flush port ---- */
static bool is_flush(uint64_t offset)
{
	return offset >= 4 && offset < 8;
}

static void io_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	struct qemu_testdev *t = opaque;
	uint8_t *p = data;

	memset(data, 0, len);
	if (is_flush(offset))
		return;
	mutex_lock(&t->lock);
	for (unsigned i = 0; i < len && (offset & 3) + i < 4; i++)
		p[i] = (uint8_t)(t->scratch >> (8 * ((offset & 3) + i)));
	mutex_unlock(&t->lock);
}

static void io_write(void *opaque, uint64_t offset, const void *data, unsigned len)
{
	struct qemu_testdev *t = opaque;
	const uint8_t *p = data;

	if (is_flush(offset))
		return;
	mutex_lock(&t->lock);
	for (unsigned i = 0; i < len && (offset & 3) + i < 4; i++) {
		unsigned shift = 8 * ((offset & 3) + i);

		t->scratch = (t->scratch & ~(0xffu << shift)) | ((uint32_t)p[i] << shift);
	}
	mutex_unlock(&t->lock);
}

static const struct device_ops io_ops = {
	.name = "pc-testdev",
	.read = io_read,
	.write = io_write,
};

int qemu_testdev_attach(struct qemu_testdev *t, struct bus *pio)
{
	int r;

	if (!t->irq_set || !t->nr_cpus)
		return -EINVAL;
	r = mutex_init(&t->lock);
	if (r)
		return r;
	t->selector = 0;
	t->offset = 0;
	t->scratch = 0;
	r = bus_register(pio, QEMU_FWCFG_PORT, 2, &fwcfg_ops, t);
	if (r)
		goto err_lock;
	r = bus_register(pio, QEMU_TESTDEV_IRQ_PORT, QEMU_TESTDEV_IRQ_LINES, &irq_ops, t);
	if (r)
		goto err_fwcfg;
	r = bus_register(pio, QEMU_TESTDEV_IO_PORT, 12, &io_ops, t);
	if (r)
		goto err_irq;
	return 0;

err_irq:
	bus_unregister(pio, QEMU_TESTDEV_IRQ_PORT);
err_fwcfg:
	bus_unregister(pio, QEMU_FWCFG_PORT);
err_lock:
	mutex_destroy(&t->lock);
	return r;
}

void qemu_testdev_destroy(struct qemu_testdev *t)
{
	mutex_destroy(&t->lock);
}
