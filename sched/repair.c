/*
 * Repair after a lock owner died (lock.c hands us the lock, already ours and
 * marked consistent). A member process killed inside a critical section can
 * stop between any two stores: a rotation half done, an entity in the tree
 * whose state still says BLOCKED, curr cleared while the entity still says
 * RUNNING, v0 moved without sum_wkey, a wake list tail linked to an entity
 * that was never marked WAKING. The derived structures cannot be trusted, so
 * they are rebuilt from the one thing every path writes last and atomically:
 * each entity's (state, pcpu) pair.
 *
 * Why that is the ground truth: an entity enters or leaves a queue only under
 * that queue's lock, and every path stores pcpu and then state as its last
 * step (enqueue, set_next, put_prev, listing a wakeup, the caller of dequeue).
 * So "state says runnable on this pCPU" means the last completed transition
 * put it here, and a transition the dead member did not finish is dropped:
 *   - enqueue/wake cut short: the entity still says BLOCKED and stays blocked
 *     (its waker never got an answer; the next interrupt wakes it again);
 *   - dequeue/block cut short: it still says QUEUED or RUNNING and stays
 *     runnable (a spurious run: the vCPU halts again);
 *   - migration cut short: it says QUEUED on the source, so the source's
 *     repair keeps it and the destination's (its lock died too) drops it.
 * Nobody else can change state/pcpu of an entity that names this queue while
 * we hold its lock, except a waker moving a BLOCKED entity elsewhere: it
 * stores pcpu before state (release), and we read state (acquire) first.
 *
 * Rules for an entity's own fields that a death may have left half-updated
 * (all chosen so that the result passes sched_domain_check and no arithmetic
 * can overflow; none needs the entity lock, which may be held by a waiter):
 *   - weight/slice out of range: reset to base weight / base slice;
 *   - allowed set with no pCPU of the domain (a torn copy): {this pCPU} (it
 *     was runnable here, so here was allowed before the copy started);
 *   - queued or waking on a pCPU it may no longer use: made BLOCKED with its
 *     lag saved. Only sched_set_allowed stores such a set while the entity is
 *     queued, then moves it in the same section: its caller died, and moving
 *     it here would need a second queue lock. Never widen the set instead;
 *   - lag beyond a few lag bounds (a reweight cut between the weight and the
 *     vruntime store scales it by up to 88761/15): clamped to that bound,
 *     deadline and protection shifted with it; a deadline further from
 *     vruntime than any slice (1 s at its weight, after a set_slice or a
 *     reweight d - v keeps the old slice's length until the next deadline
 *     update, which is legitimate) plus that bound: reset to one slice;
 *   - RUNNING but not the queue's curr (put_prev or a dequeue of curr cut
 *     short): QUEUED. curr itself is kept only if its entity says RUNNING
 *     here; else the queue has no curr and must pick.
 * Wake and drain lists are rebuilt as one wake list in index order, with
 * ttwu_pending set while it is not empty: every WAKING entity is then still a
 * wakeup in flight that the kicked target side enqueues (FIFO order among
 * them is lost; a live sched_wake_finish whose drain list moved finds it
 * empty and the next drain enqueues them).
 */
#include "sched/internal.h"

#define LAG_BOUNDS 4                   /* clamp at 4x the dequeue-time bound */
#define MAX_SLICE_NS 1000000000ull     /* the API's limit on a slice */

static bool runnable_state(uint32_t st)
{
	return st == SCHED_ES_QUEUED || st == SCHED_ES_RUNNING || st == SCHED_ES_WAKING;
}

/* State of id if it names rq as its queue, else SCHED_ES_FREE. */
static uint32_t member_state(struct sched_domain *d, struct sched_rq *rq, uint32_t id)
{
	struct sched_ent *e = dom_ent(d, id);
	uint32_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);

	if (!runnable_state(st) || __atomic_load_n(&e->pcpu, __ATOMIC_ACQUIRE) != rq->index)
		return SCHED_ES_FREE;
	return st;
}

/* Fields every placement and sum relies on; true if one was out of range. */
static bool ent_fields_sane(struct sched_domain *d, struct sched_ent *e, unsigned fallback_pcpu)
{
	bool fixed = false, any = false;

	if (e->weight < 1 || e->weight > SCHED_MAX_WEIGHT) {
		if (e->base_weight < 1 || e->base_weight > SCHED_MAX_WEIGHT)
			e->base_weight = SCHED_NICE_0_WEIGHT;
		e->weight = e->idle_class ? SCHED_IDLE_WEIGHT : e->base_weight;
		fixed = true;
	}
	if (e->slice_ns < 1 || e->slice_ns > MAX_SLICE_NS) {
		e->slice_ns = d->base_slice_ns;
		e->custom_slice = 0;
		fixed = true;
	}
	for (unsigned i = 0; i < d->nr_pcpus && !any; i++)
		any = sched_cpuset_test(&e->allowed, i);
	if (!any) {
		sched_cpuset_zero(&e->allowed);
		if (fallback_pcpu < d->nr_pcpus)
			sched_cpuset_set(&e->allowed, fallback_pcpu);
		else
			sched_allowed_copy(d, &e->allowed, NULL);
		fixed = true;
	}
	return fixed;
}

