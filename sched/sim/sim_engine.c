/*
 * The event loop and the host model of sim.h: pCPU phases, guest segments,
 * exits, kicks, slice timers, and the two halves of a remote wake. Every
 * scheduling decision is the library's (sim_sched.c); this file only moves
 * time forward and charges the host costs in between.
 */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

enum sim_event_kind {
	EV_SEG_END,	/* obj = vCPU: its current guest segment is done */
	EV_STEP,	/* obj = pCPU: the VMM-phase continuation (arg = step) */
	EV_KICK,	/* obj = pCPU: a kick lands */
	EV_TIMER,	/* obj = pCPU: slice timer */
	EV_VTIMER,	/* obj = vCPU: its own wake timer while halted */
	EV_CREATE,	/* obj = vCPU: entity created by a thread on arg's pCPU */
	EV_START,	/* obj = vCPU: first wake */
	EV_BALANCE,	/* obj = pCPU: periodic balance */
};

enum sim_step {
	STEP_HALT,	/* guest HLT exit done: block, pick next */
	STEP_RESCHED,	/* kick/timer exit done: drain, tick, maybe switch */
	STEP_ENTER,	/* handoff done: enter guest */
	STEP_FLUSH_END,	/* wake-list flush done: enqueue, pick */
};

/* Upper bound on events, so a model bug cannot spin forever. */
#define SIM_MAX_EVENTS 400000000ULL

void sim_params_default(struct sim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->nr_pcpus = 4;
	p->seed = 1;
	p->duration_ns = 10 * SIM_NS_PER_S;
	p->warmup_ns = 500 * SIM_NS_PER_MS;
	p->slice_ns = 3 * SIM_NS_PER_MS;
	/* An ordinary VMX host: a few µs per exit/IPI, tens for a futex wake. */
	p->exit_ns = 2 * SIM_NS_PER_US;
	p->kick_ns = 5 * SIM_NS_PER_US;
	p->wake_ns = 20 * SIM_NS_PER_US;
	p->ctxsw_ns = 5 * SIM_NS_PER_US;
	p->flush_ns = 10 * SIM_NS_PER_US;
	p->wake_cost_ns = 2 * SIM_NS_PER_US;
	/* Real exits, IPIs and futex wakes are not constant; a fixed cost
	 * would make every wake land in lockstep with the others. */
	p->cost_jitter_pct = 50;
}

/* One draw of a host cost around its mean. */
static uint64_t cost(struct sim *s, uint64_t mean_ns)
{
	return sim_rng_jitter(&s->rng, mean_ns, s->p.cost_jitter_pct);
}

void sim_fail(struct sim *s, int err, const char *what)
{
	if (s->error)
		return;
	s->error = err ? err : -EIO;
	log_error("sim: %s (error %d) at t=%llu ns", what, s->error,
		  (unsigned long long)s->now);
}

static void push(struct sim *s, uint64_t t, unsigned kind, unsigned obj, uint64_t gen,
		 uint64_t arg)
{
	struct sim_event e = {
		.time_ns = t < s->now ? s->now : t,
		.kind = kind,
		.obj = obj,
		.gen = gen,
		.arg = arg,
	};
	int r;

	if (s->error)
		return;
	r = sim_heap_push(&s->heap, &e);
	if (r)
		sim_fail(s, r, "event queue full");
}

