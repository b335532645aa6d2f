/*
 * Reference model, one queue at a time: V, eligibility, placement, pick,
 * reweight, preemption, pCPU choice. Linear scans over the entity array;
 * see ref_model.h.
 */
#include <stdio.h>

#include "ref_queue.h"

void rm_model_fail(struct ref *r, const char *what, int id)
{
	if (!r->errors++)
		snprintf(r->msg, sizeof(r->msg), "%s (entity %d)", what, id);
}

bool rm_allowed(struct ref *r, int id, unsigned p)
{
	return p < r->np && (r->e[id].allowed >> p) & 1;
}

/* entities counted by the queue of p: queued there or its curr */
bool rm_on_rq(struct ref *r, int id, unsigned p)
{
	return r->e[id].pcpu == p &&
	       (r->e[id].st == SCHED_ES_QUEUED || r->e[id].st == SCHED_ES_RUNNING);
}

bool rm_in_tree(struct ref *r, int id, unsigned p)
{
	return r->e[id].pcpu == p && r->e[id].st == SCHED_ES_QUEUED;
}

unsigned rm_nr_queued(struct ref *r, unsigned p)
{
	unsigned n = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		n += rm_on_rq(r, i, p);
	return n;
}

unsigned rm_nr_normal(struct ref *r, unsigned p)
{
	unsigned n = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		n += rm_on_rq(r, i, p) && !r->e[i].idle && !r->e[i].delayed;
	return n;
}

unsigned rm_runnable(struct ref *r, unsigned p)
{
	unsigned n = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		n += rm_on_rq(r, i, p) && !r->e[i].delayed;
	return n;
}

uint64_t rm_weight_sum(struct ref *r, unsigned p)
{
	uint64_t W = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (rm_on_rq(r, i, p))
			W += r->e[i].w;
	return W;
}

/* exact floor of sum w_i v_i / W, relative to one member (avg_vruntime) */
uint64_t ref_V(struct ref *r, unsigned p)
{
	uint64_t W = rm_weight_sum(r, p), base = 0;
	s128 A = 0;
	bool have = false;

	if (!W)
		return r->q[p].last_v;
	for (int i = 0; i < REF_MAX_ENTS; i++) {
		if (!rm_on_rq(r, i, p))
			continue;
		if (!have) {
			base = r->e[i].v;
			have = true;
		}
		A += (s128)r->e[i].w * (int64_t)(r->e[i].v - base);
	}
	if (A < 0)
		A -= (s128)W - 1;
	return base + (uint64_t)(int64_t)(A / (s128)W);
}

/* eevdf_avg_vruntime_locked: V, and it becomes the empty queue's V later */
uint64_t rm_avg(struct ref *r, unsigned p)
{
	r->q[p].last_v = ref_V(r, p);
	return r->q[p].last_v;
}

struct rm_load rm_load_of(struct ref *r, unsigned p)
{
	struct rm_load l = { 0, 0, 0 };
	bool have = false;

	for (int i = 0; i < REF_MAX_ENTS; i++) {
		if (!rm_on_rq(r, i, p))
			continue;
		if (!have) {
			l.base = r->e[i].v;
			have = true;
		}
		l.S += (s128)r->e[i].w * (int64_t)(r->e[i].v - l.base);
		l.W += r->e[i].w;
	}
	return l;
}

bool rm_eligible_in(const struct rm_load *l, uint64_t v)
{
	return l->S - (s128)l->W * (int64_t)(v - l->base) >= 0;
}

bool rm_eligible(struct ref *r, unsigned p, uint64_t v)
{
	struct rm_load l = rm_load_of(r, p);

	return rm_eligible_in(&l, v);
}

uint64_t rm_max_slice(struct ref *r, unsigned p)
{
	uint64_t m = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (rm_on_rq(r, i, p) && r->e[i].slice > m)
			m = r->e[i].slice;
	return m;
}

