/*
 * The one host clock of vmm/: CLOCK_MONOTONIC in ns. sched/ run queues,
 * LAPIC deadlines, halt-poll windows, futex timeouts and the shared
 * domain's timestamps all compare values from it, so it must be one clock
 * (CLOCK_MONOTONIC is also what FUTEX_WAIT_BITSET and timer_create take).
 */
#ifndef LAGVISOR_COMMON_CLOCK_H
#define LAGVISOR_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