int sim_init(struct sim *s, const struct sim_params *p)
{
	memset(s, 0, sizeof(*s));
	s->p = *p;
	s->cur_pcpu = -1;
	if (p->nr_pcpus < 1 || p->nr_pcpus > SIM_MAX_PCPUS) {
		log_error("sim: nr_pcpus %u out of range 1..%u", p->nr_pcpus, SIM_MAX_PCPUS);
		return -EINVAL;
	}
	if (p->duration_ns <= p->warmup_ns) {
		log_error("sim: simulated time %llu ms is not longer than the warm-up %llu ms (raise --scale)",
			  (unsigned long long)(p->duration_ns / SIM_NS_PER_MS),
			  (unsigned long long)(p->warmup_ns / SIM_NS_PER_MS));
		return -EINVAL;
	}
	sim_rng_seed(&s->rng, p->seed);
	sim_heap_init(&s->heap);
	for (unsigned i = 0; i < SIM_LAT_COUNT; i++)
		sim_samples_init(&s->lat[i]);
	for (unsigned i = 0; i < 4; i++)
		sim_samples_init(&s->lat_group[i]);
	s->nr_pcpus = p->nr_pcpus;
	for (unsigned i = 0; i < s->nr_pcpus; i++) {
		s->pcpu[i].id = i;
		s->pcpu[i].phase = SIM_P_IDLE;
		s->pcpu[i].timer_ns = UINT64_MAX;
		if (p->balance_ns)
			/* Staggered so the pCPUs do not balance in lockstep. */
			push(s, p->balance_ns + i * (p->balance_ns / s->nr_pcpus),
			     EV_BALANCE, i, 0, 0);
	}
	int r = sim_sched_init(s);

	if (r) {
		sim_fini(s);
		return r;
	}
	return 0;
}

void sim_fini(struct sim *s)
{
	if (s->sched)
		sim_sched_fini(s);
	for (unsigned i = 0; i < s->nr_vcpus; i++)
		free(s->vcpu[i]);
	free(s->vcpu);
	s->vcpu = NULL;
	s->nr_vcpus = 0;
	sim_heap_free(&s->heap);
	for (unsigned i = 0; i < SIM_LAT_COUNT; i++)
		sim_samples_free(&s->lat[i]);
	for (unsigned i = 0; i < 4; i++)
		sim_samples_free(&s->lat_group[i]);
}

struct sim_vcpu *sim_vcpu_add(struct sim *s, enum sim_workload wl, unsigned weight,
			      bool idle_class)
{
	if (s->nr_vcpus == s->vcpu_cap) {
		unsigned cap = s->vcpu_cap ? s->vcpu_cap * 2 : 64;
		struct sim_vcpu **a = realloc(s->vcpu, cap * sizeof(*a));

		if (!a) {
			sim_fail(s, -ENOMEM, "vCPU table");
			return NULL;
		}
		s->vcpu = a;
		s->vcpu_cap = cap;
	}
	struct sim_vcpu *v = calloc(1, sizeof(*v));

	if (!v) {
		sim_fail(s, -ENOMEM, "vCPU");
		return NULL;
	}
	v->id = s->nr_vcpus;
	v->state = SIM_V_NEW;
	v->wl = wl;
	v->weight = weight ? weight : 1024;
	v->idle_class = idle_class;
	v->pcpu = -1;
	v->se = UINT32_MAX;
	v->halt_wake_at = UINT64_MAX;
	/* Small jitter so vCPUs started together do not stay in lockstep. */
	v->jitter_pct = 10;
	s->vcpu[s->nr_vcpus++] = v;
	return v;
}

int sim_vcpu_start_at(struct sim *s, struct sim_vcpu *v, int creator, uint64_t at_ns,
		      uint64_t start_delay_ns)
{
	if (creator < 0 || (unsigned)creator >= s->nr_pcpus)
		return -EINVAL;
	v->creator = creator;
	v->start_delay_ns = start_delay_ns;
	push(s, at_ns, EV_CREATE, v->id, 0, 0);
	return s->error;
}

/* Guest time of [from, to) that falls inside the measured window. */
static uint64_t measured(const struct sim *s, uint64_t from, uint64_t to)
{
	uint64_t lo = from > s->p.warmup_ns ? from : s->p.warmup_ns;
	uint64_t hi = to < s->p.duration_ns ? to : s->p.duration_ns;

	return hi > lo ? hi - lo : 0;
}

/* The guest on pc stops executing now: charge its progress. */
static void guest_stop(struct sim *s, struct sim_pcpu *pc)
{
	if (pc->phase != SIM_P_GUEST)
		return;
	struct sim_vcpu *v = pc->guest;
	uint64_t ran = s->now - pc->guest_since_ns;

	v->seg_left_ns -= ran < v->seg_left_ns ? ran : v->seg_left_ns;
	v->run_total_ns += ran;
	v->run_measured_ns += measured(s, pc->guest_since_ns, s->now);
	pc->busy_ns += measured(s, pc->guest_since_ns, s->now);
	v->gen++;
	pc->phase = SIM_P_VMM;
}

