/*
 * lagvisor-sim: a discrete-event model of lagvisor's host side (pCPUs, vCPU
 * threads, kicks, timers, exits) driving the real sched/ library, so the
 * scheduler's decisions are measured exactly as the VMM would make them.
 *
 * Model of one pCPU. At most one vCPU thread runs per pCPU (ARCHITECTURE.md
 * §2), so a pCPU is in one of three phases:
 *   IDLE   no vCPU released; a kick wakes a parked thread after wake_ns.
 *   GUEST  a vCPU executes guest code; its CPU work progresses in real time.
 *   VMM    the vCPU thread is in lagvisor (an exit, a handoff, a wake-list
 *          flush); no guest progress; kicks and timers that land now are
 *          remembered and handled before the next guest entry.
 * A guest exit costs exit_ns before lagvisor acts; a handoff to another vCPU
 * thread costs ctxsw_ns; a kick (signal to a running thread) lands kick_ns
 * after it is sent.
 *
 * Remote wakeup (sched/README.md §4): the library decides whether a wake
 * goes on the target's wake list with ttwu_pending set and a kick; the
 * target side starts its flush when the kick lands and finishes it (the
 * enqueue) flush_ns later. With TTWU_PENDING_EARLY_CLEAR the flag is
 * already clear in that window, which is exactly where concurrent wakers
 * stack vCPUs.
 *
 * Time is simulated nanoseconds only; the only source of randomness is the
 * seeded sim_rng. Same parameters and seed give byte-identical output.
 */
#ifndef LAGVISOR_SIM_H
#define LAGVISOR_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim_heap.h"
#include "sim_rng.h"
#include "sim_stats.h"

/* SCHED_MAX_PCPUS; sim_sched.c asserts they agree (sim.h stays free of sched.h). */
#define SIM_MAX_PCPUS 1024u
/* Default size of the library's entity table (live vCPUs at once); a run
 * with more sets sim_params.max_entities. */
#define SIM_MAX_ENTITIES 1024u
#define SIM_NS_PER_US 1000ULL
#define SIM_NS_PER_MS 1000000ULL
#define SIM_NS_PER_S 1000000000ULL

/*
 * Whose scheduler the run models (sim_host.c). LAGVISOR: the library as
 * lagvisor configures it, its wake pCPU choice, lagvisor's userspace costs.
 * HOST: the Linux scheduler treating vCPUs as plain threads: the library
 * set to Linux's feature defaults and base slice, wakes placed the way
 * select_idle_sibling places them, in-kernel costs.
 */
enum sim_model { SIM_MODEL_LAGVISOR, SIM_MODEL_HOST };

/* Host costs and scheduler knobs: the parameters of one run. */
struct sim_params {
	enum sim_model model;
	unsigned llc_pcpus;	/* HOST: pCPUs sharing a last-level cache (0 = 16) */
	unsigned sis_scan;	/* HOST: most LLC siblings a wake looks at (0 = 8) */
	bool lat_from_stamp;	/* a message's wake samples start before its wake cost */
	unsigned nr_pcpus;
	unsigned max_entities;	/* library entity table; 0 = SIM_MAX_ENTITIES */
	uint64_t seed;
	uint64_t duration_ns;	/* simulated time */
	uint64_t warmup_ns;	/* samples before this are dropped */
	uint64_t slice_ns;	/* base slice given to sched/ */
	uint64_t exit_ns;	/* guest exit until lagvisor acts */
	uint64_t kick_ns;	/* kick sent until a running vCPU exits */
	uint64_t wake_ns;	/* futex wake of a parked thread until it runs */
	uint64_t ctxsw_ns;	/* handoff to another vCPU thread on a pCPU */
	uint64_t flush_ns;	/* target side: flush start until the enqueue */
	uint64_t wake_cost_ns;	/* waker's CPU time per wake it issues */
	uint64_t round_cost_ns;	/* a message vCPU's CPU per round besides its
				 * sends: its timer's re-arm and the VMM's
				 * per-round work, after its last send */
	uint64_t balance_ns;	/* periodic sched_balance per pCPU, 0 = off */
	unsigned cost_jitter_pct;	/* each host cost varies uniformly by +-this % */
	uint64_t check_every;	/* run sched_domain_check every N events, 0 = at end */
	uint64_t trace_until_ns;	/* print the library's trace events before this time */
	char features[512];	/* sched_features_parse list, "" = defaults */
};

enum sim_workload {
	SIM_WL_HOG,		/* runs forever */
	SIM_WL_PERIODIC,	/* run run_ns, sleep sleep_ns, repeat */
	SIM_WL_TIMER,		/* wake at absolute multiples of period_ns, run run_ns */
	SIM_WL_MSG,		/* schbench message: sleep, then wake its idle workers */
	SIM_WL_WORKER,		/* schbench worker: woken by msg, run run_ns, wait */
	SIM_WL_ONESHOT,		/* new short-lived vCPU: run run_ns once, then exit */
};

