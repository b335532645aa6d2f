/*
 * lagvisor's vCPU scheduler: EEVDF (the algorithm: sched/README.md) as a pure
 * library. No KVM, no clocks, no signals, no threads: time comes in as now_ns
 * arguments, effects leave through struct sched_host_ops. Same inputs give the
 * same decisions, so a discrete-event simulator can drive it exactly.
 *
 * Memory. A domain (a set of pCPUs, one run queue each, and a fixed table of
 * entities = vCPUs) lives in ONE caller-provided block of
 * sched_domain_size(nr_pcpus, max_entities) bytes. Inside it there are no
 * pointers (entities and tree links are indices), so the block may be a
 * shared-memory file mapped at different addresses in several processes.
 * Each process (or simulator) wraps the block in its own struct sched_handle,
 * which carries the host ops and their opaque argument.
 *
 * Locks (all process-shared, robust; a lock whose owner died is taken over
 * and what it guards is rebuilt first from the entities' own state, since
 * the owner may have died half way through (repair.c); the vmm removes the
 * dead member's entities later):
 *     domain lock  ->  entity lock  ->  run-queue locks (lower pCPU first)
 * Every public function takes what it needs itself; none may be called from
 * inside a host op (host ops run with run-queue locks held).
 *
 * Errors: 0 / positive result or -errno. Bad ids or pCPUs give -EINVAL, a
 * free entity slot -ENOENT.
 *
 * A host's loop, per pCPU (the vmm's vCPU threads, or a simulator's events):
 *   kick / timer   -> sched_wake_drain() if anything is listed, then
 *                     sched_tick() and, if it returns 1, sched_schedule()
 *   guest HLT      -> sched_block(curr), sched_schedule()
 *   interrupt for  -> sched_wake(); LISTED: the target side drains
 *   a vCPU            (in lagvisor the woken vCPU's own thread)
 * Complexity: n = entities on the affected queue, P = pCPUs of the domain.
 */
#ifndef LAGVISOR_SCHED_SCHED_H
#define LAGVISOR_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/features.h"

#define SCHED_MAX_PCPUS 1024u
#define SCHED_NONE UINT32_MAX          /* no entity / no pCPU */
#define SCHED_NICE_0_WEIGHT 1024u
#define SCHED_IDLE_WEIGHT 3u           /* weight of an idle-class entity */
#define SCHED_MAX_WEIGHT (1u << 20)     /* explicit weights 1..2^20 */
/* The default base slice is Linux's: 0.7 ms x (1 + log2 min(pCPUs, 8)),
 * 0.7 ms on one pCPU to 2.8 ms from 8 on (sched_default_slice_ns). With
 * more pCPUs a wakee more often finds one idle, so a longer slice costs
 * less latency and saves switches. */
#define SCHED_SLICE_UNIT_NS 700000ull
#define SCHED_DEFAULT_TICK_NS 1000000ull

struct sched_domain;                   /* opaque, lives in the caller's block */

/* Set of pCPUs (indices inside the domain, not host CPU numbers). */
struct sched_cpuset {
	uint64_t bits[SCHED_MAX_PCPUS / 64];
};

static inline void sched_cpuset_zero(struct sched_cpuset *s)
{
	for (unsigned i = 0; i < SCHED_MAX_PCPUS / 64; i++)
		s->bits[i] = 0;
}
static inline void sched_cpuset_set(struct sched_cpuset *s, unsigned cpu)
{
	if (cpu < SCHED_MAX_PCPUS)
		s->bits[cpu / 64] |= 1ull << (cpu % 64);
}
static inline void sched_cpuset_clear(struct sched_cpuset *s, unsigned cpu)
{
	if (cpu < SCHED_MAX_PCPUS)
		s->bits[cpu / 64] &= ~(1ull << (cpu % 64));
}
static inline bool sched_cpuset_test(const struct sched_cpuset *s, unsigned cpu)
{
	return cpu < SCHED_MAX_PCPUS && (s->bits[cpu / 64] >> (cpu % 64)) & 1;
}

enum sched_trace_type {
	SCHED_TRACE_ENQUEUE,   /* arg0 = placed lag, arg1 = deadline - vruntime */
	SCHED_TRACE_DEQUEUE,   /* arg0 = saved lag, arg1 = 1 sleep, 0 move, 2 delayed */
	SCHED_TRACE_SWITCH,    /* entity = next (or NONE), other = prev */
	SCHED_TRACE_WAKE,      /* other = chosen pCPU, arg0 = enum sched_wake_how */
	SCHED_TRACE_PREEMPT,   /* entity = wakee, other = curr it preempts */
	SCHED_TRACE_MIGRATE,   /* other = source pCPU, pcpu = destination */
	SCHED_TRACE_RESCHED,   /* tick/update_curr set need-resched */
	SCHED_TRACE_REWEIGHT,  /* arg0 = old weight, arg1 = new weight */
	SCHED_TRACE_YIELD,
};

