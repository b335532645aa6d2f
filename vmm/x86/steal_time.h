/*
 * The guest's steal-time area (MSR_KVM_STEAL_TIME) owned by lagvisor in
 * --irqchip user mode: KVM never sees the MSR (it is filtered), so the
 * struct kvm_steal_time the guest registered is kept here, with KVM's
 * protocol: `version` is odd while an update is in progress, `steal`
 * only grows (by the time the vCPU thread was runnable but not running:
 * the host's run delay, field 2 of /proc/thread-self/schedstat, until the
 * lagvisor scheduler reports its own), `preempted` says whether the vCPU
 * is waiting for a pCPU. One vCPU thread owns each struct.
 */
#ifndef LAGVISOR_VMM_STEAL_TIME_H
#define LAGVISOR_VMM_STEAL_TIME_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/guest_mem.h"

/* Updates closer together than this only cost a schedstat read each. */
#define STEAL_TIME_PERIOD_NS 1000000ull

struct steal_time {
	uint64_t msr;             /* what the guest wrote (reads back) */
	void *area;               /* struct kvm_steal_time in guest RAM, or NULL */
	int schedstat_fd;         /* /proc/thread-self/schedstat, -1 if none */
	uint64_t last_delay_ns;   /* run delay already added to `steal` */
	uint64_t last_update_ns;
	bool fresh;               /* enabled since the last update */
	bool preempted;           /* the value last published */
	/* --sched eevdf: time runnable in lagvisor's queues (the thread
	 * sleeps on a futex then, which the host's run delay does not see);
	 * NULL: none. */
	uint64_t (*queued_ns)(const void *arg);
	const void *queued_arg;
};

/* Call from the vCPU thread (it opens that thread's schedstat). */
void steal_time_init(struct steal_time *st);
void steal_time_destroy(struct steal_time *st);

/*
 * Guest WRMSR: bit 0 enables, bits 5:1 are reserved (#GP, -EINVAL), the
 * rest is the 64-byte aligned guest-physical address. An address outside
 * RAM is logged once and leaves the area disabled (KVM would fail its
 * writes silently too). Returns 0 or -EINVAL.
 */
int steal_time_msr_write(struct steal_time *st, const struct guest_mem *mem,
			 uint64_t val);
uint64_t steal_time_msr_read(const struct steal_time *st);

/* Add the run delay (host run queue + lagvisor's queues) since the last
 * update (at most every STEAL_TIME_PERIOD_NS unless `force` or `preempted`
 * changes: the guest must see it clear as soon as the vCPU runs again)
 * and publish `preempted`. */
void steal_time_update(struct steal_time *st, uint64_t now_ns, bool preempted,
		       bool force);

/* Run delay in ns from the text of a schedstat file, or -1. */
int64_t steal_time_parse_schedstat(const char *text);

#endif