/* Continue pc's VMM phase with step after delay_ns. */
static void step(struct sim *s, struct sim_pcpu *pc, enum sim_step st, uint64_t delay_ns)
{
	pc->phase = SIM_P_VMM;
	pc->gen++;
	push(s, s->now + delay_ns, EV_STEP, pc->id, pc->gen, st);
}

static void record_latency(struct sim *s, struct sim_vcpu *v)
{
	if (v->lat_kind == SIM_LAT_NONE)
		return;
	if (v->wake_ns >= s->p.warmup_ns) {
		uint64_t lat = s->now - v->wake_ns;
		int r = sim_samples_add(&s->lat[v->lat_kind], lat);

		if (!r && v->lat_kind == SIM_LAT_WAKE && v->group < 4)
			r = sim_samples_add(&s->lat_group[v->group], lat);
		if (r)
			sim_fail(s, r, "latency samples");
	}
	v->lat_kind = SIM_LAT_NONE;
}

static void resched(struct sim *s, struct sim_pcpu *pc);

/* The vCPU thread of pc re-enters the guest, unless a kick landed meanwhile. */
static void enter_guest(struct sim *s, struct sim_pcpu *pc)
{
	struct sim_vcpu *v = pc->guest;

	if (pc->kick_seen) {
		pc->kick_seen = false;
		if (sim_sched_take(s, pc->id) > 0)
			sim_sched_finish(s, pc->id);
		if (sim_sched_tick(s, pc->id)) {
			resched(s, pc);
			return;
		}
	}
	pc->phase = SIM_P_GUEST;
	pc->guest_since_ns = s->now;
	if (v->seg_start_ns == UINT64_MAX)
		v->seg_start_ns = s->now;
	record_latency(s, v);
	if (!v->first_run_ns)
		v->first_run_ns = s->now;
	v->gen++;
	push(s, s->now + v->seg_left_ns, EV_SEG_END, v->id, v->gen, 0);
}

/* pc's thread asks the library what runs next and hands off to it. */
static void resched(struct sim *s, struct sim_pcpu *pc)
{
	struct sim_vcpu *prev = pc->guest, *next;

	pc->kick_seen = false;
	if (sim_sched_take(s, pc->id) > 0)
		sim_sched_finish(s, pc->id);
	next = sim_sched_schedule(s, pc->id);
	if (s->error)
		return;
	if (!next) {
		if (prev)
			prev->state = SIM_V_QUEUED;	/* moved away by the library */
		pc->guest = NULL;
		pc->phase = SIM_P_IDLE;
		pc->gen++;
		return;
	}
	if (next == prev) {
		enter_guest(s, pc);
		return;
	}
	if (prev && prev->state == SIM_V_RUNNING) {
		prev->state = SIM_V_QUEUED;
		if (prev->last_run_start_ns >= s->p.warmup_ns) {
			prev->nr_preempted++;
			next->nr_preempts++;
		}
	}
	next->state = SIM_V_RUNNING;
	next->pcpu = (int)pc->id;
	next->last_run_start_ns = s->now;
	if (s->now >= s->p.warmup_ns) {
		next->nr_runs++;
		pc->nr_switches++;
	}
	pc->guest = next;
	step(s, pc, STEP_ENTER, cost(s, s->p.ctxsw_ns));
}

void sim_wake(struct sim *s, struct sim_vcpu *v, int waker, enum sim_lat kind)
{
	sim_wake_stamped(s, v, waker, kind, s->now);
}

