/*
 * EEVDF on one run queue (sched/README.md §2). Every function here needs the queue's
 * lock. Curr is kept out of the tree and out of sum_wkey/sum_w, so each
 * average adds it back: A = sum_wkey + w_c*(v_c - v0), W = sum_w + w_c.
 */
#include "sched/internal.h"

static struct sched_ent *E(struct sched_domain *d, uint32_t id)
{
	return dom_ent(d, id);
}

static int64_t key(const struct sched_rq *rq, uint64_t v)
{
	return (int64_t)(v - rq->v0);
}

/* A and W including curr. */
static void rq_load(struct sched_domain *d, struct sched_rq *rq, s128 *A, uint64_t *W)
{
	*A = rq->sum_wkey;
	*W = rq->sum_w;
	if (rq->curr != SCHED_NONE) {
		struct sched_ent *c = E(d, rq->curr);

		*A += (s128)c->weight * key(rq, c->vruntime);
		*W += c->weight;
	}
}

uint64_t eevdf_rq_weight_locked(struct sched_domain *d, struct sched_rq *rq)
{
	s128 A;
	uint64_t W;

	ASSERT_HELD(&rq->lock);
	rq_load(d, rq, &A, &W);
	return W;
}

/* floor(A / W) for W > 0: C division truncates, so bias negative A. */
static int64_t floor_div(s128 A, uint64_t W)
{
	if (A < 0)
		A -= (s128)W - 1;
	return (int64_t)(A / (s128)W);
}

/* Callers' clocks may disagree by a little (one now_ns per thread): a
 * negative interval counts as zero rather than wrapping. */
static void account_wait(struct sched_ent *e, uint64_t now_ns)
{
	int64_t w = (int64_t)(now_ns - e->wait_start_ns);

	if (w > 0)
		e->sum_wait_ns += (uint64_t)w;
}

static void sum_add(struct sched_rq *rq, const struct sched_ent *e)
{
	rq->sum_wkey += (s128)e->weight * key(rq, e->vruntime);
	rq->sum_w += e->weight;
}

static void sum_sub(struct sched_rq *rq, const struct sched_ent *e)
{
	rq->sum_wkey -= (s128)e->weight * key(rq, e->vruntime);
	rq->sum_w -= e->weight;
}

/*
 * V = v0 + floor(A / W). Floor, not truncation: an entity exactly at V must
 * test eligible (A >= (v - v0) * W), which needs V * W <= A. Moving the zero
 * point to V shifts every key by -delta, so sum_wkey loses sum_w * delta.
 */
uint64_t eevdf_avg_vruntime_locked(struct sched_domain *d, struct sched_rq *rq)
{
	s128 A;
	uint64_t W;
	int64_t delta = 0;

	ASSERT_HELD(&rq->lock);
	rq_load(d, rq, &A, &W);
	if (W)
		delta = floor_div(A, W);
	rq->v0 += (uint64_t)delta;
	rq->sum_wkey -= (s128)rq->sum_w * delta;
	return rq->v0;
}

uint64_t eevdf_avg_vruntime_peek(struct sched_domain *d, struct sched_rq *rq)
{
	s128 A;
	uint64_t W;

	ASSERT_HELD(&rq->lock);
	rq_load(d, rq, &A, &W);
	return rq->v0 + (uint64_t)(W ? floor_div(A, W) : 0);
}

/* lag >= 0  <=>  V >= v  <=>  A/W >= v - v0  <=>  A >= (v - v0) * W. */
bool eevdf_eligible_locked(struct sched_domain *d, struct sched_rq *rq, uint64_t v)
{
	s128 A;
	uint64_t W;

	ASSERT_HELD(&rq->lock);
	rq_load(d, rq, &A, &W);
	return A >= (s128)key(rq, v) * (s128)W;
}

