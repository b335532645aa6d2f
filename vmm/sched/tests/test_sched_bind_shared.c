/*
 * Two processes in one shared domain through the binding: the parent's
 * vCPUs pass tokens (wake/halt) while a child member's hog vCPUs compete
 * for the same 2 pCPUs; the child is SIGKILLed at a random moment (often
 * while one of its threads holds a pCPU). The survivor must notice by
 * itself (no explicit reap call here), take back the pCPUs the dead member
 * held, and keep passing tokens: a stall of 2 s fails, and so does a dead
 * member still listed 2 s after its death. Also: exclusion per pCPU within
 * the parent (the child's threads cannot be watched from here).
 * Usage: test_sched_bind_shared [rounds]   (default 10)
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "vmm/sched/sched_bind.h"
#include "common/test_check.h"

#define KICK_SIG SIGUSR1
#define NR 3

struct fake {
	struct sched_bind_vcpu v;
	pthread_t th;
	int idx;
	unsigned seed;
	uint32_t msgs;
};

static struct sched_shm shm;
static struct sched_bind bind;
static struct fake fakes[NR];
static volatile int stop;
static uint64_t passes;
static int in_guest[2], violations;
static __thread volatile sig_atomic_t got_sig;

static void on_sig(int s)
{
	(void)s;
	got_sig = 1;
}

static void kick(void *opaque)
{
	pthread_kill(((struct fake *)opaque)->th, KICK_SIG);
}

static void run_guest(struct fake *f, uint64_t ns, bool watch)
{
	uint64_t end = clock_now_ns() + ns;
	int p = (int)f->v.pcpu;

	if (watch && __atomic_fetch_add(&in_guest[p], 1, __ATOMIC_SEQ_CST))
		__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
	while (clock_now_ns() < end && !stop) {
		if (got_sig) {
			got_sig = 0;
			if (watch)
				__atomic_fetch_sub(&in_guest[p], 1, __ATOMIC_SEQ_CST);
			sched_bind_vcpu_check(&f->v);
			p = (int)f->v.pcpu;
			if (watch && __atomic_fetch_add(&in_guest[p], 1, __ATOMIC_SEQ_CST))
				__atomic_fetch_add(&violations, 1, __ATOMIC_RELAXED);
		}
	}
	if (watch)
		__atomic_fetch_sub(&in_guest[p], 1, __ATOMIC_SEQ_CST);
	got_sig = 0;
	sched_bind_vcpu_check(&f->v);
}

static void *ring_thread(void *arg)
{
	struct fake *f = arg;

	sched_bind_vcpu_thread_init(&f->v);
	sched_bind_vcpu_wake(&bind, &f->v, NULL);
	sched_bind_vcpu_wait(&f->v);
	while (!stop) {
		uint32_t tok = sched_bind_vcpu_prepare_block(&f->v);
		unsigned t;

		if (__atomic_load_n(&f->msgs, __ATOMIC_SEQ_CST) == 0) {
			sched_bind_vcpu_block(&f->v, tok, 0);
			continue;
		}
		__atomic_fetch_sub(&f->msgs, 1, __ATOMIC_SEQ_CST);
		run_guest(f, (uint64_t)(rand_r(&f->seed) % 50) * 1000, true);
		t = ((unsigned)f->idx + 1 + (unsigned)rand_r(&f->seed) % (NR - 1)) % NR;
		__atomic_fetch_add(&fakes[t].msgs, 1, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&passes, 1, __ATOMIC_RELAXED);
		sched_bind_vcpu_wake(&bind, &fakes[t].v, &f->v);
		sched_bind_vcpu_check(&f->v);
	}
	sched_bind_vcpu_exit(&f->v);
	return NULL;
}

static void *hog_thread(void *arg)
{
	struct fake *f = arg;

	sched_bind_vcpu_thread_init(&f->v);
	sched_bind_vcpu_wake(&bind, &f->v, NULL);
	sched_bind_vcpu_wait(&f->v);
	for (;;) {
		/* hog, with short halts so it also blocks and wakes */
		uint32_t tok;

		run_guest(f, 2000000, false);
		tok = sched_bind_vcpu_prepare_block(&f->v);
		sched_bind_vcpu_block(&f->v, tok, clock_now_ns() + 300000);
	}
	return NULL;
}

