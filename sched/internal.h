/*
 * sched/ private layout and helpers. Everything here lives inside the
 * caller's domain block: indices, never pointers.
 *
 * Protection (see sched.h for the lock order):
 *   domain lock   the free list of entity slots
 *   entity lock   a BLOCKED entity's fields (vlag, weight, allowed...) and
 *                 every transition out of / into BLOCKED or FREE
 *   rq lock       the queue (tree, sums, curr, wake lists) and every field of
 *                 an entity that is WAKING, QUEUED or RUNNING on it; moving an
 *                 entity between queues holds both rq locks.
 * Fields read without their lock (for pCPU choice, balance, wake's "already
 * runnable" test) are written and read with __atomic builtins.
 *
 * Names: what one file exports to the others is eevdf_* when it is the
 * policy on one queue (eevdf.c) and sched_* otherwise, like the API, so
 * nothing of sched/ takes a bare name (place_locked, rq_lock, tree_insert)
 * from the program it is linked into; static helpers keep short names.
 */
#ifndef LAGVISOR_SCHED_INTERNAL_H
#define LAGVISOR_SCHED_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sched/sched.h"

#define SCHED_MAGIC 0x6c61677673636831ull      /* "lagvsch1" */
#define SCHED_MAX_ENTITIES (1u << 24)

typedef __int128 s128;                         /* arithmetic type, not a struct */

struct sched_lock {
	pthread_mutex_t m;
	int32_t owner_tid;                     /* for _locked assertions */
};

struct sched_ent {
	/* timeline tree (AVL by deadline, ties by index), valid while queued */
	uint32_t left, right;
	int32_t height;
	uint32_t state;                        /* enum sched_entity_state, atomic */
	uint64_t min_vruntime;                 /* augmented: over this subtree */
	uint64_t min_slice, max_slice;         /* augmented: over this subtree */

	uint64_t vruntime;                     /* v: compare by signed difference */
	uint64_t deadline;                     /* d: v + slice*NICE_0/w at placement */
	uint64_t vprot;                        /* end of slice protection (curr) */
	uint64_t slice_ns;
	int64_t vlag;                          /* V - v saved while not queued */
	int64_t rel_deadline;                  /* d - v kept across migration */
	int64_t placed_lag;                    /* lag intended by the last placement */
	uint32_t weight;                       /* effective: 3 if idle_class */
	uint32_t base_weight;                  /* from nice/weight, kept across idle */
	uint32_t pcpu;                         /* queue it is on / was on, atomic */
	uint32_t next;                         /* wake list / free list link */
	uint8_t idle_class;
	uint8_t custom_slice;
	uint8_t never_placed;                  /* first enqueue still to come */
	uint8_t has_rel_deadline;
	uint8_t delayed;                       /* DELAY_DEQUEUE: asleep, still queued */
	int32_t nice;

	uint64_t exec_start_ns;
	uint64_t wait_start_ns;
	uint64_t sum_exec_ns;
	uint64_t sum_wait_ns;
	uint64_t nr_migrations;
	uint64_t nr_switches;
	uint32_t owner;
	uint64_t cookie;
	struct sched_cpuset allowed;
	struct sched_lock lock;
};

struct sched_rq {
	struct sched_lock lock;
	uint32_t index;
	uint32_t root;                         /* tree of queued entities, not curr */
	uint32_t curr;                         /* atomic */
	uint32_t nr_queued;                    /* tree + curr, atomic */
	uint32_t nr_delayed;                   /* asleep in the tree (DELAY_DEQUEUE), atomic */
	uint32_t nr_normal;                    /* runnable non-idle-class, atomic */
	uint32_t ttwu_pending;                 /* atomic */
	uint32_t wake_head, wake_tail, nr_wake;     /* pushed by wakers */
	uint32_t drain_head, drain_tail, nr_drain;  /* taken, not yet enqueued */
	uint32_t need_resched;
	/*
	 * Zero point and sums. key_i = v_i - v0 (signed); |key| stays within a
	 * few lag bounds, (max_slice + tick) * 1024 / 3 < 2^44 for slices up to
	 * a second. sum_w <= 2^24 entities * 88761 < 2^41, so sum_wkey can reach
	 * 2^85: it is 128-bit and no weight shifting is needed.
	 */
	uint64_t v0;
	s128 sum_wkey;                         /* sum over tree of w_i * key_i */
	uint64_t sum_w;                        /* sum over tree of w_i */
	uint64_t clock_ns;                     /* last now_ns seen */
	uint64_t timer_ns;                     /* what arm_timer was last told */
	uint64_t busy_ns;
	uint64_t nr_switches;
	uint64_t nr_preemptions;
} __attribute__((aligned(64)));

