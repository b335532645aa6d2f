/*
 * Invariant checker (sched/README.md §3), for tests and the simulator. With
 * the domain lock and every rq lock held (ascending order) no entity can be
 * added, removed or moved, so one pass sees a consistent domain.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched/internal.h"

struct checker {
	struct sched_domain *d;
	uint8_t *seen;
	char *msg;
	size_t len;
	int bad;
	s128 sum_wkey;
	uint64_t sum_w;
	unsigned count, normal, delayed;
};

__attribute__((format(printf, 2, 3)))
static void fail(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (c->bad++ || !c->msg || !c->len)
		return;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->len, fmt, ap);
	va_end(ap);
}

static bool ent_before(const struct sched_ent *ents, uint32_t a, uint32_t b)
{
	int64_t dd = (int64_t)(ents[a].deadline - ents[b].deadline);

	return dd < 0 || (dd == 0 && a < b);
}

/* Returns the subtree height; checks order bounds, balance and augments. */
static int check_tree(struct checker *c, struct sched_rq *rq, uint32_t n, uint32_t lo, uint32_t hi)
{
	struct sched_ent *ents = dom_ents(c->d), *e;
	int hl, hr;
	uint64_t mv, mins, maxs;

	if (n == SCHED_NONE)
		return 0;
	if (n >= c->d->max_entities) {
		fail(c, "rq %u: tree link %u out of range", rq->index, n);
		return 0;
	}
	e = &ents[n];
	if (c->seen[n]++) {
		fail(c, "rq %u: entity %u reached twice", rq->index, n);
		return 0;
	}
	if ((lo != SCHED_NONE && !ent_before(ents, lo, n)) ||
	    (hi != SCHED_NONE && !ent_before(ents, n, hi)))
		fail(c, "rq %u: entity %u out of deadline order", rq->index, n);
	if (LOAD(e->state) != SCHED_ES_QUEUED || LOAD(e->pcpu) != rq->index)
		fail(c, "rq %u: tree entity %u has state %u pcpu %u", rq->index, n,
		     LOAD(e->state), LOAD(e->pcpu));
	if (!sched_ent_allowed(c->d, e, rq->index))
		fail(c, "rq %u: queued entity %u not allowed here", rq->index, n);
	hl = check_tree(c, rq, e->left, lo, n);
	hr = check_tree(c, rq, e->right, n, hi);
	if (e->height != 1 + (hl > hr ? hl : hr) || hl - hr > 1 || hr - hl > 1)
		fail(c, "rq %u: entity %u height %d vs children %d/%d", rq->index, n, e->height,
		     hl, hr);
	mv = e->vruntime;
	mins = maxs = e->slice_ns;
	for (int i = 0; i < 2; i++) {
		uint32_t ch = i ? e->right : e->left;
		if (ch == SCHED_NONE || ch >= c->d->max_entities)
			continue;
		mv = vt_min(mv, ents[ch].min_vruntime);
		mins = ents[ch].min_slice < mins ? ents[ch].min_slice : mins;
		maxs = ents[ch].max_slice > maxs ? ents[ch].max_slice : maxs;
	}
	if (mv != e->min_vruntime || mins != e->min_slice || maxs != e->max_slice)
		fail(c, "rq %u: entity %u augmented fields stale", rq->index, n);
	c->sum_wkey += (s128)e->weight * (int64_t)(e->vruntime - rq->v0);
	c->sum_w += e->weight;
	c->count++;
	c->normal += !e->idle_class && !e->delayed;
	c->delayed += e->delayed;
	return e->height;
}

static unsigned check_list(struct checker *c, struct sched_rq *rq, uint32_t head, uint32_t tail)
{
	unsigned n = 0;
	uint32_t last = SCHED_NONE;

	for (uint32_t i = head; i != SCHED_NONE; last = i, i = dom_ent(c->d, i)->next) {
		struct sched_ent *e;

		if (i >= c->d->max_entities || n > c->d->max_entities) {
			fail(c, "rq %u: wake list corrupt", rq->index);
			break;
		}
		e = dom_ent(c->d, i);
		if (c->seen[i]++)
			fail(c, "rq %u: entity %u listed twice", rq->index, i);
		if (LOAD(e->state) != SCHED_ES_WAKING || LOAD(e->pcpu) != rq->index)
			fail(c, "rq %u: listed entity %u state %u pcpu %u", rq->index, i,
			     LOAD(e->state), LOAD(e->pcpu));
		n++;
	}
	if (last != tail)
		fail(c, "rq %u: wake list tail %u, expected %u", rq->index, tail, last);
	return n;
}