uint64_t rm_min_slice(struct ref *r, unsigned p, bool with_curr)
{
	uint64_t m = UINT64_MAX;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if ((with_curr ? rm_on_rq(r, i, p) : rm_in_tree(r, i, p)) && r->e[i].slice < m)
			m = r->e[i].slice;
	return m;
}

int64_t rm_lag_clamped(struct ref *r, unsigned p, int id, uint64_t V)
{
	int64_t lag = (int64_t)(V - r->e[id].v);
	int64_t lim = (int64_t)df(rm_max_slice(r, p) + r->tick, r->e[id].w);

	return lag > lim ? lim : lag < -lim ? -lim : lag;
}

bool rm_update_deadline(struct ref *r, unsigned p, int id)
{
	struct ref_ent *e = &r->e[id];

	if (before(e->v, e->d))
		return false;
	if (!e->custom)
		e->slice = r->base_slice;
	e->d = e->v + df(e->slice, e->w);
	rm_avg(r, p);
	return true;
}

void rm_update_curr(struct ref *r, unsigned p, uint64_t now)
{
	int c = r->q[p].curr;
	struct ref_ent *e;
	int64_t delta;
	bool rs;

	if (c == NONE)
		return;
	e = &r->e[c];
	delta = (int64_t)(now - e->exec_start);
	if (delta <= 0)
		return;
	e->exec_start = now;
	e->v += df((uint64_t)delta, e->w);
	rs = rm_update_deadline(r, p, c);
	if (rm_nr_queued(r, p) <= 1)
		return;
	if (rs || (FEAT(RUN_TO_PARITY) && !before(e->v, e->vprot)))
		r->q[p].resched = true;
}

void rm_place(struct ref *r, unsigned p, int id, unsigned flags)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = rm_avg(r, p), W = rm_weight_sum(r, p), vslice;
	int64_t lag = FEAT(PLACE_LAG) ? e->vlag : 0;

	if (!e->custom)
		e->slice = r->base_slice;
	vslice = df(e->slice, e->w);
	if (FEAT(FAIR_SLEEPERS) && (flags & F_WAKEUP) && !(flags & F_INITIAL) &&
	    lag < (int64_t)r->base_slice)
		lag = (int64_t)r->base_slice;
	if (e->idle && FEAT(IDLE_NO_COMPENSATION) && (flags & F_WAKEUP) && lag > 0)
		lag = 0;
	if (rm_nr_queued(r, p) == 0)
		lag = 0;
	e->placed_lag = lag;
	if (lag && FEAT(PLACE_LAG))
		lag = (int64_t)((s128)lag * (s128)(W + e->w) / (s128)W);
	e->v = V - (uint64_t)lag;
	if (e->has_rel) {
		e->d = e->v + (uint64_t)e->rel;
		e->has_rel = false;
	} else {
		if ((flags & F_INITIAL) && FEAT(PLACE_DEADLINE_INITIAL))
			vslice /= 2;
		e->d = e->v + vslice;
	}
	e->never = false;
}

void rm_enqueue(struct ref *r, unsigned p, int id, unsigned flags)
{
	struct ref_ent *e = &r->e[id];

	rm_place(r, p, id, flags);
	e->delayed = false;
	e->pcpu = p;
	e->st = SCHED_ES_QUEUED;
	/* sched/README.md §3: an entity placed with lag l has lag l right
	 * after */
	if (FEAT(PLACE_LAG)) {
		int64_t now_lag = (int64_t)(ref_V(r, p) - e->v);
		if (now_lag - e->placed_lag > 1 || e->placed_lag - now_lag > 1)
			rm_model_fail(r, "placed lag not kept", id);
	}
}

void rm_dequeue(struct ref *r, unsigned p, int id, bool sleep)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = rm_avg(r, p);

	e->vlag = rm_lag_clamped(r, p, id, V);
	if (e->delayed && e->vlag > 0 && FEAT(DELAY_ZERO))
		e->vlag = 0;
	e->delayed = false;
	e->has_rel = !sleep && FEAT(PLACE_REL_DEADLINE);
	e->rel = (int64_t)(e->d - e->v);
	if (r->q[p].curr == id) {
		r->q[p].curr = NONE;
		r->q[p].resched = true;
	}
	e->st = SCHED_ES_BLOCKED;              /* caller decides */
}