struct sched_domain {
	uint64_t magic;
	uint64_t size;
	uint32_t nr_pcpus;
	uint32_t max_entities;
	uint64_t base_slice_ns;
	uint64_t tick_ns;
	uint64_t features;                     /* bit per enum sched_feature, atomic */
	uint64_t rq_off;                       /* byte offsets from the domain start */
	uint64_t ent_off;
	struct sched_lock lock;
	uint32_t free_head;
	uint32_t nr_entities;
	/* Bit per pCPU, atomic, written under that pCPU's rq lock: idle (no
	 * curr, nothing queued, nothing pending) and idle for a normal wakee
	 * (no normal-class entity runnable, nothing pending). */
	uint64_t idle_mask[SCHED_MAX_PCPUS / 64];
	uint64_t idle_normal_mask[SCHED_MAX_PCPUS / 64];
};

/* ---- accessors ---------------------------------------------------------- */

static inline struct sched_rq *dom_rq(struct sched_domain *d, unsigned i)
{
	return (struct sched_rq *)((char *)d + d->rq_off) + i;
}
static inline struct sched_ent *dom_ents(struct sched_domain *d)
{
	return (struct sched_ent *)((char *)d + d->ent_off);
}
static inline struct sched_ent *dom_ent(struct sched_domain *d, unsigned id)
{
	return dom_ents(d) + id;
}
static inline bool feat(const struct sched_domain *d, enum sched_feature f)
{
	return (__atomic_load_n(&d->features, __ATOMIC_RELAXED) >> f) & 1;
}
/* STORE is a release (free on x86): an entity's pcpu is stored before its
 * state, and repair.c, scanning states without the other queues' locks,
 * reads state (acquire) then pcpu, so a state it sees comes with its pcpu. */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* Wrap-safe comparisons of virtual times. */
static inline bool vt_before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
static inline uint64_t vt_min(uint64_t a, uint64_t b) { return vt_before(a, b) ? a : b; }

/* Wall time -> virtual time for weight w: delta * NICE_0 / w. */
static inline uint64_t delta_fair(uint64_t delta_ns, uint32_t w)
{
	if (w == SCHED_NICE_0_WEIGHT)
		return delta_ns;
	return (uint64_t)((unsigned __int128)delta_ns * SCHED_NICE_0_WEIGHT / w);
}

/* ---- locks (lock.c) ----------------------------------------------------- */

int sched_lock_init(struct sched_lock *l);
void sched_lock_destroy(struct sched_lock *l);
/* 0, SCHED_LOCK_RECOVERED (taken over from an owner that died holding it:
 * what it protects may be half-updated) or -errno. Only the typed helpers
 * below (and tests) call it: they repair on SCHED_LOCK_RECOVERED and return
 * 0 or -errno like every other function. */
#define SCHED_LOCK_RECOVERED 1
int sched_lock(struct sched_lock *l);
void sched_unlock(struct sched_lock *l);
bool sched_lock_held(const struct sched_lock *l);
#define ASSERT_HELD(l) assert(sched_lock_held(l))

/* Take a run queue / entity / domain lock; 0 or -errno. After an owner
 * death the protected state is rebuilt (repair.c) before they return. */
