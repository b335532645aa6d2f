/*
 * Reference model: see ref_model.h. Every function is a linear scan over the
 * entity array; comments name the library function each one mirrors.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ref_model.h"

typedef __int128 s128;

#define NONE (-1)
#define FEAT(f) sched_feature_enabled(r->dom, SCHED_FEAT_##f)

enum { F_WAKEUP = 1, F_INITIAL = 2 };

static bool before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
static uint64_t vmin(uint64_t a, uint64_t b) { return before(a, b) ? a : b; }

static uint64_t df(uint64_t delta, uint32_t w)
{
	return (uint64_t)((unsigned __int128)delta * 1024 / w);
}

static void model_fail(struct ref *r, const char *what, int id)
{
	if (!r->errors++)
		snprintf(r->msg, sizeof(r->msg), "%s (entity %d)", what, id);
}

static bool allowed(struct ref *r, int id, unsigned p)
{
	return p < r->np && (r->e[id].allowed >> p) & 1;
}

/* entities counted by the queue of p: queued there or its curr */
static bool on_rq(struct ref *r, int id, unsigned p)
{
	return r->e[id].pcpu == p &&
	       (r->e[id].st == SCHED_ES_QUEUED || r->e[id].st == SCHED_ES_RUNNING);
}

static bool in_tree(struct ref *r, int id, unsigned p)
{
	return r->e[id].pcpu == p && r->e[id].st == SCHED_ES_QUEUED;
}

static unsigned nr_queued(struct ref *r, unsigned p)
{
	unsigned n = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		n += on_rq(r, i, p);
	return n;
}

static unsigned nr_normal(struct ref *r, unsigned p)
{
	unsigned n = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		n += on_rq(r, i, p) && !r->e[i].idle;
	return n;
}

static uint64_t weight_sum(struct ref *r, unsigned p)
{
	uint64_t W = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (on_rq(r, i, p))
			W += r->e[i].w;
	return W;
}

