/*
 * Reference model, the operations (one per public library call): wake and
 * the drain halves, block, schedule with new-idle balance, tick, yield,
 * migrate, periodic balance, parameter changes. See ref_model.h.
 */
#include <errno.h>
#include <string.h>

#include "ref_queue.h"

void ref_init(struct ref *r, const struct sched_domain *dom, unsigned np, uint64_t slice,
	      uint64_t tick, uint64_t v0)
{
	memset(r, 0, sizeof(*r));
	r->dom = dom;
	r->np = np;
	r->base_slice = slice;
	r->tick = tick;
	for (int i = 0; i < REF_MAX_ENTS; i++)
		r->e[i].st = SCHED_ES_FREE;
	for (unsigned p = 0; p < np; p++) {
		r->q[p].curr = NONE;
		r->q[p].last_v = v0;
	}
}

void ref_add(struct ref *r, int id, uint32_t base_w, bool idle, uint64_t slice,
	     uint64_t allowed_mask, unsigned create_pcpu, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	memset(e, 0, sizeof(*e));
	e->st = SCHED_ES_BLOCKED;
	e->base_w = base_w;
	e->idle = idle;
	e->w = idle ? SCHED_IDLE_WEIGHT : base_w;
	e->custom = slice != 0;
	e->slice = slice ? slice : r->base_slice;
	e->never = true;
	e->exec_start = now;
	e->allowed = allowed_mask;
	e->pcpu = rm_allowed(r, id, create_pcpu) ? create_pcpu : (unsigned)__builtin_ctzll(allowed_mask);
	if (!FEAT(PLACE_FIRST_ENQUEUE)) {
		rm_update_curr(r, e->pcpu, now);
		rm_place(r, e->pcpu, id, F_INITIAL);
		e->vlag = (int64_t)(rm_avg(r, e->pcpu) - e->v);
	}
}

static void unlink_wake(struct ref *r, unsigned p, int id)
{
	struct ref_rq *q = &r->q[p];

	for (int i = 0; i < q->nw; i++)
		if (q->wake[i] == id) {
			memmove(&q->wake[i], &q->wake[i + 1], sizeof(int) * (size_t)(q->nw - i - 1));
			q->nw--;
			goto out;
		}
	for (int i = 0; i < q->nd; i++)
		if (q->drain[i] == id) {
			memmove(&q->drain[i], &q->drain[i + 1], sizeof(int) * (size_t)(q->nd - i - 1));
			q->nd--;
			break;
		}
out:
	if (!q->nw && !q->nd)
		q->pending = false;
}

int ref_remove(struct ref *r, int id, uint64_t now)
{
	struct ref_ent *e = &r->e[id];
	unsigned p = e->pcpu;

	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->st == SCHED_ES_RUNNING || e->st == SCHED_ES_QUEUED) {
		rm_update_curr(r, p, now);
		rm_dequeue(r, p, id, true);
	} else if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, p, id);
	}
	e->st = SCHED_ES_FREE;
	return 0;
}

int ref_wake(struct ref *r, int id, uint64_t now, unsigned waker, unsigned hint,
	     struct sched_wake_result *res)
{
	struct ref_ent *e = &r->e[id];
	unsigned prev = e->pcpu, t;
	bool idle;

	res->preempt = false;
	res->pcpu = e->pcpu;
	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->st == SCHED_ES_QUEUED && e->delayed) {
		rm_update_curr(r, prev, now);
		if (FEAT(DELAY_ZERO) && (int64_t)(rm_avg(r, prev) - e->v) > 0) {
			e->st = SCHED_ES_BLOCKED;      /* out of V, as the tree removal */
			e->vlag = 0;
			e->has_rel = false;
			rm_enqueue(r, prev, id, 0);
		}
		e->delayed = false;
		res->how = SCHED_WAKE_ENQUEUED;
		res->pcpu = prev;
		res->preempt = rm_wakeup_preempt(r, prev, id);
		return 0;
	}
	if (e->st != SCHED_ES_BLOCKED) {
		res->how = SCHED_WAKE_ALREADY;
		return 0;
	}
	t = rm_select_pcpu(r, id, prev, waker, hint, &idle);
	res->pcpu = t;
	if (FEAT(TTWU_PENDING) && idle && t != waker) {
		r->q[t].pending = true;
		r->q[t].wake[r->q[t].nw++] = id;
		e->pcpu = t;
		e->st = SCHED_ES_WAKING;
		res->how = SCHED_WAKE_LISTED;
		return 0;
	}
	rm_update_curr(r, t, now);
	if (prev != t && !e->never)
		e->migrations++;
	rm_enqueue(r, t, id, F_WAKEUP | (e->never ? F_INITIAL : 0));
	res->how = SCHED_WAKE_ENQUEUED;
	res->preempt = rm_wakeup_preempt(r, t, id);
	if (r->q[t].curr == NONE)
		r->q[t].resched = true;
	return 0;
}