enum sim_vstate {
	SIM_V_NEW,		/* created, never started */
	SIM_V_SLEEP,		/* halted, not queued */
	SIM_V_WAKING,		/* wake issued, not yet runnable (wake list / in flight) */
	SIM_V_QUEUED,		/* runnable, waiting in a run queue */
	SIM_V_RUNNING,		/* curr of its pCPU */
	SIM_V_HALTING,		/* executed HLT, exit to lagvisor in progress */
	SIM_V_DEAD,		/* finished (oneshot) */
};

/* Which latency set a wakeup sample goes into. */
enum sim_lat {
	SIM_LAT_NONE,
	SIM_LAT_WAKE,		/* ordinary wakeups of this vCPU */
	SIM_LAT_START,		/* start-to-first-run of a new vCPU */
	SIM_LAT_COUNT,
};

struct sim_vcpu {
	unsigned id;
	enum sim_vstate state;
	enum sim_workload wl;
	unsigned weight;	/* nice-0 = 1024 */
	uint64_t slice_ns;	/* its own slice request, 0 = the domain's */
	bool idle_class;
	unsigned group;		/* schbench group, or user tag */
	int pcpu;		/* pCPU it runs or last ran on, -1 none */
	uint64_t gen;		/* bumps cancel this vCPU's pending events */

	/* workload parameters and state */
	uint64_t run_ns, sleep_ns, period_ns;	/* MSG with period_ns: absolute rounds */
	unsigned jitter_pct;	/* run/sleep lengths vary by +-this % (default 10) */
	uint64_t seg_left_ns;	/* CPU work left in the current segment */
	uint64_t seg_start_ns;	/* its first guest instant, UINT64_MAX before */
	unsigned msg_next;	/* SIM_WL_MSG: next worker index to wake */
	unsigned nr_workers;	/* SIM_WL_MSG: its workers */
	unsigned worker0;	/* SIM_WL_MSG: vCPU id of its first worker */
	bool msg_tail_done;	/* SIM_WL_MSG: this round's round_cost_ns ran */

	/* measurement */
	uint64_t wake_ns;	/* when the pending wake was issued */
	bool wake_pending;	/* woken while HALTING: the HLT returns at once */
	bool halt_dead;		/* the HLT in progress ends the vCPU */
	uint64_t halt_wake_at;	/* its timer wake, UINT64_MAX none */
	uint64_t period_next;	/* SIM_WL_TIMER: next absolute expiry */
	enum sim_lat lat_kind;	/* where the sample of that wake goes */
	uint64_t created_ns;
	uint64_t first_run_ns;	/* 0 until it ran */
	int64_t first_pick_dv;	/* deadline - vruntime at its first pick */
	bool first_pick_seen;
	uint64_t run_total_ns;	/* guest CPU time */
	uint64_t run_measured_ns;	/* guest CPU time after warmup */
	uint64_t nr_runs;	/* switches in */
	uint64_t nr_preempted;	/* switched out while still runnable */
	uint64_t nr_preempts;	/* times it was switched in over a runnable other */
	uint64_t last_run_start_ns;

	unsigned se;		/* the library's entity id (sim_sched.c) */
	uint64_t start_delay_ns;	/* creation to first wake */
	int creator;		/* pCPU of the creating thread */
};

enum sim_pphase { SIM_P_IDLE, SIM_P_GUEST, SIM_P_VMM };

struct sim_pcpu {
	unsigned id;
	enum sim_pphase phase;
	struct sim_vcpu *guest;		/* vCPU whose thread is released here */
	uint64_t guest_since_ns;	/* start of the current guest stretch */
	uint64_t gen;			/* bumps cancel the pending VMM/guest event */
	uint64_t timer_gen;		/* bumps cancel the armed timer */
	uint64_t timer_ns;		/* armed slice timer, UINT64_MAX none */
	bool kick_inflight;		/* a kick event is already scheduled */
	bool kick_seen;			/* a kick/timer landed during VMM phase */
	bool flushing;			/* between flush begin and finish */
	uint64_t busy_ns;		/* guest time, all vCPUs */
	uint64_t nr_switches;
};

struct sim_sched;	/* sim_sched.c: the library's domain and its glue */

struct sim {
	struct sim_params p;
	struct sim_rng rng;
	struct sim_heap heap;
	uint64_t now;
	unsigned nr_pcpus, nr_vcpus;
	struct sim_pcpu pcpu[SIM_MAX_PCPUS];
	struct sim_vcpu **vcpu;		/* by sim id, grows */
	unsigned vcpu_cap;
	struct sim_samples lat[SIM_LAT_COUNT];
	struct sim_samples lat_group[4];	/* wake latency per vCPU group 0..3 */
	struct sim_sched *sched;
	int error;			/* first error, stops the run */
	uint64_t nr_events;
	int cur_pcpu;			/* pCPU whose thread is acting, -1 none */
};

/* sim_engine.c */
void sim_params_default(struct sim_params *p);
int sim_init(struct sim *s, const struct sim_params *p);
void sim_fini(struct sim *s);
/* Adds a vCPU (not started). Returns it, or NULL with s->error set. */
struct sim_vcpu *sim_vcpu_add(struct sim *s, enum sim_workload wl, unsigned weight,
			      bool idle_class);