uint64_t eevdf_rq_max_slice_locked(struct sched_domain *d, struct sched_rq *rq)
{
	uint64_t m = 0;

	ASSERT_HELD(&rq->lock);
	if (rq->root != SCHED_NONE)
		m = E(d, rq->root)->max_slice;
	if (rq->curr != SCHED_NONE && E(d, rq->curr)->slice_ns > m)
		m = E(d, rq->curr)->slice_ns;
	return m;
}

uint64_t eevdf_rq_min_slice_locked(struct sched_domain *d, struct sched_rq *rq)
{
	uint64_t m = UINT64_MAX;

	ASSERT_HELD(&rq->lock);
	if (rq->root != SCHED_NONE)
		m = E(d, rq->root)->min_slice;
	if (rq->curr != SCHED_NONE && E(d, rq->curr)->slice_ns < m)
		m = E(d, rq->curr)->slice_ns;
	return m;
}

/* lag = V - v, clamped to +-(max_slice + tick) * NICE_0 / w: an entity cannot
 * bank more than about one slice of service either way. */
int64_t eevdf_lag_clamped_locked(struct sched_domain *d, struct sched_rq *rq, struct sched_ent *e,
				 uint64_t V)
{
	int64_t lag = (int64_t)(V - e->vruntime);
	int64_t limit = (int64_t)delta_fair(eevdf_rq_max_slice_locked(d, rq) + d->tick_ns,
					    e->weight);

	ASSERT_HELD(&rq->lock);
	if (lag > limit)
		lag = limit;
	if (lag < -limit)
		lag = -limit;
	return lag;
}

void eevdf_resched_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	ASSERT_HELD(&rq->lock);
	if (!rq->need_resched) {
		rq->need_resched = 1;
		sched_trace(h, SCHED_TRACE_RESCHED, rq->index, rq->curr, SCHED_NONE, 0, 0, now_ns);
	}
}

/* Returns true when the deadline was reached and a new one was set. */
static bool update_deadline(struct sched_domain *d, struct sched_rq *rq, struct sched_ent *e)
{
	if (vt_before(e->vruntime, e->deadline))
		return false;
	if (!e->custom_slice)
		e->slice_ns = d->base_slice_ns;
	e->deadline = e->vruntime + delta_fair(e->slice_ns, e->weight);
	eevdf_avg_vruntime_locked(d, rq);
	return true;
}

void eevdf_update_curr_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *c;
	int64_t delta;
	bool resched;

	ASSERT_HELD(&rq->lock);
	if (vt_before(rq->clock_ns, now_ns))
		rq->clock_ns = now_ns;
	if (rq->curr == SCHED_NONE)
		return;
	c = E(d, rq->curr);
	delta = (int64_t)(now_ns - c->exec_start_ns);
	if (delta <= 0)
		return;
	c->exec_start_ns = now_ns;
	c->sum_exec_ns += (uint64_t)delta;
	rq->busy_ns += (uint64_t)delta;
	c->vruntime += delta_fair((uint64_t)delta, c->weight);
	resched = update_deadline(d, rq, c);
	if (rq->nr_queued <= 1)
		return;
	if (resched || (feat(d, SCHED_FEAT_RUN_TO_PARITY) && !vt_before(c->vruntime, c->vprot)))
		eevdf_resched_locked(h, rq, now_ns);
}

/* Curr gives up the rest of its slice if it is eligible (sched/README.md §2.12):
 * v = d, then a fresh deadline; protection ends either way. */
void eevdf_yield_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *c = E(d, rq->curr);

	ASSERT_HELD(&rq->lock);
	if (eevdf_eligible_locked(d, rq, c->vruntime)) {
		c->vruntime = c->deadline;
		update_deadline(d, rq, c);
	}
	c->vprot = c->vruntime;
	if (rq->nr_queued > 1)
		eevdf_resched_locked(h, rq, now_ns);
	sched_trace(h, SCHED_TRACE_YIELD, rq->index, rq->curr, SCHED_NONE, 0, 0, now_ns);
}

