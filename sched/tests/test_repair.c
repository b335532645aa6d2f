/*
 * A member killed inside a critical section (repair.c). Each case forks a
 * child that takes the locks a real operation takes, performs that
 * operation's stores up to some point by hand (as a SIGKILL between two
 * stores would leave them) and exits holding the locks. The parent then
 * makes the case's own assertion (which entity must be where) and verify():
 * ordinary operations, sched_domain_check, every entity runs.
 *
 * Layout before each case (3 pCPUs, 12 slots): pCPU 0 runs one of 0..3 and
 * queues the other three, pCPU 1 runs one of 4..6 and queues two, pCPU 2 is
 * idle with 7 on its wake list, 8 is blocked (never woken), 9..11 are free.
 *
 * Usage: test_sched_repair [case-name]   (default: every case)
 */
#include "repair_fixture.h"

static struct sched_ent *ENT(struct world *w, uint32_t id)
{
	return dom_ent(w->d, id);
}

static struct sched_rq *RQ(struct world *w, unsigned p)
{
	return dom_rq(w->d, p);
}

/* The child's sums update, spelled out: sched code keeps it static. */
static void sum_add(struct sched_rq *rq, const struct sched_ent *e, int sign)
{
	rq->sum_wkey += sign * (s128)e->weight * (int64_t)(e->vruntime - rq->v0);
	rq->sum_w += (uint64_t)(sign * (int64_t)e->weight);
}

static void populate(struct world *w)
{
	struct sched_entity_params p = { 0 };
	struct sched_switch sw;
	struct sched_pcpu_info pi;
	uint64_t now = wnow(w, MS);
	unsigned id;

	for (unsigned i = 0; i < 9; i++) {
		p.create_pcpu = i == 7 ? 2 : 0;
		CHECK_EQ(sched_entity_add(&w->h, &p, now, &id), 0);
		CHECK_EQ(id, i);
	}
	for (unsigned i = 0; i < 7; i++)
		CHECK_EQ(sched_wake(&w->h, i, now, 0, NULL), 0);
	for (unsigned c = 0; c < 3; c++)
		CHECK(sched_wake_drain(&w->h, c, now) >= 0);
	for (unsigned i = 0; i < 7; i++)
		CHECK_EQ(sched_migrate(&w->h, i, i < 4 ? 0 : 1, now), 0);
	CHECK_EQ(sched_schedule(&w->h, 0, now, &sw), 0);
	CHECK_EQ(sched_schedule(&w->h, 1, now, &sw), 0);
	CHECK_EQ(sched_wake(&w->h, 7, now, SCHED_NONE, NULL), 0);
	CHECK_EQ(sched_pcpu_get_info(&w->h, 0, &pi), 0);
	CHECK(pi.curr < 4 && pi.nr_queued == 4);
	CHECK_EQ(sched_pcpu_get_info(&w->h, 1, &pi), 0);
	CHECK(pi.curr >= 4 && pi.curr < 7 && pi.nr_queued == 3);
	CHECK_EQ(sched_pcpu_get_info(&w->h, 2, &pi), 0);
	CHECK(pi.curr == SCHED_NONE && pi.nr_waking == 1);
	wcheck(w, "populate", "layout");
}

static void L(struct sched_lock *l)
{
	if (sched_lock(l) != 0)
		_exit(3);                      /* the parent sees a failed child */
}

static uint32_t state_of(struct world *w, uint32_t id)
{
	struct sched_entity_info ei;

	CHECK_EQ(sched_entity_get_info(&w->h, id, &ei), 0);
	return ei.state;
}

static uint32_t pcpu_of(struct world *w, uint32_t id)
{
	struct sched_entity_info ei;

	CHECK_EQ(sched_entity_get_info(&w->h, id, &ei), 0);
	return ei.pcpu;
}

/* ---- the cases: child side (damage) and parent side (expect) ------------ */

/* rotate_right at the root: both child links stored, the root index not. */
static void rotation(struct world *w)
{
	struct sched_rq *rq = RQ(w, 0);
	uint32_t r, l;

	L(&rq->lock);
	r = rq->root;
	l = ENT(w, r)->left;
	ENT(w, r)->left = ENT(w, l)->right;
	ENT(w, l)->right = r;
}

/* A waker's enqueue of 8 on pCPU 0: in the tree and the sums, pcpu stored,
 * state not: 8 was never woken. */
