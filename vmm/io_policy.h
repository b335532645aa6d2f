/*
 * What happens to a port or MMIO access that no device claims. By default
 * the guest gets what an empty ISA/PCI bus gives (reads all ones, writes
 * dropped) and each distinct address is logged once, at info level (-v):
 * Linux probes a dozen absent ports on every boot, which is not an error.
 * With --strict-io such an access stops the VM instead.
 */
#ifndef LAGVISOR_VMM_IO_POLICY_H
#define LAGVISOR_VMM_IO_POLICY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"

enum io_space { IO_SPACE_PIO, IO_SPACE_MMIO };

/* Addresses remembered as logged; beyond that one line says logging stops. */
#define IO_POLICY_SEEN_MAX 128

struct io_policy {
	struct mutex lock;        /* guards nr_seen, seen[], overflowed */
	bool strict;
	unsigned nr_seen;
	bool overflowed;
	struct {
		enum io_space space;
		uint64_t addr;
	} seen[IO_POLICY_SEEN_MAX];
};

int io_policy_init(struct io_policy *p, bool strict);
void io_policy_destroy(struct io_policy *p);

/*
 * One access of len (1..8) bytes at addr: dispatched to the bus, and if no
 * device claims it, handled by the policy (read data set to all ones, the
 * address logged the first time). Returns 0, or -EPERM when strict and
 * unclaimed: the caller stops the VM with io_access_describe()'s text.
 * Safe from any thread. O(log ranges) + O(seen) the first time per address.
 */
int io_dispatch(struct io_policy *p, const struct bus *bus, enum io_space space,
		uint64_t addr, void *data, unsigned len, bool is_write);

/* "1-byte write to port 0x80" / "4-byte read from MMIO 0xfed00000". */
void io_access_describe(char *buf, size_t buflen, enum io_space space,
			uint64_t addr, unsigned len, bool is_write);

/* True the first time (space, addr) is seen (and remembers it). */
bool io_policy_first_seen(struct io_policy *p, enum io_space space, uint64_t addr);

#endif