static void setup(const struct sched_shm_params *p)
{
	char err[512];
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(KICK_SIG, &sa, NULL);
	if (sched_shm_open(&shm, p, err, sizeof(err)) || sched_bind_init(&bind, &shm, KICK_SIG)) {
		fprintf(stderr, "setup: %s\n", err);
		_exit(1);
	}
}

static void child(const struct sched_shm_params *p)
{
	struct sched_entity_params ep = { 0 };

	setup(p);
	for (int i = 0; i < 2; i++) {
		fakes[i].idx = i;
		if (sched_bind_vcpu_add(&bind, &fakes[i].v, &ep, (unsigned)i, kick, &fakes[i]))
			_exit(1);
		pthread_create(&fakes[i].th, NULL, hog_thread, &fakes[i]);
	}
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 10;
	char dir[] = "/tmp/lv-bindsh-XXXXXX";
	struct host_cpu_list cpus;
	struct sched_shm_params p = { .name = "bs", .host_cpus = &cpus, .max_entities = 16 };
	struct sched_entity_params ep = { 0 };
	cpu_set_t set;
	unsigned n = 0;

	memset(&cpus, 0, sizeof(cpus));
	sched_getaffinity(0, sizeof(set), &set);
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &set)) {
			cpus.bits[c / 64] |= 1ull << (c % 64);
			n++;
		}
	if (n < 2) {
		printf("SKIP: needs 2 CPUs in the affinity mask\n");
		return 77;
	}
	if (!mkdtemp(dir))
		return 1;
	p.dir = dir;
	setup(&p);
	for (int i = 0; i < NR; i++) {
		fakes[i].idx = i;
		fakes[i].seed = (unsigned)i + 1;
		fakes[i].msgs = i == 0;
		CHECK(sched_bind_vcpu_add(&bind, &fakes[i].v, &ep, (unsigned)i, kick, &fakes[i]) == 0);
	}
	for (int i = 0; i < NR; i++)
		pthread_create(&fakes[i].th, NULL, ring_thread, &fakes[i]);
	srand(7);
	for (int r = 0; r < rounds && !check_failures; r++) {
		pid_t pid = fork();
		uint64_t t0, p0;
		int st;

		if (pid == 0)
			child(&p);
		for (t0 = clock_now_ns(); sched_shm_nr_members(&shm) < 2 &&
		     clock_now_ns() - t0 < 2000000000ull;)
			usleep(1000);
		usleep(50000 + (unsigned)(rand() % 200) * 1000);
		p0 = __atomic_load_n(&passes, __ATOMIC_RELAXED);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		/* noticed and cleaned without help, and tokens keep moving */
		for (t0 = clock_now_ns(); sched_shm_nr_members(&shm) > 1 &&
		     clock_now_ns() - t0 < 2000000000ull;)
			usleep(1000);
		if (sched_shm_nr_members(&shm) > 1) {
			fprintf(stderr, "round %d: dead member still listed after 2 s\n", r);
			check_failures++;
		}
		for (t0 = clock_now_ns(); __atomic_load_n(&passes, __ATOMIC_RELAXED) < p0 + 200 &&
		     clock_now_ns() - t0 < 2000000000ull;)
			usleep(1000);
		if (__atomic_load_n(&passes, __ATOMIC_RELAXED) < p0 + 200) {
			fprintf(stderr, "round %d: stalled after the kill (%llu passes)\n", r,
				(unsigned long long)(__atomic_load_n(&passes, __ATOMIC_RELAXED) - p0));
			for (unsigned q = 0; q < 2; q++)
				fprintf(stderr, "  pCPU %u released %x kicked %u\n", q,
					shm.pcpus[q].released, shm.pcpus[q].kicked);
			check_failures++;
		}
	}
	printf("shared: %d kills, %llu token passes, exclusion violations %d\n", rounds,
	       (unsigned long long)passes, violations);
	CHECK(violations == 0);
	stop = 1;
	for (int k = 0; k < 20; k++)
		for (int i = 0; i < NR; i++) {
			__atomic_fetch_add(&fakes[i].msgs, 1, __ATOMIC_SEQ_CST);
			sched_bind_vcpu_wake(&bind, &fakes[i].v, NULL);
		}
	for (int i = 0; i < NR; i++)
		pthread_join(fakes[i].th, NULL);
	sched_bind_destroy(&bind);
	sched_shm_close(&shm);
	rmdir(dir);
	return check_report("test_sched_bind_shared");
}