static void enqueue_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 0);
	struct sched_ent *e = ENT(w, 8);
	uint64_t now = wnow(w, 100);

	L(&e->lock);
	L(&rq->lock);
	eevdf_update_curr_locked(&w->h, rq, now);
	eevdf_place_locked(w->d, rq, e, PLACE_WAKEUP | PLACE_INITIAL);
	sched_tree_insert(dom_ents(w->d), &rq->root, 8);
	sum_add(rq, e, 1);
	STORE(e->pcpu, 0u);
}

static void enqueue_cut_expect(struct world *w)
{
	CHECK_EQ(state_of(w, 8), SCHED_ES_BLOCKED);
}

/* The same enqueue a little later: state stored, the counts not. */
static void enqueue_late(struct world *w)
{
	enqueue_cut(w);
	STORE(ENT(w, 8)->state, (uint32_t)SCHED_ES_QUEUED);
}

static void enqueue_late_expect(struct world *w)
{
	struct sched_pcpu_info pi;

	CHECK_EQ(sched_pcpu_get_info(&w->h, 0, &pi), 0);
	CHECK_EQ(pi.nr_queued, 5);
	CHECK_EQ(state_of(w, 8), SCHED_ES_QUEUED);
}

/* sched_block of pCPU 1's curr: curr cleared and counted out, state still
 * RUNNING (the caller stores BLOCKED after eevdf_dequeue_locked returns). */
static uint32_t blocked_curr;

static void block_curr_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 1);
	struct sched_ent *e = ENT(w, rq->curr);
	uint64_t now = wnow(w, 100);

	L(&e->lock);
	L(&rq->lock);
	eevdf_update_curr_locked(&w->h, rq, now);
	e->vlag = eevdf_lag_clamped_locked(w->d, rq, e, eevdf_avg_vruntime_locked(w->d, rq));
	STORE(rq->curr, SCHED_NONE);
	rq->need_resched = 1;
	STORE(rq->nr_queued, rq->nr_queued - 1);
	STORE(rq->nr_normal, rq->nr_normal - 1);
}

static void block_curr_cut_expect(struct world *w)
{
	struct sched_pcpu_info pi;

	CHECK_EQ(sched_pcpu_get_info(&w->h, 1, &pi), 0);
	CHECK_EQ(pi.nr_queued, 3);                 /* the blocker died: still runnable */
	CHECK_EQ(pi.curr, SCHED_NONE);
	CHECK(pi.need_resched);
	CHECK_EQ(state_of(w, blocked_curr), SCHED_ES_QUEUED);
}

/* sched_schedule on pCPU 1: prev put back, next taken out of the tree but
 * not yet out of the sums nor made curr. */
static void switch_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 1);
	uint64_t now = wnow(w, 100);
	uint32_t prev = rq->curr, next;

	L(&rq->lock);
	eevdf_update_curr_locked(&w->h, rq, now);
	eevdf_put_prev_locked(&w->h, rq, now);
	next = rq->root != prev ? rq->root : ENT(w, prev)->left;
	sched_tree_remove(dom_ents(w->d), &rq->root, next);
}

/* eevdf_avg_vruntime_locked: v0 moved, sum_wkey not yet. */
static void sums_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 0);

	L(&rq->lock);
	rq->v0 += 12345;
}

/* curr naming a free slot: no single cut stores this, but the repair must
 * not trust curr more than the entity states. */
static void curr_stale(struct world *w)
{
	struct sched_rq *rq = RQ(w, 0);

	L(&rq->lock);
	STORE(rq->curr, 10u);
}

/* Migration of a queued entity from pCPU 0 to 1: dequeued from 0, in 1's
 * tree and sums, pcpu not yet stored. Both queue locks die. */
static uint32_t migrated;

static void migrate_cut(struct world *w)
{
	struct sched_rq *src = RQ(w, 0), *dst = RQ(w, 1);
	uint64_t now = wnow(w, 100);
	uint32_t q = sched_tree_first(dom_ents(w->d), src->root);

	L(&src->lock);
	L(&dst->lock);
	eevdf_update_curr_locked(&w->h, src, now);
	eevdf_dequeue_locked(&w->h, src, q, false, now);
	eevdf_update_curr_locked(&w->h, dst, now);
	eevdf_place_locked(w->d, dst, ENT(w, q), 0);
	sched_tree_insert(dom_ents(w->d), &dst->root, q);
	sum_add(dst, ENT(w, q), 1);
}

static void migrate_cut_expect(struct world *w)
{
	CHECK_EQ(state_of(w, migrated), SCHED_ES_QUEUED);
	CHECK_EQ(pcpu_of(w, migrated), 0);
}