static int64_t clamp64(int64_t x, int64_t limit)
{
	return x > limit ? limit : x < -limit ? -limit : x;
}

/* floor(A / W), W > 0 (C division truncates toward zero). */
static int64_t floor_avg(s128 A, uint64_t W)
{
	if (A < 0)
		A -= (s128)W - 1;
	return (int64_t)(A / (s128)W);
}

/* Stays on rq after the repair: curr, or queued where it may run. */
static bool stays(struct sched_domain *d, struct sched_rq *rq, uint32_t id, uint32_t st)
{
	return id == rq->curr ||
	       (st == SCHED_ES_QUEUED && sched_ent_allowed(d, dom_ent(d, id), rq->index));
}

static int64_t lag_limit(struct sched_domain *d, const struct sched_ent *e, uint64_t max_slice)
{
	return (int64_t)delta_fair(LAG_BOUNDS * (max_slice + d->tick_ns), e->weight);
}

/* Keep lag and relative deadline of a staying entity within range. */
static bool clamp_member(struct sched_domain *d, struct sched_ent *e, uint64_t V,
			 uint64_t max_slice)
{
	int64_t limit = lag_limit(d, e, max_slice);
	int64_t lag = (int64_t)(V - e->vruntime), want = clamp64(lag, limit);
	int64_t rel, rel_max = (int64_t)delta_fair(MAX_SLICE_NS, e->weight) + limit;
	bool fixed = false;

	if (want != lag) {
		uint64_t shift = (uint64_t)(lag - want);   /* v moves right by this */

		e->vruntime += shift;
		e->deadline += shift;
		e->vprot += shift;
		fixed = true;
	}
	rel = (int64_t)(e->deadline - e->vruntime);
	if (rel > rel_max || rel < -limit) {
		e->deadline = e->vruntime + delta_fair(e->slice_ns, e->weight);
		fixed = true;
	}
	return fixed;
}

/*
 * The average the lags are clamped against. An entity whose vruntime is off
 * also moves the average, the more the heavier it is (a nice -20 entity with
 * a stale vruntime drags V to itself and makes everybody else look out of
 * range). At most one entity per queue is mid-update at a death (every
 * operation finishes one entity before it touches the next), so if anyone
 * is out of range, leave out the one pulling hardest, max w*|v - V| (with
 * the others consistent among themselves that is the stale one), and
 * average the rest.
 */
static uint64_t repair_avg(struct sched_domain *d, struct sched_rq *rq, uint64_t max_slice)
{
	struct sched_ent *ents = dom_ents(d);
	uint32_t worst = SCHED_NONE;
	s128 A = 0, pull, worst_pull = -1;
	uint64_t W = 0, V;
	bool out = false;

	for (uint32_t id = 0; id < d->max_entities; id++) {
		uint32_t st = member_state(d, rq, id);

		if (st != SCHED_ES_FREE && stays(d, rq, id, st)) {
			A += (s128)ents[id].weight * (int64_t)(ents[id].vruntime - rq->v0);
			W += ents[id].weight;
		}
	}
	if (!W)
		return rq->v0;
	V = rq->v0 + (uint64_t)floor_avg(A, W);
	for (uint32_t id = 0; id < d->max_entities; id++) {
		uint32_t st = member_state(d, rq, id);
		int64_t lag;

		if (st == SCHED_ES_FREE || !stays(d, rq, id, st))
			continue;
		lag = (int64_t)(V - ents[id].vruntime);
		out |= lag != clamp64(lag, lag_limit(d, &ents[id], max_slice));
		pull = (s128)ents[id].weight * (lag < 0 ? -(s128)lag : (s128)lag);
		if (pull > worst_pull) {
			worst_pull = pull;
			worst = id;
		}
	}
	if (!out || W == ents[worst].weight)
		return V;
	A -= (s128)ents[worst].weight * (int64_t)(ents[worst].vruntime - rq->v0);
	W -= ents[worst].weight;
	return rq->v0 + (uint64_t)floor_avg(A, W);
}

