/*
 * Concurrency stress: one thread per pCPU acts as that pCPU (schedule, tick,
 * block its curr, drain its wake list, balance, yield), waker threads wake,
 * migrate, reweight, change idle class/slice/allowed sets and add/remove
 * entities, and a checker thread runs sched_domain_check throughout. Must be
 * clean under ThreadSanitizer (scripts/test runs it in build-tsan). Each
 * thread stops after its op budget or after the time budget, whichever is
 * first, so a slow sanitizer build stays well under a minute.
 *
 * Usage: test_sched_stress [seconds] (default 4).
 */
#include <pthread.h>
#include <time.h>

#include "harness.h"

#define NP 4
#define NE 48
#define NDYN 8            /* ids >= NE - NDYN are removed/re-added */
#define OPS_PER_THREAD 100000000L

static struct tdom *T;
static uint64_t clock_ns = 1000;
static int stop;
static double deadline_s;
static unsigned long nr_ops, nr_checks, nr_wakes, nr_switch, nr_listed;
static int check_failed;
static char check_msg[256];

static void kick_cb(void *o, unsigned p) { (void)o; (void)p; }
static void arm_cb(void *o, unsigned p, uint64_t t) { (void)o; (void)p; (void)t; }

static const struct sched_host_ops stress_ops = {
	.kick = kick_cb,
	.arm_timer = arm_cb,
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t tick_clock(void)
{
	return __atomic_add_fetch(&clock_ns, 1 + 2000, __ATOMIC_RELAXED);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static bool done(long i)
{
	if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
		return true;
	if ((i & 1023) == 0 && now_s() > deadline_s) {
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}

static int errors(int r, const char *what)
{
	/* these are legitimate answers to racing requests */
	if (r >= 0 || r == -EALREADY || r == -ENOENT || r == -EBUSY || r == -EINVAL ||
	    r == -ENOSPC)
		return 0;
	fprintf(stderr, "%s: unexpected %d\n", what, r);
	__atomic_store_n(&check_failed, 1, __ATOMIC_RELAXED);
	return 1;
}

static void *pcpu_thread(void *arg)
{
	struct sched_handle *h = &T->h;
	unsigned p = (unsigned)(uintptr_t)arg;
	uint64_t s = 0x1234567ull + p;
	long i;

	for (i = 0; i < OPS_PER_THREAD && !done(i); i++) {
		uint64_t now = tick_clock();
		struct sched_pcpu_info pi;
		struct sched_switch sw;
		unsigned k = xs(&s) % 100;

		if (sched_pcpu_get_info(h, p, &pi))
			break;
		if (k < 30 || pi.need_resched || pi.curr == SCHED_NONE) {
			/* an idle pCPU was kicked for its wake list: drain, then pick */
			if (pi.nr_waking)
				errors(sched_wake_drain(h, p, now), "drain");
			errors(sched_schedule(h, p, now, &sw), "schedule");
			if (sw.next != sw.prev)
				__atomic_fetch_add(&nr_switch, 1, __ATOMIC_RELAXED);
			if (sw.next == SCHED_NONE)
				sched_yield();         /* POSIX: idle, let the wakers run */
		} else if (k < 65) {
			errors(sched_tick(h, p, now), "tick");
		} else if (k < 75) {
			if (pi.curr != SCHED_NONE)
				errors(sched_block(h, pi.curr, now), "block");
		} else if (k < 90) {
			errors(sched_wake_drain(h, p, now), "drain");
		} else if (k < 95) {
			errors(sched_balance(h, p, now), "balance");
		} else {
			errors(sched_yield_curr(h, p, now), "yield");
		}
		__atomic_fetch_add(&nr_ops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *waker_thread(void *arg)
{
	struct sched_handle *h = &T->h;
	uint64_t s = 0xabcdefull + (uintptr_t)arg;
	long i;

	for (i = 0; i < OPS_PER_THREAD && !done(i); i++) {
		uint64_t now = tick_clock();
		unsigned id = (unsigned)(xs(&s) % NE), k = (unsigned)(xs(&s) % 100);
		unsigned p = (unsigned)(xs(&s) % NP);
		struct sched_wake_result wr;

		if (k < 50) {
			int r = sched_wake(h, id, now, xs(&s) % 2 ? p : SCHED_NONE, &wr);
			errors(r, "wake");
			if (!r && wr.how != SCHED_WAKE_ALREADY)
				__atomic_fetch_add(&nr_wakes, 1, __ATOMIC_RELAXED);
			if (!r && wr.how == SCHED_WAKE_LISTED)
				__atomic_fetch_add(&nr_listed, 1, __ATOMIC_RELAXED);
		} else if (k < 60) {
			errors(sched_migrate(h, id, p, now), "migrate");
		} else if (k < 70) {
			errors(sched_set_nice(h, id, (int)(xs(&s) % 40) - 20, now), "nice");
		} else if (k < 74) {
			errors(sched_set_idle_class(h, id, xs(&s) % 4 == 0, now), "idle");
		} else if (k < 78) {
			errors(sched_set_slice(h, id, xs(&s) % 2 ? 0 : 500000 + xs(&s) % 5000000, now),
			       "slice");
		} else if (k < 86) {
			struct sched_cpuset cs;

			sched_cpuset_zero(&cs);
			cs.bits[0] = xs(&s) % 3 ? (1u << NP) - 1 : 1 + xs(&s) % ((1u << NP) - 1);
			errors(sched_set_allowed(h, id, &cs, now), "allowed");
		} else if (k < 93) {
			unsigned dyn = NE - NDYN + (unsigned)(xs(&s) % NDYN);
			errors(sched_entity_remove(h, dyn, now), "remove");
		} else if (k == 99) {
			/* flags are per domain and change at run time */
			static const char *const f[] = { "DELAY_DEQUEUE", "NO_DELAY_DEQUEUE",
							  "NO_RUN_TO_PARITY", "RUN_TO_PARITY",
							  "NO_TTWU_PENDING", "TTWU_PENDING",
							  "NO_PREEMPT_ELIGIBLE", "PREEMPT_ELIGIBLE" };
			errors(sched_feature_set(h->dom, f[xs(&s) % 8]), "feature");
		} else {
			struct sched_entity_params ep = { .nice = (int)(xs(&s) % 40) - 20,
							  .create_pcpu = p, .owner = 2 };
			unsigned nid;

			errors(sched_entity_add(h, &ep, now, &nid), "add");
		}
		__atomic_fetch_add(&nr_ops, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *checker_thread(void *arg)
{
	char msg[256];
	long i;

	(void)arg;
	for (i = 0; !done(0); i++) {
		if (sched_domain_check(&T->h, msg, sizeof(msg))) {
			if (!__atomic_exchange_n(&check_failed, 1, __ATOMIC_RELAXED))
				snprintf(check_msg, sizeof(check_msg), "%s", msg);
		}
		__atomic_fetch_add(&nr_checks, 1, __ATOMIC_RELAXED);
		/* the check holds every rq lock: leave the others room */
		nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 4.0;
	pthread_t th[NP + 3];
	unsigned n = 0, ids[NE];
	char msg[256];

	if (secs <= 0) {
		fprintf(stderr, "usage: %s [seconds > 0]\n", argv[0]);
		return 2;
	}
	T = tdom_new(NP, NE, NULL);
	if (sched_handle_init(&T->h, T->mem, T->len, &stress_ops, NULL))
		return 1;
	for (unsigned i = 0; i < NE; i++) {
		struct sched_entity_params ep = { .nice = (int)(i % 7) - 3, .create_pcpu = i % NP,
						  .idle_class = i % 11 == 0, .owner = 1 };
		if (sched_entity_add(&T->h, &ep, 0, &ids[i]))
			return 1;
	}
	deadline_s = now_s() + secs;
	for (unsigned p = 0; p < NP; p++)
		pthread_create(&th[n++], NULL, pcpu_thread, (void *)(uintptr_t)p);
	pthread_create(&th[n++], NULL, waker_thread, (void *)1);
	pthread_create(&th[n++], NULL, waker_thread, (void *)2);
	pthread_create(&th[n], NULL, checker_thread, NULL);
	for (unsigned i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);   /* workers may end by budget */
	pthread_join(th[n], NULL);

	/* quiesce: drain, then everything must still be consistent, and a
	 * dead member's entities can be removed */
	for (unsigned p = 0; p < NP; p++)
		sched_wake_drain(&T->h, p, tick_clock());
	if (sched_domain_check(&T->h, msg, sizeof(msg))) {
		fprintf(stderr, "final check: %s\n", msg);
		return 1;
	}
	int removed = sched_remove_owner(&T->h, 1, tick_clock());
	if (removed < NE - NDYN || sched_domain_check(&T->h, msg, sizeof(msg))) {
		fprintf(stderr, "remove_owner: %d removed, %s\n", removed, msg);
		return 1;
	}
	printf("stress: %lu ops, %lu wakes (%lu listed), %lu switches, %lu checks\n",
	       nr_ops, nr_wakes, nr_listed, nr_switch, nr_checks);
	if (check_failed) {
		fprintf(stderr, "stress: invariant broken: %s\n", check_msg);
		return 1;
	}
	if (!nr_wakes || !nr_switch || !nr_checks) {
		fprintf(stderr, "stress: did no work\n");
		return 1;
	}
	tdom_free(T);
	return 0;
}
