/*
 * What a pCPU does with its queue: block, schedule (pick and switch), tick,
 * yield, and moving entities between queues.
 */
#include <errno.h>

#include "sched/internal.h"

int sched_block(struct sched_handle *h, unsigned id, uint64_t now_ns)
{
	struct sched_ent *e;
	struct sched_rq *rq;
	uint32_t st;
	int r = sched_ent_lock_both(h, id, &e, &rq);

	if (r)
		return r;
	st = LOAD(e->state);
	if (st == SCHED_ES_BLOCKED || e->delayed) {
		r = -EALREADY;
	} else if (st == SCHED_ES_WAKING) {
		sched_wake_unlink_locked(h->dom, rq, id);
		STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);
	} else {
		eevdf_update_curr_locked(h, rq, now_ns);
		/* (never delay on a pCPU it may no longer run on) */
		if (feat(h->dom, SCHED_FEAT_DELAY_DEQUEUE) &&
		    sched_ent_allowed(h->dom, e, rq->index) &&
		    !eevdf_eligible_locked(h->dom, rq, e->vruntime)) {
			eevdf_delay_dequeue_locked(h, rq, id, now_ns);
		} else {
			eevdf_dequeue_locked(h, rq, id, true, now_ns);
			STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);
		}
		sched_rearm_locked(h, rq, now_ns);
	}
	sched_ent_unlock_both(e, rq);
	return r;
}

/* Curr of rq may no longer run there (sched_set_allowed): move it to the
 * least loaded allowed queue. Called and returns with rq locked. */
static int move_forbidden_curr(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	uint32_t id = rq->curr;
	struct sched_ent *e = dom_ent(d, id);
	struct sched_rq *dst = dom_rq(d, sched_least_loaded_allowed(d, e));
	int r;

	sched_unlock(&rq->lock);
	r = sched_rq_lock2(h, rq, dst);
	if (r)
		return r;
	if (rq->curr == id && !sched_ent_allowed(d, e, rq->index) &&
	    sched_ent_allowed(d, e, dst->index)) {
		eevdf_migrate_locked(h, rq, dst, id, now_ns);
		eevdf_settle_moved_locked(h, rq, dst, id, now_ns);
	}
	if (dst != rq)
		sched_unlock(&dst->lock);
	return 0;
}

int sched_schedule(struct sched_handle *h, unsigned pcpu, uint64_t now_ns, struct sched_switch *sw)
{
	struct sched_domain *d = h->dom;
	struct sched_switch tmp;
	struct sched_rq *rq;
	uint32_t prev, next;
	int r;

	if (!sw)
		sw = &tmp;
	r = sched_rq_lock_pcpu(h, pcpu, &rq);
	if (r)
		return r;
	sw->prev = rq->curr;
	sw->pulled = 0;
	for (bool pulled = false;; pulled = true) {
		/* Loop: the allowed set may change again while rq is unlocked,
		 * here or for the pull, when another caller may also have made
		 * a curr here and narrowed its set. */
		while (rq->curr != SCHED_NONE &&
		       !sched_ent_allowed(d, dom_ent(d, rq->curr), pcpu)) {
			r = move_forbidden_curr(h, rq, now_ns);
			if (r)
				return r;
		}
		eevdf_update_curr_locked(h, rq, now_ns);
		if (pulled || rq->nr_queued != rq->nr_delayed)  /* runnable */
			break;
		sched_unlock(&rq->lock);
		r = sched_balance_newidle(h, pcpu, now_ns);
		sw->pulled = r > 0 ? (uint32_t)r : 0;
		r = sched_rq_lock(h, rq);
		if (r)
			return r;
	}
	prev = rq->curr;
	for (;;) {
		next = rq->nr_queued ? eevdf_pick_locked(d, rq, true) : SCHED_NONE;
		if (next == SCHED_NONE || !dom_ent(d, next)->delayed)
			break;
		/* A delayed sleeper came up: finish its dequeue, pick again. */
		eevdf_finish_delayed_locked(h, rq, next, now_ns);
	}
	if (next != prev) {
		if (prev != SCHED_NONE)
			eevdf_put_prev_locked(h, rq, now_ns);
		if (next != SCHED_NONE)
			eevdf_set_next_locked(h, rq, next, now_ns);
	}
	if (next != sw->prev)
		sched_trace(h, SCHED_TRACE_SWITCH, pcpu, next, sw->prev, 0, 0, now_ns);
	sw->next = next;
	rq->need_resched = 0;
	sched_rearm_locked(h, rq, now_ns);
	sched_unlock(&rq->lock);
	return 0;
}

