/*
 * Halt polling for --irqchip user: when a vCPU halts with interrupts
 * enabled, spin a short while for its wakeup before sleeping, as KVM's
 * halt_poll_ns does for vCPUs whose LAPIC it owns. A wakeup that arrives
 * within the window then costs no futex wake and no host thread wakeup,
 * which is most of what a short guest sleep costs (the wakee's wakeup
 * latency on the host), and with the in-kernel irqchip KVM would have
 * polled for the baseline anyway.
 *
 * The window adapts per vCPU, the way KVM's does: it grows (doubling, from
 * HALT_POLL_GROW_START_NS) while halts end sooner than the maximum but
 * later than the window, and halves (to 0 below the start value) when a
 * halt outlasts the maximum. So a vCPU that sleeps long, e.g. an idle
 * guest between timer ticks, stops polling after one such halt and costs
 * no CPU, and one that is woken every few microseconds keeps its pCPU.
 * The window is only ever used when nothing else wants the CPU (the caller
 * checks: under --sched eevdf, no other vCPU queued on that pCPU).
 */
#ifndef LAGVISOR_VMM_HALT_POLL_H
#define LAGVISOR_VMM_HALT_POLL_H

#include <stdbool.h>
#include <stdint.h>

/* KVM's x86 defaults (halt_poll_ns, halt_poll_ns_grow_start). */
#define HALT_POLL_DEFAULT_MAX_NS 200000ull
#define HALT_POLL_GROW_START_NS  10000ull
/* --halt-poll's bound: a poll is for a wakeup that is about to come. */
#define HALT_POLL_LIMIT_NS       10000000ull

struct halt_poll {
	uint64_t max_ns;           /* --halt-poll; 0: never poll */
	uint64_t window_ns;        /* the next halt's poll, 0..max_ns */
	uint64_t nr_ok, nr_missed; /* halts ended by the poll / after it */
};

void halt_poll_init(struct halt_poll *h, uint64_t max_ns);

/* After a halt that lasted halted_ns (poll included); polled: it ended
 * inside the poll. Adapts the window. */
void halt_poll_update(struct halt_poll *h, uint64_t halted_ns, bool polled);

/*
 * Spin until *word is no longer `seen` (true), CLOCK_MONOTONIC reaches
 * end_ns, or stop(arg) returns true (false for both). stop may be NULL.
 */
bool halt_poll_spin(const uint32_t *word, uint32_t seen, uint64_t end_ns,
		    bool (*stop)(void *arg), void *arg);

#endif
