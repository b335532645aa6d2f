/*
 * The domain lives in shared memory: map one memfd at two addresses, drive
 * the scheduler through both handles, and check each sees the other's work
 * (no pointers inside the block). Then a child process dies holding a run
 * queue lock: the next locker must take the lock over (EOWNERDEAD ->
 * consistent) instead of hanging or failing.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/internal.h"
#include "harness.h"

int main(void)
{
	size_t len = sched_domain_size(2, 8);
	struct sched_handle a, b;
	struct fake_host ha = { 0 }, hb = { 0 };
	struct sched_entity_params ep = { .create_pcpu = 0 };
	struct sched_wake_result wr;
	struct sched_switch sw;
	unsigned x, y;
	char msg[200];
	void *m1, *m2;
	int fd, status;
	pid_t pid;

	fd = memfd_create("sched-test", 0);
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		perror("memfd");
		return 1;
	}
	m1 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	m2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m1 == MAP_FAILED || m2 == MAP_FAILED || m1 == m2) {
		perror("mmap");
		return 1;
	}
	CHECK_EQ(sched_domain_init(m1, len, 2, 8, NULL), 0);
	CHECK_EQ(sched_handle_init(&a, m1, len, &fake_ops, &ha), 0);
	CHECK_EQ(sched_handle_init(&b, m2, len, &fake_ops, &hb), 0);
	CHECK_EQ(sched_handle_init(&b, m2, len - 1, &fake_ops, &hb), -EINVAL);
	CHECK_EQ(sched_handle_init(&b, m2, len, &(struct sched_host_ops){ 0 }, &hb), -EINVAL);
	CHECK_EQ(sched_handle_init(&b, m2, len, &fake_ops, &hb), 0);
	/* a block whose shape fields disagree is refused (a corrupt domain
	 * file: found by vmm/fuzz/fuzz_sched_shm) */
	{
		struct sched_handle c;
		void *copy = aligned_alloc(64, (len + 63) / 64 * 64);
		struct sched_domain *d = copy;

		memcpy(copy, m1, len);
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), 0);
		d->nr_pcpus = 1;
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), -EINVAL);
		d->nr_pcpus = 2;
		d->max_entities = 9;
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), -EINVAL);
		d->max_entities = 8;
		d->ent_off += 64;
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), -EINVAL);
		d->ent_off -= 64;
		d->rq_off = 0;
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), -EINVAL);
		memcpy(copy, m1, len);
		d->size -= 1;
		CHECK_EQ(sched_handle_init(&c, copy, len, &fake_ops, &hb), -EINVAL);
		free(copy);
	}

	/* member A adds and runs x on pCPU 0; member B adds y and wakes it:
	 * pCPU 1 is idle, so y is listed there and B's host is kicked */
	CHECK_EQ(sched_entity_add(&a, &ep, 0, &x), 0);
	CHECK_EQ(sched_wake(&a, x, 0, 0, &wr), 0);
	CHECK_EQ(sched_schedule(&a, 0, 0, &sw), 0);
	CHECK_EQ(sw.next, x);
	CHECK_EQ(sched_entity_add(&b, &ep, 0, &y), 0);
	CHECK(y != x);
	unsigned a_kicks = ha.nr_kicks;
	CHECK_EQ(sched_wake(&b, y, 100, 0, &wr), 0);
	CHECK_EQ(wr.how, SCHED_WAKE_LISTED);
	CHECK_EQ(wr.pcpu, 1);
	CHECK_EQ(hb.kicks[1], 1);
	CHECK_EQ(ha.nr_kicks, a_kicks);
	/* A drains pCPU 1 and runs y there; B sees it */
	CHECK_EQ(sched_wake_drain(&a, 1, 200), 1);
	CHECK_EQ(sched_schedule(&a, 1, 200, &sw), 0);
	CHECK_EQ(sw.next, y);
	struct sched_pcpu_info pi;
	CHECK_EQ(sched_pcpu_get_info(&b, 1, &pi), 0);
	CHECK_EQ(pi.curr, y);
	if (sched_domain_check(&b, msg, sizeof(msg))) {
		fprintf(stderr, "check via second mapping: %s\n", msg);
		check_failures++;
	}

	/* a member dies holding pCPU 0's lock */
	pid = fork();
	if (pid == 0) {
		struct sched_domain *d = m2;
		struct sched_lock *l = &dom_rq(d, 0)->lock;
		/* the child's own tid, not the parent's cached one */
		_exit(sched_lock(l) || l->owner_tid != getpid() ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK_EQ(sched_tick(&a, 0, 4 * MS), 0);   /* takes the dead owner's lock */
	CHECK_EQ(sched_block(&b, x, 4 * MS), 0);
	CHECK_EQ(sched_remove_owner(&b, 0, 4 * MS), 2);
	if (sched_domain_check(&a, msg, sizeof(msg))) {
		fprintf(stderr, "check after owner death: %s\n", msg);
		check_failures++;
	}
	sched_domain_destroy(m1);
	munmap(m1, len);
	munmap(m2, len);
	close(fd);
	if (check_failures) {
		fprintf(stderr, "test_shm: %d check(s) failed\n", check_failures);
		return 1;
	}
	printf("test_shm: two mappings and a dead lock owner handled\n");
	return 0;
}
