/*
 * The one host clock of vmm/: CLOCK_MONOTONIC in ns. sched/ run queues,
 * LAPIC deadlines, halt-poll windows, futex timeouts and the shared
 * domain's timestamps all compare values from it, so it must be one clock
 * (CLOCK_MONOTONIC is also what FUTEX_WAIT_BITSET and timer_create take).
 *
 * The conversions between ns and struct timespec live here too, so that
 * the kernel interfaces that want a timespec (futexes, POSIX timers,
 * condition variables, nanosleep) are fed from ns values one way.
 */
#ifndef LAGVISOR_COMMON_CLOCK_H
#define LAGVISOR_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

#define CLOCK_NS_PER_SEC 1000000000ull
#define CLOCK_NS_PER_MS  1000000ull

static inline uint64_t clock_timespec_to_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * CLOCK_NS_PER_SEC + (uint64_t)ts->tv_nsec;
}

static inline struct timespec clock_ns_to_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / CLOCK_NS_PER_SEC),
				  .tv_nsec = (long)(ns % CLOCK_NS_PER_SEC) };
}

/* Any clock in ns: the CPU-time clocks for tests and benchmarks,
 * CLOCK_REALTIME for wall-clock stamps. */
static inline uint64_t clock_read_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return clock_timespec_to_ns(&ts);
}

/* Spelled out rather than clock_read_ns(CLOCK_MONOTONIC): GCC inlines the
 * two forms differently, and the vCPU threads' park and exit paths that
 * call this are timing-sensitive; this form compiles as they always did. */
static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return clock_timespec_to_ns(&ts);
}

/* The absolute timeout ms from now that pthread_cond_timedwait takes:
 * condition variables here keep their default clock, CLOCK_REALTIME. */
static inline struct timespec clock_cond_deadline_ms(long ms)
{
	return clock_ns_to_timespec(clock_read_ns(CLOCK_REALTIME) +
				    (uint64_t)ms * CLOCK_NS_PER_MS);
}

#endif