void sim_wake_stamped(struct sim *s, struct sim_vcpu *v, int waker, enum sim_lat kind,
		      uint64_t stamp_ns)
{
	if (v->state == SIM_V_HALTING && !v->halt_dead) {
		/* The HLT exit is still in flight: the vmm sees the interrupt
		 * pending and resumes the guest instead of blocking. */
		if (!v->wake_pending) {
			v->wake_pending = true;
			v->wake_ns = stamp_ns;
			v->lat_kind = kind;
		}
		return;
	}
	if (v->state != SIM_V_SLEEP)
		return;
	v->state = SIM_V_QUEUED;
	v->wake_ns = stamp_ns;
	v->lat_kind = kind;
	v->gen++;	/* cancels its own timer */
	v->seg_left_ns = sim_workload_begin(s, v);
	v->seg_start_ns = UINT64_MAX;
	sim_sched_wake(s, v, waker);
}

void sim_host_kick(struct sim *s, unsigned pcpu)
{
	struct sim_pcpu *pc = &s->pcpu[pcpu];

	switch (pc->phase) {
	case SIM_P_VMM:
		/* The thread is in lagvisor: it checks before the next entry. */
		pc->kick_seen = true;
		return;
	case SIM_P_GUEST:
		if (!pc->kick_inflight) {
			pc->kick_inflight = true;
			push(s, s->now + cost(s, s->p.kick_ns), EV_KICK, pcpu, 0, 0);
		}
		return;
	case SIM_P_IDLE:
		if (!pc->kick_inflight) {
			pc->kick_inflight = true;
			push(s, s->now + cost(s, s->p.wake_ns), EV_KICK, pcpu, 0, 0);
		}
		return;
	}
}

void sim_host_timer(struct sim *s, unsigned pcpu, uint64_t deadline_ns)
{
	struct sim_pcpu *pc = &s->pcpu[pcpu];

	pc->timer_gen++;
	pc->timer_ns = deadline_ns ? deadline_ns : UINT64_MAX;
	if (deadline_ns)
		push(s, deadline_ns, EV_TIMER, pcpu, pc->timer_gen, 0);
}

static void on_seg_end(struct sim *s, struct sim_vcpu *v)
{
	struct sim_pcpu *pc = &s->pcpu[v->pcpu];
	uint64_t wake_at = UINT64_MAX, next;
	bool dead = false;

	guest_stop(s, pc);
	next = sim_workload_step(s, v, &wake_at, &dead);
	if (next) {
		v->seg_left_ns = next;
		v->seg_start_ns = UINT64_MAX;
		enter_guest(s, pc);
		return;
	}
	v->state = SIM_V_HALTING;
	v->halt_wake_at = wake_at;
	v->halt_dead = dead;
	v->wake_pending = false;
	step(s, pc, STEP_HALT, cost(s, s->p.exit_ns));
}

static void on_halt(struct sim *s, struct sim_pcpu *pc)
{
	struct sim_vcpu *v = pc->guest;

	if (v->wake_pending) {
		v->wake_pending = false;
		v->state = SIM_V_RUNNING;
		v->seg_left_ns = sim_workload_begin(s, v);
		v->seg_start_ns = UINT64_MAX;
		enter_guest(s, pc);
		return;
	}
	if (v->halt_dead) {
		v->state = SIM_V_DEAD;
		sim_sched_remove(s, v);
	} else {
		v->state = SIM_V_SLEEP;
		sim_sched_block(s, v);
		v->gen++;
		if (v->halt_wake_at != UINT64_MAX)
			push(s, v->halt_wake_at, EV_VTIMER, v->id, v->gen, 0);
	}
	pc->guest = NULL;
	resched(s, pc);
}

static void on_step(struct sim *s, struct sim_pcpu *pc, enum sim_step st)
{
	switch (st) {
	case STEP_HALT:
		on_halt(s, pc);
		return;
	case STEP_RESCHED:
		pc->kick_seen = false;
		if (sim_sched_take(s, pc->id) > 0)
			sim_sched_finish(s, pc->id);
		if (sim_sched_tick(s, pc->id))
			resched(s, pc);
		else
			enter_guest(s, pc);
		return;
	case STEP_ENTER:
		enter_guest(s, pc);
		return;
	case STEP_FLUSH_END:
		sim_sched_finish(s, pc->id);
		resched(s, pc);
		return;
	}
}