/* A waker listing 8 on pCPU 2 behind 7: linked, tail and count updated,
 * state still BLOCKED. */
static void wake_link_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 2);
	struct sched_ent *e = ENT(w, 8);

	L(&e->lock);
	L(&rq->lock);
	STORE(rq->ttwu_pending, 1u);
	e->next = SCHED_NONE;
	ENT(w, rq->wake_tail)->next = 8;
	rq->wake_tail = 8;
	rq->nr_wake++;
	STORE(e->pcpu, 2u);
}

static void wake_link_cut_expect(struct world *w)
{
	struct sched_pcpu_info pi;

	CHECK_EQ(sched_pcpu_get_info(&w->h, 2, &pi), 0);
	CHECK_EQ(pi.nr_waking, 1);
	CHECK_EQ(state_of(w, 8), SCHED_ES_BLOCKED);
	CHECK_EQ(state_of(w, 7), SCHED_ES_WAKING);
}

/* sched_wake_finish on pCPU 2: 7 unlinked from the drain list, not yet
 * enqueued. */
static void drain_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 2);
	uint32_t id;

	if (sched_wake_take(&w->h, 2) != 1)
		_exit(4);
	L(&rq->lock);
	id = rq->drain_head;
	rq->drain_head = ENT(w, id)->next;
	if (rq->drain_head == SCHED_NONE)
		rq->drain_tail = SCHED_NONE;
	rq->nr_drain--;
	ENT(w, id)->next = SCHED_NONE;
}

static void drain_cut_expect(struct world *w)
{
	struct sched_pcpu_info pi;

	CHECK_EQ(sched_pcpu_get_info(&w->h, 2, &pi), 0);
	CHECK_EQ(pi.nr_waking, 1);                 /* a wakeup still in flight */
	CHECK(pi.ttwu_pending && !pi.idle);
	CHECK(w->host.kicks[2] > 0);
}

/* sched_entity_remove of 8: state FREE, queue unlocked, slot not yet
 * pushed on the free list (domain and entity locks die). */
static void remove_cut(struct world *w)
{
	struct sched_ent *e = ENT(w, 8);

	L(&w->d->lock);
	L(&e->lock);
	STORE(e->state, (uint32_t)SCHED_ES_FREE);
}

/* sched_entity_add: slot taken off the free list, not yet BLOCKED. */
static void add_cut(struct world *w)
{
	struct sched_domain *d = w->d;
	struct sched_ent *e = ENT(w, d->free_head);

	L(&d->lock);
	L(&e->lock);
	d->free_head = e->next;
	d->nr_entities++;
	e->next = SCHED_NONE;
}

/* Every slot not live must be addable again. */
static void slots_expect(struct world *w)
{
	struct sched_entity_params p = { 0 };
	unsigned id, added = 0, live = 0;
	struct sched_entity_info ei;

	for (id = 0; id < 12; id++)
		live += sched_entity_get_info(&w->h, id, &ei) == 0;
	while (sched_entity_add(&w->h, &p, wnow(w, 100), &id) == 0)
		added++;
	CHECK_EQ(live + added, 12);
}

/* sched_set_allowed copying a set word by word: 8's set torn to no pCPU. */
static void allowed_torn(struct world *w)
{
	struct sched_ent *e = ENT(w, 8);

	L(&e->lock);
	sched_cpuset_zero(&e->allowed);
}

static void allowed_torn_expect(struct world *w)
{
	struct sched_wake_result wr;

	CHECK_EQ(sched_wake(&w->h, 8, wnow(w, 100), SCHED_NONE, &wr), 0);
	CHECK_EQ(wr.pcpu, 0);                      /* its last pCPU, not widened */
}

/* sched_set_allowed of a queued entity on pCPU 0: the new set {1} stored,
 * the move to pCPU 1 not started. */
static void allowed_cut(struct world *w)
{
	struct sched_rq *src = RQ(w, 0), *dst = RQ(w, 1);
	uint32_t q = sched_tree_first(dom_ents(w->d), src->root);
	struct sched_ent *e = ENT(w, q);

	L(&e->lock);
	L(&src->lock);
	L(&dst->lock);
	sched_cpuset_zero(&e->allowed);
	sched_cpuset_set(&e->allowed, 1);
}