bool rm_tree_less(struct ref *r, int a, int b)
{
	int64_t dd = (int64_t)(r->e[a].d - r->e[b].d);

	return dd < 0 || (dd == 0 && a < b);
}

int rm_pick(struct ref *r, unsigned p, bool protect)
{
	int c = r->q[p].curr, best = NONE;

	if (rm_nr_queued(r, p) == 1) {
		if (c != NONE)
			return c;
		for (int i = 0; i < REF_MAX_ENTS; i++)
			if (rm_in_tree(r, i, p))
				return i;
	}
	struct rm_load l = rm_load_of(r, p);

	if (c != NONE && !rm_eligible_in(&l, r->e[c].v))
		c = NONE;
	if (c != NONE && protect && FEAT(RUN_TO_PARITY) && before(r->e[c].v, r->e[c].vprot))
		return c;
	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (rm_in_tree(r, i, p) && rm_eligible_in(&l, r->e[i].v) &&
		    (best == NONE || rm_tree_less(r, i, best)))
			best = i;
	if (c != NONE && (best == NONE || before(r->e[c].d, r->e[best].d)))
		return c;
	if (best == NONE)
		rm_model_fail(r, "nothing eligible", (int)p);
	return best;
}

void rm_set_next(struct ref *r, unsigned p, int id, uint64_t now)
{
	struct ref_ent *e = &r->e[id];
	uint64_t s = e->slice, m;

	e->st = SCHED_ES_RUNNING;              /* out of the tree first */
	m = rm_min_slice(r, p, false);
	if (m < s)
		s = m;
	e->vprot = vmin(e->d, e->v + df(s, e->w));
	e->exec_start = now;
	r->q[p].curr = id;
}

void rm_put_prev(struct ref *r, unsigned p)
{
	r->e[r->q[p].curr].st = SCHED_ES_QUEUED;
	r->q[p].curr = NONE;
}

s128 rm_fdiv(s128 n, s128 d)
{
	s128 q = n / d;

	return (n % d != 0 && n < 0) ? q - 1 : q;
}

/* lag relative to the exact average, scaled (see eevdf_reweight_locked) */
void rm_reweight(struct ref *r, unsigned p, int id, uint32_t w)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = rm_avg(r, p), W1 = rm_weight_sum(r, p);
	int64_t lag = rm_lag_clamped(r, p, id, V);
	bool clamped = lag != (int64_t)(V - e->v);
	int64_t dr = (int64_t)(e->d - V), pr = (int64_t)(e->vprot - V), dv;
	uint32_t old = e->w;
	s128 A1 = 0, num, den;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (rm_on_rq(r, i, p))
			A1 += (s128)r->e[i].w * (int64_t)(r->e[i].v - V);
	num = A1 * w - ((s128)lag * (s128)W1 + A1) * old;
	den = (s128)W1 * w;
	e->w = w;
	e->v = V + (uint64_t)(int64_t)rm_fdiv(2 * num + den, 2 * den);
	e->d = V + (uint64_t)(int64_t)((s128)dr * old / w);
	e->vprot = V + (uint64_t)(int64_t)((s128)pr * old / w);
	/* sched/README.md §3: V does not change under reweight (to one
	 * unit; a clamped lag legitimately moves it) */
	dv = (int64_t)(ref_V(r, p) - V);
	if (!clamped && (dv > 1 || dv < -1))
		rm_model_fail(r, "V changed by reweight", id);
}