/* exact floor of sum w_i v_i / W, relative to one member (avg_vruntime) */
uint64_t ref_V(struct ref *r, unsigned p)
{
	uint64_t W = weight_sum(r, p), base = 0;
	s128 A = 0;
	bool have = false;

	if (!W)
		return r->q[p].last_v;
	for (int i = 0; i < REF_MAX_ENTS; i++) {
		if (!on_rq(r, i, p))
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

/* avg_vruntime_locked: V, and it becomes the empty queue's V later */
static uint64_t avg(struct ref *r, unsigned p)
{
	r->q[p].last_v = ref_V(r, p);
	return r->q[p].last_v;
}

/* sum_i w_i*(v_i - base) and W of a queue, so that eligibility of any v is
 * O(1): V_exact >= v  <=>  S - W*(v - base) >= 0 */
struct load {
	uint64_t base, W;
	s128 S;
};

static struct load load_of(struct ref *r, unsigned p)
{
	struct load l = { 0, 0, 0 };
	bool have = false;

	for (int i = 0; i < REF_MAX_ENTS; i++) {
		if (!on_rq(r, i, p))
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

static bool eligible_in(const struct load *l, uint64_t v)
{
	return l->S - (s128)l->W * (int64_t)(v - l->base) >= 0;
}

static bool eligible(struct ref *r, unsigned p, uint64_t v)
{
	struct load l = load_of(r, p);

	return eligible_in(&l, v);
}

static uint64_t max_slice(struct ref *r, unsigned p)
{
	uint64_t m = 0;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (on_rq(r, i, p) && r->e[i].slice > m)
			m = r->e[i].slice;
	return m;
}

static uint64_t min_slice(struct ref *r, unsigned p, bool with_curr)
{
	uint64_t m = UINT64_MAX;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if ((with_curr ? on_rq(r, i, p) : in_tree(r, i, p)) && r->e[i].slice < m)
			m = r->e[i].slice;
	return m;
}

static int64_t lag_clamped(struct ref *r, unsigned p, int id, uint64_t V)
{
	int64_t lag = (int64_t)(V - r->e[id].v);
	int64_t lim = (int64_t)df(max_slice(r, p) + r->tick, r->e[id].w);

	return lag > lim ? lim : lag < -lim ? -lim : lag;
}

static bool update_deadline(struct ref *r, unsigned p, int id)
{
	struct ref_ent *e = &r->e[id];

	if (before(e->v, e->d))
		return false;
	if (!e->custom)
		e->slice = r->base_slice;
	e->d = e->v + df(e->slice, e->w);
	avg(r, p);
	return true;
}

static void update_curr(struct ref *r, unsigned p, uint64_t now)
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
	rs = update_deadline(r, p, c);
	if (nr_queued(r, p) <= 1)
		return;
	if (rs || (FEAT(RUN_TO_PARITY) && !before(e->v, e->vprot)))
		r->q[p].resched = true;
}

static void place(struct ref *r, unsigned p, int id, unsigned flags)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = avg(r, p), W = weight_sum(r, p), vslice;
	int64_t lag = FEAT(PLACE_LAG) ? e->vlag : 0;

	if (!e->custom)
		e->slice = r->base_slice;
	vslice = df(e->slice, e->w);
	if (FEAT(FAIR_SLEEPERS) && (flags & F_WAKEUP) && !(flags & F_INITIAL) &&
	    lag < (int64_t)r->base_slice)
		lag = (int64_t)r->base_slice;
	if (e->idle && FEAT(IDLE_NO_COMPENSATION) && lag > 0)
		lag = 0;
	if (nr_queued(r, p) == 0)
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

static void enqueue(struct ref *r, unsigned p, int id, unsigned flags)
{
	struct ref_ent *e = &r->e[id];

	place(r, p, id, flags);
	e->pcpu = p;
	e->st = SCHED_ES_QUEUED;
	/* spec §3: an entity placed with lag l has lag l right after */
	if (FEAT(PLACE_LAG)) {
		int64_t now_lag = (int64_t)(ref_V(r, p) - e->v);
		if (now_lag - e->placed_lag > 1 || e->placed_lag - now_lag > 1)
			model_fail(r, "placed lag not kept", id);
	}
}

static void dequeue(struct ref *r, unsigned p, int id, bool sleep)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = avg(r, p);

	e->vlag = lag_clamped(r, p, id, V);
	e->has_rel = !sleep && FEAT(PLACE_REL_DEADLINE);
	e->rel = (int64_t)(e->d - e->v);
	if (r->q[p].curr == id) {
		r->q[p].curr = NONE;
		r->q[p].resched = true;
	}
	e->st = SCHED_ES_BLOCKED;              /* caller decides */
}

static bool tree_less(struct ref *r, int a, int b)
{
	int64_t dd = (int64_t)(r->e[a].d - r->e[b].d);

	return dd < 0 || (dd == 0 && a < b);
}

static int pick(struct ref *r, unsigned p, bool protect)
{
	int c = r->q[p].curr, best = NONE;

	if (nr_queued(r, p) == 1) {
		if (c != NONE)
			return c;
		for (int i = 0; i < REF_MAX_ENTS; i++)
			if (in_tree(r, i, p))
				return i;
	}
	struct load l = load_of(r, p);

	if (c != NONE && !eligible_in(&l, r->e[c].v))
		c = NONE;
	if (c != NONE && protect && FEAT(RUN_TO_PARITY) && before(r->e[c].v, r->e[c].vprot))
		return c;
	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (in_tree(r, i, p) && eligible_in(&l, r->e[i].v) &&
		    (best == NONE || tree_less(r, i, best)))
			best = i;
	if (c != NONE && (best == NONE || before(r->e[c].d, r->e[best].d)))
		return c;
	if (best == NONE)
		model_fail(r, "nothing eligible", (int)p);
	return best;
}

static void set_next(struct ref *r, unsigned p, int id, uint64_t now)
{
	struct ref_ent *e = &r->e[id];
	uint64_t s = e->slice, m;

	e->st = SCHED_ES_RUNNING;              /* out of the tree first */
	m = min_slice(r, p, false);
	if (m < s)
		s = m;
	e->vprot = vmin(e->d, e->v + df(s, e->w));
	e->exec_start = now;
	r->q[p].curr = id;
}

static void put_prev(struct ref *r, unsigned p)
{
	r->e[r->q[p].curr].st = SCHED_ES_QUEUED;
	r->q[p].curr = NONE;
}

static s128 fdiv(s128 n, s128 d)
{
	s128 q = n / d;

	return (n % d != 0 && n < 0) ? q - 1 : q;
}

/* lag relative to the exact average, scaled (see reweight_locked) */
static void reweight(struct ref *r, unsigned p, int id, uint32_t w)
{
	struct ref_ent *e = &r->e[id];
	uint64_t V = avg(r, p), W1 = weight_sum(r, p);
	int64_t lag = lag_clamped(r, p, id, V);
	bool clamped = lag != (int64_t)(V - e->v);
	int64_t dr = (int64_t)(e->d - V), pr = (int64_t)(e->vprot - V), dv;
	uint32_t old = e->w;
	s128 A1 = 0, num, den;

	for (int i = 0; i < REF_MAX_ENTS; i++)
		if (on_rq(r, i, p))
			A1 += (s128)r->e[i].w * (int64_t)(r->e[i].v - V);
	num = A1 * w - ((s128)lag * (s128)W1 + A1) * old;
	den = (s128)W1 * w;
	e->w = w;
	e->v = V + (uint64_t)(int64_t)fdiv(2 * num + den, 2 * den);
	e->d = V + (uint64_t)(int64_t)((s128)dr * old / w);
	e->vprot = V + (uint64_t)(int64_t)((s128)pr * old / w);
	/* spec §3: V does not change under reweight (to one unit; a clamped
	 * lag legitimately moves it) */
	dv = (int64_t)(ref_V(r, p) - V);
	if (!clamped && (dv > 1 || dv < -1))
		model_fail(r, "V changed by reweight", id);
}

static bool wakeup_preempt(struct ref *r, unsigned p, int id)
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

		if (pick(r, p, protect) == id)
			pre = true;
		else if (FEAT(RUN_TO_PARITY))
			r->e[c].vprot = vmin(r->e[c].vprot,
					     r->e[c].v + df(min_slice(r, p, true), r->e[c].w));
	}
	if (!pre)
		return false;
	r->e[c].vprot = r->e[c].v;
	r->q[p].resched = true;
	return true;
}

