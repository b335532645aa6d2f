/*
 * A member SIGKILLed at random moments (repair.c). Each iteration forks a
 * child that loops over real sched_* calls on the shared domain (wake,
 * block, schedule, tick, drain, migrate, balance, reweight, allowed sets,
 * slices, idle class, yield, remove + add) and kills it after a random
 * delay; almost all of its time is spent inside critical sections, so most
 * kills leave locks owner-dead with half-done updates behind them. After
 * each death the parent runs verify() (ordinary operations, invariants,
 * every entity runs) and tops the domain back up to NLIVE entities.
 *
 * Usage: test_sched_repair_random [iterations] [seed]   (default 400, 1)
 */
#include <signal.h>
#include <time.h>

#include "repair_fixture.h"

#define NP 3
#define NSLOT 12
#define NLIVE 9

static uint64_t xs(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void child_op(struct world *w, uint64_t *s)
{
	struct sched_handle *h = &w->h;
	uint64_t now = wnow(w, 1 + xs(s) % (200 * 1000));
	unsigned p = (unsigned)(xs(s) % NP), id = (unsigned)(xs(s) % NSLOT);
	unsigned waker = xs(s) % 2 ? p : SCHED_NONE;
	struct sched_entity_params ep = { .create_pcpu = p };
	struct sched_cpuset set;

	/* results ignored: any of these may meet a free slot or a busy entity */
	switch (xs(s) % 16) {
	case 0: case 1: case 2:
		sched_wake(h, id, now, waker, NULL);
		break;
	case 3: case 4:
		sched_block(h, id, now);
		break;
	case 5: case 6:
		sched_schedule(h, p, now, NULL);
		break;
	case 7:
		sched_tick(h, p, now);
		break;
	case 8:
		if (xs(s) % 2) {
			sched_wake_drain(h, p, now);
		} else {
			sched_wake_take(h, p);
			sched_wake_finish(h, p, wnow(w, 1000));
		}
		break;
	case 9:
		sched_migrate(h, id, p, now);
		break;
	case 10:
		sched_balance(h, p, now);
		break;
	case 11:
		if (xs(s) % 2)
			sched_set_nice(h, id, (int)(xs(s) % 40) - 20, now);
		else
			sched_set_weight(h, id, 1 + (uint32_t)(xs(s) % 100000), now);
		break;
	case 12:
		sched_cpuset_zero(&set);
		sched_cpuset_set(&set, p);
		if (xs(s) % 2)
			sched_cpuset_set(&set, (p + 1) % NP);
		sched_set_allowed(h, id, &set, now);
		break;
	case 13:
		sched_set_slice(h, id, xs(s) % 2 ? 0 : 100000 + xs(s) % (10 * MS), now);
		break;
	case 14:
		sched_set_idle_class(h, id, xs(s) % 4 == 0, now);
		break;
	default:
		if (xs(s) % 4) {
			sched_yield_curr(h, p, now);
		} else if (sched_entity_remove(h, id, now) == 0) {
			unsigned nid;

			sched_entity_add(h, &ep, now, &nid);
		}
		break;
	}
}

static void child_loop(struct world *w, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (unsigned long n = 0;; n++) {
		child_op(w, &s);
		if (n == 16)
			__atomic_store_n(&w->sh->started, 1u, __ATOMIC_RELEASE);
	}
}

static unsigned nr_live(struct world *w)
{
	struct sched_entity_info ei;
	unsigned n = 0;

	for (unsigned id = 0; id < NSLOT; id++)
		n += sched_entity_get_info(&w->h, id, &ei) == 0;
	return n;
}

static void top_up(struct world *w)
{
	struct sched_entity_params ep = { 0 };
	unsigned id;

	for (unsigned n = nr_live(w); n < NLIVE; n++) {
		ep.create_pcpu = n % NP;
		CHECK_EQ(sched_entity_add(&w->h, &ep, wnow(w, 1000), &id), 0);
	}
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 400;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1, s = seed;
	struct world *w = world_new(NP, NSLOT, NULL);
	unsigned inside = 0, held = 0;
	char where[64];

	top_up(w);
	for (unsigned i = 0; i < iters && !test_failures; i++) {
		int status = 0;
		unsigned n, waited = 0;
		pid_t pid;

		/* every other child also delays dequeues (more states to cut) */
		sched_feature_set(w->d, i % 2 ? "DELAY_DEQUEUE" : "NO_DELAY_DEQUEUE");
		w->sh->started = 0;
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			child_loop(w, seed * 1000003 + i);
		while (!__atomic_load_n(&w->sh->started, __ATOMIC_ACQUIRE) && waited++ < 100000)
			sleep_us(20);
		sleep_us((unsigned)(xs(&s) % 1500));
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
		      WTERMSIG(status) == SIGKILL);
		n = locks_held_by(w, pid);
		inside += n > 0;
		held += n;
		snprintf(where, sizeof(where), "iteration %u (seed %" PRIu64 ")", i, seed);
		verify(w, where);
		top_up(w);
		wcheck(w, where, "after topping up");
	}
	world_free(w);
	/* a test of repairs only if deaths did land inside critical sections */
	if (!test_failures && iters >= 50 && inside < iters / 5) {
		fprintf(stderr, "only %u of %u kills inside a critical section\n", inside, iters);
		test_failures++;
	}
	printf("test_sched_repair_random: %u of %u kills inside a critical section "
	       "(%u locks taken over)\n", inside, iters, held);
	if (test_failures) {
		fprintf(stderr, "test_sched_repair_random: %d check(s) failed\n", test_failures);
		return 1;
	}
	return 0;
}