bool rm_wakeup_preempt(struct ref *r, unsigned p, int id)
{
	int c = r->q[p].curr;
	bool pre = false;

	if (c == NONE) {
		r->q[p].resched = true;
		return false;
	}
	if (r->e[c].idle && !r->e[id].idle) {
		pre = true;
	} else if (!FEAT(WAKEUP_PREEMPTION) || (r->e[id].idle && !r->e[c].idle)) {
		return false;
	} else {
		bool protect = !(FEAT(PREEMPT_SHORT) && r->e[id].slice < r->e[c].slice);

		if (rm_pick(r, p, protect) == id)
			pre = true;
		else if (FEAT(RUN_TO_PARITY))
			r->e[c].vprot = vmin(r->e[c].vprot,
					     r->e[c].v + df(rm_min_slice(r, p, true), r->e[c].w));
	}
	if (!pre)
		return false;
	r->e[c].vprot = r->e[c].v;
	r->q[p].resched = true;
	return true;
}

void rm_migrate(struct ref *r, unsigned src, unsigned dst, int id, uint64_t now)
{
	rm_update_curr(r, src, now);
	rm_dequeue(r, src, id, false);
	rm_update_curr(r, dst, now);
	r->e[id].migrations++;
	rm_enqueue(r, dst, id, 0);
}

bool rm_idle_for(struct ref *r, unsigned p, bool idle_class)
{
	if (r->q[p].pending)
		return false;
	if (idle_class)
		return r->q[p].curr == NONE && rm_runnable(r, p) == 0;
	return rm_nr_normal(r, p) == 0;
}

unsigned rm_least_loaded(struct ref *r, int id)
{
	unsigned best = 0, bl = UINT32_MAX;

	for (unsigned p = 0; p < r->np; p++) {
		unsigned l = rm_runnable(r, p) + r->q[p].pending;
		if (rm_allowed(r, id, p) && l < bl) {
			best = p;
			bl = l;
		}
	}
	return best;
}

/* WAKE_VICTIM's claim of pCPU p's curr against wakee id (wake.c) */
static uint64_t rm_claim(struct ref *r, int id, unsigned p)
{
	int c = r->q[p].curr;
	uint64_t tier = 0, left = 0, n = rm_runnable(r, p);

	if (c != NONE) {
		struct ref_ent *ce = &r->e[c];

		if (ce->idle && !r->e[id].idle)
			tier = 0;
		else if (!FEAT(RUN_TO_PARITY) || !before(ce->v, ce->vprot))
			tier = 1;
		else if (FEAT(PREEMPT_SHORT) && r->e[id].slice < ce->slice)
			tier = 2;
		else
			tier = 3;
		left = before(ce->v, ce->d) ? (ce->d - ce->v) >> 10 : 0;
	}
	n = n > 0xffff ? 0xffff : n;
	left = left > 0xffffffffull ? 0xffffffffull : left;
	return tier << 48 | n << 32 | (0xffffffffull - left);
}

unsigned rm_select_pcpu(struct ref *r, int id, unsigned prev, unsigned waker, unsigned hint,
			bool *idle)
{
	bool ic = r->e[id].idle;

	*idle = true;
	for (unsigned k = 0; k <= r->np; k++) {
		unsigned c = (prev + k) % r->np;
		if (rm_allowed(r, id, c) && rm_idle_for(r, c, ic))
			return c;
	}
	*idle = false;
	if ((hint & SCHED_WAKE_SYNC) && FEAT(IPI_HANDOFF) && waker < r->np && rm_allowed(r, id, waker))
		return waker;
	if (FEAT(WAKE_VICTIM)) {
		unsigned best = NONE, n = r->np < 16 ? r->np : 16;
		uint64_t bc = UINT64_MAX;

		for (unsigned k = 0; k < n; k++) {
			unsigned p = (prev + k) % r->np;
			uint64_t c;

			if (!rm_allowed(r, id, p))
				continue;
			c = rm_claim(r, id, p);
			if (c < bc) {
				bc = c;
				best = p;
			}
		}
		if (best != (unsigned)NONE)
			return best;
	}
	return rm_allowed(r, id, prev) ? prev : rm_least_loaded(r, id);
}