/*
 * Placement (sched/README.md §2.7). Adding entity i with lag l at
 * v_i = V - l moves the average to V' = V - w_i*l/(W + w_i), leaving it the
 * lag l' = V' - v_i = l*W/(W + w_i). To keep the saved lag we place with
 * l = l_saved*(W + w_i)/W (seed 004). The result is exact up to one unit:
 * V' is a floor and the inflation truncates.
 */
void eevdf_place_locked(struct sched_domain *d, struct sched_rq *rq, struct sched_ent *e,
			unsigned flags)
{
	uint64_t V = eevdf_avg_vruntime_locked(d, rq);
	uint64_t W = rq->sum_w, vslice;
	int64_t lag = feat(d, SCHED_FEAT_PLACE_LAG) ? e->vlag : 0;

	ASSERT_HELD(&rq->lock);
	if (rq->curr != SCHED_NONE)
		W += E(d, rq->curr)->weight;
	if (!e->custom_slice)
		e->slice_ns = d->base_slice_ns;
	vslice = delta_fair(e->slice_ns, e->weight);

	if (feat(d, SCHED_FEAT_FAIR_SLEEPERS) && (flags & PLACE_WAKEUP) &&
	    !(flags & PLACE_INITIAL) && lag < (int64_t)d->base_slice_ns)
		lag = (int64_t)d->base_slice_ns;
	if (e->idle_class && feat(d, SCHED_FEAT_IDLE_NO_COMPENSATION) && (flags & PLACE_WAKEUP) &&
	    lag > 0)
		lag = 0;
	if (rq->nr_queued == 0)
		lag = 0;                       /* nobody to be fair against */
	e->placed_lag = lag;
	if (lag && feat(d, SCHED_FEAT_PLACE_LAG))
		lag = (int64_t)((s128)lag * (s128)(W + e->weight) / (s128)W);

	e->vruntime = V - (uint64_t)lag;
	if (e->has_rel_deadline) {
		e->deadline = e->vruntime + (uint64_t)e->rel_deadline;
		e->has_rel_deadline = 0;
	} else {
		if ((flags & PLACE_INITIAL) && feat(d, SCHED_FEAT_PLACE_DEADLINE_INITIAL))
			vslice /= 2;
		e->deadline = e->vruntime + vslice;
	}
	e->never_placed = 0;
}

void eevdf_enqueue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id, unsigned flags,
			  uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);

	ASSERT_HELD(&rq->lock);
	eevdf_place_locked(d, rq, e, flags);
	sched_tree_insert(dom_ents(d), &rq->root, id);
	sum_add(rq, e);
	e->wait_start_ns = now_ns;
	e->delayed = 0;
	STORE(e->pcpu, rq->index);
	STORE(e->state, (uint32_t)SCHED_ES_QUEUED);
	STORE(rq->nr_queued, rq->nr_queued + 1);
	if (!e->idle_class)
		STORE(rq->nr_normal, rq->nr_normal + 1);
	eevdf_rq_idle_update_locked(d, rq);
	sched_trace(h, SCHED_TRACE_ENQUEUE, rq->index, id, SCHED_NONE, e->placed_lag,
		    (int64_t)(e->deadline - e->vruntime), now_ns);
}

/* Leaves e->state to the caller (BLOCKED, or QUEUED again elsewhere). */
void eevdf_dequeue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id, bool sleep,
			  uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);
	uint64_t V;

	bool was_delayed = e->delayed;

	ASSERT_HELD(&rq->lock);
	V = eevdf_avg_vruntime_locked(d, rq);
	e->vlag = eevdf_lag_clamped_locked(d, rq, e, V);
	if (was_delayed) {
		/* it slept until eligible: keep no credit from that */
		if (e->vlag > 0 && feat(d, SCHED_FEAT_DELAY_ZERO))
			e->vlag = 0;
		e->delayed = 0;
		STORE(rq->nr_delayed, rq->nr_delayed - 1);
	} else if (!e->idle_class) {
		STORE(rq->nr_normal, rq->nr_normal - 1);
	}
	e->has_rel_deadline = !sleep && feat(d, SCHED_FEAT_PLACE_REL_DEADLINE);
	e->rel_deadline = (int64_t)(e->deadline - e->vruntime);
	if (rq->curr == id) {
		STORE(rq->curr, SCHED_NONE);
		rq->need_resched = 1;
	} else {
		sched_tree_remove(dom_ents(d), &rq->root, id);
		sum_sub(rq, e);
		if (!was_delayed)              /* a delayed one was asleep */
			account_wait(e, now_ns);
	}
	STORE(rq->nr_queued, rq->nr_queued - 1);
	eevdf_rq_idle_update_locked(d, rq);
	sched_trace(h, SCHED_TRACE_DEQUEUE, rq->index, id, SCHED_NONE, e->vlag, sleep, now_ns);
}

