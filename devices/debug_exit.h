/*
 * QEMU isa-debug-exit compatible port (default 0xf4): a guest write of value
 * v ends the VM with status (v << 1) | 1, so a guest can never produce
 * status 0 by accident, and test guests report pass/fail through it.
 * The range is one port (QEMU's default iosize); 1-, 2- and 4-byte writes
 * at it are accepted (an `outl` at 0xf4 is what most test guests do).
 * Reads return all ones. No lock: the device has no state.
 */
#ifndef LAGVISOR_DEVICES_DEBUG_EXIT_H
#define LAGVISOR_DEVICES_DEBUG_EXIT_H

#include <stdint.h>

#include "devices/bus.h"

#define DEBUG_EXIT_PORT 0xf4

struct debug_exit {
	/* Called in the writing vCPU thread with (v << 1) | 1 computed in 32
	 * bits (a process exit code keeps the low 8 bits). It must not block
	 * waiting for that vCPU: ask the VM to stop and return. */
	void (*exit)(void *opaque, int status);
	void *opaque;
};

/* Register [base, base+1) on `pio`. Returns bus_register's code, or
 * -EINVAL if d->exit is NULL. */
int debug_exit_attach(struct debug_exit *d, struct bus *pio, uint16_t base);

/* The status a write of `value` produces. */
int debug_exit_status(uint32_t value);

#endif