static void migrate(struct ref *r, unsigned src, unsigned dst, int id, uint64_t now)
{
	update_curr(r, src, now);
	dequeue(r, src, id, false);
	update_curr(r, dst, now);
	r->e[id].migrations++;
	enqueue(r, dst, id, 0);
}

static bool idle_for(struct ref *r, unsigned p, bool idle_class)
{
	if (r->q[p].pending)
		return false;
	if (idle_class)
		return r->q[p].curr == NONE && nr_queued(r, p) == 0;
	return nr_normal(r, p) == 0;
}

static unsigned least_loaded(struct ref *r, int id)
{
	unsigned best = 0, bl = UINT32_MAX;

	for (unsigned p = 0; p < r->np; p++) {
		unsigned l = nr_queued(r, p) + r->q[p].pending;
		if (allowed(r, id, p) && l < bl) {
			best = p;
			bl = l;
		}
	}
	return best;
}

static unsigned select_pcpu(struct ref *r, int id, unsigned prev, bool *idle)
{
	bool ic = r->e[id].idle;

	*idle = true;
	for (unsigned k = 0; k <= r->np; k++) {
		unsigned c = (prev + k) % r->np;
		if (allowed(r, id, c) && idle_for(r, c, ic))
			return c;
	}
	*idle = false;
	return allowed(r, id, prev) ? prev : least_loaded(r, id);
}

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
	e->pcpu = allowed(r, id, create_pcpu) ? create_pcpu : (unsigned)__builtin_ctzll(allowed_mask);
	if (!FEAT(PLACE_FIRST_ENQUEUE)) {
		update_curr(r, e->pcpu, now);
		place(r, e->pcpu, id, F_INITIAL);
		e->vlag = (int64_t)(avg(r, e->pcpu) - e->v);
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
		update_curr(r, p, now);
		dequeue(r, p, id, true);
	} else if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, p, id);
	}
	e->st = SCHED_ES_FREE;
	return 0;
}