/* Leftmost eligible walk (sched/README.md §2.5 step 5): a left subtree holds an
 * eligible entity iff its min_vruntime is eligible (eligibility is monotone
 * in v), and all of it has earlier deadlines than this node. O(log n). */
static uint32_t pick_tree(struct sched_domain *d, struct sched_rq *rq)
{
	struct sched_ent *ents = dom_ents(d);
	uint32_t n = sched_tree_first(ents, rq->root);

	if (n == SCHED_NONE || eevdf_eligible_locked(d, rq, ents[n].vruntime))
		return n;
	n = rq->root;
	while (n != SCHED_NONE) {
		uint32_t l = ents[n].left;

		if (l != SCHED_NONE && eevdf_eligible_locked(d, rq, ents[l].min_vruntime)) {
			n = l;
			continue;
		}
		if (eevdf_eligible_locked(d, rq, ents[n].vruntime))
			return n;
		n = ents[n].right;
	}
	return SCHED_NONE;
}

uint32_t eevdf_pick_locked(struct sched_domain *d, struct sched_rq *rq, bool protect)
{
	uint32_t curr = rq->curr, best;
	struct sched_ent *c = curr != SCHED_NONE ? E(d, curr) : NULL;

	ASSERT_HELD(&rq->lock);
	if (rq->nr_queued == 1)
		return c ? curr : rq->root;
	if (c && !eevdf_eligible_locked(d, rq, c->vruntime)) {
		c = NULL;
		curr = SCHED_NONE;
	}
	if (c && protect && feat(d, SCHED_FEAT_RUN_TO_PARITY) && vt_before(c->vruntime, c->vprot))
		return curr;
	best = pick_tree(d, rq);
	if (c && (best == SCHED_NONE || vt_before(c->deadline, E(d, best)->deadline)))
		return curr;
	if (best == SCHED_NONE)                /* unreachable: someone is eligible */
		best = sched_tree_first(dom_ents(d), rq->root);
	return best;
}

/* Make a queued entity curr, with slice protection (RUN_TO_PARITY): it may
 * run until min(d, v + s*NICE_0/w), s = min(own slice, smallest queued). */
void eevdf_set_next_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			   uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);
	uint64_t s;

	ASSERT_HELD(&rq->lock);
	sched_tree_remove(dom_ents(d), &rq->root, id);
	sum_sub(rq, e);
	account_wait(e, now_ns);
	/* Not now_ns: a caller whose clock read is older than one already
	 * seen here (it read it before waiting for the lock) would start e's
	 * run in the past, and the next update_curr would charge e again for
	 * time the previous curr was charged for up to clock_ns (update_curr
	 * ran just before, so clock_ns >= now_ns). */
	e->exec_start_ns = rq->clock_ns;
	e->nr_switches++;
	rq->nr_switches++;
	s = e->slice_ns;
	if (rq->root != SCHED_NONE && E(d, rq->root)->min_slice < s)
		s = E(d, rq->root)->min_slice;
	e->vprot = vt_min(e->deadline, e->vruntime + delta_fair(s, e->weight));
	STORE(rq->curr, id);
	STORE(e->state, (uint32_t)SCHED_ES_RUNNING);
	eevdf_rq_idle_update_locked(d, rq);
}

