/*
 * Shared by the owner-death tests (test_repair*.c): a domain in a MAP_SHARED
 * anonymous mapping that forked children use too, a clock in that mapping so
 * the parent continues where a killed child stopped, and verify(): what the
 * parent must be able to do after any death.
 */
#ifndef LAGVISOR_SCHED_TESTS_REPAIR_FIXTURE_H
#define LAGVISOR_SCHED_TESTS_REPAIR_FIXTURE_H

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/internal.h"
#include "harness.h"

#define DOM_OFF 256                    /* struct shared, then the domain */

struct shared {
	uint64_t now;                  /* the clock, advanced by whoever runs */
	uint32_t started;              /* random child: running its loop */
};

struct world {
	void *map;
	size_t len;
	struct shared *sh;
	struct sched_domain *d;
	struct sched_handle h;
	struct fake_host host;
};

static inline struct world *world_new(unsigned pcpus, unsigned ents, const char *features)
{
	struct world *w = calloc(1, sizeof(*w));
	struct sched_domain_params p = {
		.base_slice_ns = 3 * MS, .tick_ns = 1 * MS, .features = features,
		.start_vruntime = V0_START,
	};
	size_t dlen = sched_domain_size(pcpus, ents);

	if (!w)
		exit(1);
	w->len = DOM_OFF + dlen;
	w->map = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->map == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	w->sh = w->map;
	w->sh->now = 1000;
	w->d = (struct sched_domain *)((char *)w->map + DOM_OFF);
	if (sched_domain_init(w->d, dlen, pcpus, ents, &p) ||
	    sched_handle_init(&w->h, w->d, dlen, &fake_ops, &w->host)) {
		fprintf(stderr, "world_new(%u, %u) failed\n", pcpus, ents);
		exit(1);
	}
	return w;
}

static inline void world_free(struct world *w)
{
	sched_domain_destroy(w->d);
	munmap(w->map, w->len);
	free(w);
}

static inline uint64_t wnow(struct world *w, uint64_t advance_ns)
{
	return __atomic_add_fetch(&w->sh->now, advance_ns, __ATOMIC_RELAXED);
}

static inline void wcheck(struct world *w, const char *where, const char *step)
{
	char msg[256];
	int r = sched_domain_check(&w->h, msg, sizeof(msg));

	if (r) {
		fprintf(stderr, "%s: %s: check %d: %s\n", where, step, r, msg);
		check_failures++;
	}
}

/* Locks of the domain whose recorded owner is tid (a dead child's pid). */
static inline unsigned locks_held_by(struct world *w, int32_t tid)
{
	unsigned n = w->d->lock.owner_tid == tid;

	for (unsigned i = 0; i < w->d->nr_pcpus; i++)
		n += dom_rq(w->d, i)->lock.owner_tid == tid;
	for (unsigned i = 0; i < w->d->max_entities; i++)
		n += dom_ent(w->d, i)->lock.owner_tid == tid;
	return n;
}

/*
 * After a death: what a host does on its kick or timer (these take the dead
 * owner's locks first), the invariants, then every live entity woken must be
 * runnable exactly once and must get to run; finally each curr blocks.
 * Weights, classes and slices are normalised first and each entity is woken,
 * blocks (clamping its lag) and is woken again, all ordinary calls, so every
 * entity runs within a bounded number of slices: a curr whose pCPU nobody
 * ticked while the shared clock ran on holds a lag of seconds until then.
 */
static inline void verify(struct world *w, const char *where)
{
	unsigned np = sched_nr_pcpus(&w->h), ne = sched_max_entities(&w->h);
	uint8_t *live = calloc(ne, 1), *ran = calloc(ne, 1);
	unsigned nlive = 0, nrun = 0, queued = 0;
	struct sched_entity_info ei;
	struct sched_pcpu_info pi;
	struct sched_switch sw;
	uint64_t now = wnow(w, 10 * MS);

	if (!live || !ran)
		exit(1);
	/* blocking below must dequeue for real (a delayed sleeper keeps its
	 * vruntime, lag unclamped); the random test sets features again */
	CHECK_EQ(sched_feature_set(w->d, "NO_DELAY_DEQUEUE"), 0);
	for (unsigned p = 0; p < np; p++) {
		CHECK(sched_tick(&w->h, p, now) >= 0);
		CHECK(sched_wake_drain(&w->h, p, now) >= 0);
		CHECK_EQ(sched_schedule(&w->h, p, now, &sw), 0);
	}
	wcheck(w, where, "after the first operations");
	for (unsigned id = 0; id < ne; id++) {
		int r = sched_entity_get_info(&w->h, id, &ei);

		if (r == -ENOENT)
			continue;
		CHECK_EQ(r, 0);
		live[id] = 1;
		nlive++;
		CHECK_EQ(sched_set_nice(&w->h, id, 0, now), 0);
		CHECK_EQ(sched_set_idle_class(&w->h, id, false, now), 0);
		CHECK_EQ(sched_set_slice(&w->h, id, 0, now), 0);
		CHECK_EQ(sched_wake(&w->h, id, now, SCHED_NONE, NULL), 0);  /* a delayed one too */
		r = sched_block(&w->h, id, now);
		CHECK(r == 0 || r == -EALREADY);
		CHECK_EQ(sched_wake(&w->h, id, now, SCHED_NONE, NULL), 0);
	}
	for (unsigned p = 0; p < np; p++) {
		CHECK_EQ(sched_pcpu_get_info(&w->h, p, &pi), 0);
		queued += pi.nr_queued + pi.nr_waking;
	}
	if (queued != nlive) {
		fprintf(stderr, "%s: %u runnable after waking all %u live entities\n", where,
			queued, nlive);
		check_failures++;
	}
	wcheck(w, where, "after waking everyone");
	for (unsigned round = 0; round < 4 * ne + 16 && nrun < nlive; round++) {
		now = wnow(w, 4 * MS);         /* > one slice: each curr is done */
		for (unsigned p = 0; p < np; p++) {
			CHECK(sched_wake_drain(&w->h, p, now) >= 0);
			CHECK(sched_tick(&w->h, p, now) >= 0);
			CHECK_EQ(sched_schedule(&w->h, p, now, &sw), 0);
			if (sw.next < ne && !ran[sw.next]) {
				ran[sw.next] = 1;
				nrun += live[sw.next];
			}
		}
	}
	for (unsigned id = 0; id < ne; id++) {
		if (live[id] && !ran[id]) {
			CHECK_EQ(sched_entity_get_info(&w->h, id, &ei), 0);
			fprintf(stderr, "%s: entity %u never ran (state %u pcpu %u weight %u "
				"lag %" PRId64 " deadline - vruntime %" PRId64 ")\n", where, id,
				ei.state, ei.pcpu, ei.weight, ei.lag,
				(int64_t)(ei.deadline - ei.vruntime));
			check_failures++;
		}
	}
	wcheck(w, where, "after running everyone");
	for (unsigned p = 0; p < np; p++) {
		CHECK_EQ(sched_pcpu_get_info(&w->h, p, &pi), 0);
		if (pi.curr != SCHED_NONE)
			CHECK_EQ(sched_block(&w->h, pi.curr, now), 0);
		CHECK_EQ(sched_schedule(&w->h, p, now, &sw), 0);
	}
	wcheck(w, where, "after blocking each curr");
	free(live);
	free(ran);
}

#endif
