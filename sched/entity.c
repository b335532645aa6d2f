/*
 * Entities (vCPUs): add/remove, parameter changes, queries. Lock order:
 * domain -> entity -> run queue(s).
 */
#include <errno.h>
#include <string.h>

#include "sched/internal.h"

/* Copy an allowed set, keeping only pCPUs of the domain; false if empty. */
bool sched_allowed_copy(struct sched_domain *d, struct sched_cpuset *dst,
			 const struct sched_cpuset *src)
{
	bool any = false;

	sched_cpuset_zero(dst);
	for (unsigned i = 0; i < d->nr_pcpus; i++) {
		if (!src || sched_cpuset_test(src, i)) {
			sched_cpuset_set(dst, i);
			any = true;
		}
	}
	return any;
}

static unsigned first_allowed(struct sched_domain *d, const struct sched_ent *e)
{
	for (unsigned i = 0; i < d->nr_pcpus; i++)
		if (sched_ent_allowed(d, e, i))
			return i;
	return 0;
}

int sched_entity_add(struct sched_handle *h, const struct sched_entity_params *p,
		     uint64_t now_ns, unsigned *id_out)
{
	struct sched_domain *d;
	struct sched_ent *e;
	uint32_t id;
	int r;

	if (!h || !p || !id_out || p->weight > SCHED_MAX_WEIGHT || p->nice < -20 || p->nice > 19 ||
	    p->slice_ns > 1000000000ull)
		return -EINVAL;
	d = h->dom;
	r = sched_dom_lock(d);
	if (r)
		return r;
	id = d->free_head;
	if (id == SCHED_NONE) {
		sched_unlock(&d->lock);
		return -ENOSPC;
	}
	e = dom_ent(d, id);
	r = sched_ent_lock(d, e);
	if (r)
		goto out_dom;
	if (!sched_allowed_copy(d, &e->allowed, p->allowed)) {
		r = -EINVAL;
		goto out_ent;
	}
	d->free_head = e->next;
	d->nr_entities++;
	e->next = SCHED_NONE;
	e->left = e->right = SCHED_NONE;
	e->nice = p->nice;
	e->base_weight = p->weight ? p->weight : sched_nice_to_weight(p->nice);
	e->idle_class = p->idle_class;
	e->weight = e->idle_class ? SCHED_IDLE_WEIGHT : e->base_weight;
	e->custom_slice = p->slice_ns != 0;
	e->slice_ns = p->slice_ns ? p->slice_ns : d->base_slice_ns;
	e->vlag = e->rel_deadline = e->placed_lag = 0;
	e->has_rel_deadline = 0;
	e->never_placed = 1;
	e->vruntime = e->deadline = e->vprot = 0;
	e->exec_start_ns = e->wait_start_ns = now_ns;
	e->sum_exec_ns = e->sum_wait_ns = e->nr_migrations = e->nr_switches = 0;
	e->owner = p->owner;
	e->cookie = p->cookie;
	STORE(e->pcpu, sched_ent_allowed(d, e, p->create_pcpu) ? p->create_pcpu
							       : first_allowed(d, e));
	STORE(e->state, (uint32_t)SCHED_ES_BLOCKED);

	if (!feat(d, SCHED_FEAT_PLACE_FIRST_ENQUEUE)) {
		/* Seed 000/001 "before": place now against the creating pCPU's
		 * queue; the first enqueue then places again as a plain wakeup
		 * and the initial deadline is lost. */
		struct sched_rq *rq = dom_rq(d, e->pcpu);

		r = sched_rq_lock(h, rq);
		if (!r) {
			eevdf_update_curr_locked(h, rq, now_ns);
			eevdf_place_locked(d, rq, e, PLACE_INITIAL);
			e->vlag = (int64_t)(eevdf_avg_vruntime_locked(d, rq) - e->vruntime);
			sched_unlock(&rq->lock);
		}
	}
	*id_out = id;
	r = 0;
out_ent:
	sched_unlock(&e->lock);
out_dom:
	sched_unlock(&d->lock);
	return r;
}

/* Unlink id from a singly linked wake/drain list; true if found. */
static bool list_unlink(struct sched_domain *d, uint32_t *head, uint32_t *tail, uint32_t id)
{
	uint32_t prev = SCHED_NONE;

	for (uint32_t n = *head; n != SCHED_NONE; prev = n, n = dom_ent(d, n)->next) {
		if (n != id)
			continue;
		if (prev == SCHED_NONE)
			*head = dom_ent(d, n)->next;
		else
			dom_ent(d, prev)->next = dom_ent(d, n)->next;
		if (*tail == id)
			*tail = prev;
		dom_ent(d, id)->next = SCHED_NONE;
		return true;
	}
	return false;
}

