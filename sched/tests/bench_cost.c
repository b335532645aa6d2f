/*
 * Cost microbenchmark of the scheduler's per-event work (not a test; run by
 * scripts/bench-sched-cost). Two tables:
 *   1. one pCPU, n = 2..8192 entities queued on it: ns per enqueue and
 *      dequeue (queue ops, lock held), pick (pick_eevdf), wake and block
 *      (public API incl. locking and pCPU choice), schedule (switch), and
 *      pick-walk: pick when the leftmost entity is not eligible (tree walk).
 *   2. P = 1..1024 pCPUs, all busy, 64 entities each, free to run anywhere:
 *      the same operations; wake now scans the idle masks of P pCPUs.
 * Each figure is a median over rounds, in ns per operation.
 *
 * Usage: sched-bench-cost [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched/internal.h"

static void kick(void *o, unsigned p) { (void)o; (void)p; }

static const struct sched_host_ops ops = { .kick = kick };

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;   /* fixed: same runs each time */

static uint64_t xs(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct result {
	double enq, deq, pick, wake, block, sched;
};

struct bench {
	void *mem;
	struct sched_handle h;
	unsigned np, per;
	uint64_t t;
};

/* P pCPUs, per entities each (pinned to it when pin), all woken, one curr
 * per pCPU. */
static int bench_setup(struct bench *b, unsigned np, unsigned per, bool pin)
{
	size_t len = sched_domain_size(np, np * per);
	struct sched_domain_params dp = { .features = "NO_TTWU_PENDING" };

	b->np = np;
	b->per = per;
	b->t = 1000;
	b->mem = aligned_alloc(64, (len + 63) / 64 * 64);
	if (!b->mem || sched_domain_init(b->mem, len, np, np * per, &dp) ||
	    sched_handle_init(&b->h, b->mem, len, &ops, NULL))
		return -1;
	for (unsigned p = 0; p < np; p++) {
		struct sched_cpuset cs;
		struct sched_entity_params ep = { .create_pcpu = p, .nice = (int)(xs() % 7) - 3 };
		struct sched_switch sw;

		sched_cpuset_zero(&cs);
		sched_cpuset_set(&cs, p);
		if (pin)
			ep.allowed = &cs;
		for (unsigned i = 0; i < per; i++) {
			unsigned id;

			if (sched_entity_add(&b->h, &ep, b->t, &id) ||
			    sched_wake(&b->h, id, b->t, p, NULL))
				return -1;
			if (i == 0 && sched_schedule(&b->h, p, b->t, &sw))
				return -1;
			b->t += 1000;
		}
	}
	return 0;
}

static void bench_free(struct bench *b)
{
	sched_domain_destroy(b->mem);
	free(b->mem);
}

/* Queued (not running) entities of pcpu's queue, up to max. */
static unsigned queued_on(struct bench *b, unsigned p, uint32_t *ids, unsigned max)
{
	struct sched_domain *d = b->h.dom;
	unsigned n = 0;

	for (unsigned id = 0; id < d->max_entities && n < max; id++) {
		struct sched_ent *e = dom_ent(d, id);
		if (e->state == SCHED_ES_QUEUED && e->pcpu == p)
			ids[n++] = id;
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/*
 * Rounds of: dequeue k queued entities and enqueue them back (lock held),
 * 16 picks, block the k and wake them through the public API, one switch.
 * Each column is the median over rounds of that round's ns per operation,
 * so a round preempted by the host does not move the figure.
 */
static struct result measure(struct bench *b, unsigned rounds)
{
	struct sched_domain *d = b->h.dom;
	struct result res;
	uint32_t ids[64];
	double *v[6];
	unsigned n = 0;

	for (int c = 0; c < 6; c++)
		v[c] = calloc(rounds, sizeof(double));
	for (unsigned r = 0; r < rounds; r++) {
		unsigned p = (unsigned)(xs() % b->np);
		struct sched_rq *rq = dom_rq(d, p);
		unsigned k = queued_on(b, p, ids, 1 + (unsigned)(xs() % 64));
		double t0, t1, t2;

		if (!k || !v[5])
			continue;
		sched_lock(&rq->lock);
		t0 = now_ns();
		for (unsigned i = 0; i < k; i++)
			eevdf_dequeue_locked(&b->h, rq, ids[i], false, b->t);
		t1 = now_ns();
		for (unsigned i = 0; i < k; i++)
			eevdf_enqueue_locked(&b->h, rq, ids[i], 0, b->t);
		t2 = now_ns();
		v[1][n] = (t1 - t0) / k;
		v[0][n] = (t2 - t1) / k;
		t0 = now_ns();
		for (unsigned i = 0; i < 16; i++)
			(void)eevdf_pick_locked(d, rq, (i & 1) != 0);
		v[2][n] = (now_ns() - t0) / 16;
		sched_unlock(&rq->lock);

		t0 = now_ns();
		for (unsigned i = 0; i < k; i++)
			sched_block(&b->h, ids[i], b->t);
		t1 = now_ns();
		for (unsigned i = 0; i < k; i++)
			sched_wake(&b->h, ids[i], b->t, p, NULL);
		t2 = now_ns();
		v[4][n] = (t1 - t0) / k;
		v[3][n] = (t2 - t1) / k;

		b->t += 3000000;               /* curr ran a slice: switch */
		t0 = now_ns();
		sched_schedule(&b->h, p, b->t, NULL);
		v[5][n] = now_ns() - t0;
		n++;
	}
	res.enq = median(v[0], n);
	res.deq = median(v[1], n);
	res.pick = median(v[2], n);
	res.wake = median(v[3], n);
	res.block = median(v[4], n);
	res.sched = median(v[5], n);
	for (int c = 0; c < 6; c++)
		free(v[c]);
	return res;
}

/*
 * pick when the leftmost (earliest deadline) is not eligible, so pick_eevdf
 * walks down the tree: n entities in deadline order, every other one ahead
 * of V. Built by hand in the queue (with its sums) and picked 10^5 times.
 */
static double pick_walk_ns(unsigned n)
{
	size_t len = sched_domain_size(1, n);
	void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
	struct sched_handle h;
	struct sched_rq *rq;
	double t0, dt;
	unsigned got = 0;

	if (!mem || sched_domain_init(mem, len, 1, n, NULL) ||
	    sched_handle_init(&h, mem, len, &ops, NULL))
		return -1;
	rq = dom_rq(h.dom, 0);
	sched_lock(&rq->lock);
	for (unsigned i = 0; i < n; i++) {
		struct sched_ent *e = dom_ent(h.dom, i);
		int64_t key = i % 2 ? -1000 : 1000;

		e->weight = 1024;
		e->slice_ns = 3000000;
		e->vruntime = rq->v0 + (uint64_t)key;
		e->deadline = rq->v0 + 10 * (uint64_t)i;
		sched_tree_insert(dom_ents(h.dom), &rq->root, i);
		rq->sum_wkey += (s128)1024 * key;
		rq->sum_w += 1024;
	}
	rq->nr_queued = n;
	t0 = now_ns();
	for (unsigned i = 0; i < 100000; i++)
		got += eevdf_pick_locked(h.dom, rq, false) == 1;
	dt = (now_ns() - t0) / 100000;
	sched_unlock(&rq->lock);
	sched_domain_destroy(mem);
	free(mem);
	return got == 100000 || n < 2 ? dt : -1;
}

static void row(const char *label, unsigned v, const struct result *r, double walk)
{
	printf("%-5s %6u | %7.0f %7.0f %7.0f %7.0f %7.0f %8.0f", label, v, r->enq, r->deq,
	       r->pick, r->wake, r->block, r->sched);
	if (walk >= 0)
		printf(" %9.0f", walk);
	printf("\n");
}

int main(int argc, char **argv)
{
	static const unsigned ns[] = { 2, 8, 32, 128, 512, 2048, 8192 };
	static const unsigned ps[] = { 1, 4, 16, 64, 256, 1024 };
	bool quick = argc > 1 && !strcmp(argv[1], "--quick");
	unsigned rounds = quick ? 200 : 2000;

	if (argc > 1 && !quick) {
		fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
		return 2;
	}
	printf("ns per operation (median over %u rounds)\n", rounds);
	printf("%-5s %6s | %7s %7s %7s %7s %7s %8s %9s\n", "", "", "enqueue", "dequeue", "pick",
	       "wake", "block", "schedule", "pick-walk");
	printf("-- one pCPU, n entities queued on it --\n");
	for (unsigned i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct bench b;
		struct result r;

		if (bench_setup(&b, 1, ns[i], true)) {
			fprintf(stderr, "setup failed for n=%u\n", ns[i]);
			return 1;
		}
		r = measure(&b, rounds);
		row("n", ns[i], &r, pick_walk_ns(ns[i]));
		bench_free(&b);
	}
	printf("-- P pCPUs, all busy, 64 entities each, unpinned --\n");
	for (unsigned i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		struct bench b;
		struct result r;

		if (bench_setup(&b, ps[i], 64, false)) {
			fprintf(stderr, "setup failed for P=%u\n", ps[i]);
			return 1;
		}
		r = measure(&b, rounds);
		row("P", ps[i], &r, -1);
		bench_free(&b);
	}
	return 0;
}