static void allowed_cut_expect(struct world *w)
{
	struct sched_wake_result wr;

	CHECK_EQ(state_of(w, migrated), SCHED_ES_BLOCKED);
	CHECK_EQ(sched_wake(&w->h, migrated, wnow(w, 100), SCHED_NONE, &wr), 0);
	CHECK_EQ(wr.pcpu, 1);
}

/* eevdf_reweight_locked of a queued entity from weight 15 (lag 5e7, inside its
 * bound) to 88761: out of the tree and sums, new weight stored, vruntime
 * not yet rescaled: 270 lag bounds of the new weight. */
static void reweight_cut(struct world *w)
{
	struct sched_rq *rq = RQ(w, 0);
	uint32_t q = sched_tree_first(dom_ents(w->d), rq->root);
	struct sched_ent *e = ENT(w, q);
	uint64_t V;

	L(&e->lock);
	L(&rq->lock);
	V = eevdf_avg_vruntime_locked(w->d, rq);
	sched_tree_remove(dom_ents(w->d), &rq->root, q);
	sum_add(rq, e, -1);
	e->vruntime = V - 50000000;
	e->weight = 88761;
}

static void reweight_cut_expect(struct world *w)
{
	struct sched_entity_info ei;
	int64_t bound = 4 * (3 * MS + MS) * 1024 / 88761 + 2;

	CHECK_EQ(sched_entity_get_info(&w->h, migrated, &ei), 0);
	CHECK_EQ(ei.state, SCHED_ES_QUEUED);
	if (ei.lag > bound || ei.lag < -bound) {
		fprintf(stderr, "reweight-cut: lag %" PRId64 " beyond %" PRId64 "\n", ei.lag,
			bound);
		check_failures++;
	}
}

static const struct {
	const char *name;
	void (*damage)(struct world *w);
	void (*expect)(struct world *w);
	uint32_t *pick;                /* filled before forking: the entity involved */
} cases[] = {
	{ "rotation", rotation, NULL, NULL },
	{ "enqueue-cut", enqueue_cut, enqueue_cut_expect, NULL },
	{ "enqueue-late", enqueue_late, enqueue_late_expect, NULL },
	{ "block-curr-cut", block_curr_cut, block_curr_cut_expect, &blocked_curr },
	{ "switch-cut", switch_cut, NULL, NULL },
	{ "sums-cut", sums_cut, NULL, NULL },
	{ "curr-stale", curr_stale, NULL, NULL },
	{ "migrate-cut", migrate_cut, migrate_cut_expect, &migrated },
	{ "wake-link-cut", wake_link_cut, wake_link_cut_expect, NULL },
	{ "drain-cut", drain_cut, drain_cut_expect, NULL },
	{ "remove-cut", remove_cut, slots_expect, NULL },
	{ "add-cut", add_cut, slots_expect, NULL },
	{ "allowed-torn", allowed_torn, allowed_torn_expect, NULL },
	{ "allowed-cut", allowed_cut, allowed_cut_expect, &migrated },
	{ "reweight-cut", reweight_cut, reweight_cut_expect, &migrated },
};

static void run_case(unsigned i)
{
	struct world *w = world_new(3, 12, NULL);
	int status = 0;
	pid_t pid;

	populate(w);
	if (cases[i].pick == &blocked_curr)
		blocked_curr = RQ(w, 1)->curr;
	else if (cases[i].pick)
		*cases[i].pick = sched_tree_first(dom_ents(w->d), RQ(w, 0)->root);
	memset(&w->host, 0, sizeof(w->host));
	pid = fork();
	if (pid == 0) {
		cases[i].damage(w);
		_exit(0);                      /* holding every lock it took */
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK(locks_held_by(w, pid) > 0);
	if (cases[i].expect)
		cases[i].expect(w);
	verify(w, cases[i].name);
	CHECK_EQ(locks_held_by(w, pid), 0);   /* all taken over */
	world_free(w);
}

int main(int argc, char **argv)
{
	unsigned ran = 0;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int before = check_failures;

		if (argc > 1 && strcmp(argv[1], cases[i].name))
			continue;
		run_case(i);
		ran++;
		printf("%-16s %s\n", cases[i].name, check_failures == before ? "ok" : "FAILED");
	}
	if (!ran) {
		fprintf(stderr, "test_sched_repair: no case named %s\n", argv[1]);
		return 1;
	}
	if (check_failures) {
		fprintf(stderr, "test_sched_repair: %d check(s) failed\n", check_failures);
		return 1;
	}
	printf("test_sched_repair: %u owner-death cases repaired\n", ran);
	return 0;
}