/* Fixed-layout record handed to host_ops.trace (no pointers, can be copied). */
struct sched_trace_event {
	uint64_t now_ns;
	uint32_t type;                 /* enum sched_trace_type */
	uint32_t pcpu;
	uint32_t entity;
	uint32_t other;
	int64_t arg0;
	int64_t arg1;
};

/*
 * What the scheduler asks of its host. Called with run-queue locks held:
 * record/signal and return, never call back into sched_*.
 */
struct sched_host_ops {
	/* Mandatory. pCPU needs a scheduling decision: interrupt its curr (need-
	 * resched is set), or, if it has none, get someone to run
	 * sched_wake_drain()/sched_schedule() for it. */
	void (*kick)(void *opaque, unsigned pcpu);
	/* Optional. Call sched_tick(pcpu) at deadline_ns (slice end of curr);
	 * deadline_ns == 0 cancels (curr runs alone: tickless). */
	void (*arm_timer)(void *opaque, unsigned pcpu, uint64_t deadline_ns);
	/* Optional. One scheduler event. */
	void (*trace)(void *opaque, const struct sched_trace_event *ev);
};

/* Per-process view of a domain. Plain data; fill with sched_handle_init. */
struct sched_handle {
	struct sched_domain *dom;
	const struct sched_host_ops *ops;
	void *opaque;
};

struct sched_domain_params {
	uint64_t base_slice_ns;        /* default sched_default_slice_ns(nr_pcpus) */
	uint64_t tick_ns;              /* lag clamp slack; default 1 ms */
	const char *features;          /* comma list as for sched_features_parse; NULL = defaults */
	uint64_t start_vruntime;       /* initial V of every queue; tests use (u64)-2^20
					* so wrap-around bugs show early; default 0 */
};

/* Bytes needed for a domain; 0 if nr_pcpus or max_entities is out of range
 * (nr_pcpus 1..SCHED_MAX_PCPUS, max_entities 1..2^24). */
size_t sched_domain_size(unsigned nr_pcpus, unsigned max_entities);

/* The base slice a domain of nr_pcpus gets when its params name none. */
uint64_t sched_default_slice_ns(unsigned nr_pcpus);

/* Lay out a fresh domain in mem (len >= sched_domain_size, 16-byte aligned).
 * params may be NULL. -EINVAL on bad sizes/params/feature names. Not
 * thread-safe (nobody else may use mem yet). */
int sched_domain_init(void *mem, size_t len, unsigned nr_pcpus,
		      unsigned max_entities, const struct sched_domain_params *params);

/* Destroy the mutexes of a domain nobody uses any more. */
void sched_domain_destroy(void *mem);

/* Attach to an initialised domain (checks magic, len, and that its size and
 * layout are the ones its pCPU and entity counts give). ops->kick is
 * mandatory; arm_timer/trace may be NULL. -EINVAL otherwise. */
int sched_handle_init(struct sched_handle *h, void *mem, size_t len,
		      const struct sched_host_ops *ops, void *opaque);

unsigned sched_nr_pcpus(const struct sched_handle *h);
unsigned sched_max_entities(const struct sched_handle *h);

/* ---- features ---------------------------------------------------------- */

/* "NAME" enables, "NO_NAME" disables. -EINVAL for an unknown name. */
int sched_feature_set(struct sched_domain *dom, const char *name_or_no_name);
/* Comma-separated list of the above ("" is fine). Stops at the first bad name
 * (-EINVAL; flags before it stay applied). */
int sched_features_parse(struct sched_domain *dom, const char *list);
bool sched_feature_enabled(const struct sched_domain *dom, enum sched_feature f);
const char *sched_feature_name(enum sched_feature f);   /* NULL if out of range */

/* ---- entities (vCPUs) --------------------------------------------------- */

struct sched_entity_params {
	int nice;                      /* -20..19, used when weight == 0 */
	uint32_t weight;               /* explicit weight 1..SCHED_MAX_WEIGHT; 0 = from nice */
	bool idle_class;               /* SCHED_IDLE-like: weight 3, no sleeper credit */
	uint64_t slice_ns;             /* custom slice; 0 = domain base slice */
	const struct sched_cpuset *allowed;  /* NULL = every pCPU of the domain */
	unsigned create_pcpu;          /* creator's pCPU: first wake's "previous" */
	uint32_t owner;                /* host tag (e.g. member pid) for cleanup */
	uint64_t cookie;               /* host value returned in sched_entity_info */
};

/* Weight of a nice value (Linux table, -20 -> 88761, 0 -> 1024, 19 -> 15);
 * clamps to the range. */
uint32_t sched_nice_to_weight(int nice);