/* A WAKING entity leaves its pCPU's lists (block, remove, re-wake). */
void sched_wake_unlink_locked(struct sched_domain *d, struct sched_rq *rq, uint32_t id)
{
	ASSERT_HELD(&rq->lock);
	if (list_unlink(d, &rq->wake_head, &rq->wake_tail, id))
		rq->nr_wake--;
	else if (list_unlink(d, &rq->drain_head, &rq->drain_tail, id))
		rq->nr_drain--;
	if (!rq->nr_wake && !rq->nr_drain && LOAD(rq->ttwu_pending)) {
		STORE(rq->ttwu_pending, 0u);
		eevdf_rq_idle_update_locked(d, rq);
	}
}

/* Take an entity off whatever queue it is on; entity + its rq lock held. */
static void ent_detach_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			      uint64_t now_ns)
{
	struct sched_ent *e = dom_ent(h->dom, id);

	ASSERT_HELD(&e->lock);
	ASSERT_HELD(&rq->lock);
	switch (LOAD(e->state)) {
	case SCHED_ES_RUNNING:
		eevdf_update_curr_locked(h, rq, now_ns);
		eevdf_dequeue_locked(h, rq, id, true, now_ns);
		sched_kick(h, rq->index);
		break;
	case SCHED_ES_QUEUED:
		eevdf_update_curr_locked(h, rq, now_ns);
		eevdf_dequeue_locked(h, rq, id, true, now_ns);
		break;
	case SCHED_ES_WAKING:
		sched_wake_unlink_locked(h->dom, rq, id);
		break;
	default:
		break;
	}
}

static int remove_dom_locked(struct sched_handle *h, unsigned id, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	struct sched_ent *e = dom_ent(d, id);
	struct sched_rq *rq;
	int r;

	ASSERT_HELD(&d->lock);
	r = sched_ent_lock(d, e);
	if (r)
		return r;
	if (LOAD(e->state) == SCHED_ES_FREE) {
		sched_unlock(&e->lock);
		return -ENOENT;
	}
	r = sched_rq_lock_ent(h, e, &rq);
	if (r) {
		sched_unlock(&e->lock);
		return r;
	}
	ent_detach_locked(h, rq, id, now_ns);
	STORE(e->state, (uint32_t)SCHED_ES_FREE);
	sched_unlock(&rq->lock);
	e->next = d->free_head;
	d->free_head = id;
	d->nr_entities--;
	sched_unlock(&e->lock);
	return 0;
}

int sched_entity_remove(struct sched_handle *h, unsigned id, uint64_t now_ns)
{
	int r = sched_check_id(h, id);

	if (r)
		return r;
	r = sched_dom_lock(h->dom);
	if (r)
		return r;
	r = remove_dom_locked(h, id, now_ns);
	sched_unlock(&h->dom->lock);
	return r;
}

int sched_remove_owner(struct sched_handle *h, uint32_t owner, uint64_t now_ns)
{
	struct sched_domain *d = h->dom;
	int n = 0, r = sched_dom_lock(d);

	if (r)
		return r;
	for (unsigned id = 0; id < d->max_entities; id++) {
		struct sched_ent *e = dom_ent(d, id);

		if (LOAD(e->state) != SCHED_ES_FREE && e->owner == owner &&
		    remove_dom_locked(h, id, now_ns) == 0)
			n++;
	}
	sched_unlock(&d->lock);
	return n;
}

/* Entity lock plus the lock of its queue; state is then stable. */
int sched_ent_lock_both(struct sched_handle *h, unsigned id, struct sched_ent **ep,
			 struct sched_rq **rqp)
{
	struct sched_ent *e;
	int r = sched_check_id(h, id);

	if (r)
		return r;
	e = dom_ent(h->dom, id);
	r = sched_ent_lock(h->dom, e);
	if (r)
		return r;
	if (LOAD(e->state) == SCHED_ES_FREE) {
		sched_unlock(&e->lock);
		return -ENOENT;
	}
	r = sched_rq_lock_ent(h, e, rqp);
	if (r) {
		sched_unlock(&e->lock);
		return r;
	}
	*ep = e;
	return 0;
}

void sched_ent_unlock_both(struct sched_ent *e, struct sched_rq *rq)
{
	sched_unlock(&rq->lock);
	sched_unlock(&e->lock);
}

/* Weight change in any state (sched/README.md §2.9). */
static void set_weight_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			      uint32_t weight, uint64_t now_ns)
{
	struct sched_ent *e = dom_ent(h->dom, id);
	uint32_t st = LOAD(e->state);

	ASSERT_HELD(&e->lock);
	ASSERT_HELD(&rq->lock);
	if (weight == e->weight)
		return;
	if (st == SCHED_ES_QUEUED || st == SCHED_ES_RUNNING) {
		eevdf_update_curr_locked(h, rq, now_ns);
		eevdf_reweight_locked(h, rq, id, weight, now_ns);
		sched_rearm_locked(h, rq, now_ns);
		return;
	}
	/* not queued: only the saved lag matters (a relative deadline is
	 * kept only across a migration, never while blocked or waking) */
	e->vlag = (int64_t)((s128)e->vlag * e->weight / weight);
	sched_trace(h, SCHED_TRACE_REWEIGHT, rq->index, id, SCHED_NONE, e->weight, weight, now_ns);
	e->weight = weight;
}

