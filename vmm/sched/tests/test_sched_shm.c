/*
 * Shared scheduling domain: create, join, refuse a mismatched or corrupt
 * file (one line naming it), the last member out removes the file, and a
 * member SIGKILLed at a random moment while it drives the scheduler is
 * cleaned out by the survivor, who keeps running without stalling.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "sched/internal.h"
#include "vmm/sched/sched_shm.h"
#include "common/test_check.h"

static char dir[64];
static char err[512];

static void kick_nop(void *o, unsigned p)
{
	(void)o;
	(void)p;
}
static const struct sched_host_ops ops = { .kick = kick_nop };

static struct sched_shm_params params(const char *name, const char *cpus)
{
	static struct host_cpu_list l[4];
	static int n;
	struct host_cpu_list *c = &l[n++ % 4];

	sched_opts_parse_cpulist(cpus, c);
	return (struct sched_shm_params){ .name = name, .dir = dir, .host_cpus = c,
					  .max_entities = 64, .join_timeout_ms = 300 };
}

static void test_private(void)
{
	struct sched_shm_params p = params(NULL, "0-1");
	struct sched_handle h;
	struct sched_shm s;

	CHECK(sched_shm_open(&s, &p, err, sizeof(err)) == 0);
	CHECK(s.fd == -1 && s.created && s.hdr->nr_pcpus == 2);
	CHECK(s.pcpus[0].host_cpu == 0 && s.pcpus[1].host_cpu == 1);
	CHECK(sched_handle_init(&h, s.dom, s.dom_len, &ops, NULL) == 0);
	CHECK(sched_nr_pcpus(&h) == 2 && sched_max_entities(&h) == 64);
	sched_shm_close(&s);
}

static void test_create_join(void)
{
	struct sched_shm_params p = params("t1", "2,5");
	struct sched_shm a, b;
	struct stat st;
	pid_t pid;
	int status;

	CHECK(sched_shm_open(&a, &p, err, sizeof(err)) == 0);
	CHECK(a.created && a.fd >= 0);
	CHECK(stat(a.path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(sched_shm_pcpu_of_host_cpu(&a, 5) == 1);
	/* a joiner in another process sees the same domain */
	pid = fork();
	if (pid == 0) {
		struct sched_shm c;
		struct sched_handle h;
		unsigned id;
		struct sched_entity_params ep = { .owner = (uint32_t)getpid() };

		if (sched_shm_open(&c, &p, err, sizeof(err)) || c.created ||
		    sched_handle_init(&h, c.dom, c.dom_len, &ops, NULL) ||
		    sched_entity_add(&h, &ep, 0, &id) || sched_shm_nr_members(&c) != 2)
			_exit(1);
		sched_entity_remove(&h, id, 0);
		sched_shm_close(&c);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(sched_shm_nr_members(&a) == 1);
	CHECK(access(a.path, F_OK) == 0);
	/* joining in-process works too (a second handle) */
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == 0);
	CHECK(!b.created && sched_shm_nr_members(&a) == 2);
	sched_shm_close(&b);
	CHECK(access(a.path, F_OK) == 0);
	sched_shm_close(&a);
	CHECK(access(a.path, F_OK) != 0);   /* last one out */
}