int ref_take(struct ref *r, unsigned p)
{
	struct ref_rq *q = &r->q[p];
	int n = q->nw;

	memcpy(&q->drain[q->nd], q->wake, sizeof(int) * (size_t)q->nw);
	q->nd += q->nw;
	q->nw = 0;
	if (FEAT(TTWU_PENDING_EARLY_CLEAR))
		q->pending = false;
	return n;
}

int ref_finish(struct ref *r, unsigned p, uint64_t now)
{
	struct ref_rq *q = &r->q[p];
	int n = q->nd;

	rm_update_curr(r, p, now);
	for (int i = 0; i < n; i++) {
		int id = q->drain[i];

		rm_enqueue(r, p, id, F_WAKEUP | (r->e[id].never ? F_INITIAL : 0));
		rm_wakeup_preempt(r, p, id);
	}
	q->nd = 0;
	if (!q->nw)
		q->pending = false;
	return n;
}

int ref_block(struct ref *r, int id, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->st == SCHED_ES_BLOCKED || e->delayed)
		return -EALREADY;
	if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, e->pcpu, id);
		e->st = SCHED_ES_BLOCKED;
		return 0;
	}
	rm_update_curr(r, e->pcpu, now);
	if (FEAT(DELAY_DEQUEUE) && rm_allowed(r, id, e->pcpu) && !rm_eligible(r, e->pcpu, e->v)) {
		if (r->q[e->pcpu].curr == id) {
			rm_put_prev(r, e->pcpu);
			r->q[e->pcpu].resched = true;
		}
		e->delayed = true;
		return 0;
	}
	rm_dequeue(r, e->pcpu, id, true);
	return 0;
}

static int newidle(struct ref *r, unsigned p, uint64_t now)
{
	bool tried[REF_MAX_PCPUS] = { false };

	for (;;) {
		unsigned bw = 0;
		int best = NONE, id = NONE;

		for (unsigned i = 0; i < r->np; i++) {
			unsigned w;
			if (i == p || tried[i])
				continue;
			w = rm_runnable(r, i);
			w -= w && r->q[i].curr != NONE;
			if (w > bw) {
				best = (int)i;
				bw = w;
			}
		}
		if (best == NONE)
			return 0;
		tried[best] = true;
		struct rm_load l = rm_load_of(r, (unsigned)best);
		for (int pass = 0; pass < 2 && id == NONE; pass++)
			for (int i = 0; i < REF_MAX_ENTS; i++)
				if (rm_in_tree(r, i, (unsigned)best) && rm_allowed(r, i, p) &&
				    !r->e[i].delayed && (pass || rm_eligible_in(&l, r->e[i].v)) &&
				    (id == NONE || rm_tree_less(r, i, id)))
					id = i;
		if (id != NONE) {
			rm_migrate(r, (unsigned)best, p, id, now);
			return 1;
		}
	}
}

int ref_schedule(struct ref *r, unsigned p, uint64_t now, struct sched_switch *sw)
{
	struct ref_rq *q = &r->q[p];
	int prev, next;

	sw->prev = q->curr == NONE ? SCHED_NONE : (uint32_t)q->curr;
	sw->pulled = 0;
	if (q->curr != NONE && !rm_allowed(r, q->curr, p)) {
		int id = q->curr;
		unsigned dst = rm_least_loaded(r, id);

		rm_update_curr(r, p, now);
		rm_dequeue(r, p, id, false);
		rm_update_curr(r, dst, now);
		r->e[id].migrations++;
		rm_enqueue(r, dst, id, 0);
		rm_wakeup_preempt(r, dst, id);
	}
	rm_update_curr(r, p, now);
	if (rm_runnable(r, p) == 0)
		sw->pulled = (uint32_t)newidle(r, p, now);
	prev = q->curr;
	for (;;) {
		next = rm_nr_queued(r, p) ? rm_pick(r, p, true) : NONE;
		if (next == NONE || !r->e[next].delayed)
			break;
		rm_dequeue(r, p, next, true);
	}
	if (next != prev) {
		if (prev != NONE)
			rm_put_prev(r, p);
		if (next != NONE)
			rm_set_next(r, p, next, now);
	}
	sw->next = next == NONE ? SCHED_NONE : (uint32_t)next;
	q->resched = false;
	return 0;
}

