/*
 * Load balance between run queues. Counts are read without locks to choose
 * a source, then re-checked under both rq locks (lower index first).
 *  - new-idle: a pCPU with nothing to run pulls the best waiting entity
 *    (earliest eligible deadline it may run) from the busiest queue.
 *  - periodic: pull from the busiest queue while it holds >= 2 more runnable
 *    entities than this one, taking the latest deadlines first (those would
 *    wait longest where they are).
 * Moves keep lag and relative deadline (eevdf_migrate_locked).
 */
#include <errno.h>
#include <string.h>

#include "sched/internal.h"

struct pull_arg {
	struct sched_domain *d;
	struct sched_rq *src;
	unsigned dst;
	bool need_eligible;
};

static bool pullable(const struct sched_ent *e, uint32_t id, void *arg)
{
	struct pull_arg *a = arg;

	(void)id;
	return !e->delayed && sched_ent_allowed(a->d, e, a->dst) &&
	       (!a->need_eligible || eevdf_eligible_locked(a->d, a->src, e->vruntime));
}

static unsigned waiting(struct sched_rq *rq)
{
	unsigned n = rq_runnable(rq);

	return n - (n && LOAD(rq->curr) != SCHED_NONE);
}

int sched_balance_newidle(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_rq *rq = dom_rq(d, pcpu);
	uint64_t tried[SCHED_MAX_PCPUS / 64];

	memset(tried, 0, sizeof(tried));
	for (;;) {
		unsigned best = SCHED_NONE, bw = 0;
		struct pull_arg a = { .d = d, .dst = pcpu, .need_eligible = true };
		struct sched_rq *src;
		uint32_t id;
		int r;

		for (unsigned i = 0; i < d->nr_pcpus; i++) {
			unsigned w;

			if (i == pcpu || (tried[i / 64] >> (i % 64)) & 1)
				continue;
			w = waiting(dom_rq(d, i));
			if (w > bw) {
				best = i;
				bw = w;
			}
		}
		if (best == SCHED_NONE)
			return 0;
		tried[best / 64] |= 1ull << (best % 64);
		src = a.src = dom_rq(d, best);
		r = sched_rq_lock2(h, rq, src);
		if (r)
			return r;
		if (rq->nr_queued != rq->nr_delayed) {  /* work arrived meanwhile */
			sched_rq_unlock2(rq, src);
			return 0;
		}
		id = sched_tree_find(dom_ents(d), src->root, false, pullable, &a);
		if (id == SCHED_NONE) {
			a.need_eligible = false;
			id = sched_tree_find(dom_ents(d), src->root, false, pullable, &a);
		}
		if (id != SCHED_NONE) {
			eevdf_migrate_locked(h, src, rq, id, now_ns);
			sched_rearm_locked(h, src, now_ns);
		}
		sched_rq_unlock2(rq, src);
		if (id != SCHED_NONE)
			return 1;
	}
}

int sched_balance(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct pull_arg a = { .d = d, .dst = pcpu, .need_eligible = false };
	struct sched_rq *rq, *src;
	unsigned best = SCHED_NONE, bq, mine;
	uint32_t last = SCHED_NONE;
	int moved = 0, r;

	if (pcpu >= d->nr_pcpus)
		return -EINVAL;
	rq = dom_rq(d, pcpu);
	mine = rq_runnable(rq);
	bq = mine + 1;
	for (unsigned i = 0; i < d->nr_pcpus; i++) {
		unsigned q = rq_runnable(dom_rq(d, i));

		if (i != pcpu && q > bq) {
			best = i;
			bq = q;
		}
	}
	if (best == SCHED_NONE)
		return 0;
	src = a.src = dom_rq(d, best);
	r = sched_rq_lock2(h, rq, src);
	if (r)
		return r;
	while (src->nr_queued - src->nr_delayed >= rq->nr_queued - rq->nr_delayed + 2 &&
	       moved < 32) {
		uint32_t id = sched_tree_find(dom_ents(d), src->root, true, pullable, &a);

		if (id == SCHED_NONE)
			break;
		eevdf_migrate_locked(h, src, rq, id, now_ns);
		last = id;
		moved++;
	}
	if (moved)
		eevdf_settle_moved_locked(h, src, rq, last, now_ns);
	sched_rq_unlock2(rq, src);
	return moved;
}
