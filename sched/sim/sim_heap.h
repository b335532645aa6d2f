/*
 * The simulator's event queue: a binary min-heap ordered by (time, seq).
 * seq is the insertion counter, so events due at the same nanosecond run in
 * the order they were scheduled: the tie-break is part of the model, not an
 * accident of the heap layout, and the same inputs replay identically.
 * Cancellation is lazy: an event carries the generation of the object it
 * targets and the dispatcher drops it when the object moved on.
 */
#ifndef LAGVISOR_SIM_HEAP_H
#define LAGVISOR_SIM_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_event {
	uint64_t time_ns;	/* when it fires */
	uint64_t seq;		/* set by sim_heap_push: FIFO among equal times */
	uint32_t kind;		/* enum sim_event_kind (sim.h) */
	uint32_t obj;		/* pCPU or vCPU index, by kind */
	uint64_t gen;		/* generation of obj when scheduled */
	uint64_t arg;		/* kind-specific payload */
};

struct sim_heap {
	struct sim_event *ev;
	size_t n, cap;
	uint64_t next_seq;
};

void sim_heap_init(struct sim_heap *h);
void sim_heap_free(struct sim_heap *h);

/* Copies *e in (its seq is assigned here). 0 or -ENOMEM. O(log n). */
int sim_heap_push(struct sim_heap *h, const struct sim_event *e);

/* Removes the earliest event into *out; false when empty. O(log n). */
bool sim_heap_pop(struct sim_heap *h, struct sim_event *out);

/* Earliest time, or UINT64_MAX when empty. */
uint64_t sim_heap_peek_time(const struct sim_heap *h);

#endif