/* New entity, not runnable (blocked) and never placed yet. Its first
 * sched_wake places it on the queue it will run on, with the initial
 * half-slice deadline. -ENOSPC when the table is full. O(1). */
int sched_entity_add(struct sched_handle *h, const struct sched_entity_params *p,
		     uint64_t now_ns, unsigned *id_out);

/* Remove an entity in any state (curr: its pCPU is kicked to reschedule).
 * The id may be reused by a later add. O(log n + wake list). */
int sched_entity_remove(struct sched_handle *h, unsigned id, uint64_t now_ns);

/* Remove every entity whose owner tag is owner (a dead member). Returns the
 * number removed. O(max_entities). */
int sched_remove_owner(struct sched_handle *h, uint32_t owner, uint64_t now_ns);

/* Changes; each keeps V of the queue (reweight with lag scaling), applies to
 * a queued, running or blocked entity, and may kick. O(log n). */
int sched_set_weight(struct sched_handle *h, unsigned id, uint32_t weight, uint64_t now_ns);
int sched_set_nice(struct sched_handle *h, unsigned id, int nice, uint64_t now_ns);
int sched_set_idle_class(struct sched_handle *h, unsigned id, bool idle, uint64_t now_ns);
/* slice_ns 0 = back to the domain's base slice. Takes effect at the next
 * deadline update. */
int sched_set_slice(struct sched_handle *h, unsigned id, uint64_t slice_ns, uint64_t now_ns);
/* Never widened by the scheduler. A queued entity on a now-forbidden pCPU is
 * migrated; a running one gets its pCPU kicked and moves at the switch.
 * -EINVAL if the set holds no pCPU of the domain. */
int sched_set_allowed(struct sched_handle *h, unsigned id, const struct sched_cpuset *allowed,
		      uint64_t now_ns);

enum sched_entity_state {
	SCHED_ES_FREE,                 /* slot unused */
	SCHED_ES_BLOCKED,              /* not runnable (halted, or never woken) */
	SCHED_ES_WAKING,               /* on a pCPU's wake list, not yet enqueued */
	SCHED_ES_QUEUED,               /* runnable, waiting in a run queue */
	SCHED_ES_RUNNING,              /* curr of its pCPU */
};

struct sched_entity_info {
	uint32_t state;                /* enum sched_entity_state */
	uint32_t pcpu;                 /* current/last pCPU, SCHED_NONE if never queued */
	uint32_t weight;
	bool idle_class;
	bool custom_slice;
	bool preempted;                /* PV: runnable and waiting (PV_PREEMPTED) */
	bool delayed;                  /* DELAY_DEQUEUE: asleep (state BLOCKED) but
					* still queued until picked or woken */
	uint64_t slice_ns;
	uint64_t vruntime;
	uint64_t deadline;
	int64_t lag;                   /* V - v now if queued/running, else saved vlag */
	uint64_t sum_exec_ns;          /* time as curr */
	uint64_t sum_wait_ns;          /* runnable but not curr (steal) */
	uint64_t nr_migrations;
	uint64_t nr_switches;          /* times it became curr */
	uint32_t owner;
	uint64_t cookie;
};

int sched_entity_get_info(struct sched_handle *h, unsigned id, struct sched_entity_info *out);

/* The entity's weight from nice/weight (its idle class aside), without
 * taking any lock: for observers of a domain others run (sched/peek.c).
 * 0 or -EINVAL for an id out of range. */
int sched_entity_peek_weight(const struct sched_handle *h, unsigned id, uint32_t *weight);

/* ---- wakeup (sched/README.md §4) ---------------------------------------- */

enum sched_wake_how {
	SCHED_WAKE_ALREADY,            /* already runnable or waking: nothing done */
	SCHED_WAKE_ENQUEUED,           /* enqueued on res.pcpu by the waker */
	SCHED_WAKE_LISTED,             /* on res.pcpu's wake list: target must drain */
};

struct sched_wake_result {
	uint32_t how;                  /* enum sched_wake_how */
	uint32_t pcpu;                 /* chosen pCPU */
	bool preempt;                  /* res.pcpu's curr was told to reschedule */
};

/*
 * Waker side. Choose a pCPU (previous if idle, else an idle allowed one,
 * else the waker's for a SCHED_WAKE_SYNC hint under IPI_HANDOFF, else the
 * weakest curr's under WAKE_VICTIM, else the previous; the previous must be
 * allowed, else the least loaded allowed one). With TTWU_PENDING and a chosen pCPU that is idle and not the
 * waker's own (waker_pcpu, SCHED_NONE for a non-pCPU thread): set its
 * ttwu_pending, push the entity on its wake list, kick it (LISTED).
 * Otherwise enqueue there now with placement and wakeup preemption (ENQUEUED).
 * O(P/64 + log n).
 */
int sched_wake(struct sched_handle *h, unsigned id, uint64_t now_ns, unsigned waker_pcpu,
	       struct sched_wake_result *res);