void sched_rq_repair_locked(struct sched_handle *h, struct sched_rq *rq)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *ents = dom_ents(d);
	uint32_t old_curr = rq->curr, n = d->max_entities, tail = SCHED_NONE;
	uint32_t old_q = rq->nr_queued, old_norm = rq->nr_normal, old_del = rq->nr_delayed;
	uint32_t old_wake = rq->nr_wake, old_drain = rq->nr_drain, nw = 0, st;
	uint32_t nq = 0, ndel = 0, nnorm = 0;
	uint64_t old_w = rq->sum_w, max_slice = 0, V;
	s128 old_wkey = rq->sum_wkey;
	bool changed = false;

	ASSERT_HELD(&rq->lock);
	if (old_curr >= n || member_state(d, rq, old_curr) != SCHED_ES_RUNNING)
		STORE(rq->curr, SCHED_NONE);
	changed |= rq->curr != old_curr;

	/* Pass 1: fields in range, one curr. */
	for (uint32_t id = 0; id < n; id++) {
		struct sched_ent *e = &ents[id];

		st = member_state(d, rq, id);
		if (st == SCHED_ES_FREE)
			continue;
		changed |= ent_fields_sane(d, e, rq->index);
		if (st == SCHED_ES_RUNNING && id != rq->curr) {
			STORE(e->state, (uint32_t)SCHED_ES_QUEUED);
			st = SCHED_ES_QUEUED;
			changed = true;
		}
		if (id == rq->curr || st == SCHED_ES_WAKING)
			e->delayed = 0;        /* running or woken: not asleep */
		if (stays(d, rq, id, st) && e->slice_ns > max_slice)
			max_slice = e->slice_ns;
	}
	V = repair_avg(d, rq, max_slice);

	/* Pass 2: clamp what stays, block what may not stay, rebuild. */
	rq->root = SCHED_NONE;
	rq->sum_wkey = 0;
	rq->sum_w = 0;
	for (uint32_t id = 0; id < n; id++) {
		struct sched_ent *e = &ents[id];

		st = member_state(d, rq, id);
		if (st == SCHED_ES_FREE)
			continue;
		if (st == SCHED_ES_WAKING && sched_ent_allowed(d, e, rq->index)) {
			if (tail == SCHED_NONE)
				rq->wake_head = id;
			else
				ents[tail].next = id;
			tail = id;
			nw++;
			continue;
		}
		if (!stays(d, rq, id, st)) {
			/* a WAKING one keeps the lag saved when it blocked */
			if (st == SCHED_ES_QUEUED) {
				e->vlag = clamp64((int64_t)(V - e->vruntime),
						  (int64_t)delta_fair(max_slice + d->tick_ns, e->weight));
				if (e->delayed && e->vlag > 0)
					e->vlag = 0;   /* as its own dequeue would */
				e->has_rel_deadline = 0;
			}
			e->delayed = 0;
			e->left = e->right = SCHED_NONE;
			STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);
			changed = true;
			continue;
		}
		changed |= clamp_member(d, e, V, max_slice);
		nq++;
		ndel += e->delayed;
		nnorm += !e->idle_class && !e->delayed;
		if (id == rq->curr)
			continue;
		sched_tree_insert(ents, &rq->root, id);
		rq->sum_wkey += (s128)e->weight * (int64_t)(e->vruntime - rq->v0);
		rq->sum_w += e->weight;
	}
	if (tail != SCHED_NONE)
		ents[tail].next = SCHED_NONE;
	else
		rq->wake_head = SCHED_NONE;
	rq->wake_tail = tail;
	rq->nr_wake = nw;
	rq->drain_head = rq->drain_tail = SCHED_NONE;
	rq->nr_drain = 0;
	STORE(rq->ttwu_pending, nw ? 1u : 0u);
	/* counts are read without the lock (balance, pCPU choice) */
	STORE(rq->nr_queued, nq);
	STORE(rq->nr_delayed, ndel);
	STORE(rq->nr_normal, nnorm);
	changed |= nq != old_q || nnorm != old_norm || ndel != old_del || rq->sum_w != old_w || rq->sum_wkey != old_wkey ||
		   nw != old_wake || old_drain;   /* drained ones are listed again */
	eevdf_rq_idle_update_locked(d, rq);
	eevdf_avg_vruntime_locked(d, rq);            /* re-centre v0 on V */
	if (changed) {
		/* the host acted on a queue that no longer exists: decide again */
		rq->need_resched = 1;
		sched_kick(h, rq->index);
	}
}

void sched_ent_repair_locked(struct sched_domain *d, struct sched_ent *e)
{
	int64_t limit;

	ASSERT_HELD(&e->lock);
	/* Queued, running and waking entities belong to their queue's lock
	 * (sched_rq_repair_locked); a free slot to the domain lock. A BLOCKED one can
	 * only be left with a weight/vlag pair from two different weights (set
	 * weight cut between the stores: harmless but unbounded) or a torn
	 * allowed set. */
	if (__atomic_load_n(&e->state, __ATOMIC_ACQUIRE) != SCHED_ES_BLOCKED)
		return;
	ent_fields_sane(d, e, LOAD(e->pcpu));
	limit = (int64_t)delta_fair(LAG_BOUNDS * (MAX_SLICE_NS + d->tick_ns), e->weight);
	e->vlag = clamp64(e->vlag, limit);
}

void sched_dom_repair_locked(struct sched_domain *d)
{
	uint32_t head = SCHED_NONE, live = 0;

	ASSERT_HELD(&d->lock);
	/* FREE <-> BLOCKED happens only under the domain lock, so with it held
	 * the free slots are exactly the FREE states. An add cut short leaves a
	 * FREE slot off the list, a remove cut short a FREE one not yet pushed:
	 * both return to the list (descending scan: the list ends ascending). */
	for (uint32_t id = d->max_entities; id-- > 0;) {
		struct sched_ent *e = dom_ent(d, id);

		if (LOAD(e->state) == SCHED_ES_FREE) {
			e->next = head;
			head = id;
		} else {
			live++;
		}
	}
	d->free_head = head;
	d->nr_entities = live;
}
