/*
 * Concurrent callers at one chosen interleaving: the test holds a run-queue
 * lock itself (sched/internal.h) so that a second thread stops exactly at
 * that lock inside a sched_* call, does other calls meanwhile, then lets
 * it go on.
 *
 * newidle_forbidden_curr: sched_schedule on an empty pCPU unlocks its queue
 * for the new-idle pull. Meanwhile other calls start X there and narrow X's
 * allowed set to the other pCPU (a running X moves at its next switch).
 * Back under the lock, the switch must move X away, not put it back in the
 * tree of a pCPU it may no longer run on (or keep it running there).
 *
 * Usage: test_sched_interleave
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "sched/internal.h"
#include "harness.h"

struct caller {
	struct tdom *t;
	unsigned pcpu;
	uint64_t now;
	struct sched_switch sw;
	int r;
	int tid;                       /* set before the call */
};

static void *schedule_main(void *arg)
{
	struct caller *c = arg;

	__atomic_store_n(&c->tid, (int)gettid(), __ATOMIC_RELEASE);
	c->r = sched_schedule(&c->t->h, c->pcpu, c->now, &c->sw);
	return NULL;
}

/* True once thread tid sleeps (it can only sleep on a sched lock here). */
static bool wait_asleep(int tid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (int i = 0; i < 10000; i++) {
		FILE *f = fopen(path, "r");
		char *p = NULL;

		if (f) {
			p = fgets(buf, sizeof(buf), f);
			fclose(f);
		}
		p = p ? strrchr(buf, ')') : NULL;
		if (p && p[1] == ' ' && p[2] == 'S')
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return false;
}

static void newidle_forbidden_curr(void)
{
	struct tdom *t = tdom_new(2, 8, NULL);
	struct sched_domain *d = t->h.dom;
	unsigned x = tdom_add(t, 1, 0, false), y = tdom_add(t, 0, 0, false);
	unsigned z = tdom_add(t, 0, 0, false), v = tdom_add(t, 1, 0, false);
	struct caller c = { .t = t, .pcpu = 1, .now = 10 * MS };
	struct sched_cpuset only0;
	struct sched_entity_info i;
	pthread_t th;
	int tid;

	/* pCPU 0 runs y with z waiting: the pull source; pCPU 1 is empty
	 * (z's wake picks idle pCPU 1: move it back) */
	CHECK_EQ(sched_wake(&t->h, y, 0, 0, NULL), 0);
	tsched(t, 0, 0, y);
	CHECK_EQ(sched_wake(&t->h, z, 0, 0, NULL), 0);
	CHECK(sched_wake_drain(&t->h, 1, 0) >= 0);
	CHECK_EQ(sched_migrate(&t->h, z, 0, 0), 0);
	CHECK_EQ(tpinfo(t, 0).nr_queued, 2);
	CHECK_EQ(tpinfo(t, 1).nr_queued, 0);
	/* the caller for pCPU 1 finds it empty and stops at queue 0's lock,
	 * holding none (sched_rq_lock2 takes the lower index first) */
	CHECK_EQ(sched_lock(&dom_rq(d, 0)->lock), 0);
	if (pthread_create(&th, NULL, schedule_main, &c)) {
		fprintf(stderr, "pthread_create failed\n");
		exit(1);
	}
	while (!(tid = __atomic_load_n(&c.tid, __ATOMIC_ACQUIRE)))
		sched_yield();
	if (!wait_asleep(tid)) {
		fprintf(stderr, "%s: the caller never blocked\n", __func__);
		check_failures++;
	}
	/* meanwhile: x starts on pCPU 1 with v queued, may then run on
	 * pCPU 0 only, and yields (no slice protection left to keep it) */
	CHECK_EQ(sched_wake(&t->h, x, 1 * MS, 1, NULL), 0);
	CHECK_EQ(sched_wake(&t->h, v, 1 * MS, 1, NULL), 0);
	tsched(t, 1, 1 * MS, x);
	sched_cpuset_zero(&only0);
	sched_cpuset_set(&only0, 0);
	CHECK_EQ(sched_set_allowed(&t->h, x, &only0, 1 * MS), 0);
	CHECK_EQ(sched_yield_curr(&t->h, 1, 1 * MS), 0);
	sched_unlock(&dom_rq(d, 0)->lock);
	pthread_join(th, NULL);

	/* x yielded: v runs on pCPU 1, x waits on pCPU 0 */
	CHECK_EQ(c.r, 0);
	CHECK_EQ(c.sw.next, v);
	i = tinfo(t, x);
	CHECK_EQ(i.pcpu, 0);
	CHECK_EQ(i.state, SCHED_ES_QUEUED);
	tcheck(t, __func__);
	tdom_free(t);
}

int main(void)
{
	newidle_forbidden_curr();
	return check_report("test_interleave");
}
