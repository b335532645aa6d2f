/*
 * Shared by the sched tests: a recording fake host, a domain in a malloc'd
 * block, and common/test_check.h's CHECK macros.
 */
#ifndef LAGVISOR_SCHED_TESTS_HARNESS_H
#define LAGVISOR_SCHED_TESTS_HARNESS_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_check.h"
#include "sched/sched.h"

#define V0_START ((uint64_t)0 - (1ull << 20))
#define MS 1000000ull

struct fake_host {
	unsigned kicks[SCHED_MAX_PCPUS];
	uint64_t timer[SCHED_MAX_PCPUS];
	unsigned nr_kicks;
	unsigned nr_trace;
};

/*
 * The threaded tests call these from several runners at once, each holding
 * a different run-queue lock (a wake kicks another pCPU's curr), so the
 * counters are atomic; the tests read them only after joining.
 */
static void fake_kick(void *o, unsigned pcpu)
{
	struct fake_host *f = o;

	__atomic_fetch_add(&f->kicks[pcpu], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&f->nr_kicks, 1, __ATOMIC_RELAXED);
}

static void fake_arm(void *o, unsigned pcpu, uint64_t t)
{
	__atomic_store_n(&((struct fake_host *)o)->timer[pcpu], t, __ATOMIC_RELAXED);
}

static void fake_trace(void *o, const struct sched_trace_event *ev)
{
	(void)ev;
	__atomic_fetch_add(&((struct fake_host *)o)->nr_trace, 1, __ATOMIC_RELAXED);
}

static const struct sched_host_ops fake_ops = {
	.kick = fake_kick,
	.arm_timer = fake_arm,
	.trace = fake_trace,
};

struct tdom {
	void *mem;
	size_t len;
	struct sched_handle h;
	struct fake_host host;
};

/* Fresh domain; features: comma list applied after the defaults. */
static inline struct tdom *tdom_new(unsigned pcpus, unsigned ents, const char *features)
{
	struct tdom *t = calloc(1, sizeof(*t));
	struct sched_domain_params p = {
		.base_slice_ns = 3 * MS, .tick_ns = 1 * MS, .features = features,
		.start_vruntime = V0_START,
	};

	if (!t)
		return NULL;
	t->len = sched_domain_size(pcpus, ents);
	t->mem = aligned_alloc(64, (t->len + 63) / 64 * 64);
	if (!t->mem || sched_domain_init(t->mem, t->len, pcpus, ents, &p) ||
	    sched_handle_init(&t->h, t->mem, t->len, &fake_ops, &t->host)) {
		fprintf(stderr, "tdom_new(%u, %u, %s) failed\n", pcpus, ents,
			features ? features : "");
		exit(1);
	}
	return t;
}

static inline void tdom_free(struct tdom *t)
{
	sched_domain_destroy(t->mem);
	free(t->mem);
	free(t);
}

/* Add a nice-0 (or weighted) entity whose creator sits on pcpu. */
static inline unsigned tdom_add(struct tdom *t, unsigned pcpu, uint32_t weight, bool idle)
{
	struct sched_entity_params p = {
		.weight = weight, .idle_class = idle, .create_pcpu = pcpu,
	};
	unsigned id = SCHED_NONE;
	int r = sched_entity_add(&t->h, &p, 0, &id);

	if (r) {
		fprintf(stderr, "sched_entity_add: %d\n", r);
		exit(1);
	}
	return id;
}

static inline struct sched_entity_info tinfo(struct tdom *t, unsigned id)
{
	struct sched_entity_info i;

	memset(&i, 0, sizeof(i));
	if (sched_entity_get_info(&t->h, id, &i))
		check_failures++;
	return i;
}

static inline struct sched_pcpu_info tpinfo(struct tdom *t, unsigned pcpu)
{
	struct sched_pcpu_info i;

	memset(&i, 0, sizeof(i));
	if (sched_pcpu_get_info(&t->h, pcpu, &i))
		check_failures++;
	return i;
}

static inline void tcheck(struct tdom *t, const char *where)
{
	char msg[256];

	if (sched_domain_check(&t->h, msg, sizeof(msg))) {
		fprintf(stderr, "%s: invariant: %s\n", where, msg);
		check_failures++;
	}
}

/* sched_schedule, and the entity expected to run next */
static inline void tsched(struct tdom *t, unsigned pcpu, uint64_t now, uint32_t expect)
{
	struct sched_switch sw;

	CHECK_EQ(sched_schedule(&t->h, pcpu, now, &sw), 0);
	CHECK_EQ(sw.next, expect);
}

#endif