void eevdf_put_prev_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	uint32_t id = rq->curr;
	struct sched_ent *e = E(d, id);

	ASSERT_HELD(&rq->lock);
	STORE(rq->curr, SCHED_NONE);
	sched_tree_insert(dom_ents(d), &rq->root, id);
	sum_add(rq, e);
	e->wait_start_ns = now_ns;
	STORE(e->state, (uint32_t)SCHED_ES_QUEUED);
}

/* floor(n / d) for d > 0 */
static s128 floor_div128(s128 n, s128 d)
{
	s128 q = n / d;

	return (n % d != 0 && n < 0) ? q - 1 : q;
}

/*
 * Reweight a queued or running entity keeping V (sched/README.md §2.9). Work relative to
 * the exact average: after avg_vruntime the floored V leaves a remainder
 * A1 (0 <= A1 < W1), so the exact average is V + A1/W1 and the entity's exact
 * lag is l + A1/W1 (l = clamped V - v). Scaling that lag by w/w' and placing
 * at (V + A1/W1) - (l + A1/W1)*w/w' leaves sum_j w_j*v_j / W exactly where
 * it was:
 *     v' - V = (A1*w' - (l*W1 + A1)*w) / (W1*w'),   rounded to nearest,
 * so the floored V moves by at most one unit. (Scaling the floored lag
 * instead would move V by up to A1*(w - w')/(w'*W2): thousands of ns when a
 * heavy entity becomes light.) Bits: |l| < 2^44, W1 < 2^45, w < 2^21: the
 * products stay below 2^111. Deadline and protection scale relative to V.
 */
void eevdf_reweight_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			   uint32_t weight, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);
	bool in_tree = rq->curr != id;
	uint64_t V = eevdf_avg_vruntime_locked(d, rq), W1;
	int64_t lag = eevdf_lag_clamped_locked(d, rq, e, V);
	int64_t dr = (int64_t)(e->deadline - V), pr = (int64_t)(e->vprot - V);
	uint32_t old = e->weight;
	s128 A1, num, den;

	ASSERT_HELD(&rq->lock);
	rq_load(d, rq, &A1, &W1);
	num = A1 * weight - ((s128)lag * (s128)W1 + A1) * old;
	den = (s128)W1 * weight;
	if (in_tree) {
		sched_tree_remove(dom_ents(d), &rq->root, id);
		sum_sub(rq, e);
	}
	dr = (int64_t)((s128)dr * old / weight);
	pr = (int64_t)((s128)pr * old / weight);
	e->weight = weight;
	e->vruntime = V + (uint64_t)(int64_t)floor_div128(2 * num + den, 2 * den);
	e->deadline = V + (uint64_t)dr;
	e->vprot = V + (uint64_t)pr;
	if (in_tree) {
		sched_tree_insert(dom_ents(d), &rq->root, id);
		sum_add(rq, e);
	}
	sched_trace(h, SCHED_TRACE_REWEIGHT, rq->index, id, SCHED_NONE, old, weight, now_ns);
}

void eevdf_delay_dequeue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);

	ASSERT_HELD(&rq->lock);
	if (rq->curr == id) {
		eevdf_put_prev_locked(h, rq, now_ns);
		rq->need_resched = 1;
	}
	e->delayed = 1;
	STORE(rq->nr_delayed, rq->nr_delayed + 1);
	if (!e->idle_class)
		STORE(rq->nr_normal, rq->nr_normal - 1);
	eevdf_rq_idle_update_locked(d, rq);
	sched_trace(h, SCHED_TRACE_DEQUEUE, rq->index, id, SCHED_NONE,
		    (int64_t)(eevdf_avg_vruntime_peek(d, rq) - e->vruntime), 2, now_ns);
}

void eevdf_finish_delayed_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				 uint64_t now_ns)
{
	ASSERT_HELD(&rq->lock);
	eevdf_dequeue_locked(h, rq, id, true, now_ns);
	/* BLOCKED without the entity lock: release, so a waker that sees
	 * BLOCKED (acquire) sees the saved lag too. */
	__atomic_store_n(&E(h->dom, id)->state, (uint32_t)SCHED_ES_BLOCKED, __ATOMIC_RELEASE);
}