int sched_rq_lock(struct sched_handle *h, struct sched_rq *rq);
int sched_ent_lock(struct sched_domain *d, struct sched_ent *e);
int sched_dom_lock(struct sched_domain *d);
/* Lock two queues, lower index first (one lock if a == b). */
int sched_rq_lock2(struct sched_handle *h, struct sched_rq *a, struct sched_rq *b);
void sched_rq_unlock2(struct sched_rq *a, struct sched_rq *b);
/* Lock the queue of a pCPU given by the caller; -EINVAL if out of range. */
int sched_rq_lock_pcpu(struct sched_handle *h, unsigned pcpu, struct sched_rq **out);
/* Lock the queue an entity is on; retries if it moves meanwhile. */
int sched_rq_lock_ent(struct sched_handle *h, struct sched_ent *e, struct sched_rq **out);

/* ---- owner-death repair (repair.c), the lock just taken over ------------ */

/* Rebuild rq's tree, sums, counts, curr and wake lists from the states of
 * the entities that name it; kicks its pCPU if that changed anything. */
void sched_rq_repair_locked(struct sched_handle *h, struct sched_rq *rq);
/* Bring a BLOCKED entity's own fields back into range. */
void sched_ent_repair_locked(struct sched_domain *d, struct sched_ent *e);
/* Rebuild the free list and nr_entities from the entity states. */
void sched_dom_repair_locked(struct sched_domain *d);

/* ---- tree (tree.c) ------------------------------------------------------ */

void sched_tree_insert(struct sched_ent *ents, uint32_t *root, uint32_t id);
void sched_tree_remove(struct sched_ent *ents, uint32_t *root, uint32_t id);
uint32_t sched_tree_first(const struct sched_ent *ents, uint32_t root);
/* Augmented fields of one node from its children. */
void sched_tree_update(struct sched_ent *ents, uint32_t id);
/* Smallest vruntime among the entities with a deadline before dl (the
 * first of them to become eligible); false when there is none. */
bool sched_tree_min_vruntime_before(const struct sched_ent *ents, uint32_t root, uint64_t dl,
				    uint64_t *v);
/* In-order walk; stops when fn returns true and returns that entity. */
uint32_t sched_tree_find(const struct sched_ent *ents, uint32_t root, bool reverse,
			 bool (*fn)(const struct sched_ent *e, uint32_t id, void *arg), void *arg);

/* ---- EEVDF core on one queue (eevdf.c), rq lock held -------------------- */

enum {
	PLACE_WAKEUP = 1,                      /* enqueue after sleep (not migration) */
	PLACE_INITIAL = 2,                     /* the entity's first placement */
};

uint64_t eevdf_avg_vruntime_locked(struct sched_domain *d, struct sched_rq *rq);
uint64_t eevdf_avg_vruntime_peek(struct sched_domain *d, struct sched_rq *rq);
bool eevdf_eligible_locked(struct sched_domain *d, struct sched_rq *rq, uint64_t v);
uint64_t eevdf_rq_max_slice_locked(struct sched_domain *d, struct sched_rq *rq);
uint64_t eevdf_rq_min_slice_locked(struct sched_domain *d, struct sched_rq *rq);
int64_t eevdf_lag_clamped_locked(struct sched_domain *d, struct sched_rq *rq,
				 struct sched_ent *e, uint64_t V);
void eevdf_update_curr_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
void eevdf_place_locked(struct sched_domain *d, struct sched_rq *rq, struct sched_ent *e,
			unsigned flags);
void eevdf_enqueue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			  unsigned flags, uint64_t now_ns);
void eevdf_dequeue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id, bool sleep,
			  uint64_t now_ns);
uint32_t eevdf_pick_locked(struct sched_domain *d, struct sched_rq *rq, bool protect);
void eevdf_set_next_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			   uint64_t now_ns);
void eevdf_put_prev_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
void eevdf_reweight_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
			   uint32_t weight, uint64_t now_ns);
bool sched_wakeup_preempt_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				 uint64_t now_ns);
void eevdf_yield_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
void eevdf_resched_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
void sched_rearm_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
/* The slice timer fired: preempt curr for an entity now eligible with an
 * earlier deadline (PREEMPT_ELIGIBLE; preempt.c). */
