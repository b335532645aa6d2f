/*
 * Wakeups (sched/README.md §4): pCPU choice, the waker side, and the target side that
 * drains a pCPU's wake list. ttwu_pending marks a wakeup in flight to a pCPU
 * so that a concurrent waker does not also see it idle; it is cleared only
 * after the listed entities are enqueued, under the rq lock (seed 002).
 */
#include <errno.h>

#include "sched/internal.h"

/*
 * Prefer prev if idle, else the first idle allowed pCPU after prev (wrapping),
 * else prev (or the least loaded allowed one if prev is forbidden). "Idle"
 * for a normal wakee includes a queue of idle-class entities only. Reads the
 * idle masks without locks: a stale bit costs a stacked or a missed wakeup,
 * never consistency. O(P/64).
 */
#define VICTIM_SCAN 16u

/*
 * WAKE_VICTIM: how strongly pCPU p's curr holds it against wakee e, lower is
 * weaker: tier (idle-class curr for a normal wakee 0, protection over 1, a
 * protected curr with a longer slice than e's under PREEMPT_SHORT 2, else
 * 3), then runnable entities there, then the curr's request left (d - v,
 * in ~us: the most left is the weakest). A pCPU between currs counts as
 * tier 0. Racy reads (see select_pcpu).
 */
static uint64_t victim_claim(struct sched_domain *d, const struct sched_ent *e, unsigned p)
{
	struct sched_rq *rq = dom_rq(d, p);
	uint32_t cur = LOAD(rq->curr);
	uint64_t tier = 0, left = 0, runnable = rq_runnable(rq);
	const struct sched_ent *c;

	if (cur < d->max_entities) {
		c = dom_ent(d, cur);
		uint64_t v = LOAD(c->vruntime), dl = LOAD(c->deadline), prot = LOAD(c->vprot);
		uint64_t cs = LOAD(c->slice_ns);

		if (LOAD(c->idle_class) && !e->idle_class)
			tier = 0;
		else if (!feat(d, SCHED_FEAT_RUN_TO_PARITY) || !vt_before(v, prot))
			tier = 1;
		else if (feat(d, SCHED_FEAT_PREEMPT_SHORT) && e->slice_ns < cs)
			tier = 2;
		else
			tier = 3;
		left = vt_before(v, dl) ? (dl - v) >> 10 : 0;
	}
	if (runnable > 0xffff)
		runnable = 0xffff;
	if (left > 0xffffffffull)
		left = 0xffffffffull;
	return tier << 48 | runnable << 32 | (0xffffffffull - left);
}

static unsigned select_victim(struct sched_domain *d, const struct sched_ent *e, unsigned prev)
{
	unsigned n = d->nr_pcpus < VICTIM_SCAN ? d->nr_pcpus : VICTIM_SCAN, best = SCHED_NONE;
	uint64_t best_claim = UINT64_MAX;

	for (unsigned k = 0; k < n; k++) {
		unsigned p = (prev + k) % d->nr_pcpus;
		uint64_t c;

		if (!sched_ent_allowed(d, e, p))
			continue;
		c = victim_claim(d, e, p);
		if (c < best_claim) {
			best_claim = c;
			best = p;
		}
	}
	return best;
}

static unsigned select_pcpu(struct sched_domain *d, const struct sched_ent *e, unsigned prev,
			    unsigned waker_pcpu, unsigned hint, bool *idle)
{
	unsigned v;

	const uint64_t *mask = e->idle_class ? d->idle_mask : d->idle_normal_mask;
	unsigned nw = (d->nr_pcpus + 63) / 64, pw = prev / 64, pb = prev % 64;

	*idle = true;
	if (sched_ent_allowed(d, e, prev) && (LOAD(mask[pw]) >> pb) & 1)
		return prev;
	for (unsigned k = 0; k <= nw; k++) {
		unsigned w = (pw + k) % nw;
		uint64_t m = LOAD(mask[w]) & e->allowed.bits[w];

		if (k == 0)
			m &= pb == 63 ? 0 : ~0ull << (pb + 1);
		else if (k == nw)
			m &= (2ull << pb) - 1;
		if (m) {
			unsigned c = w * 64 + (unsigned)__builtin_ctzll(m);
			if (c < d->nr_pcpus)
				return c;
		}
	}
	*idle = false;
	if ((hint & SCHED_WAKE_SYNC) && feat(d, SCHED_FEAT_IPI_HANDOFF) &&
	    waker_pcpu < d->nr_pcpus && sched_ent_allowed(d, e, waker_pcpu))
		return waker_pcpu;
	if (feat(d, SCHED_FEAT_WAKE_VICTIM) && (v = select_victim(d, e, prev)) != SCHED_NONE)
		return v;
	if (sched_ent_allowed(d, e, prev))
		return prev;
	return sched_least_loaded_allowed(d, e);
}

