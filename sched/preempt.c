/*
 * When curr gives way: wakeup preemption, the check when the slice timer
 * fires, and where that timer goes. Every function here needs the queue's
 * lock. lagvisor is tickless: the slice timer is the only moment, besides a
 * wakeup or a block, at which a queue looks at itself, so whatever should
 * preempt curr later than a wakeup must have a timer armed for it.
 */
#include "sched/internal.h"

/* After enqueueing wakee id on a busy queue (sched/README.md §2.10). */
bool sched_wakeup_preempt_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				 uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *p = dom_ent(d, id), *c;
	bool preempt = false;

	ASSERT_HELD(&rq->lock);
	if (rq->curr == SCHED_NONE) {
		rq->need_resched = 1;
		return false;
	}
	c = dom_ent(d, rq->curr);
	if (c->idle_class && !p->idle_class) {
		preempt = true;
	} else if (!feat(d, SCHED_FEAT_WAKEUP_PREEMPTION) || (p->idle_class && !c->idle_class)) {
		return false;
	} else {
		bool protect = !(feat(d, SCHED_FEAT_PREEMPT_SHORT) && p->slice_ns < c->slice_ns);

		if (eevdf_pick_locked(d, rq, protect) == id)
			preempt = true;
		else if (feat(d, SCHED_FEAT_RUN_TO_PARITY))
			c->vprot = vt_min(c->vprot, c->vruntime +
					  delta_fair(eevdf_rq_min_slice_locked(d, rq), c->weight));
	}
	if (!preempt)
		return false;
	/* The switch must pick what this check picked: end curr's protection
	 * (the PREEMPT_SHORT and idle-class decisions ignored it). */
	c->vprot = c->vruntime;
	rq->need_resched = 1;
	rq->nr_preemptions++;
	sched_trace(h, SCHED_TRACE_PREEMPT, rq->index, id, rq->curr, 0, 0, now_ns);
	sched_kick(h, rq->index);
	return true;
}

/* Wall time for a virtual clock running at NICE_0/w per ns (curr's v with
 * its weight, V with the queue's W) to advance dv: ceil(dv * w / NICE_0). */
static uint64_t wall_ns(int64_t dv, uint64_t w)
{
	return (uint64_t)(((unsigned __int128)dv * w + SCHED_NICE_0_WEIGHT - 1) /
			  SCHED_NICE_0_WEIGHT);
}

static bool protected_against(struct sched_domain *d, const struct sched_ent *c,
			      uint64_t other_slice_ns)
{
	if (!feat(d, SCHED_FEAT_RUN_TO_PARITY) || !vt_before(c->vruntime, c->vprot))
		return false;
	return !(feat(d, SCHED_FEAT_PREEMPT_SHORT) && other_slice_ns < c->slice_ns);
}

/*
 * PREEMPT_ELIGIBLE, when the slice timer fired: the entity pick would
 * choose over curr, protection aside, takes the pCPU unless curr's
 * protection holds against it. Once curr's protection is over update_curr
 * has asked for a switch already; this adds NO_RUN_TO_PARITY (where it asks
 * only at the deadline) and a shorter-slice entity against a protected curr.
 * A delayed sleeper that comes up here finishes its dequeue, as in
 * sched_schedule: ending curr's protection for it would be a switch to
 * nobody.
 */
void sched_tick_preempt_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *c;
	uint32_t best;

	ASSERT_HELD(&rq->lock);
	if (!feat(d, SCHED_FEAT_PREEMPT_ELIGIBLE) || rq->curr == SCHED_NONE)
		return;
	for (;;) {
		if (rq->need_resched || rq->nr_queued <= 1)
			return;
		best = eevdf_pick_locked(d, rq, false);
		if (best == rq->curr || best == SCHED_NONE)
			return;
		if (!dom_ent(d, best)->delayed)
			break;
		eevdf_finish_delayed_locked(h, rq, best, now_ns);
	}
	c = dom_ent(d, rq->curr);
	if (protected_against(d, c, dom_ent(d, best)->slice_ns))
		return;
	c->vprot = c->vruntime;
	eevdf_resched_locked(h, rq, now_ns);
	rq->nr_preemptions++;
	sched_trace(h, SCHED_TRACE_PREEMPT, rq->index, best, rq->curr, 0, 1, now_ns);
}

