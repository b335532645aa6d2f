/*
 * `--trace FILE`: scheduler events as Chrome trace-event JSON (the array
 * form), which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 * One track per pCPU (pid 1 = the domain, tid = pCPU index): what ran
 * there as complete ("X") events from switch to switch, and instant ("i")
 * events for wakeup, migrate, block and preempt. Timestamps are
 * CLOCK_MONOTONIC in microseconds. In a shared domain each member traces
 * the decisions its own threads take.
 *
 * trace_writer_event has the signature of struct sched_bind's trace hook;
 * it is called under run-queue locks from many threads and only formats
 * into a stdio buffer under its own mutex.
 */
#ifndef LAGVISOR_VMM_TRACE_H
#define LAGVISOR_VMM_TRACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/mutex.h"
#include "sched/sched.h"

struct sched_shm;

struct trace_writer {
	FILE *f;
	struct mutex lock;
	const struct sched_shm *shm;   /* names: vCPU index and pid; may be NULL */
	unsigned nr_pcpus;
	uint32_t *curr;                /* per pCPU: entity running since since_ns */
	uint64_t *since_ns;
	uint64_t nr_events;
	int error;                     /* first write error (-errno), sticky */
};

/* Create/truncate path and write the header and one track name per pCPU.
 * 0 or -errno with one line naming the file in err. */
int trace_writer_open(struct trace_writer *t, const char *path, unsigned nr_pcpus,
		      const struct sched_shm *shm, char *err, size_t errlen);

/* One scheduler event (void *: the trace hook's argument). */
void trace_writer_event(void *t, const struct sched_trace_event *ev);

/* End the running slices at now_ns, close the JSON, close the file.
 * 0 or the first write error. Safe on a zeroed struct. */
int trace_writer_close(struct trace_writer *t, uint64_t now_ns);

#endif