static void test_refuse(void)
{
	struct sched_shm_params p = params("t2", "0-1"), q = params("t2", "0-2");
	struct sched_shm a, b;
	char path[256];
	int fd;

	CHECK(sched_shm_open(&a, &p, err, sizeof(err)) == 0);
	/* other host CPUs */
	err[0] = 0;
	CHECK(sched_shm_open(&b, &q, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, a.path);
	CHECK_MSG(err, "--host-cpus");
	/* other ABI */
	a.hdr->abi = 99;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "ABI");
	a.hdr->abi = SCHED_SHM_ABI;
	/* corrupt sizes */
	a.hdr->total_size += 64;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "corrupt");
	a.hdr->total_size -= 64;
	/* bad magic */
	a.hdr->magic ^= 1;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "not a lagvisor scheduling domain");
	a.hdr->magic ^= 1;
	/* the scheduler's block of another shape than the header says: the
	 * binding would size its tables by one count, sched/ index by the
	 * other (found by vmm/fuzz/fuzz_sched_shm) */
	((struct sched_domain *)a.dom)->max_entities += 1;
	err[0] = 0;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, a.path);
	CHECK_MSG(err, "scheduler block");
	((struct sched_domain *)a.dom)->max_entities -= 1;
	((struct sched_domain *)a.dom)->rq_off += 64;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	((struct sched_domain *)a.dom)->rq_off -= 64;
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == 0);
	sched_shm_close(&b);
	sched_shm_close(&a);

	/* a file of garbage, a truncated file, a file others may read */
	CHECK(sched_shm_path(dir, "t3", path, sizeof(path)) == 0);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	CHECK(fd >= 0);
	for (int i = 0; i < 100; i++)
		CHECK(write(fd, "garbage garbage garbage garbage!", 32) == 32);
	p.name = "t3";
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, path);
	CHECK(ftruncate(fd, 10) == 0);
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -ETIMEDOUT);
	CHECK_MSG(err, path);
	CHECK(fchmod(fd, 0644) == 0);
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EACCES);
	CHECK_MSG(err, path);
	close(fd);
	unlink(path);
	/* bad names never reach the file system */
	p.name = "../etc";
	CHECK(sched_shm_open(&b, &p, err, sizeof(err)) == -EINVAL);
}

/*
 * Where the child may die. Default: anywhere outside a sched_* call (the
 * parent stops it with SIGSTOP and kills it only if it is not inside one).
 * --any-moment: really anywhere, including inside a critical section; see
 * the note in main.
 */
static bool any_moment;
static int *in_call;                   /* shared page: child is inside sched_* */

#define CALL(x) (__atomic_store_n(in_call, 1, __ATOMIC_SEQ_CST), (x), \
		 __atomic_store_n(in_call, 0, __ATOMIC_SEQ_CST))

/* The child: join, add entities, and drive the scheduler on both pCPUs
 * until killed. */
static void member_child(const struct sched_shm_params *p)
{
	struct sched_shm c;
	struct sched_handle h;
	struct sched_entity_params ep = { .owner = (uint32_t)getpid() };
	unsigned ids[6];

	if (sched_shm_open(&c, p, err, sizeof(err)) ||
	    sched_handle_init(&h, c.dom, c.dom_len, &ops, NULL))
		_exit(1);
	for (int i = 0; i < 6; i++)
		if (sched_entity_add(&h, &ep, clock_now_ns(), &ids[i]))
			_exit(1);
	for (unsigned k = 0;; k++) {
		unsigned id = ids[k % 6], pc = k % 2;
		struct sched_switch sw;

		sw.next = SCHED_NONE;
		CALL(sched_wake(&h, id, clock_now_ns(), SCHED_NONE, NULL));
		CALL(sched_wake_drain(&h, pc, clock_now_ns()));
		CALL(sched_schedule(&h, pc, clock_now_ns(), &sw));
		if (k % 3 == 0 && sw.next != SCHED_NONE)
			CALL(sched_block(&h, sw.next, clock_now_ns()));
		if (k % 7 == 0)
			CALL(sched_balance(&h, pc, clock_now_ns()));
	}
}

