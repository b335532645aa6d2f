/*
 * The test-device surface QEMU offers to kvm-unit-tests style images, for
 * guests started with --qemu-testdev only (never attached otherwise):
 *
 *  fw_cfg (legacy I/O interface)  0x510 selector (16-bit write), 0x511 data
 *      (byte reads walk the selected item; past its end, or for an item not
 *      offered, 0). Items: 0x00 signature "QEMU", 0x01 interface ID 1
 *      (traditional, no DMA), 0x03 RAM size (64-bit LE), 0x05 CPU count and
 *      0x0f max CPUs (16-bit LE). Selecting resets the read offset.
 *  pc-testdev  0x2000 + n, n < 24: a byte write sets ISA IRQ line n to
 *      !!value (level: the line stays where it was put, so a guest pulses
 *      an edge with 1 then 0); reads give 0. 0xe0..0xe3 and 0xe8..0xeb: a
 *      32-bit scratch register (QEMU's ioport/ioport-byte); 0xe4..0xe7: the
 *      page-flush port, a no-op here (there is no host mapping to flush
 *      that the guest could observe).
 *
 * The isa-debug-exit port (0xf4) is separate and always present.
 * The scratch and fw_cfg state is guarded by a mutex (several vCPUs may
 * use the ports at once); IRQ line changes are made outside it.
 */
#ifndef LAGVISOR_DEVICES_QEMU_TESTDEV_H
#define LAGVISOR_DEVICES_QEMU_TESTDEV_H

#include <pthread.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"
#include "devices/device.h"

#define QEMU_FWCFG_PORT        0x510
#define QEMU_TESTDEV_IRQ_PORT  0x2000
#define QEMU_TESTDEV_IRQ_LINES 24
#define QEMU_TESTDEV_IO_PORT   0xe0     /* 0xe0..0xeb: scratch, flush, scratch */

#define QEMU_FWCFG_SIGNATURE   0x00
#define QEMU_FWCFG_ID          0x01
#define QEMU_FWCFG_RAM_SIZE    0x03
#define QEMU_FWCFG_NB_CPUS     0x05
#define QEMU_FWCFG_MAX_CPUS    0x0f

struct qemu_testdev {
	/* set before attach */
	uint64_t ram_bytes;
	uint16_t nr_cpus;
	/* IRQ line n -> set(opaque, n, level): the wiring maps ISA n to its GSI */
	void (*irq_set)(void *opaque, unsigned isa_irq, int level);
	void *irq_opaque;

	/* runtime, under lock */
	struct mutex lock;
	uint16_t selector;
	uint32_t offset;
	uint32_t scratch;
};

/*
 * Register the three port ranges on pio. Returns 0, -EINVAL when irq_set is
 * missing or nr_cpus is 0, or bus_register's error (the ranges already
 * claimed are released again).
 */
int qemu_testdev_attach(struct qemu_testdev *t, struct bus *pio);

/* Release the lock (call after the VM's vCPUs are gone). */
void qemu_testdev_destroy(struct qemu_testdev *t);

/* The byte at `offset` of fw_cfg item `key` (0 past the end / unknown). */
uint8_t qemu_fwcfg_byte(const struct qemu_testdev *t, uint16_t key, uint32_t offset);

#endif