/*
 * Creates v's entity at at_ns from a thread on pCPU creator and wakes it
 * start_delay_ns later; its first run is a SIM_LAT_START sample.
 */
int sim_vcpu_start_at(struct sim *s, struct sim_vcpu *v, int creator, uint64_t at_ns,
		      uint64_t start_delay_ns);
/* Runs until duration_ns. 0 or the first -errno. */
int sim_run(struct sim *s);
/* Wakes a sleeping vCPU from a waker on pCPU waker (-1: its own timer). */
void sim_wake(struct sim *s, struct sim_vcpu *v, int waker, enum sim_lat kind);
/* The same, with the latency sample starting at stamp_ns (<= now). */
void sim_wake_stamped(struct sim *s, struct sim_vcpu *v, int waker, enum sim_lat kind,
		      uint64_t stamp_ns);
void sim_fail(struct sim *s, int err, const char *what);

/* Host-side callbacks the library reaches through its host-ops table. */
void sim_host_kick(struct sim *s, unsigned pcpu);
void sim_host_timer(struct sim *s, unsigned pcpu, uint64_t deadline_ns);

/* sim_workload.c */
/*
 * The vCPU finished a segment of CPU work at s->now: perform its side effects
 * (a message vCPU wakes a worker) and return the next segment length, or 0
 * to halt. On halt *wake_at is the absolute timer wake, or UINT64_MAX to wait
 * for another vCPU's wake (or forever), and *dead true if it exits for good.
 */
uint64_t sim_workload_step(struct sim *s, struct sim_vcpu *v, uint64_t *wake_at, bool *dead);
/* Work of the first segment after a wake (or start). */
uint64_t sim_workload_begin(struct sim *s, struct sim_vcpu *v);

/*
 * sim_sched.c: the only file that calls the sched/ API. Errors are recorded
 * with sim_fail (the run stops) so callers stay linear.
 */
int sim_sched_init(struct sim *s);
void sim_sched_fini(struct sim *s);
void sim_sched_create(struct sim *s, struct sim_vcpu *v);
void sim_sched_remove(struct sim *s, struct sim_vcpu *v);
/* Wake v from pCPU waker (-1: a thread on no pCPU); the library may kick.
 * The HOST model chooses the pCPU itself (sim_host_select) and pins the
 * wake there. */
void sim_sched_wake(struct sim *s, struct sim_vcpu *v, int waker);
/* pcpu has no curr, nothing queued and nothing in flight. */
bool sim_sched_pcpu_idle(struct sim *s, unsigned pcpu);
/* The library's pCPU of v's entity (last ran or queued), -1 never placed. */
int sim_sched_prev(struct sim *s, struct sim_vcpu *v);
/* Target side of a remote wake: take the list (early clear), then finish. */
int sim_sched_take(struct sim *s, unsigned pcpu);
void sim_sched_finish(struct sim *s, unsigned pcpu);
/* v (curr of its pCPU) halts: dequeue with lag. */
void sim_sched_block(struct sim *s, struct sim_vcpu *v);
/* Slice timer: true if pcpu should reschedule. */
bool sim_sched_tick(struct sim *s, unsigned pcpu);
/* Decide what runs next on pcpu (NULL: idle); may keep the current one. */
struct sim_vcpu *sim_sched_schedule(struct sim *s, unsigned pcpu);
void sim_sched_balance(struct sim *s, unsigned pcpu);
/* d - v of v's entity now (virtual ns), for seed 001. */
int64_t sim_sched_dv(struct sim *s, struct sim_vcpu *v);
/* The library's invariant check; 0 or -EUCLEAN after sim_fail. */
int sim_sched_check(struct sim *s);
/* 0 if every name in the comma list is a sched feature (or NO_ one);
 * else -EINVAL with the first bad name in bad. */
int sim_sched_features_check(const char *list, char *bad, size_t bad_len);
/* Counters from the library's trace hook. */
struct sim_sched_counts {
	uint64_t wake_listed, wake_enqueued, wakeup_preempts, migrations;
};
void sim_sched_counts(const struct sim *s, struct sim_sched_counts *out);

/*
 * sim_host.c: the HOST model's Linux side. Feature list and base slice for
 * the library; the wake's pCPU.
 */
/* Linux's defaults for the flags this sched/ has, as a features list; the
 * flags Linux lacks (lagvisor's own) off. */
void sim_host_features(char *buf, size_t len);
/* Flags of sched/ the host table does not name (off in the host model). */
void sim_host_features_unknown(char *buf, size_t len);
/* 0.7 ms x (1 + log2(min(pCPUs, 8))): sysctl_sched_base_slice, scaled. */
uint64_t sim_host_slice_ns(unsigned nr_pcpus);
/* Where Linux's select_idle_sibling puts a wake of v (prev -1: the waker's). */
unsigned sim_host_select(struct sim *s, int prev, int waker);

#endif