int sched_tick(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	struct sched_rq *rq;
	int r = sched_rq_lock_pcpu(h, pcpu, &rq);

	if (r)
		return r;
	eevdf_update_curr_locked(h, rq, now_ns);
	sched_tick_preempt_locked(h, rq, now_ns);
	r = rq->need_resched ? 1 : 0;
	sched_rearm_locked(h, rq, now_ns);
	sched_unlock(&rq->lock);
	return r;
}

int sched_yield_curr(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	struct sched_rq *rq;
	int r = sched_rq_lock_pcpu(h, pcpu, &rq);

	if (r)
		return r;
	if (rq->curr == SCHED_NONE) {
		r = -ENOENT;
	} else {
		eevdf_update_curr_locked(h, rq, now_ns);
		eevdf_yield_locked(h, rq, now_ns);
	}
	sched_unlock(&rq->lock);
	return r;
}

int sched_migrate_ent(struct sched_handle *h, uint32_t id, unsigned dst_pcpu, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = dom_ent(d, id);
	struct sched_rq *dst = dom_rq(d, dst_pcpu);

	for (;;) {
		uint32_t src_pcpu = LOAD(e->pcpu), st;
		struct sched_rq *src = dom_rq(d, src_pcpu);
		int r;

		if (src_pcpu == dst_pcpu)
			return 0;
		r = sched_rq_lock2(h, src, dst);
		if (r)
			return r;
		if (LOAD(e->pcpu) != src_pcpu) {
			sched_rq_unlock2(src, dst);
			continue;
		}
		st = LOAD(e->state);
		if (st == SCHED_ES_QUEUED && e->delayed)
			st = SCHED_ES_WAKING;          /* asleep: report -EBUSY */
		if (st != SCHED_ES_QUEUED || !sched_ent_allowed(d, e, dst_pcpu)) {
			sched_rq_unlock2(src, dst);
			return st == SCHED_ES_FREE ? -ENOENT :
			       st == SCHED_ES_QUEUED ? -EINVAL : -EBUSY;
		}
		eevdf_migrate_locked(h, src, dst, id, now_ns);
		eevdf_settle_moved_locked(h, src, dst, id, now_ns);
		sched_rq_unlock2(src, dst);
		return 0;
	}
}

int sched_migrate(struct sched_handle *h, unsigned id, unsigned dst_pcpu, uint64_t now_ns)
{
	struct sched_ent *e;
	int r = sched_check_id(h, id);

	if (r)
		return r;
	if (dst_pcpu >= h->dom->nr_pcpus)
		return -EINVAL;
	e = dom_ent(h->dom, id);
	r = sched_ent_lock(h->dom, e);
	if (r)
		return r;
	r = LOAD(e->state) == SCHED_ES_FREE ? -ENOENT : sched_migrate_ent(h, id, dst_pcpu, now_ns);
	sched_unlock(&e->lock);
	return r;
}

int sched_pcpu_get_info(struct sched_handle *h, unsigned pcpu, struct sched_pcpu_info *o)
{
	struct sched_rq *rq;
	int r;

	if (!o)
		return -EINVAL;
	r = sched_rq_lock_pcpu(h, pcpu, &rq);
	if (r)
		return r;
	o->curr = rq->curr;
	o->nr_queued = rq->nr_queued - rq->nr_delayed;
	o->nr_delayed = rq->nr_delayed;
	o->nr_waking = rq->nr_wake + rq->nr_drain;
	o->ttwu_pending = rq->ttwu_pending != 0;
	o->need_resched = rq->need_resched != 0;
	o->idle = rq->curr == SCHED_NONE && o->nr_queued == 0 && !rq->ttwu_pending;
	o->avg_vruntime = eevdf_avg_vruntime_peek(h->dom, rq);
	o->busy_ns = rq->busy_ns;
	o->nr_switches = rq->nr_switches;
	o->nr_preemptions = rq->nr_preemptions;
	sched_unlock(&rq->lock);
	return 0;
}