/* The waker (a vCPU on waker_pcpu) expects to block soon, typically right
 * after the IPI that makes this wake; with IPI_HANDOFF a wakee that finds
 * no idle pCPU goes to the waker's. */
#define SCHED_WAKE_SYNC 1u
/* sched_wake with hints (SCHED_WAKE_*; 0 is sched_wake). */
int sched_wake_hint(struct sched_handle *h, unsigned id, uint64_t now_ns, unsigned waker_pcpu,
		    unsigned hint, struct sched_wake_result *res);

/*
 * Target side: enqueue everything on pcpu's wake list (placement, then one
 * wakeup-preemption check per entity), clearing ttwu_pending AFTER the
 * enqueue under the rq lock (TTWU_PENDING_EARLY_CLEAR: before, and in a
 * separate lock section, reproducing seed 002). Returns the number enqueued.
 */
int sched_wake_drain(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);

/* The two halves of sched_wake_drain, for a simulator that wants time to pass
 * between them: take detaches the wake list (and clears ttwu_pending when
 * TTWU_PENDING_EARLY_CLEAR), finish enqueues what take detached and clears
 * ttwu_pending. Returns the number taken / enqueued. */
int sched_wake_take(struct sched_handle *h, unsigned pcpu);
int sched_wake_finish(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);

/* ---- running -------------------------------------------------------------- */

/* Entity stops being runnable (guest HLT with nothing pending): update_curr,
 * save clamped lag, dequeue (with DELAY_DEQUEUE a non-eligible one stays
 * queued, delayed). If it was curr its pCPU has no curr until the next
 * sched_schedule (no kick: the caller is expected to call it). -EALREADY if
 * already blocked. O(log n). */
int sched_block(struct sched_handle *h, unsigned id, uint64_t now_ns);

struct sched_switch {
	uint32_t prev;                 /* curr before, or SCHED_NONE */
	uint32_t next;                 /* curr after, or SCHED_NONE (idle) */
	uint32_t pulled;               /* entities pulled by new-idle balance */
};

/*
 * Make a scheduling decision on pcpu: update_curr, put curr back in the tree
 * (moving it if it is no longer allowed here), pick (pick_eevdf), set curr
 * and its slice protection, clear need-resched, arm/cancel the slice timer.
 * An empty queue first pulls from the busiest allowed queue (new-idle
 * balance). O(log n) (+O(P) when pulling).
 */
int sched_schedule(struct sched_handle *h, unsigned pcpu, uint64_t now_ns,
		   struct sched_switch *sw);

/* Slice timer/tick on pcpu: update_curr; returns 1 if pcpu should call
 * sched_schedule (need-resched), 0 if not. */
int sched_tick(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);

/* Curr of pcpu yields: if eligible, v = d and a new deadline; its slice
 * protection ends; need-resched if others wait. -ENOENT if pcpu has no curr.
 * (Not sched_yield: POSIX owns that name.) */
int sched_yield_curr(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);

/* Move a queued (not running) entity to dst; keeps lag and relative deadline;
 * dst may preempt (kick). 0 if it is already there; -EBUSY if it is not
 * queued (running, waking, blocked, delayed); -EINVAL if dst is not allowed. */
int sched_migrate(struct sched_handle *h, unsigned id, unsigned dst_pcpu, uint64_t now_ns);

/* Periodic balance for pcpu: pull queued entities from the busiest queue
 * while that holds at least 2 more than pcpu. Returns number moved. O(P). */
int sched_balance(struct sched_handle *h, unsigned pcpu, uint64_t now_ns);

struct sched_pcpu_info {
	uint32_t curr;                 /* SCHED_NONE if none */
	uint32_t nr_queued;            /* runnable entities incl. curr */
	uint32_t nr_delayed;           /* DELAY_DEQUEUE sleepers still queued */
	uint32_t nr_waking;            /* on the wake list / being drained */
	bool ttwu_pending;
	bool need_resched;
	bool idle;                     /* no curr, nothing queued, nothing pending */
	uint64_t avg_vruntime;         /* V (read without side effects) */
	uint64_t busy_ns;              /* sum of update_curr deltas */
	uint64_t nr_switches;
	uint64_t nr_preemptions;       /* wakeup preemptions */
};

int sched_pcpu_get_info(struct sched_handle *h, unsigned pcpu, struct sched_pcpu_info *out);

/* Check every invariant of the domain (sums vs. recomputation from the tree,
 * augmented fields, curr not in tree, each runnable entity on exactly one
 * queue, states consistent, the free list matching the free slots). 0 if
 * all hold, else -EUCLEAN with a one-line
 * description in msg. Takes all locks in order. O(total entities). */
int sched_domain_check(struct sched_handle *h, char *msg, size_t msg_len);

#endif
