/*
 * A mutex that knows which thread holds it, so that a function named
 * *_locked can assert that its caller holds the lock. A plain pthread
 * mutex cannot tell: pthread_mutex_trylock() == EBUSY also holds while
 * another thread has the lock, which is exactly the bug to catch.
 *
 * For locks inside one process (devices/, vmm/). sched/ keeps its own
 * (sched/lock.c): its locks are process-shared and robust, live in a
 * shared-memory file, and name their owner by kernel thread id, which is
 * unique across the member processes where pthread_t is not.
 *
 * The owner word is written only by the thread that holds the mutex (set
 * after locking, cleared before unlocking or waiting), so a thread reads
 * its own tid there exactly when it holds the lock; the accesses are
 * atomic only because other threads may read it at the same time.
 */
#ifndef LAGVISOR_COMMON_MUTEX_H
#define LAGVISOR_COMMON_MUTEX_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct mutex {
	pthread_mutex_t m;
	pthread_t owner;               /* the holder; 0 (no thread) when free */
};

/* The check every *_locked function of devices/ and vmm/ starts with. */
#ifdef NDEBUG
#define MUTEX_ASSERT_HELD(mx) ((void)(mx))
#else
#define MUTEX_ASSERT_HELD(mx) assert(mutex_held(mx))
#endif

/* 0 or -errno. */
static inline int mutex_init(struct mutex *mx)
{
	mx->owner = 0;
	return -pthread_mutex_init(&mx->m, NULL);
}

static inline void mutex_destroy(struct mutex *mx)
{
	pthread_mutex_destroy(&mx->m);
}

/* Whether the calling thread holds mx. */
static inline bool mutex_held(const struct mutex *mx)
{
	return pthread_equal(__atomic_load_n(&mx->owner, __ATOMIC_RELAXED),
			     pthread_self());
}

static inline void mutex_own(struct mutex *mx)
{
	__atomic_store_n(&mx->owner, pthread_self(), __ATOMIC_RELAXED);
}

static inline void mutex_disown(struct mutex *mx)
{
	MUTEX_ASSERT_HELD(mx);
	__atomic_store_n(&mx->owner, (pthread_t)0, __ATOMIC_RELAXED);
}

/* A default mutex's lock and unlock fail only on misuse (not initialised,
 * not the owner), which the assertions here catch: nothing to return. */
static inline void mutex_lock(struct mutex *mx)
{
	pthread_mutex_lock(&mx->m);
	mutex_own(mx);
}

static inline void mutex_unlock(struct mutex *mx)
{
	mutex_disown(mx);
	pthread_mutex_unlock(&mx->m);
}

/* pthread_cond_wait on mx, which the caller holds; it holds it again on
 * return. */
static inline void mutex_cond_wait(struct mutex *mx, pthread_cond_t *cond)
{
	mutex_disown(mx);
	pthread_cond_wait(cond, &mx->m);
	mutex_own(mx);
}

/* The same until the absolute CLOCK_REALTIME time `until`
 * (clock_cond_deadline_ms): 0 when woken, -ETIMEDOUT when it passed. */
static inline int mutex_cond_timedwait(struct mutex *mx, pthread_cond_t *cond,
				       const struct timespec *until)
{
	int r;

	mutex_disown(mx);
	r = pthread_cond_timedwait(cond, &mx->m, until);
	mutex_own(mx);
	return -r;
}

#endif
