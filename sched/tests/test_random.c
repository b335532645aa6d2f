/*
 * Randomized test: >= 10^6 operations (wake, drain halves, block, schedule,
 * tick, yield, migrate, balance, reweight, idle class, slice, allowed set,
 * add/remove, feature flips) over a fixed seed set, applied both to the
 * library and to the linear-scan reference model (ref_model.c). After every
 * step: sched_domain_check (sums vs. tree, augmented fields, curr not in the
 * tree, each runnable entity on exactly one queue, idle masks), the model's
 * own invariants (placed lag == saved lag, V unchanged by reweight), and
 * field-by-field equality of every entity and queue. Virtual time starts at
 * (u64)-2^20, so the u64 wrap is crossed in every run.
 *
 * Usage: test_sched_random [ops] (default 1000000).
 */
#include "sched/internal.h"
#include "harness.h"
#include "ref_model.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

struct run {
	struct tdom *t;
	struct ref ref;
	unsigned np, ne;
	uint64_t now;
	long step;
	const char *op;
};

static int fail_run(struct run *R, const char *what)
{
	fprintf(stderr, "step %ld (op %s, t=%" PRIu64 "): %s\n", R->step, R->op, R->now, what);
	return 1;
}

/* Compare; the message (printf format + args) is built only on a mismatch. */
#define EXPECT_SAME(a, b, ...)                                                     \
	do {                                                                       \
		if ((uint64_t)(a) != (uint64_t)(b)) {                              \
			char w_[96], m_[200];                                      \
			snprintf(w_, sizeof(w_), __VA_ARGS__);                     \
			snprintf(m_, sizeof(m_), "%s: lib %lld ref %lld", w_,      \
				 (long long)(a), (long long)(b));                  \
			return fail_run(R, m_);                                    \
		}                                                                  \
	} while (0)