static int set_weight_nice(struct sched_handle *h, unsigned id, uint32_t weight, int nice,
			   uint64_t now_ns)
{
	struct sched_ent *e;
	struct sched_rq *rq;
	int r;

	if (weight < 1 || weight > SCHED_MAX_WEIGHT)
		return -EINVAL;
	r = sched_ent_lock_both(h, id, &e, &rq);
	if (r)
		return r;
	e->base_weight = weight;
	e->nice = nice;
	if (!e->idle_class)
		set_weight_locked(h, rq, id, weight, now_ns);
	sched_ent_unlock_both(e, rq);
	return 0;
}

int sched_set_weight(struct sched_handle *h, unsigned id, uint32_t weight, uint64_t now_ns)
{
	return set_weight_nice(h, id, weight, 0, now_ns);
}

int sched_set_nice(struct sched_handle *h, unsigned id, int nice, uint64_t now_ns)
{
	if (nice < -20 || nice > 19)
		return -EINVAL;
	return set_weight_nice(h, id, sched_nice_to_weight(nice), nice, now_ns);
}

int sched_set_idle_class(struct sched_handle *h, unsigned id, bool idle, uint64_t now_ns)
{
	struct sched_ent *e;
	struct sched_rq *rq;
	uint32_t st;
	int r = sched_ent_lock_both(h, id, &e, &rq);

	if (r)
		return r;
	st = LOAD(e->state);
	if (e->idle_class != idle) {
		set_weight_locked(h, rq, id, idle ? SCHED_IDLE_WEIGHT : e->base_weight, now_ns);
		e->idle_class = idle;
		if ((st == SCHED_ES_QUEUED && !e->delayed) || st == SCHED_ES_RUNNING) {
			STORE(rq->nr_normal, idle ? rq->nr_normal - 1 : rq->nr_normal + 1);
			eevdf_rq_idle_update_locked(h->dom, rq);
		}
	}
	sched_ent_unlock_both(e, rq);
	return 0;
}

int sched_set_slice(struct sched_handle *h, unsigned id, uint64_t slice_ns, uint64_t now_ns)
{
	struct sched_ent *e;
	struct sched_rq *rq;
	bool in_tree;
	int r;

	(void)now_ns;
	if (slice_ns > 1000000000ull)
		return -EINVAL;
	r = sched_ent_lock_both(h, id, &e, &rq);
	if (r)
		return r;
	in_tree = LOAD(e->state) == SCHED_ES_QUEUED;
	if (in_tree)                           /* augmented min/max slice */
		sched_tree_remove(dom_ents(h->dom), &rq->root, id);
	e->custom_slice = slice_ns != 0;
	e->slice_ns = slice_ns ? slice_ns : h->dom->base_slice_ns;
	if (in_tree)
		sched_tree_insert(dom_ents(h->dom), &rq->root, id);
	sched_ent_unlock_both(e, rq);
	return 0;
}

int sched_entity_get_info(struct sched_handle *h, unsigned id, struct sched_entity_info *o)
{
	struct sched_ent *e;
	struct sched_rq *rq;
	uint32_t st;
	int r;

	if (!o)
		return -EINVAL;
	r = sched_ent_lock_both(h, id, &e, &rq);
	if (r)
		return r;
	st = LOAD(e->state);
	memset(o, 0, sizeof(*o));
	o->delayed = st == SCHED_ES_QUEUED && e->delayed;
	o->state = o->delayed ? SCHED_ES_BLOCKED : st;
	o->pcpu = st == SCHED_ES_BLOCKED && e->never_placed ? SCHED_NONE : e->pcpu;
	o->weight = e->weight;
	o->idle_class = e->idle_class;
	o->custom_slice = e->custom_slice;
	o->preempted = st == SCHED_ES_QUEUED && !e->delayed &&
		       feat(h->dom, SCHED_FEAT_PV_PREEMPTED);
	o->slice_ns = e->slice_ns;
	o->vruntime = e->vruntime;
	o->deadline = e->deadline;
	if (st == SCHED_ES_QUEUED || st == SCHED_ES_RUNNING)
		o->lag = (int64_t)(eevdf_avg_vruntime_peek(h->dom, rq) - e->vruntime);
	else
		o->lag = e->vlag;
	o->sum_exec_ns = e->sum_exec_ns;
	o->sum_wait_ns = e->sum_wait_ns;
	o->nr_migrations = e->nr_migrations;
	o->nr_switches = e->nr_switches;
	o->owner = e->owner;
	o->cookie = e->cookie;
	sched_ent_unlock_both(e, rq);
	return 0;
}