/* A woken entity's placement; its first ever is the initial one (seed 001). */
static void enqueue_woken_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				 uint64_t now_ns)
{
	bool first = dom_ent(h->dom, id)->never_placed;

	ASSERT_HELD(&rq->lock);
	eevdf_enqueue_locked(h, rq, id, PLACE_WAKEUP | (first ? PLACE_INITIAL : 0), now_ns);
}

int sched_wake_ent_locked(struct sched_handle *h, uint32_t id, uint64_t now_ns, unsigned waker_pcpu,
			  unsigned hint, struct sched_wake_result *res)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = dom_ent(d, id);
	/* acquire: pairs with the delayed dequeue's release in sched_schedule */
	uint32_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
	unsigned prev, target;
	struct sched_rq *rq;
	bool idle;
	int r;

	ASSERT_HELD(&e->lock);
	res->preempt = false;
	res->pcpu = LOAD(e->pcpu);
	if (st == SCHED_ES_FREE)
		return -ENOENT;
	if (st == SCHED_ES_QUEUED) {
		/* A delayed sleeper is requeued where it is. Its final dequeue
		 * (at a pick) needs only the rq lock: look again under it. */
		r = sched_rq_lock_ent(h, e, &rq);
		if (r)
			return r;
		st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		res->how = SCHED_WAKE_ALREADY;
		if (st == SCHED_ES_QUEUED && e->delayed) {
			eevdf_update_curr_locked(h, rq, now_ns);
			eevdf_requeue_delayed_locked(h, rq, id, now_ns);
			res->how = SCHED_WAKE_ENQUEUED;
			res->pcpu = rq->index;
			res->preempt = sched_wakeup_preempt_locked(h, rq, id, now_ns);
			if (rq->curr == SCHED_NONE)
				sched_kick(h, rq->index);
			sched_rearm_locked(h, rq, now_ns);
		}
		sched_unlock(&rq->lock);
		if (st != SCHED_ES_BLOCKED)    /* else: dequeued meanwhile, wake it */
			return 0;
	}
	if (st != SCHED_ES_BLOCKED) {
		res->how = SCHED_WAKE_ALREADY;
		return 0;
	}
	prev = LOAD(e->pcpu);
	target = select_pcpu(d, e, prev, waker_pcpu, hint, &idle);
	rq = dom_rq(d, target);
	r = sched_rq_lock(h, rq);
	if (r)
		return r;
	res->pcpu = target;
	if (feat(d, SCHED_FEAT_TTWU_PENDING) && idle && target != waker_pcpu) {
		STORE(rq->ttwu_pending, 1u);
		e->next = SCHED_NONE;
		if (rq->wake_tail == SCHED_NONE)
			rq->wake_head = id;
		else
			dom_ent(d, rq->wake_tail)->next = id;
		rq->wake_tail = id;
		rq->nr_wake++;
		STORE(e->pcpu, target);
		STORE(e->state, (uint32_t)SCHED_ES_WAKING);
		eevdf_rq_idle_update_locked(d, rq);
		res->how = SCHED_WAKE_LISTED;
		sched_trace(h, SCHED_TRACE_WAKE, target, id, target, SCHED_WAKE_LISTED, 0, now_ns);
		sched_kick(h, target);
	} else {
		eevdf_update_curr_locked(h, rq, now_ns);
		if (prev != target && !e->never_placed)
			e->nr_migrations++;
		sched_trace(h, SCHED_TRACE_WAKE, target, id, target, SCHED_WAKE_ENQUEUED, 0, now_ns);
		enqueue_woken_locked(h, rq, id, now_ns);
		res->how = SCHED_WAKE_ENQUEUED;
		res->preempt = sched_wakeup_preempt_locked(h, rq, id, now_ns);
		if (rq->curr == SCHED_NONE)    /* need-resched is set: start it */
			sched_kick(h, target);
		sched_rearm_locked(h, rq, now_ns);
	}
	sched_unlock(&rq->lock);
	return 0;
}

int sched_wake(struct sched_handle *h, unsigned id, uint64_t now_ns, unsigned waker_pcpu,
	       struct sched_wake_result *res)
{
	return sched_wake_hint(h, id, now_ns, waker_pcpu, 0, res);
}

int sched_wake_hint(struct sched_handle *h, unsigned id, uint64_t now_ns, unsigned waker_pcpu,
		    unsigned hint, struct sched_wake_result *res)
{
	struct sched_wake_result tmp;
	struct sched_ent *e;
	int r = sched_check_id(h, id);

	if (r)
		return r;
	if (!res)
		res = &tmp;
	e = dom_ent(h->dom, id);
	r = sched_ent_lock(h->dom, e);
	if (r)
		return r;
	r = sched_wake_ent_locked(h, id, now_ns, waker_pcpu, hint, res);
	sched_unlock(&e->lock);
	return r;
}