static void test_kill_loop(int rounds)
{
	struct sched_shm_params p = params("t4", "0-1");
	struct sched_entity_params ep = { .owner = (uint32_t)getpid() };
	struct sched_handle h;
	struct sched_shm a;
	unsigned mine[3];
	char msg[200];

	CHECK(sched_shm_open(&a, &p, err, sizeof(err)) == 0);
	CHECK(sched_handle_init(&h, a.dom, a.dom_len, &ops, NULL) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(sched_entity_add(&h, &ep, clock_now_ns(), &mine[i]) == 0);
	srand(1);
	for (int round = 0; round < rounds; round++) {
		pid_t pid = fork();
		uint64_t t0, until;
		int status, cleaned = 0;

		if (pid == 0)
			member_child(&p);
		/* once it has joined, run alongside it for a random while,
		 * then kill it */
		for (t0 = clock_now_ns(); sched_shm_nr_members(&a) < 2 && clock_now_ns() - t0 < 2000000000ull;)
			usleep(100);
		CHECK(sched_shm_nr_members(&a) == 2);
		until = clock_now_ns() + 1000000ull + (uint64_t)(rand() % 20) * 500000ull;
		for (unsigned k = 0; clock_now_ns() < until; k++) {
			struct sched_switch sw;
			unsigned pc = k % 2;

			sched_wake(&h, mine[k % 3], clock_now_ns(), SCHED_NONE, NULL);
			sched_wake_drain(&h, pc, clock_now_ns());
			sched_schedule(&h, pc, clock_now_ns(), &sw);
			if (k % 2 && sw.next != SCHED_NONE)
				sched_block(&h, sw.next, clock_now_ns());
		}
		for (;;) {
			if (any_moment)
				break;
			kill(pid, SIGSTOP);
			CHECK(waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status));
			if (!__atomic_load_n(in_call, __ATOMIC_SEQ_CST))
				break;
			kill(pid, SIGCONT);
			usleep((unsigned)(rand() % 50));
		}
		kill(pid, SIGKILL);
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		/* the survivor notices and cleans; bounded time = no stall */
		t0 = clock_now_ns();
		cleaned = sched_shm_reap(&a, &h, clock_now_ns(), NULL, NULL);
		CHECK(cleaned == 1);
		CHECK(clock_now_ns() - t0 < 1000000000ull);
		CHECK(sched_shm_nr_members(&a) == 1);
		for (unsigned e = 0; e < 64; e++) {
			struct sched_entity_info info;

			if (sched_entity_get_info(&h, e, &info) == 0 &&
			    info.state != SCHED_ES_FREE && info.owner == (uint32_t)pid) {
				fprintf(stderr, "round %d: entity %u of dead %d left\n",
					round, e, (int)pid);
				check_failures++;
			}
		}
		if (sched_domain_check(&h, msg, sizeof(msg))) {
			fprintf(stderr, "round %d: %s\n", round, msg);
			check_failures++;
		}
		/* and the survivor's own vCPUs still run on both pCPUs */
		for (int i = 0; i < 3; i++)
			sched_wake(&h, mine[i], clock_now_ns(), SCHED_NONE, NULL);
		for (unsigned pc = 0; pc < 2; pc++) {
			struct sched_switch sw;

			sched_wake_drain(&h, pc, clock_now_ns());
			CHECK(sched_schedule(&h, pc, clock_now_ns(), &sw) == 0);
			CHECK(sw.next != SCHED_NONE);
		}
		if (check_failures)
			break;
	}
	sched_shm_close(&a);
	CHECK(access(a.path, F_OK) != 0);
}

/*
 * Note (sched/, found by --any-moment): a member killed INSIDE a run-queue
 * critical section leaves that queue half-updated; sched/ rebuilds it when
 * the lock is taken over (sched/repair.c), and without that repair
 * sched_domain_check reported it within ~200 rounds (round 185 of 300 once). meson runs both
 * modes: kills outside sched_* calls, and kills anywhere.
 */
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;

	any_moment = argc > 2 && !strcmp(argv[2], "--any-moment");
	in_call = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (in_call == MAP_FAILED) {
		perror("mmap");
		return 1;
	}

	snprintf(dir, sizeof(dir), "/tmp/lv-shm-test-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_private();
	test_create_join();
	test_refuse();
	test_kill_loop(rounds);
	rmdir(dir);
	return check_report("test_sched_shm");
}