struct min_walk {
	uint64_t dl, v;
	unsigned left;
	bool found;
};

static bool min_walk_step(const struct sched_ent *e, uint32_t id, void *arg)
{
	struct min_walk *w = arg;

	(void)id;
	if (!vt_before(e->deadline, w->dl) || !w->left--)
		return true;
	if (!e->delayed) {
		w->v = w->found ? vt_min(w->v, e->vruntime) : e->vruntime;
		w->found = true;
	}
	return false;
}

/*
 * The smallest vruntime among queued entities with a deadline before dl,
 * delayed sleepers left out: one of them becoming eligible needs no timer
 * (DELAY_ZERO places it at lag 0 when it wakes; a pick finishes its
 * dequeue), and firing one would cost curr an exit for nothing. Walked in
 * deadline order while there are few (MIN_WALK); past that, the tree's
 * augmented minimum, delayed ones included: an early timer, not a missed one.
 */
#define MIN_WALK 16u

static bool min_waiting_vruntime(struct sched_domain *d, struct sched_rq *rq, uint64_t dl,
				 uint64_t *v)
{
	struct min_walk w = { .dl = dl, .left = MIN_WALK };

	if (!rq->nr_delayed)
		return sched_tree_min_vruntime_before(dom_ents(d), rq->root, dl, v);
	sched_tree_find(dom_ents(d), rq->root, false, min_walk_step, &w);
	if (w.left == (unsigned)-1)            /* cut short */
		return sched_tree_min_vruntime_before(dom_ents(d), rq->root, dl, v);
	*v = w.v;
	return w.found;
}

/*
 * Wall time until the first queued entity with a deadline before curr's
 * becomes eligible, 0 if none will (or one is already). While curr runs
 * alone in the accounting, A = sum w_i (v_i - v0) grows by w_c * dv_c =
 * w_c * dt * NICE_0 / w_c = NICE_0 * dt, so V = v0 + A/W rises at NICE_0/W
 * per ns and reaches v_j after dt = (v_j - V) * W / NICE_0, rounded up,
 * plus 1 us: delta_fair truncates each update's charge, so at dt exactly
 * v_j may still be a unit short, and a second timer costs curr an exit. A
 * protected curr is only cut short by a shorter slice (PREEMPT_SHORT); for
 * anyone else the protection's end comes first and looks again.
 */
static uint64_t eligible_in_ns(struct sched_domain *d, struct sched_rq *rq,
			       const struct sched_ent *c)
{
	uint64_t vj, V;
	int64_t dv;

	if (!feat(d, SCHED_FEAT_PREEMPT_ELIGIBLE) || rq->root == SCHED_NONE)
		return 0;
	if (protected_against(d, c, dom_ent(d, rq->root)->min_slice))
		return 0;
	if (!min_waiting_vruntime(d, rq, c->deadline, &vj))
		return 0;
	V = eevdf_avg_vruntime_peek(d, rq);
	dv = (int64_t)(vj - V);
	if (dv <= 0)
		return 0;
	return wall_ns(dv, eevdf_rq_weight_locked(d, rq)) + 1000;
}

/* Slice timer: when curr reaches the end of its protection or its deadline
 * (wall = ceil(dv * w / NICE_0)), or an earlier-deadline entity becomes
 * eligible (PREEMPT_ELIGIBLE); none while it runs alone (tickless). */
void sched_rearm_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	uint64_t t = 0;

	ASSERT_HELD(&rq->lock);
	if (rq->curr != SCHED_NONE && rq->nr_queued > 1) {
		struct sched_ent *c = dom_ent(d, rq->curr);
		uint64_t end = c->deadline, wall, elig;
		int64_t dv;

		if (feat(d, SCHED_FEAT_RUN_TO_PARITY) && vt_before(c->vruntime, c->vprot))
			end = vt_min(end, c->vprot);
		dv = (int64_t)(end - c->vruntime);
		wall = dv > 0 ? wall_ns(dv, c->weight) : d->tick_ns;
		elig = eligible_in_ns(d, rq, c);
		if (elig && elig < wall)
			wall = elig;
		t = now_ns + (wall ? wall : 1);
	}
	if (t == rq->timer_ns)
		return;
	rq->timer_ns = t;
	if (h->ops->arm_timer)
		h->ops->arm_timer(h->opaque, rq->index, t);
}