static int compare(struct run *R)
{
	struct sched_domain *d = R->t->h.dom;
	char msg[256];

	if (sched_domain_check(&R->t->h, msg, sizeof(msg)))
		return fail_run(R, msg);
	if (R->ref.errors)
		return fail_run(R, R->ref.msg);
	for (unsigned p = 0; p < R->np; p++) {
		struct sched_rq *rq = dom_rq(d, p);
		struct ref_rq *q = &R->ref.q[p];
		uint32_t n;
		int i;

		sched_lock(&rq->lock);
		uint64_t V = eevdf_avg_vruntime_peek(d, rq);
		sched_unlock(&rq->lock);
		EXPECT_SAME(V, ref_V(&R->ref, p), "pcpu %u V", p);
		EXPECT_SAME(rq->curr, q->curr < 0 ? SCHED_NONE : (uint32_t)q->curr, "pcpu %u curr", p);
		EXPECT_SAME(rq->need_resched, q->resched, "pcpu %u need_resched", p);
		EXPECT_SAME(rq->ttwu_pending, q->pending, "pcpu %u ttwu_pending", p);
		for (n = rq->wake_head, i = 0; n != SCHED_NONE; n = dom_ent(d, n)->next, i++) {
			EXPECT_SAME(n, i < q->nw ? q->wake[i] : -1, "pcpu %u wake list [%d]", p, i);
		}
		EXPECT_SAME(i, q->nw, "wake list length");
		for (n = rq->drain_head, i = 0; n != SCHED_NONE; n = dom_ent(d, n)->next, i++) {
			EXPECT_SAME(n, i < q->nd ? q->drain[i] : -1, "pcpu %u drain list [%d]", p, i);
		}
		EXPECT_SAME(i, q->nd, "drain list length");
	}
	for (unsigned id = 0; id < R->ne; id++) {
		struct sched_ent *e = dom_ent(d, id);
		struct ref_ent *r = &R->ref.e[id];

#define SAME(field_lib, field_ref)                                                  \
	do {                                                                       \
		EXPECT_SAME(field_lib, field_ref, "entity %u " #field_lib, id);    \
	} while (0)
		SAME(e->state, r->st);
		if (r->st == SCHED_ES_FREE)
			continue;
		SAME(e->pcpu, r->pcpu);
		SAME(e->weight, r->w);
		SAME(e->idle_class, r->idle);
		SAME(e->custom_slice, r->custom);
		SAME(e->slice_ns, r->slice);
		SAME(e->never_placed, r->never);
		SAME(e->nr_migrations, r->migrations);
		SAME(e->delayed, r->delayed);
		if (r->st == SCHED_ES_QUEUED || r->st == SCHED_ES_RUNNING) {
			SAME(e->vruntime, r->v);
			SAME(e->deadline, r->d);
		}
		if (r->st == SCHED_ES_RUNNING)
			SAME(e->vprot, r->vprot);
		if (r->st == SCHED_ES_BLOCKED || r->st == SCHED_ES_WAKING) {
			SAME(e->vlag, r->vlag);
			SAME(e->has_rel_deadline, r->has_rel);
			if (r->has_rel)
				SAME(e->rel_deadline, r->rel);
		}
#undef SAME
	}
	return 0;
}

static uint64_t rand_mask(unsigned np)
{
	uint64_t full = np == 64 ? ~0ull : (1ull << np) - 1, m;

	if (below(4))
		return full;
	do
		m = rnd() & full;
	while (!m);
	return m;
}

static uint32_t rand_weight(void)
{
	if (below(8) == 0)
		return 1 + below(100000);
	return sched_nice_to_weight((int)below(40) - 20);
}

static uint64_t rand_slice(void)
{
	return below(3) ? 0 : 100000 + below(10000000);
}

static void to_cpuset(uint64_t m, struct sched_cpuset *s)
{
	sched_cpuset_zero(s);
	s->bits[0] = m;
}

static const char *const flip_flags[] = {
	"PLACE_LAG", "RUN_TO_PARITY", "PREEMPT_SHORT", "WAKEUP_PREEMPTION",
	"IDLE_NO_COMPENSATION", "TTWU_PENDING", "PLACE_REL_DEADLINE",
	"PLACE_DEADLINE_INITIAL", "FAIR_SLEEPERS", "PLACE_FIRST_ENQUEUE", "DELAY_DEQUEUE",
	"DELAY_ZERO", "PREEMPT_ELIGIBLE", "IPI_HANDOFF", "WAKE_VICTIM",
};

/* One random operation on both sides; returns non-zero on a mismatch. */
static int step(struct run *R)
{
	struct sched_handle *h = &R->t->h;
	struct ref *ref = &R->ref;
	unsigned p = below(R->np), id = below(R->ne), k = below(1000);
	int a, b;

	R->now += below(4) ? below(300000) : 0;
	if (k < 180) {
		struct sched_wake_result x, y;
		unsigned waker = below(R->np + 1);
		unsigned hint = below(3) ? 0 : SCHED_WAKE_SYNC;

		if (waker == R->np)
			waker = SCHED_NONE;
		R->op = "wake";
		a = sched_wake_hint(h, id, R->now, waker, hint, &x);
		b = ref_wake(ref, (int)id, R->now, waker, hint, &y);
		EXPECT_SAME(a, b, "wake rc");
		if (!a) {
			EXPECT_SAME(x.how, y.how, "wake how");
			EXPECT_SAME(x.pcpu, y.pcpu, "wake pcpu");
			EXPECT_SAME(x.preempt, y.preempt, "wake preempt");
		}
	} else if (k < 300) {
		R->op = "block";
		if (below(10) < 7 && ref->q[p].curr >= 0)
			id = (unsigned)ref->q[p].curr;
		a = sched_block(h, id, R->now);
		b = ref_block(ref, (int)id, R->now);
		EXPECT_SAME(a, b, "block rc");
	} else if (k < 450) {
		struct sched_switch x, y;

		R->op = "schedule";
		a = sched_schedule(h, p, R->now, &x);
		b = ref_schedule(ref, p, R->now, &y);
		EXPECT_SAME(a, b, "schedule rc");
		EXPECT_SAME(x.prev, y.prev, "schedule prev");
		EXPECT_SAME(x.next, y.next, "schedule next");
		EXPECT_SAME(x.pulled, y.pulled, "schedule pulled");
	} else if (k < 600) {
		R->op = "tick";
		if (below(20) == 0)
			R->now += below(50000000);
		a = sched_tick(h, p, R->now);
		b = ref_tick(ref, p, R->now);
		EXPECT_SAME(a, b, "tick rc");
	} else if (k < 660) {
		R->op = "drain";
		a = sched_wake_drain(h, p, R->now);
		b = ref_take(ref, p);
		b = ref_finish(ref, p, R->now);
		EXPECT_SAME(a, b, "drain rc");
	} else if (k < 690) {
		R->op = "take";
		EXPECT_SAME(sched_wake_take(h, p), ref_take(ref, p), "take rc");
	} else if (k < 720) {
		R->op = "finish";
		EXPECT_SAME(sched_wake_finish(h, p, R->now), ref_finish(ref, p, R->now),
			    "finish rc");
	} else if (k < 740) {
		R->op = "yield";
		EXPECT_SAME(sched_yield_curr(h, p, R->now), ref_yield(ref, p, R->now), "yield rc");
	} else if (k < 780) {
		R->op = "migrate";
		EXPECT_SAME(sched_migrate(h, id, p, R->now), ref_migrate(ref, (int)id, p, R->now),
			    "migrate rc");
	} else if (k < 810) {
		R->op = "balance";
		EXPECT_SAME(sched_balance(h, p, R->now), ref_balance(ref, p, R->now),
			    "balance rc");
	} else if (k < 840) {
		uint32_t w = rand_weight();

		R->op = "set_weight";
		EXPECT_SAME(sched_set_weight(h, id, w, R->now),
			    ref_set_weight(ref, (int)id, w, R->now), "set_weight rc");
	} else if (k < 850) {
		bool idle = below(2);

		R->op = "set_idle";
		EXPECT_SAME(sched_set_idle_class(h, id, idle, R->now),
			    ref_set_idle(ref, (int)id, idle, R->now), "set_idle rc");
	} else if (k < 860) {
		uint64_t s = rand_slice();

		R->op = "set_slice";
		EXPECT_SAME(sched_set_slice(h, id, s, R->now), ref_set_slice(ref, (int)id, s),
			    "set_slice rc");
	} else if (k < 890) {
		uint64_t m = rand_mask(R->np);
		struct sched_cpuset cs;

		R->op = "set_allowed";
		to_cpuset(m, &cs);
		EXPECT_SAME(sched_set_allowed(h, id, &cs, R->now),
			    ref_set_allowed(ref, (int)id, m, R->now), "set_allowed rc");
	} else if (k < 940) {
		struct sched_entity_params ep = {
			.weight = rand_weight(), .idle_class = below(8) == 0,
			.slice_ns = rand_slice(), .create_pcpu = p,
		};
		struct sched_cpuset cs;
		uint64_t m = rand_mask(R->np);
		unsigned nid;

		R->op = "add";
		to_cpuset(m, &cs);
		ep.allowed = &cs;
		a = sched_entity_add(h, &ep, R->now, &nid);
		if (a == -ENOSPC)
			return 0;
		EXPECT_SAME(a, 0, "add rc");
		if (nid >= R->ne || ref->e[nid].st != SCHED_ES_FREE)
			return fail_run(R, "add returned a used id");
		ref_add(ref, (int)nid, ep.weight, ep.idle_class, ep.slice_ns, m, p, R->now);
	} else if (k < 995) {
		R->op = "remove";
		EXPECT_SAME(sched_entity_remove(h, id, R->now), ref_remove(ref, (int)id, R->now),
			    "remove rc");
	} else {
		const char *f = flip_flags[below(sizeof(flip_flags) / sizeof(flip_flags[0]))];
		char name[64];

		R->op = "feature";
		snprintf(name, sizeof(name), "%s%s", below(2) ? "NO_" : "", f);
		EXPECT_SAME(sched_feature_set(h->dom, name), 0, "feature rc");
	}
	return compare(R);
}

static int run_seed(uint64_t seed, unsigned np, unsigned ne, long ops, bool early)
{
	struct run R = { .np = np, .ne = ne, .now = 1000 };
	int r = 0;

	rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
	R.t = tdom_new(np, ne, early ? "TTWU_PENDING_EARLY_CLEAR" : NULL);
	ref_init(&R.ref, R.t->h.dom, np, 3 * MS, 1 * MS, V0_START);
	for (R.step = 0; R.step < ops && !r; R.step++)
		r = step(&R);
	if (r)
		fprintf(stderr, "seed %" PRIu64 " (%u pCPUs, %u entities) failed\n", seed, np, ne);
	tdom_free(R.t);
	return r;
}

int main(int argc, char **argv)
{
	static const struct { uint64_t seed; unsigned np, ne; bool early; } seeds[] = {
		{ 1, 1, 8, false }, { 2, 2, 16, false }, { 3, 3, 24, true },
		{ 4, 4, 32, false }, { 5, 8, 48, false }, { 6, 2, 12, true },
		{ 7, 4, 24, false }, { 8, 3, 64, false },
	};
	long total = argc > 1 ? atol(argv[1]) : 1000000;
	long per = (total + 7) / 8;
	int fails = 0;

	if (total <= 0) {
		fprintf(stderr, "usage: %s [ops > 0]\n", argv[0]);
		return 2;
	}
	for (unsigned i = 0; i < 8; i++)
		fails += run_seed(seeds[i].seed, seeds[i].np, seeds[i].ne, per, seeds[i].early);
	if (fails) {
		fprintf(stderr, "test_random: %d seed(s) failed\n", fails);
		return 1;
	}
	printf("test_random: %ld operations over 8 seeds, library == reference\n", per * 8);
	return 0;
}
