/*
 * The two ways a PC guest resets itself through port I/O:
 *  - 0xcf9, the chipset's reset control register: a write with RST_CPU
 *    (bit 2) set requests a reset (Linux reboot=pci, and firmware); the
 *    last value written reads back.
 *  - an i8042 keyboard controller at 0x60 (data) / 0x64 (status/command)
 *    with no keyboard or mouse behind it: command 0xfe (pulse the reset
 *    line; Linux's default reboot path) or a write of the output port with
 *    bit 0 clear requests a reset. The status register reads 0x10 when idle
 *    (output and input buffers empty, keyboard not locked), so the guest's wait
 *    loops end at once, and the controller commands Linux's i8042 probe
 *    sends get short answers (self-test 0x55, config byte, interface tests)
 *    so it neither times out nor finds an AUX (mouse) port. Writes to the
 *    keyboard itself go nowhere (no device; there is no IRQ 1).
 *
 * The reset callback is called in the writing vCPU thread with no lock held;
 * it must not wait for that vCPU (ask the VM to stop and return).
 */
#ifndef LAGVISOR_DEVICES_RESET_H
#define LAGVISOR_DEVICES_RESET_H

#include <pthread.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"

#define RESET_PORT_CF9 0xcf9
#define RESET_PORT_KBD_DATA 0x60
#define RESET_PORT_KBD_CMD 0x64

struct reset_dev {
	void (*reset)(void *opaque);    /* set by the caller before attach */
	void *opaque;

	/* Internal state, initialised by reset_attach. */
	struct mutex lock;
	uint8_t cf9;                    /* last value written to 0xcf9 */
	uint8_t kbd_ctr;                /* i8042 configuration byte */
	uint8_t kbd_out;                /* output buffer (port 0x60) */
	uint8_t kbd_status;             /* status register (port 0x64) */
	uint8_t kbd_pending;            /* command awaiting a data byte, or 0 */
};

/* Initialise the state and register 0xcf9, 0x60 and 0x64 on `pio`.
 * Returns 0, -EINVAL if r->reset is NULL, or bus_register's code (then none
 * of the three stays registered). */
int reset_attach(struct reset_dev *r, struct bus *pio);

void reset_destroy(struct reset_dev *r);

#endif