/* PREEMPT_ELIGIBLE at the slice timer (preempt.c sched_tick_preempt_locked) */
static void tick_preempt(struct ref *r, unsigned p)
{
	struct ref_rq *q = &r->q[p];
	struct ref_ent *c;
	int best;

	if (!FEAT(PREEMPT_ELIGIBLE) || q->curr == NONE)
		return;
	for (;;) {
		if (q->resched || rm_nr_queued(r, p) <= 1)
			return;
		best = rm_pick(r, p, false);
		if (best == q->curr || best == NONE)
			return;
		if (!r->e[best].delayed)
			break;
		rm_dequeue(r, p, best, true);
	}
	c = &r->e[q->curr];
	if (FEAT(RUN_TO_PARITY) && before(c->v, c->vprot) &&
	    !(FEAT(PREEMPT_SHORT) && r->e[best].slice < c->slice))
		return;
	c->vprot = c->v;
	q->resched = true;
}

int ref_tick(struct ref *r, unsigned p, uint64_t now)
{
	rm_update_curr(r, p, now);
	tick_preempt(r, p);
	return r->q[p].resched;
}

int ref_yield(struct ref *r, unsigned p, uint64_t now)
{
	int c = r->q[p].curr;

	if (c == NONE)
		return -ENOENT;
	rm_update_curr(r, p, now);
	if (rm_eligible(r, p, r->e[c].v)) {
		r->e[c].v = r->e[c].d;
		rm_update_deadline(r, p, c);
	}
	r->e[c].vprot = r->e[c].v;
	if (rm_nr_queued(r, p) > 1)
		r->q[p].resched = true;
	return 0;
}

int ref_migrate(struct ref *r, int id, unsigned dst, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->pcpu == dst)
		return 0;
	if (e->delayed)
		return -EBUSY;
	if (e->st != SCHED_ES_QUEUED || !rm_allowed(r, id, dst))
		return e->st == SCHED_ES_QUEUED ? -EINVAL : -EBUSY;
	rm_migrate(r, e->pcpu, dst, id, now);
	rm_wakeup_preempt(r, dst, id);
	return 0;
}

int ref_balance(struct ref *r, unsigned p, uint64_t now)
{
	unsigned bq = rm_runnable(r, p) + 1, src = 0;
	int best = NONE, moved = 0, last = NONE;

	for (unsigned i = 0; i < r->np; i++)
		if (i != p && rm_runnable(r, i) > bq) {
			best = (int)i;
			bq = rm_runnable(r, i);
		}
	if (best == NONE)
		return 0;
	src = (unsigned)best;
	while (rm_runnable(r, src) >= rm_runnable(r, p) + 2 && moved < 32) {
		int id = NONE;

		for (int i = 0; i < REF_MAX_ENTS; i++)
			if (rm_in_tree(r, i, src) && rm_allowed(r, i, p) && !r->e[i].delayed &&
			    (id == NONE || rm_tree_less(r, id, i)))
				id = i;
		if (id == NONE)
			break;
		rm_migrate(r, src, p, id, now);
		last = id;
		moved++;
	}
	if (moved)
		rm_wakeup_preempt(r, p, last);
	return moved;
}

static void set_weight_in(struct ref *r, int id, uint32_t w, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	if (w == e->w)
		return;
	if (e->st == SCHED_ES_QUEUED || e->st == SCHED_ES_RUNNING) {
		rm_update_curr(r, e->pcpu, now);
		rm_reweight(r, e->pcpu, id, w);
		return;
	}
	e->vlag = (int64_t)((s128)e->vlag * e->w / w);
	e->w = w;
}

int ref_set_weight(struct ref *r, int id, uint32_t w, uint64_t now)
{
	if (r->e[id].st == SCHED_ES_FREE)
		return -ENOENT;
	r->e[id].base_w = w;
	if (!r->e[id].idle)
		set_weight_in(r, id, w, now);
	return 0;
}

int ref_set_idle(struct ref *r, int id, bool idle, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->idle != idle) {
		set_weight_in(r, id, idle ? SCHED_IDLE_WEIGHT : e->base_w, now);
		e->idle = idle;
	}
	return 0;
}

int ref_set_slice(struct ref *r, int id, uint64_t slice)
{
	if (r->e[id].st == SCHED_ES_FREE)
		return -ENOENT;
	r->e[id].custom = slice != 0;
	r->e[id].slice = slice ? slice : r->base_slice;
	return 0;
}

int ref_set_allowed(struct ref *r, int id, uint64_t mask, uint64_t now)
{
	struct ref_ent *e = &r->e[id];
	struct sched_wake_result res;
	unsigned p = e->pcpu;

	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	e->allowed = mask;
	if (rm_allowed(r, id, p) || e->st == SCHED_ES_BLOCKED)
		return 0;
	if (e->st == SCHED_ES_RUNNING) {
		r->q[p].resched = true;
		return 0;
	}
	if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, p, id);
		e->st = SCHED_ES_BLOCKED;
		return ref_wake(r, id, now, SCHED_NONE, 0, &res);
	}
	if (e->delayed) {
		rm_update_curr(r, p, now);
		rm_dequeue(r, p, id, true);
		return 0;
	}
	return ref_migrate(r, id, rm_least_loaded(r, id), now);
}
