/*
 * Host binding of the scheduler: makes vCPU threads obey sched/. A vCPU
 * thread runs guest code only while it holds a pCPU (sched/ made it curr
 * there and the previous holder handed the pCPU to it); every other vCPU
 * thread of the domain is parked on its own futex. Written against a narrow
 * interface (a kick callback per vCPU) so vcpu.c can plug it in.
 *
 * Per pCPU (in the domain memory, struct sched_shm_pcpu): `released` is the
 * runner token (the entity whose thread holds the pCPU, SCHED_NONE, or a
 * claim), `kicked` says a decision is wanted, `timer_ns` is the slice-end
 * deadline sched/ asked for. The holder of a pCPU is the only thread that
 * calls sched_schedule for it; an idle pCPU (no holder) is claimed with a
 * CAS by whoever must make a decision for it. Lost kicks are impossible by
 * a Dekker pair: a kicker stores `kicked` then reads `released`; a holder
 * giving up stores `released` then reads `kicked` (both seq_cst).
 *
 * Handoff: release the next thread (grant: its futex word), then park.
 * Slice end: a per-thread POSIX timer (SIGEV_THREAD_ID, the kick signal)
 * armed only while sched/ wants one (others wait on the pCPU). Pinning
 * (sched_setaffinity) only when a thread gets a different pCPU than last
 * time. Wakeups from any thread: sched_wake; LISTED -> the woken thread
 * itself claims and drains the target pCPU (sched/README.md §4.3); ENQUEUED
 * on a busy pCPU -> sched/ kicks its holder if the wakee preempts.
 *
 * Threads: every sched_bind_vcpu_* function except _wake and _add is called
 * by the vCPU's own thread. Lost-wakeup rule for HLT: read the token of
 * sched_bind_vcpu_prepare_block BEFORE looking for pending interrupts; an
 * interrupt controller makes the interrupt pending BEFORE calling _wake.
 */
#ifndef LAGVISOR_VMM_SCHED_BIND_H
#define LAGVISOR_VMM_SCHED_BIND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sched/sched.h"
#include "vmm/sched/sched_shm.h"

struct sched_bind;

struct sched_bind_vcpu {
	struct sched_bind *b;
	unsigned id;                   /* sched entity */
	unsigned pcpu;                 /* pCPU held now; SCHED_NONE while parked */
	int pinned_cpu;                /* host CPU last pinned to; -1 never */
	bool cfg_idle;                 /* idle class by lagvisor's own option */
	int ext_policy;                /* thread policy last seen; -1 none yet */
	pid_t tid;
	timer_t timer;
	bool has_timer;
	uint64_t armed_ns;             /* what the timer is set to (0: off) */
	uint64_t run_start_ns;         /* when it got its pCPU */
	/* IPI_HANDOFF: when this vCPU last woke another of its VM (0: not
	 * since it last halted), and how often it halted soon after, 0..3.
	 * Only its own thread touches them. */
	uint64_t last_wake_ns;
	unsigned sync_score;
	void (*kick)(void *opaque);    /* leave guest mode (immediate_exit + signal) */
	/* Optional, called by the vCPU's thread right before it parks:
	 * preempted = still runnable (PV steal time "preempted" byte). */
	void (*parked)(void *opaque, bool preempted);
	void *opaque;
};

struct sched_bind {
	struct sched_shm *shm;
	struct sched_handle h;
	int signo;                     /* kick and slice-timer signal */
	pid_t pid;
	struct sched_bind_vcpu **local;   /* by entity id: this process's vCPUs */
	uint64_t reap_period_ns;       /* shared domain: dead-member check period */
	uint64_t balance_period_ns;
	uint64_t last_reap_ns;         /* racy: only spaces the checks out */
	bool stopping;                 /* sched_bind_stop: parked threads return */
	/* observer of scheduler events (the trace writer); under rq locks */
	void (*trace)(void *arg, const struct sched_trace_event *ev);
	void *trace_arg;
};

/* Attach to the domain in shm. signo: the signal that kicks guest mode
 * (blocked outside it; a no-op handler installed). 0 or -errno. */
