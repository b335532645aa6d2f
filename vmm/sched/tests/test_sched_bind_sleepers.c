/*
 * A blocked vCPU's own deadline is kept by the holder of its pCPU
 * (vmm/sched/sched_bind_sleepers.c), not only by its own thread's futex timeout.
 *
 * One pCPU, two fake vCPU threads on its host CPU: S halts with a deadline
 * 20 ms ahead and hands the pCPU to H, which spins in "guest mode" as a
 * SCHED_FIFO thread. The host never runs S's thread while H spins there,
 * so S's futex timeout alone cannot wake it: S runs again only if H, the
 * holder, wakes it at its deadline (H's timer fires, S is made runnable in
 * sched/ and preempts H, H parks and the host CPU is S's). Without that,
 * S's thread waits for the host's real-time throttling (up to ~950 ms of
 * every second): each of ROUNDS halts must end within LATE_MAX_NS of its
 * deadline. Needs permission for SCHED_FIFO (root); else SKIP.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/test_check.h"
#include "vmm/sched/sched_bind.h"

#define KICK_SIG SIGUSR1
#define ROUNDS 3
#define SLEEP_NS 20000000ull
#define LATE_MAX_NS 100000000ull

static struct sched_shm shm;
static struct sched_bind bind;
static __thread volatile sig_atomic_t got_sig;
static volatile int stop;

struct fake {
	struct sched_bind_vcpu v;
	pthread_t th;
};

static struct fake sleeper, hog;
static uint64_t late_ns[ROUNDS];
static int fifo_err;

static void on_sig(int s)
{
	(void)s;
	got_sig = 1;
}

static void kick(void *opaque)
{
	pthread_kill(((struct fake *)opaque)->th, KICK_SIG);
}

static void *hog_thread(void *arg)
{
	struct fake *f = arg;
	struct sched_param sp = { .sched_priority = 1 };

	CHECK(sched_bind_vcpu_thread_init(&f->v) == 0);
	sched_bind_vcpu_wake(&bind, &f->v, NULL);
	if (sched_bind_vcpu_wait(&f->v))
		return NULL;
	/* pinned by now (the grant pins it to the pCPU's host CPU) */
	fifo_err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	while (!stop) {
		if (got_sig) {
			got_sig = 0;
			sched_bind_vcpu_check(&f->v);
		}
	}
	sched_bind_vcpu_exit(&f->v);
	return NULL;
}

static void *sleeper_thread(void *arg)
{
	struct fake *f = arg;

	CHECK(sched_bind_vcpu_thread_init(&f->v) == 0);
	sched_bind_vcpu_wake(&bind, &f->v, NULL);
	if (sched_bind_vcpu_wait(&f->v))
		return NULL;
	/* the hog's first grant: its wake queues it behind us */
	pthread_create(&hog.th, NULL, hog_thread, &hog);
	usleep(20000);
	for (int i = 0; i < ROUNDS && !fifo_err; i++) {
		uint64_t dl = clock_now_ns() + SLEEP_NS;
		int r;

		do {
			r = sched_bind_vcpu_block(&f->v, sched_bind_vcpu_prepare_block(&f->v), dl);
		} while (r == SCHED_BIND_WOKEN && clock_now_ns() < dl);
		late_ns[i] = clock_now_ns() - dl;
	}
	stop = 1;
	sched_bind_vcpu_exit(&f->v);
	return NULL;
}

static int add(struct fake *f, unsigned idx)
{
	struct sched_entity_params ep = { .weight = 0 };

	memset(f, 0, sizeof(*f));
	return sched_bind_vcpu_add(&bind, &f->v, &ep, idx, kick, f);
}

int main(void)
{
	struct host_cpu_list cpus;
	struct sched_shm_params p = { .host_cpus = &cpus, .max_entities = 8 };
	struct sched_param sp = { .sched_priority = 1 };
	struct sigaction sa;
	char err[256] = "";
	cpu_set_t set;
	int c;

	/* a FIFO thread is allowed here at all? (probe on ourselves, undone) */
	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		printf("SKIP: SCHED_FIFO not permitted (%s); the test needs it to keep "
		       "the sleeper's thread off its host CPU\n", strerror(errno));
		return 77;
	}
	sp.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &sp);
	memset(&cpus, 0, sizeof(cpus));
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	for (c = 0; c < CPU_SETSIZE && !CPU_ISSET(c, &set); c++)
		;
	cpus.bits[c / 64] |= 1ull << (c % 64);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(KICK_SIG, &sa, NULL);
	if (sched_shm_open(&shm, &p, err, sizeof(err)) || sched_bind_init(&bind, &shm, KICK_SIG)) {
		fprintf(stderr, "setup: %s\n", err);
		return 1;
	}
	CHECK(add(&sleeper, 0) == 0);
	CHECK(add(&hog, 1) == 0);
	pthread_create(&sleeper.th, NULL, sleeper_thread, &sleeper);
	pthread_join(sleeper.th, NULL);
	pthread_join(hog.th, NULL);
	CHECK(fifo_err == 0);
	for (int i = 0; i < ROUNDS; i++) {
		printf("halt %d: woke %.3f ms after its deadline (limit %.0f ms)\n", i,
		       (double)late_ns[i] / 1e6, (double)LATE_MAX_NS / 1e6);
		CHECK(late_ns[i] <= LATE_MAX_NS);
	}
	sched_bind_destroy(&bind);
	sched_shm_close(&shm);
	return check_report("test_sched_bind_sleepers");
}