void sched_tick_preempt_locked(struct sched_handle *h, struct sched_rq *rq, uint64_t now_ns);
/* W: the weight of the queue's entities, curr included. */
uint64_t eevdf_rq_weight_locked(struct sched_domain *d, struct sched_rq *rq);
/* DELAY_DEQUEUE: a non-eligible sleeper stays in the tree, marked delayed,
 * until it is picked (then dequeued for real) or woken (requeued in place). */
void eevdf_delay_dequeue_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				uint64_t now_ns);
void eevdf_requeue_delayed_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				  uint64_t now_ns);
/* A delayed sleeper came up in a pick: dequeue it for real, BLOCKED. */
void eevdf_finish_delayed_locked(struct sched_handle *h, struct sched_rq *rq, uint32_t id,
				 uint64_t now_ns);
/* Runnable entities of a queue (delayed sleepers excluded); racy read. */
static inline unsigned rq_runnable(struct sched_rq *rq)
{
	int n = (int)LOAD(rq->nr_queued) - (int)LOAD(rq->nr_delayed);
	return n > 0 ? (unsigned)n : 0;
}
/* Recompute this pCPU's bits in the idle masks. */
void eevdf_rq_idle_update_locked(struct sched_domain *d, struct sched_rq *rq);
/* After moving id from src to dst: id may preempt dst's curr (or an idle dst
 * is kicked to run it); both slice timers are re-armed. */
void eevdf_settle_moved_locked(struct sched_handle *h, struct sched_rq *src, struct sched_rq *dst,
			       uint32_t id, uint64_t now_ns);
/* Move a queued entity or curr (curr of src: for a forbidden curr); both rq
 * locks held. Keeps lag and relative deadline. */
void eevdf_migrate_locked(struct sched_handle *h, struct sched_rq *src, struct sched_rq *dst,
			  uint32_t id, uint64_t now_ns);

/* ---- helpers shared by the API files ------------------------------------ */

void sched_trace(struct sched_handle *h, uint32_t type, uint32_t pcpu, uint32_t ent,
		 uint32_t other, int64_t a0, int64_t a1, uint64_t now_ns);
static inline void sched_kick(struct sched_handle *h, unsigned pcpu)
{
	h->ops->kick(h->opaque, pcpu);
}
bool sched_ent_allowed(struct sched_domain *d, const struct sched_ent *e, unsigned pcpu);
/* Least loaded allowed pCPU (racy read), lowest index on ties. */
unsigned sched_least_loaded_allowed(struct sched_domain *d, const struct sched_ent *e);
/* dst = src (NULL: all) restricted to the domain's pCPUs; false if empty. */
bool sched_allowed_copy(struct sched_domain *d, struct sched_cpuset *dst,
			const struct sched_cpuset *src);
unsigned sched_least_loaded_in(struct sched_domain *d, const struct sched_cpuset *set);
int sched_check_id(struct sched_handle *h, unsigned id);
/* Entity lock plus the lock of its queue (state is then stable). */
int sched_ent_lock_both(struct sched_handle *h, unsigned id, struct sched_ent **ep,
			struct sched_rq **rqp);
void sched_ent_unlock_both(struct sched_ent *e, struct sched_rq *rq);
/* New-idle balance: pull the best waiting entity from the busiest queue. */
int sched_balance_newidle(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);
/* A WAKING entity leaves its pCPU's wake/drain list (rq lock held). */
void sched_wake_unlink_locked(struct sched_domain *d, struct sched_rq *rq, uint32_t id);
/* sched_wake with the entity lock already held. */
int sched_wake_ent_locked(struct sched_handle *h, uint32_t id, uint64_t now_ns, unsigned waker_pcpu,
			  unsigned hint, struct sched_wake_result *res);
/* Move a queued entity to dst, then let dst preempt or start it. Entity
 * lock held (or none needed: state re-checked under the rq locks). */
int sched_migrate_ent(struct sched_handle *h, uint32_t id, unsigned dst, uint64_t now_ns);

#endif
