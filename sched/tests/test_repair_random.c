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
 * With "threads", two parent threads run the same calls while the child
 * lives and again right after its death, so the takeovers and repairs
 * happen in whichever live thread reaches a dead lock first, racing the
 * other's operations on the other queues (the waker that moves a blocked
 * entity away while a repair scans the entity states). "threads-nokill"
 * is the same with a child that does nothing: no death, no repair.
 * These modes found the switch that started the new curr at a caller's stale
 * clock (eevdf.c eevdf_set_next_locked; test_eevdf.c test_stale_clock_switch):
 * entities charged twice for the same time reached lags of seconds, and
 * verify() then saw eligible entities wait past its 64 slices; and the
 * switch after a new-idle pull that put back a curr whose allowed set
 * another caller had narrowed (test_interleave.c). They take whatever
 * interleavings this host gives, so a pass proves little: "threads-nokill"
 * runs in the stress suite; "threads" not at all, as it needs kills to land
 * inside critical sections, which a loaded host does not always give.
 *
 * Usage: test_sched_repair_random [iterations] [seed] [threads|threads-nokill]
 *        (default 400 1, single-threaded parent)
 */
#include <pthread.h>
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

static void child_loop(struct world *w, uint64_t seed, bool idle)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	if (idle) {
		__atomic_store_n(&w->sh->started, 1u, __ATOMIC_RELEASE);
		for (;;)
			pause();
	}
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

struct runner {
	pthread_t th;
	struct world *w;
	uint64_t seed;
};

static int runners_stop;

static void *runner_main(void *arg)
{
	struct runner *r = arg;

	while (!__atomic_load_n(&runners_stop, __ATOMIC_RELAXED))
		child_op(r->w, &r->seed);
	return NULL;
}

/* Two live threads doing what the child does, for us microseconds. */
static void run_live_threads(struct world *w, uint64_t seed, unsigned us)
{
	struct runner r[2];

	__atomic_store_n(&runners_stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++) {
		r[i] = (struct runner){ .w = w, .seed = seed * 2654435761u + (uint64_t)i + 1 };
		if (pthread_create(&r[i].th, NULL, runner_main, &r[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	sleep_us(us);
	__atomic_store_n(&runners_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i].th, NULL);
}

int main(int argc, char **argv)
{
	unsigned iters = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 400;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1, s = seed;
	bool nokill = argc > 3 && !strcmp(argv[3], "threads-nokill");
	bool threads = nokill || (argc > 3 && !strcmp(argv[3], "threads"));

	struct world *w = world_new(NP, NSLOT, NULL);
	unsigned inside = 0, held = 0;
	char where[64];

	top_up(w);
	for (unsigned i = 0; i < iters && !check_failures; i++) {
		int status = 0;
		unsigned n, waited = 0;
		pid_t pid;

		/* children also delay dequeues and clear ttwu_pending early in
		 * turn (more kinds of half-done state to cut) */
		sched_feature_set(w->d, i % 2 ? "DELAY_DEQUEUE" : "NO_DELAY_DEQUEUE");
		sched_feature_set(w->d, i % 4 >= 2 ? "TTWU_PENDING_EARLY_CLEAR" :
						     "NO_TTWU_PENDING_EARLY_CLEAR");
		w->sh->started = 0;
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0)
			child_loop(w, seed * 1000003 + i, nokill);
		while (!__atomic_load_n(&w->sh->started, __ATOMIC_ACQUIRE) && waited++ < 100000)
			sleep_us(20);
		/* forked first: a child of a threaded process inherits one thread */
		if (threads)
			run_live_threads(w, s + i, (unsigned)(xs(&s) % 1500));
		else
			sleep_us((unsigned)(xs(&s) % 1500));
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
		      WTERMSIG(status) == SIGKILL);
		n = locks_held_by(w, pid);
		inside += n > 0;
		held += n;
		if (threads)                   /* they reach the dead locks first */
			run_live_threads(w, s + i + 7, 50 + (unsigned)(xs(&s) % 500));
		snprintf(where, sizeof(where), "iteration %u (seed %" PRIu64 ")", i, seed);
		verify(w, where);
		top_up(w);
		wcheck(w, where, "after topping up");
	}
	world_free(w);
	/* a test of repairs only if deaths did land inside critical sections */
	if (!check_failures && !nokill && iters >= 50 && inside < iters / 5) {
		fprintf(stderr, "only %u of %u kills inside a critical section\n", inside, iters);
		check_failures++;
	}
	printf("test_sched_repair_random: %u of %u kills inside a critical section "
	       "(%u locks taken over)%s\n", inside, iters, held,
	       threads ? ", live threads repairing" : "");
	if (check_failures) {
		fprintf(stderr, "test_sched_repair_random: %d check(s) failed\n", check_failures);
		return 1;
	}
	return 0;
}