int sched_bind_init(struct sched_bind *b, struct sched_shm *shm, int signo);
void sched_bind_destroy(struct sched_bind *b);

/* Register a vCPU (any thread, before its thread starts): a blocked entity
 * owned by this process. p->owner is overwritten with our pid. kick is
 * called (any thread, under run-queue locks) to make the vCPU's thread
 * leave guest mode. 0 or -errno. */
int sched_bind_vcpu_add(struct sched_bind *b, struct sched_bind_vcpu *v,
			const struct sched_entity_params *p, unsigned vcpu_index,
			void (*kick)(void *opaque), void *opaque);

/* In the vCPU thread, first thing: its tid and its slice timer. */
int sched_bind_vcpu_thread_init(struct sched_bind_vcpu *v);

/* Park until granted a pCPU (a new vCPU waits for its first wake here, e.g.
 * an AP for its SIPI). Returns 0 when it holds a pCPU, -ESHUTDOWN after
 * sched_bind_stop (then it holds none). */
int sched_bind_vcpu_wait(struct sched_bind_vcpu *v);

/* Token for the lost-wakeup rule (see the top). */
uint32_t sched_bind_vcpu_prepare_block(struct sched_bind_vcpu *v);

enum sched_bind_block_result {
	SCHED_BIND_WOKEN,              /* an interrupt woke it (or arrived meanwhile) */
	SCHED_BIND_TIMED_OUT,          /* its own deadline passed: run the timer */
};

/*
 * Guest HLT with nothing pending: block (dequeue with lag), hand the pCPU
 * on, park until granted again. deadline_ns (CLOCK_MONOTONIC, 0 = none) is
 * the vCPU's own timer (UINT64_MAX = none too): reaching it wakes the vCPU
 * as its timer interrupt would. Returns an enum sched_bind_block_result
 * (the thread holds a pCPU again) or -errno (-ESHUTDOWN: stopping).
 */
int sched_bind_vcpu_block(struct sched_bind_vcpu *v, uint32_t token, uint64_t deadline_ns);

/* Wake a vCPU (any thread, e.g. the one raising its interrupt; the
 * interrupt is already pending). self: the calling vCPU, or NULL: the
 * calling thread's vCPU if it is one. Takes sched/ locks only (never an
 * irqchip lock), so it may be called with a LAPIC lock held. Returns enum
 * sched_wake_how or -errno. */
int sched_bind_vcpu_wake(struct sched_bind *b, struct sched_bind_vcpu *target,
			 struct sched_bind_vcpu *self);

/* Every return from guest mode by a kick or the slice timer (EINTR), and
 * cheaply after any exit: take pending decisions for the held pCPU (drain,
 * tick, periodic balance and reap, schedule + handoff when sched/ says so).
 * Returns with the pCPU held (maybe another one). 0 or -errno. */
int sched_bind_vcpu_check(struct sched_bind_vcpu *v);

/* Something else wants the held pCPU: another vCPU queued there (sched/
 * armed its slice timer) or a decision pending (a kick). Lock-free, may be
 * stale by a moment; true when holding none. For halt polling. */
bool sched_bind_vcpu_pcpu_wanted(const struct sched_bind_vcpu *v);

/* The thread is done: leave the queues and hand the pCPU on. */
void sched_bind_vcpu_exit(struct sched_bind_vcpu *v);

/* The VM stops: every parked thread of this process returns -ESHUTDOWN
 * from its wait/block (now and from then on) and should then call
 * sched_bind_vcpu_exit. Any thread. */
void sched_bind_stop(struct sched_bind *b);

/* Time this vCPU was runnable without a pCPU so far (ns): what the
 * guest's steal clock should add on top of the host's run delay. */
uint64_t sched_bind_vcpu_wait_ns(const struct sched_bind_vcpu *v);

/* The vCPU's thread: publish KVM's exit and instruction-emulation counts
 * for lagvisor stat (sched_bind_stats.c). */
void sched_bind_vcpu_publish_kvm(struct sched_bind_vcpu *v, uint64_t exits, uint64_t emulations);

/* Reap dead members now (also done periodically by _check and parked
 * threads). Returns members cleaned. */
int sched_bind_reap(struct sched_bind *b);

#endif