void eevdf_requeue_delayed_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				  uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = E(d, id);

	ASSERT_HELD(&rq->lock);
	if (feat(d, SCHED_FEAT_DELAY_ZERO) &&
	    (int64_t)(eevdf_avg_vruntime_locked(d, rq) - e->vruntime) > 0) {
		/* Eligible already: what it has beyond lag 0 it earned asleep.
		 * Place it anew at V with a fresh deadline, as a wakeup after
		 * a completed dequeue would (it is never curr: a delayed
		 * entity was put back into the tree when it blocked). */
		sched_tree_remove(dom_ents(d), &rq->root, id);
		sum_sub(rq, e);
		e->vlag = 0;
		e->has_rel_deadline = 0;
		eevdf_place_locked(d, rq, e, 0);
		sched_tree_insert(dom_ents(d), &rq->root, id);
		sum_add(rq, e);
	}
	e->delayed = 0;
	e->wait_start_ns = now_ns;
	STORE(rq->nr_delayed, rq->nr_delayed - 1);
	if (!e->idle_class)
		STORE(rq->nr_normal, rq->nr_normal + 1);
	eevdf_rq_idle_update_locked(d, rq);
	sched_trace(h, SCHED_TRACE_ENQUEUE, rq->index, id, SCHED_NONE,
		    (int64_t)(eevdf_avg_vruntime_peek(d, rq) - e->vruntime),
		    (int64_t)(e->deadline - e->vruntime), now_ns);
}

void eevdf_migrate_locked(struct sched_handle *h, struct sched_rq *src, struct sched_rq *dst,
			  uint32_t id, uint64_t now_ns)
{
	ASSERT_HELD(&src->lock);
	ASSERT_HELD(&dst->lock);
	eevdf_update_curr_locked(h, src, now_ns);
	eevdf_dequeue_locked(h, src, id, false, now_ns);
	eevdf_update_curr_locked(h, dst, now_ns);
	E(h->dom, id)->nr_migrations++;
	sched_trace(h, SCHED_TRACE_MIGRATE, dst->index, id, src->index, 0, 0, now_ns);
	eevdf_enqueue_locked(h, dst, id, 0, now_ns);
}

void eevdf_settle_moved_locked(struct sched_handle *h, struct sched_rq *src, struct sched_rq *dst,
			       uint32_t id, uint64_t now_ns)
{
	ASSERT_HELD(&src->lock);
	ASSERT_HELD(&dst->lock);
	if (!sched_wakeup_preempt_locked(h, dst, id, now_ns) && dst->curr == SCHED_NONE)
		sched_kick(h, dst->index);
	sched_rearm_locked(h, src, now_ns);
	sched_rearm_locked(h, dst, now_ns);
}

void eevdf_rq_idle_update_locked(struct sched_domain *d, struct sched_rq *rq)
{
	unsigned w = rq->index / 64;
	uint64_t bit = 1ull << (rq->index % 64);
	bool pending = rq->ttwu_pending != 0;
	bool idle = rq->curr == SCHED_NONE && rq->nr_queued == rq->nr_delayed && !pending;
	bool idle_normal = rq->nr_normal == 0 && !pending;

	ASSERT_HELD(&rq->lock);
	if (((LOAD(d->idle_mask[w]) & bit) != 0) != idle) {
		if (idle)
			__atomic_fetch_or(&d->idle_mask[w], bit, __ATOMIC_RELAXED);
		else
			__atomic_fetch_and(&d->idle_mask[w], ~bit, __ATOMIC_RELAXED);
	}
	if (((LOAD(d->idle_normal_mask[w]) & bit) != 0) != idle_normal) {
		if (idle_normal)
			__atomic_fetch_or(&d->idle_normal_mask[w], bit, __ATOMIC_RELAXED);
		else
			__atomic_fetch_and(&d->idle_normal_mask[w], ~bit, __ATOMIC_RELAXED);
	}
}