int sched_wake_take(struct sched_handle *h, unsigned pcpu)
{
	struct sched_domain *d = h->dom;
	struct sched_rq *rq;
	int n, r = sched_rq_lock_pcpu(h, pcpu, &rq);

	if (r)
		return r;
	n = (int)rq->nr_wake;
	if (rq->wake_head != SCHED_NONE) {
		if (rq->drain_tail == SCHED_NONE)
			rq->drain_head = rq->wake_head;
		else
			dom_ent(d, rq->drain_tail)->next = rq->wake_head;
		rq->drain_tail = rq->wake_tail;
		rq->nr_drain += rq->nr_wake;
		rq->wake_head = rq->wake_tail = SCHED_NONE;
		rq->nr_wake = 0;
	}
	if (feat(d, SCHED_FEAT_TTWU_PENDING_EARLY_CLEAR)) {
		/* The pre-2022 order: from here until finish the pCPU looks
		 * idle with wakeups in flight. */
		STORE(rq->ttwu_pending, 0u);
		eevdf_rq_idle_update_locked(d, rq);
	}
	sched_unlock(&rq->lock);
	return n;
}

int sched_wake_finish(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_rq *rq;
	int n = 0, r = sched_rq_lock_pcpu(h, pcpu, &rq);

	if (r)
		return r;
	eevdf_update_curr_locked(h, rq, now_ns);
	while (rq->drain_head != SCHED_NONE) {
		uint32_t id = rq->drain_head;
		struct sched_ent *e = dom_ent(d, id);

		rq->drain_head = e->next;
		if (rq->drain_head == SCHED_NONE)
			rq->drain_tail = SCHED_NONE;
		rq->nr_drain--;
		e->next = SCHED_NONE;
		enqueue_woken_locked(h, rq, id, now_ns);
		sched_wakeup_preempt_locked(h, rq, id, now_ns);
		n++;
	}
	/* After the enqueue, never before (seed 002). Wakers that pushed since
	 * take still have theirs in flight: keep the flag for them. */
	if (rq->wake_head == SCHED_NONE && LOAD(rq->ttwu_pending)) {
		STORE(rq->ttwu_pending, 0u);
		eevdf_rq_idle_update_locked(d, rq);
	}
	sched_rearm_locked(h, rq, now_ns);
	sched_unlock(&rq->lock);
	return n;
}

int sched_wake_drain(struct sched_handle *h, unsigned pcpu, uint64_t now_ns)
{
	int r = sched_wake_take(h, pcpu);

	if (r < 0)
		return r;
	return sched_wake_finish(h, pcpu, now_ns);
}

int sched_set_allowed(struct sched_handle *h, unsigned id, const struct sched_cpuset *allowed,
		      uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_cpuset set;
	struct sched_ent *e;
	struct sched_rq *rq;
	uint32_t st;
	int r = sched_check_id(h, id);

	if (r)
		return r;
	if (!allowed || !sched_allowed_copy(d, &set, allowed))
		return -EINVAL;
	e = dom_ent(d, id);
	r = sched_ent_lock(h->dom, e);
	if (r)
		return r;
	if (LOAD(e->state) == SCHED_ES_FREE) {
		r = -ENOENT;
		goto out;
	}
	for (;;) {
		struct sched_rq *dst;

		r = sched_rq_lock_ent(h, e, &rq);
		if (r)
			goto out;
		st = LOAD(e->state);
		if (st != SCHED_ES_QUEUED || sched_cpuset_test(&set, rq->index))
			break;
		if (e->delayed) {              /* asleep: just finish the dequeue */
			eevdf_update_curr_locked(h, rq, now_ns);
			eevdf_dequeue_locked(h, rq, id, true, now_ns);
			STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);
			e->allowed = set;
			sched_rearm_locked(h, rq, now_ns);
			sched_unlock(&rq->lock);
			goto out;
		}
		/* Queued where it may no longer run: change the set and move it
		 * in one critical section, so it is never seen queued there. */
		dst = dom_rq(d, sched_least_loaded_in(d, &set));
		sched_unlock(&rq->lock);
		r = sched_rq_lock2(h, rq, dst);
		if (r)
			goto out;
		if (LOAD(e->pcpu) != rq->index || LOAD(e->state) != SCHED_ES_QUEUED) {
			sched_rq_unlock2(rq, dst);
			continue;              /* moved or picked meanwhile */
		}
		e->allowed = set;
		eevdf_migrate_locked(h, rq, dst, id, now_ns);
		eevdf_settle_moved_locked(h, rq, dst, id, now_ns);
		sched_rq_unlock2(rq, dst);
		goto out;
	}
	e->allowed = set;
	if (sched_ent_allowed(d, e, rq->index) || st == SCHED_ES_BLOCKED) {
		sched_unlock(&rq->lock);
	} else if (st == SCHED_ES_RUNNING) {   /* moves at its next switch */
		eevdf_resched_locked(h, rq, now_ns);
		sched_kick(h, rq->index);
		sched_unlock(&rq->lock);
	} else {                               /* WAKING: choose again */
		struct sched_wake_result res;

		sched_wake_unlink_locked(d, rq, id);
		STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);
		sched_unlock(&rq->lock);
		r = sched_wake_ent_locked(h, id, now_ns, SCHED_NONE, 0, &res);
	}
out:
	sched_unlock(&e->lock);
	return r;
}