static void check_rq(struct checker *c, struct sched_rq *rq)
{
	struct sched_domain *d = c->d;
	unsigned w = rq->index / 64;
	uint64_t bit = 1ull << (rq->index % 64);
	unsigned nw, nd;
	bool idle, idle_normal;

	c->sum_wkey = 0;
	c->sum_w = 0;
	c->count = c->normal = c->delayed = 0;
	check_tree(c, rq, rq->root, SCHED_NONE, SCHED_NONE);
	if (c->sum_wkey != rq->sum_wkey || c->sum_w != rq->sum_w)
		fail(c, "rq %u: sums differ from the tree (sum_w %llu vs %llu)", rq->index,
		     (unsigned long long)rq->sum_w, (unsigned long long)c->sum_w);
	if (rq->curr != SCHED_NONE) {
		struct sched_ent *e = dom_ent(d, rq->curr);

		if (c->seen[rq->curr]++)
			fail(c, "rq %u: curr %u is also in the tree", rq->index, rq->curr);
		if (LOAD(e->state) != SCHED_ES_RUNNING || LOAD(e->pcpu) != rq->index ||
		    e->delayed)
			fail(c, "rq %u: curr %u state %u pcpu %u delayed %u", rq->index, rq->curr,
			     LOAD(e->state), LOAD(e->pcpu), e->delayed);
		c->count++;
		c->normal += !e->idle_class;
	}
	if (c->count != rq->nr_queued || c->normal != rq->nr_normal ||
	    c->delayed != rq->nr_delayed)
		fail(c, "rq %u: nr_queued %u/%u nr_normal %u/%u nr_delayed %u/%u", rq->index,
		     rq->nr_queued, c->count, rq->nr_normal, c->normal, rq->nr_delayed,
		     c->delayed);
	nw = check_list(c, rq, rq->wake_head, rq->wake_tail);
	nd = check_list(c, rq, rq->drain_head, rq->drain_tail);
	if (nw != rq->nr_wake || nd != rq->nr_drain)
		fail(c, "rq %u: wake list counts %u/%u %u/%u", rq->index, rq->nr_wake, nw,
		     rq->nr_drain, nd);
	if (nw && !rq->ttwu_pending)
		fail(c, "rq %u: wakeups listed but ttwu_pending clear", rq->index);
	if (nd && !rq->ttwu_pending && !feat(d, SCHED_FEAT_TTWU_PENDING_EARLY_CLEAR))
		fail(c, "rq %u: wakeups being drained but ttwu_pending clear", rq->index);
	idle = rq->curr == SCHED_NONE && rq->nr_queued == rq->nr_delayed && !rq->ttwu_pending;
	idle_normal = rq->nr_normal == 0 && !rq->ttwu_pending;
	if (((LOAD(d->idle_mask[w]) & bit) != 0) != idle ||
	    ((LOAD(d->idle_normal_mask[w]) & bit) != 0) != idle_normal)
		fail(c, "rq %u: idle mask bits stale", rq->index);
}

/* The free list is exactly the FREE slots (a cycle or a live slot on it, or
 * a FREE slot off it, is a leak) and nr_entities counts the others. */
static void check_free_list(struct checker *c)
{
	struct sched_domain *d = c->d;
	unsigned listed = 0, nfree = 0;

	for (uint32_t i = d->free_head; i != SCHED_NONE; i = dom_ent(d, i)->next) {
		if (i >= d->max_entities || listed >= d->max_entities) {
			fail(c, "free list corrupt after %u slots", listed);
			return;
		}
		if (LOAD(dom_ent(d, i)->state) != SCHED_ES_FREE)
			fail(c, "free list holds entity %u in state %u", i,
			     LOAD(dom_ent(d, i)->state));
		listed++;
	}
	for (unsigned i = 0; i < d->max_entities; i++)
		nfree += LOAD(dom_ent(d, i)->state) == SCHED_ES_FREE;
	if (listed != nfree || d->nr_entities != d->max_entities - nfree)
		fail(c, "free list %u slots, %u free, nr_entities %u of %u", listed, nfree,
		     d->nr_entities, d->max_entities);
}

int sched_domain_check(struct sched_handle *h, char *msg, size_t msg_len)
{
	struct sched_domain *d = h->dom;
	struct checker c = { .d = d, .msg = msg, .len = msg_len };
	unsigned locked = 0;
	int r = 0;

	if (msg && msg_len)
		msg[0] = 0;
	c.seen = calloc(d->max_entities, 1);
	if (!c.seen)
		return -ENOMEM;
	/* domain lock first (lock order): no add or remove runs meanwhile */
	r = sched_dom_lock(d);
	if (r) {
		free(c.seen);
		return r;
	}
	check_free_list(&c);
	for (; locked < d->nr_pcpus; locked++) {
		r = sched_rq_lock(h, dom_rq(d, locked));
		if (r)
			goto out;
	}
	for (unsigned i = 0; i < d->nr_pcpus; i++)
		check_rq(&c, dom_rq(d, i));
	for (unsigned i = 0; i < d->max_entities; i++) {
		uint32_t st = LOAD(dom_ent(d, i)->state);
		bool runnable = st == SCHED_ES_QUEUED || st == SCHED_ES_RUNNING ||
				st == SCHED_ES_WAKING;

		if (runnable != (c.seen[i] == 1))
			fail(&c, "entity %u state %u found on %u queues", i, st, c.seen[i]);
	}
	r = c.bad ? -EUCLEAN : 0;
out:
	while (locked)
		sched_unlock(&dom_rq(d, --locked)->lock);
	sched_unlock(&d->lock);
	free(c.seen);
	return r;
}