int ref_wake(struct ref *r, int id, uint64_t now, unsigned waker, struct sched_wake_result *res)
{
	struct ref_ent *e = &r->e[id];
	unsigned prev = e->pcpu, t;
	bool idle;

	res->preempt = false;
	res->pcpu = e->pcpu;
	if (e->st == SCHED_ES_FREE)
		return -ENOENT;
	if (e->st != SCHED_ES_BLOCKED) {
		res->how = SCHED_WAKE_ALREADY;
		return 0;
	}
	t = select_pcpu(r, id, prev, &idle);
	res->pcpu = t;
	if (FEAT(TTWU_PENDING) && idle && t != waker) {
		r->q[t].pending = true;
		r->q[t].wake[r->q[t].nw++] = id;
		e->pcpu = t;
		e->st = SCHED_ES_WAKING;
		res->how = SCHED_WAKE_LISTED;
		return 0;
	}
	update_curr(r, t, now);
	if (prev != t && !e->never)
		e->migrations++;
	enqueue(r, t, id, F_WAKEUP | (e->never ? F_INITIAL : 0));
	res->how = SCHED_WAKE_ENQUEUED;
	res->preempt = wakeup_preempt(r, t, id);
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

	update_curr(r, p, now);
	for (int i = 0; i < n; i++) {
		int id = q->drain[i];

		enqueue(r, p, id, F_WAKEUP | (r->e[id].never ? F_INITIAL : 0));
		wakeup_preempt(r, p, id);
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
	if (e->st == SCHED_ES_BLOCKED)
		return -EALREADY;
	if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, e->pcpu, id);
		e->st = SCHED_ES_BLOCKED;
		return 0;
	}
	update_curr(r, e->pcpu, now);
	dequeue(r, e->pcpu, id, true);
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
			w = nr_queued(r, i) - (r->q[i].curr != NONE);
			if (w > bw) {
				best = (int)i;
				bw = w;
			}
		}
		if (best == NONE)
			return 0;
		tried[best] = true;
		struct load l = load_of(r, (unsigned)best);
		for (int pass = 0; pass < 2 && id == NONE; pass++)
			for (int i = 0; i < REF_MAX_ENTS; i++)
				if (in_tree(r, i, (unsigned)best) && allowed(r, i, p) &&
				    (pass || eligible_in(&l, r->e[i].v)) &&
				    (id == NONE || tree_less(r, i, id)))
					id = i;
		if (id != NONE) {
			migrate(r, (unsigned)best, p, id, now);
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
	if (q->curr != NONE && !allowed(r, q->curr, p)) {
		int id = q->curr;
		unsigned dst = least_loaded(r, id);

		update_curr(r, p, now);
		dequeue(r, p, id, false);
		update_curr(r, dst, now);
		r->e[id].migrations++;
		enqueue(r, dst, id, 0);
		wakeup_preempt(r, dst, id);
	}
	update_curr(r, p, now);
	if (nr_queued(r, p) == 0)
		sw->pulled = (uint32_t)newidle(r, p, now);
	prev = q->curr;
	next = nr_queued(r, p) ? pick(r, p, true) : NONE;
	if (next != prev) {
		if (prev != NONE)
			put_prev(r, p);
		if (next != NONE)
			set_next(r, p, next, now);
	}
	sw->next = next == NONE ? SCHED_NONE : (uint32_t)next;
	q->resched = false;
	return 0;
}

int ref_tick(struct ref *r, unsigned p, uint64_t now)
{
	update_curr(r, p, now);
	return r->q[p].resched;
}

int ref_yield(struct ref *r, unsigned p, uint64_t now)
{
	int c = r->q[p].curr;

	if (c == NONE)
		return -ENOENT;
	update_curr(r, p, now);
	if (eligible(r, p, r->e[c].v)) {
		r->e[c].v = r->e[c].d;
		update_deadline(r, p, c);
	}
	r->e[c].vprot = r->e[c].v;
	if (nr_queued(r, p) > 1)
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
	if (e->st != SCHED_ES_QUEUED || !allowed(r, id, dst))
		return e->st == SCHED_ES_QUEUED ? -EINVAL : -EBUSY;
	migrate(r, e->pcpu, dst, id, now);
	wakeup_preempt(r, dst, id);
	return 0;
}

int ref_balance(struct ref *r, unsigned p, uint64_t now)
{
	unsigned bq = nr_queued(r, p) + 1, src = 0;
	int best = NONE, moved = 0, last = NONE;

	for (unsigned i = 0; i < r->np; i++)
		if (i != p && nr_queued(r, i) > bq) {
			best = (int)i;
			bq = nr_queued(r, i);
		}
	if (best == NONE)
		return 0;
	src = (unsigned)best;
	while (nr_queued(r, src) >= nr_queued(r, p) + 2 && moved < 32) {
		int id = NONE;

		for (int i = 0; i < REF_MAX_ENTS; i++)
			if (in_tree(r, i, src) && allowed(r, i, p) &&
			    (id == NONE || tree_less(r, id, i)))
				id = i;
		if (id == NONE)
			break;
		migrate(r, src, p, id, now);
		last = id;
		moved++;
	}
	if (moved)
		wakeup_preempt(r, p, last);
	return moved;
}

static void set_weight_in(struct ref *r, int id, uint32_t w, uint64_t now)
{
	struct ref_ent *e = &r->e[id];

	if (w == e->w)
		return;
	if (e->st == SCHED_ES_QUEUED || e->st == SCHED_ES_RUNNING) {
		update_curr(r, e->pcpu, now);
		reweight(r, e->pcpu, id, w);
		return;
	}
	e->vlag = (int64_t)((s128)e->vlag * e->w / w);
	if (e->has_rel)
		e->rel = (int64_t)((s128)e->rel * e->w / w);
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
	if (allowed(r, id, p) || e->st == SCHED_ES_BLOCKED)
		return 0;
	if (e->st == SCHED_ES_RUNNING) {
		r->q[p].resched = true;
		return 0;
	}
	if (e->st == SCHED_ES_WAKING) {
		unlink_wake(r, p, id);
		e->st = SCHED_ES_BLOCKED;
		return ref_wake(r, id, now, SCHED_NONE, &res);
	}
	return ref_migrate(r, id, least_loaded(r, id), now);
}