static void on_kick(struct sim *s, struct sim_pcpu *pc)
{
	pc->kick_inflight = false;
	switch (pc->phase) {
	case SIM_P_IDLE:
		/* The parked thread woke: it drains the wake list, and the
		 * enqueue lands flush_ns after the drain began. */
		if (sim_sched_take(s, pc->id) > 0)
			step(s, pc, STEP_FLUSH_END, cost(s, s->p.flush_ns));
		else
			resched(s, pc);
		return;
	case SIM_P_GUEST:
		guest_stop(s, pc);
		step(s, pc, STEP_RESCHED, cost(s, s->p.exit_ns));
		return;
	case SIM_P_VMM:
		pc->kick_seen = true;
		return;
	}
}

static void on_timer(struct sim *s, struct sim_pcpu *pc)
{
	pc->timer_ns = UINT64_MAX;
	switch (pc->phase) {
	case SIM_P_GUEST:
		guest_stop(s, pc);
		step(s, pc, STEP_RESCHED, cost(s, s->p.exit_ns));
		return;
	case SIM_P_VMM:
		pc->kick_seen = true;
		return;
	case SIM_P_IDLE:
		return;
	}
}

static void dispatch(struct sim *s, const struct sim_event *e)
{
	struct sim_vcpu *v = NULL;
	struct sim_pcpu *pc = NULL;

	if (e->kind == EV_SEG_END || e->kind == EV_VTIMER || e->kind == EV_CREATE ||
	    e->kind == EV_START) {
		v = s->vcpu[e->obj];
		s->cur_pcpu = v->pcpu;
	} else {
		pc = &s->pcpu[e->obj];
		s->cur_pcpu = (int)pc->id;
	}
	switch (e->kind) {
	case EV_SEG_END:
		if (e->gen == v->gen && v->state == SIM_V_RUNNING)
			on_seg_end(s, v);
		break;
	case EV_STEP:
		if (e->gen == pc->gen)
			on_step(s, pc, (enum sim_step)e->arg);
		break;
	case EV_KICK:
		on_kick(s, pc);
		break;
	case EV_TIMER:
		if (e->gen == pc->timer_gen)
			on_timer(s, pc);
		break;
	case EV_VTIMER:
		if (e->gen == v->gen && v->state == SIM_V_SLEEP)
			sim_wake(s, v, -1, SIM_LAT_WAKE);
		break;
	case EV_CREATE:
		v->created_ns = s->now;
		s->cur_pcpu = v->creator;
		sim_sched_create(s, v);
		v->state = SIM_V_SLEEP;
		push(s, s->now + v->start_delay_ns, EV_START, v->id, 0, 0);
		break;
	case EV_START:
		s->cur_pcpu = v->creator;
		v->created_ns = v->created_ns ? v->created_ns : s->now;
		sim_wake(s, v, v->creator, SIM_LAT_START);
		break;
	case EV_BALANCE:
		sim_sched_balance(s, pc->id);
		push(s, s->now + s->p.balance_ns, EV_BALANCE, pc->id, 0, 0);
		break;
	}
	s->cur_pcpu = -1;
}

int sim_run(struct sim *s)
{
	struct sim_event e;

	while (!s->error && sim_heap_peek_time(&s->heap) <= s->p.duration_ns) {
		if (!sim_heap_pop(&s->heap, &e))
			break;
		s->now = e.time_ns;
		if (++s->nr_events > SIM_MAX_EVENTS) {
			sim_fail(s, -E2BIG, "event limit reached");
			break;
		}
		dispatch(s, &e);
		if (s->p.check_every && s->nr_events % s->p.check_every == 0)
			sim_sched_check(s);
	}
	if (s->error)
		return s->error;
	/* Charge the guest stretches still open at the end. */
	s->now = s->p.duration_ns;
	for (unsigned i = 0; i < s->nr_pcpus; i++) {
		struct sim_pcpu *pc = &s->pcpu[i];

		if (pc->phase == SIM_P_GUEST) {
			uint64_t m = measured(s, pc->guest_since_ns, s->now);

			pc->guest->run_total_ns += s->now - pc->guest_since_ns;
			pc->guest->run_measured_ns += m;
			pc->busy_ns += m;
			pc->phase = SIM_P_VMM;
		}
	}
	return sim_sched_check(s);
}
