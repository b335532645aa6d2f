/*
 * The hand-off pattern of a scheduling domain without a VM, for
 * scripts/host-share: N threads on host CPU 0 pass a token round, each
 * spinning SLICE_US before it wakes the next and waits (the futex wake
 * comes before the wait, so the successor is runnable while its
 * predecessor still runs, as with vCPU threads); optionally one more
 * thread of the same process on CPU 1 spins SIDE_US every 10 ms, the load
 * a VM's main and I/O threads put elsewhere. Runs SECONDS, then exits.
 *
 *   handoff N SLICE_US SECONDS SIDE_US
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int token, nthreads;
static int64_t slice_ns, side_ns;

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void spin_ns(int64_t ns)
{
	int64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static void *holder(void *arg)
{
	int me = (int)(intptr_t)arg;

	if (pin(0))
		perror("handoff: pin to CPU 0");
	for (;;) {
		int t;

		while ((t = __atomic_load_n(&token, __ATOMIC_SEQ_CST)) != me)
			syscall(SYS_futex, &token, FUTEX_WAIT_PRIVATE, t, NULL, NULL, 0);
		spin_ns(slice_ns);
		__atomic_store_n(&token, (me + 1) % nthreads, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &token, FUTEX_WAKE_PRIVATE, nthreads, NULL, NULL, 0);
	}
	return NULL;
}

static void *side(void *arg)
{
	(void)arg;
	if (pin(1))
		perror("handoff: pin to CPU 1");
	for (;;) {
		spin_ns(side_ns);
		usleep(10000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 5 || (nthreads = atoi(argv[1])) < 2) {
		fprintf(stderr, "usage: handoff N(>=2) SLICE_US SECONDS SIDE_US\n");
		return 2;
	}
	slice_ns = atoll(argv[2]) * 1000;
	side_ns = atoll(argv[4]) * 1000;
	if (pin(0))
		perror("handoff: pin to CPU 0");
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t, NULL, holder, (void *)(intptr_t)i)) {
			fprintf(stderr, "handoff: pthread_create failed\n");
			return 1;
		}
	if (side_ns > 0 && pthread_create(&t, NULL, side, NULL)) {
		fprintf(stderr, "handoff: pthread_create failed\n");
		return 1;
	}
	sleep((unsigned)atoi(argv[3]));
	return 0;
}
