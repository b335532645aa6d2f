/*
 * Process-shared robust mutexes for state that may live in a shared-memory
 * file. A member process that dies holding a lock leaves it EOWNERDEAD: the
 * next taker marks it consistent, but the state it protects may have been
 * left half-updated (the dead member could have been killed between any two
 * stores of a tree rotation, an enqueue or a sums update). So sched_lock()
 * reports that case as SCHED_LOCK_RECOVERED and every lock of the domain is
 * taken through a typed helper below (sched_rq_lock, sched_ent_lock, sched_dom_lock) that
 * rebuilds what that lock protects from ground truth (repair.c) before the
 * taker reads any of it. The owner's thread id is kept next to the mutex so
 * _locked functions can assert the caller holds it; tids are unique across
 * processes, unlike pthread_t.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sched/internal.h"

static __thread int32_t self_tid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child inherits the forking thread's cached tid: forget it. */
static void forget_tid(void)
{
	self_tid = 0;
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static int32_t sched_self_tid(void)
{
	if (!self_tid) {
		pthread_once(&atfork_once, register_atfork);
		self_tid = (int32_t)syscall(SYS_gettid);
	}
	return self_tid;
}

int sched_lock_init(struct sched_lock *l)
{
	pthread_mutexattr_t a;
	int r = pthread_mutexattr_init(&a);

	if (r)
		return -r;
	r = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!r)
		r = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!r)
		r = pthread_mutex_init(&l->m, &a);
	pthread_mutexattr_destroy(&a);
	l->owner_tid = 0;
	return -r;
}

void sched_lock_destroy(struct sched_lock *l)
{
	pthread_mutex_destroy(&l->m);
}

int sched_lock(struct sched_lock *l)
{
	int r = pthread_mutex_lock(&l->m);
	bool recovered = r == EOWNERDEAD;

	if (recovered) {
		r = pthread_mutex_consistent(&l->m);
		if (r) {
			/* cannot happen for a robust mutex in this state; do not
			 * return holding it (it becomes ENOTRECOVERABLE) */
			pthread_mutex_unlock(&l->m);
			return -r;
		}
	}
	if (r)
		return -r;
	l->owner_tid = sched_self_tid();
	return recovered ? SCHED_LOCK_RECOVERED : 0;
}

int sched_rq_lock(struct sched_handle *h, struct sched_rq *rq)
{
	int r = sched_lock(&rq->lock);

	if (r == SCHED_LOCK_RECOVERED) {
		sched_rq_repair_locked(h, rq);
		r = 0;
	}
	return r;
}

int sched_ent_lock(struct sched_domain *d, struct sched_ent *e)
{
	int r = sched_lock(&e->lock);

	if (r == SCHED_LOCK_RECOVERED) {
		sched_ent_repair_locked(d, e);
		r = 0;
	}
	return r;
}

int sched_dom_lock(struct sched_domain *d)
{
	int r = sched_lock(&d->lock);

	if (r == SCHED_LOCK_RECOVERED) {
		sched_dom_repair_locked(d);
		r = 0;
	}
	return r;
}

void sched_unlock(struct sched_lock *l)
{
	assert(sched_lock_held(l));
	l->owner_tid = 0;
	pthread_mutex_unlock(&l->m);
}

bool sched_lock_held(const struct sched_lock *l)
{
	return l->owner_tid == sched_self_tid();
}

int sched_rq_lock2(struct sched_handle *h, struct sched_rq *a, struct sched_rq *b)
{
	int r;

	if (a == b)
		return sched_rq_lock(h, a);
	if (a->index > b->index) {
		struct sched_rq *t = a;
		a = b;
		b = t;
	}
	r = sched_rq_lock(h, a);
	if (r)
		return r;
	r = sched_rq_lock(h, b);
	if (r)
		sched_unlock(&a->lock);
	return r;
}

void sched_rq_unlock2(struct sched_rq *a, struct sched_rq *b)
{
	if (a != b)
		sched_unlock(&b->lock);
	sched_unlock(&a->lock);
}

int sched_rq_lock_pcpu(struct sched_handle *h, unsigned pcpu, struct sched_rq **out)
{
	if (!h || pcpu >= h->dom->nr_pcpus)
		return -EINVAL;
	*out = dom_rq(h->dom, pcpu);
	return sched_rq_lock(h, *out);
}

int sched_rq_lock_ent(struct sched_handle *h, struct sched_ent *e, struct sched_rq **out)
{
	for (;;) {
		uint32_t p = LOAD(e->pcpu);
		struct sched_rq *rq = dom_rq(h->dom, p);
		int r = sched_rq_lock(h, rq);

		if (r)
			return r;
		if (LOAD(e->pcpu) == p) {
			*out = rq;
			return 0;
		}
		sched_unlock(&rq->lock);
	}
}
