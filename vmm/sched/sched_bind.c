/* What a vCPU thread does under the binding (see sched_bind.h). */
#include "vmm/sched/sched_bind_internal.h"

#include "common/clock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"

static void timer_set(struct sched_bind_vcpu *v, uint64_t t)
{
	struct itimerspec its;

	if (!v->has_timer || t == v->armed_ns)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value = clock_ns_to_timespec(t);
	timer_settime(v->timer, TIMER_ABSTIME, &its, NULL);
	v->armed_ns = t;
}

/* The held pCPU's next decision: sched/'s slice timer, or the earliest
 * deadline of a vCPU blocked there (sched_bind_sleepers.c). */
static void timer_sync(struct sched_bind_vcpu *v)
{
	struct sched_shm_pcpu *pc;
	uint64_t t, s;

	if (v->pcpu == SCHED_NONE)
		return;
	pc = bind_pcpu(v->b, v->pcpu);
	t = __atomic_load_n(&pc->timer_ns, __ATOMIC_SEQ_CST);
	s = __atomic_load_n(&pc->sleeper_ns, __ATOMIC_SEQ_CST);
	timer_set(v, s && (!t || s < t) ? s : t);
}

/* Account the end of a run on the held pCPU. */
static void run_end(struct sched_bind_vcpu *v, uint64_t now)
{
	struct sched_shm_vcpu *vs = bind_vcpu(v->b, v->id);

	if (v->run_start_ns && now > v->run_start_ns && v->pcpu != SCHED_NONE) {
		__atomic_fetch_add(&vs->run_ns, now - v->run_start_ns, __ATOMIC_RELAXED);
		__atomic_fetch_add(&bind_pcpu(v->b, v->pcpu)->busy_ns, now - v->run_start_ns,
				   __ATOMIC_RELAXED);
	}
	v->run_start_ns = 0;
	__atomic_store_n(&vs->stint_start_ns, 0, __ATOMIC_RELEASE);
}

static unsigned lat_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = us ? 64u - (unsigned)__builtin_clzll(us) : 0;

	return b < SCHED_SHM_LAT_BUCKETS ? b : SCHED_SHM_LAT_BUCKETS - 1;
}

/* Thread affinity set from outside (libvirt vcpupin): when it is not the
 * single CPU we pinned to, take it as the allowed set (never widened). */
static void check_external_affinity(struct sched_bind_vcpu *v)
{
	struct sched_bind *b = v->b;
	struct sched_cpuset allowed;
	cpu_set_t set;
	bool any = false;

	if (v->pinned_cpu < 0 || sched_getaffinity(0, sizeof(set), &set))
		return;
	if (CPU_COUNT(&set) == 1 && CPU_ISSET(v->pinned_cpu, &set))
		return;
	sched_cpuset_zero(&allowed);
	for (unsigned p = 0; p < b->shm->hdr->nr_pcpus; p++)
		if (CPU_ISSET(b->shm->pcpus[p].host_cpu, &set)) {
			sched_cpuset_set(&allowed, p);
			any = true;
		}
	if (any)
		sched_set_allowed(&b->h, v->id, &allowed, clock_now_ns());
	v->pinned_cpu = -1;                    /* re-pin below, within the new set */
}

/*
 * Scheduling policy set from outside: libvirt's <vcpusched scheduler='idle'>
 * is a sched_setscheduler(SCHED_IDLE) on the vCPU thread. The host's idle
 * policy alone would do little here (the thread runs only on a pCPU
 * sched/ gave it), so it becomes the entity's idle class, and lifting it
 * goes back to what lagvisor was told (--idle or not). One syscall per
 * grant; only a change reaches sched/.
 */
static void check_external_policy(struct sched_bind_vcpu *v)
{
	int pol = sched_getscheduler(0);

	if (pol < 0 || pol == v->ext_policy)
		return;
	if (v->ext_policy >= 0 || pol == SCHED_IDLE) {
		bool idle = pol == SCHED_IDLE || v->cfg_idle;
		int r = sched_set_idle_class(&v->b->h, v->id, idle, clock_now_ns());

		if (r)
			log_warn("vCPU thread %d: idle class %s: %s", (int)v->tid,
				 idle ? "on" : "off", strerror(-r));
		else
			log_info("vCPU thread %d: host policy %s set from outside: idle class %s",
				 (int)v->tid, pol == SCHED_IDLE ? "SCHED_IDLE" : "not SCHED_IDLE",
				 idle ? "on" : "off");
	}
	v->ext_policy = pol;
}

/*
 * The thread holds a pCPU again: what a wake or a preemption stamped ends
 * now. runnable_since_ns is the wait for a pCPU (wait_ns, and the guest's
 * steal clock), wake_start_ns the wakeup's latency. It comes back by a
 * grant, or without letting go: its own schedule after a block found it
 * listed again (a wake between its sched_block and that schedule), kept
 * (the time held counts as run, so no wait). Left alone that second way,
 * the stamps stayed until the next grant, which counted the run in
 * between as wait (= steal) and as one wakeup's latency.
 */
static void wait_end(struct sched_bind_vcpu *v, uint64_t now, bool kept)
{
	struct sched_shm_vcpu *vs = bind_vcpu(v->b, v->id);
	uint64_t ws;

	ws = __atomic_exchange_n(&vs->runnable_since_ns, 0, __ATOMIC_RELAXED);
	if (ws && now > ws && !kept) {
		__atomic_fetch_add(&vs->wait_ns, now - ws, __ATOMIC_RELAXED);
		__atomic_fetch_add(&vs->steal_ns, now - ws, __ATOMIC_RELAXED);
	}
	ws = __atomic_exchange_n(&vs->wake_start_ns, 0, __ATOMIC_RELAXED);
	if (ws && now > ws) {
		uint64_t lat = now - ws;

		__atomic_fetch_add(&vs->lat_hist[lat_bucket(lat)], 1, __ATOMIC_RELAXED);
		if (lat > vs->lat_max_ns)
			vs->lat_max_ns = lat;
	}
}

/* Pin the thread to host CPU cpu, unless it is pinned there already. */
static void pin_to(struct sched_bind_vcpu *v, int cpu)
{
	cpu_set_t set;

	if (cpu == v->pinned_cpu)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) == 0)
		v->pinned_cpu = cpu;
}

/* Got pCPU p: pin if it moved, sync the timer, account. */
static void got_pcpu(struct sched_bind_vcpu *v, unsigned p)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = bind_vcpu(b, v->id);
	uint64_t now;
	int cpu = b->shm->pcpus[p].host_cpu;

	v->pcpu = p;
	check_external_affinity(v);
	check_external_policy(v);
	pin_to(v, cpu);
	now = clock_now_ns();
	wait_end(v, now, false);
	v->run_start_ns = now;
	__atomic_store_n(&vs->stint_start_ns, now, __ATOMIC_RELEASE);
	timer_sync(v);
	/*
	 * A decision may have been asked of p between the previous holder's
	 * last look at `kicked` and our grant: a wake listed on p, or queued
	 * there with need-resched. Its kicker read `released` while it still
	 * named the previous holder and signalled that thread, not us. Left
	 * alone, we would enter the guest and take no decision until our
	 * next exit, which a spinning guest may never make (a vCPU waiting
	 * for the IPI reply of the very vCPU listed here: a hang, seen in
	 * ipi-4-eevdf and wakebench). So leave guest mode at once and check.
	 */
	if (__atomic_load_n(&bind_pcpu(v->b, p)->kicked, __ATOMIC_SEQ_CST) && v->kick)
		v->kick(v->opaque);
}

/*
 * Park until granted a pCPU. deadline_ns (0: none) bounds the wait; in a
 * shared domain parked threads also wake every reap period to look for
 * dead members. Returns 1 granted, 0 deadline passed.
 */
static int park(struct sched_bind_vcpu *v, uint64_t deadline_ns, bool parked_told)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = bind_vcpu(b, v->id);

	v->pcpu = SCHED_NONE;
	timer_set(v, 0);
	for (;;) {
		uint32_t g = __atomic_exchange_n(&vs->grant, 0u, __ATOMIC_SEQ_CST);
		uint64_t now, until;
		struct timespec ts;

		if (__atomic_load_n(&b->stopping, __ATOMIC_SEQ_CST)) {
			/* granted meanwhile: hold it, so that the caller's
			 * sched_bind_vcpu_exit passes it on */
			if (g && !(g & GRANT_CLAIM))
				v->pcpu = g - 1;
			return -ESHUTDOWN;
		}

		if (g & GRANT_CLAIM) {
			unsigned p = (g & ~GRANT_CLAIM) - 1;
			int cpu = b->shm->pcpus[p].host_cpu;

			/* LISTED: drain on the target pCPU's own CPU
			 * (sched/README.md §4.3) */
			pin_to(v, cpu);
			sched_bind_service(b, p);
			sched_bind_service_pending(b);
			continue;
		}
		if (g) {
			got_pcpu(v, g - 1);
			return 1;
		}
		now = clock_now_ns();
		if (deadline_ns && now >= deadline_ns)
			return 0;
		until = deadline_ns;
		if (b->shm->fd >= 0 && sched_shm_nr_members(b->shm) > 1 &&
		    (!until || until > now + b->reap_period_ns))
			until = now + b->reap_period_ns;
		ts = clock_ns_to_timespec(until);
		/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time */
		if (v->parked && !parked_told) {
			v->parked(v->opaque, __atomic_load_n(&vs->runnable_since_ns,
							      __ATOMIC_RELAXED) != 0);
			parked_told = true;
			continue;              /* look at the grant word again */
		}
		sched_bind_futex(&vs->grant, FUTEX_WAIT_BITSET, 0, until ? &ts : NULL);
		if (until && clock_now_ns() >= until && until != deadline_ns)
			sched_bind_reap(b);
	}
}

/* Decide for the held pCPU p and hand it on if someone else is picked;
 * returns holding a pCPU (maybe another) unless `blocked` and nobody wakes
 * it before deadline (then 0 with no pCPU). */
static int schedule_and_hand_on(struct sched_bind_vcpu *v, bool blocked, uint64_t deadline_ns)
{
	struct sched_bind *b = v->b;
	unsigned p = v->pcpu;
	struct sched_switch sw;
	uint64_t now = clock_now_ns();
	int r;

	/* before the pick: an overdue sleeper of p may be the one to run */
	sched_bind_sleepers_wake(b, p, now);
	__atomic_store_n(&bind_pcpu(b, p)->kicked, 0u, __ATOMIC_SEQ_CST);
	sched_wake_drain(&b->h, p, now);
	r = sched_schedule(&b->h, p, now, &sw);
	if (r)
		return r;
	if (sw.next == v->id) {
		struct sched_shm_vcpu *vs = bind_vcpu(b, v->id);
		uint32_t g = __atomic_load_n(&vs->grant, __ATOMIC_SEQ_CST);

		/* kept it: a wake since the block ends here, not at a grant */
		if (__atomic_load_n(&vs->runnable_since_ns, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&vs->wake_start_ns, __ATOMIC_RELAXED))
			wait_end(v, clock_now_ns(), true);
		/* and the claim that wake's waker posted has nothing left to
		 * drain (it named p, drained just now; a listed entity is not
		 * running anywhere) */
		if (g & GRANT_CLAIM)
			__atomic_compare_exchange_n(&vs->grant, &g, 0u, false,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		sched_bind_service_pending(b);
		timer_sync(v);
		return 1;
	}
	run_end(v, now);
	if (!blocked)                          /* preempted: still runnable */
		__atomic_store_n(&bind_vcpu(b, v->id)->runnable_since_ns, now, __ATOMIC_RELAXED);
	/* Tell before the hand-on, not in park: the next thread may share
	 * this host CPU and run at once, and a guest reading this vCPU's
	 * `preempted` from there must already see it. */
	if (v->parked)
		v->parked(v->opaque, !blocked);
	v->pcpu = SCHED_NONE;
	sched_bind_hand_on(b, p, sw.next);
	sched_bind_service_pending(b);
	return park(v, deadline_ns, v->parked != NULL);
}

int sched_bind_vcpu_add(struct sched_bind *b, struct sched_bind_vcpu *v,
			const struct sched_entity_params *p, unsigned vcpu_index,
			void (*kick)(void *opaque), void *opaque)
{
	struct sched_entity_params ep = *p;
	struct sched_shm_vcpu *vs;
	int r;

	memset(v, 0, sizeof(*v));
	v->b = b;
	v->pcpu = SCHED_NONE;
	v->pinned_cpu = -1;
	v->cfg_idle = p->idle_class;
	v->ext_policy = -1;
	v->kick = kick;
	v->opaque = opaque;
	ep.owner = (uint32_t)b->pid;
	r = sched_entity_add(&b->h, &ep, clock_now_ns(), &v->id);
	if (r)
		return r;
	vs = bind_vcpu(b, v->id);
	memset(vs, 0, sizeof(*vs));
	vs->pid = b->pid;
	vs->vcpu_index = vcpu_index;
	__atomic_store_n(&vs->in_use, 1u, __ATOMIC_RELEASE);
	__atomic_store_n(&b->local[v->id], v, __ATOMIC_RELEASE);
	return 0;
}

int sched_bind_vcpu_thread_init(struct sched_bind_vcpu *v)
{
	struct sigevent sev;

	sched_bind_self = v;
	v->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&bind_vcpu(v->b, v->id)->tid, (int32_t)v->tid, __ATOMIC_RELEASE);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = v->b->signo;
	sev._sigev_un._tid = v->tid;
	if (timer_create(CLOCK_MONOTONIC, &sev, &v->timer))
		return -errno;
	v->has_timer = true;
	return 0;
}

int sched_bind_vcpu_wait(struct sched_bind_vcpu *v)
{
	int r = park(v, 0, false);

	return r < 0 ? r : 0;
}

/*
 * IPI_HANDOFF needs the waker to halt soon after its wake, which only its
 * past says: a halt within SYNC_WINDOW_NS of the vCPU's last wake of a
 * sibling counts up, a later one down, and from SYNC_SCORE_MIN on its wakes
 * are marked sync. The window is the message vCPU's IPI exit, its return
 * and its HLT exit with room to spare: ~60 us where an exit costs ~20 us (a
 * PVM backend), a few us on VMX.
 */
#define SYNC_WINDOW_NS 200000ull
#define SYNC_SCORE_MIN 2u

static void sync_learn(struct sched_bind_vcpu *v, uint64_t now)
{
	if (!v->last_wake_ns)
		return;
	if (now - v->last_wake_ns < SYNC_WINDOW_NS) {
		if (v->sync_score < 3)
			v->sync_score++;
	} else if (v->sync_score) {
		v->sync_score--;
	}
	v->last_wake_ns = 0;
}

static unsigned sync_hint(struct sched_bind *b, struct sched_bind_vcpu *target,
			  struct sched_bind_vcpu *self, uint64_t now)
{
	bool first;

	if (!self || self == target || self->b != b || self->pcpu == SCHED_NONE)
		return 0;
	first = !self->last_wake_ns;
	self->last_wake_ns = now;
	/* Only the first wake since the waker's last halt: the waker's pCPU
	 * frees up once, and a second wakee queued there would wait for the
	 * first (bench-tail 3:1, two workers per round: p50 177 -> 395 us
	 * when every wake of the burst was handed off). */
	return first && self->sync_score >= SYNC_SCORE_MIN ? SCHED_WAKE_SYNC : 0;
}

uint32_t sched_bind_vcpu_prepare_block(struct sched_bind_vcpu *v)
{
	return __atomic_load_n(&bind_vcpu(v->b, v->id)->wake_seq, __ATOMIC_SEQ_CST);
}

int sched_bind_vcpu_block(struct sched_bind_vcpu *v, uint32_t token, uint64_t deadline_ns)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = bind_vcpu(b, v->id);
	uint64_t now = clock_now_ns();
	int r;

	if (v->pcpu == SCHED_NONE)
		return -EINVAL;
	if (deadline_ns == UINT64_MAX)
		deadline_ns = 0;
	if (deadline_ns && deadline_ns <= now)
		return SCHED_BIND_TIMED_OUT;
	/* published before the block: from then on the holder may wake it */
	sched_bind_sleeper_arm(v, deadline_ns);
	r = sched_block(&b->h, v->id, now);
	if (r) {
		sched_bind_sleeper_disarm(v);
		return r;
	}
	__atomic_fetch_add(&vs->nr_blocks, 1, __ATOMIC_RELAXED);
	sync_learn(v, now);
	/* A wake between the caller's look at its interrupts and the block
	 * found us runnable and did nothing: undo the block ourselves. */
	if (__atomic_load_n(&vs->wake_seq, __ATOMIC_SEQ_CST) != token)
		sched_wake(&b->h, v->id, now, v->pcpu, NULL);
	r = schedule_and_hand_on(v, true, deadline_ns);
	sched_bind_sleeper_disarm(v);
	if (r < 0)
		return r;
	if (r == 1)
		return SCHED_BIND_WOKEN;
	/* The deadline passed while blocked: that is this vCPU's timer
	 * interrupt, which wakes it. */
	sched_bind_vcpu_wake(b, v, v);
	r = park(v, 0, false);
	return r < 0 ? r : SCHED_BIND_TIMED_OUT;
}

int sched_bind_vcpu_wake(struct sched_bind *b, struct sched_bind_vcpu *target,
			 struct sched_bind_vcpu *self)
{
	if (!self)
		self = sched_bind_self;
	return sched_bind_wake_entity(b, target->id, self ? self->pcpu : SCHED_NONE,
				      sync_hint(b, target, self, clock_now_ns()));
}

int sched_bind_wake_entity(struct sched_bind *b, unsigned id, unsigned waker_pcpu,
			   unsigned hint)
{
	struct sched_shm_vcpu *vs = bind_vcpu(b, id);
	struct sched_wake_result res;
	uint64_t now = clock_now_ns(), zero = 0;
	bool stamped_wake, stamped_run;
	int r;

	__atomic_fetch_add(&vs->wake_seq, 1, __ATOMIC_SEQ_CST);
	/* Stamp before the wake can be seen: the wakee may take its pCPU (and
	 * end the wait, wait_end) before sched_wake even returns here, and a
	 * stamp stored after that would be left for its next grant. A wake
	 * that finds it runnable already takes back what it stamped. */
	stamped_wake = __atomic_compare_exchange_n(&vs->wake_start_ns, &zero, now, false,
						   __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	zero = 0;
	stamped_run = __atomic_compare_exchange_n(&vs->runnable_since_ns, &zero, now, false,
						  __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	r = sched_wake_hint(&b->h, id, now, waker_pcpu, hint, &res);
	if (r || res.how == SCHED_WAKE_ALREADY) {
		uint64_t mine = now;

		if (stamped_wake)
			__atomic_compare_exchange_n(&vs->wake_start_ns, &mine, 0, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		mine = now;
		if (stamped_run)
			__atomic_compare_exchange_n(&vs->runnable_since_ns, &mine, 0, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	if (r)
		return r;
	if (res.how != SCHED_WAKE_ALREADY)
		__atomic_fetch_add(&vs->nr_wakeups, 1, __ATOMIC_RELAXED);
	if (res.how == SCHED_WAKE_LISTED) {
		/* the woken thread claims and drains its target itself */
		sched_bind_unservice(res.pcpu);
		sched_bind_grant(b, id, GRANT_CLAIM | (res.pcpu + 1));
	}
	sched_bind_service_pending(b);
	return (int)res.how;
}

bool sched_bind_vcpu_pcpu_wanted(const struct sched_bind_vcpu *v)
{
	const struct sched_shm_pcpu *pc;

	if (v->pcpu == SCHED_NONE)
		return true;
	pc = bind_pcpu(v->b, v->pcpu);
	return __atomic_load_n(&pc->timer_ns, __ATOMIC_RELAXED) != 0 ||
	       __atomic_load_n(&pc->kicked, __ATOMIC_RELAXED) != 0;
}

int sched_bind_vcpu_check(struct sched_bind_vcpu *v)
{
	struct sched_bind *b = v->b;
	struct sched_shm_pcpu *pc;
	uint64_t now, t;
	bool kicked;
	int r;

	if (v->pcpu == SCHED_NONE)
		return -EINVAL;
	pc = bind_pcpu(b, v->pcpu);
	now = clock_now_ns();
	/* First: a sleeper it wakes may preempt us (that kick is ours). A
	 * sleeper's deadline alone is no tick: the wakee takes the pCPU by
	 * wakeup preemption or at sched/'s own timer, as any other wakee
	 * would (a tick here would preempt under NO_WAKEUP_PREEMPTION). */
	sched_bind_sleepers_wake(b, v->pcpu, now);
	kicked = __atomic_exchange_n(&pc->kicked, 0u, __ATOMIC_SEQ_CST);
	t = __atomic_load_n(&pc->timer_ns, __ATOMIC_SEQ_CST);
	if (!kicked && (!t || now < t) && now - pc->last_balance_ns < b->balance_period_ns) {
		sched_bind_service_pending(b);
		timer_sync(v);
		return 0;
	}
	if (kicked)
		sched_wake_drain(&b->h, v->pcpu, now);
	r = sched_tick(&b->h, v->pcpu, now);
	if (now - pc->last_balance_ns >= b->balance_period_ns) {
		pc->last_balance_ns = now;
		sched_balance(&b->h, v->pcpu, now);
		if (b->shm->fd >= 0 && now - b->last_reap_ns >= b->reap_period_ns) {
			b->last_reap_ns = now;
			sched_bind_reap(b);
		}
		r = sched_tick(&b->h, v->pcpu, now);
	}
	sched_bind_service_pending(b);
	if (r == 1) {
		r = schedule_and_hand_on(v, false, 0);
		return r < 0 ? r : 0;
	}
	timer_sync(v);
	return r < 0 ? r : 0;
}

void sched_bind_vcpu_exit(struct sched_bind_vcpu *v)
{
	struct sched_bind *b = v->b;
	unsigned p = v->pcpu;
	uint64_t now = clock_now_ns();

	__atomic_store_n(&b->local[v->id], NULL, __ATOMIC_RELEASE);
	/* The held pCPU turns into this member's claim first: once in_use
	 * drops, a pCPU still naming this entity counts as an orphan
	 * (reap_orphans), and this one is not. */
	if (p != SCHED_NONE) {
		uint32_t me = v->id;

		__atomic_compare_exchange_n(&bind_pcpu(b, p)->released, &me, bind_claim_token(b),
					    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	sched_entity_remove(&b->h, v->id, now);
	__atomic_store_n(&bind_vcpu(b, v->id)->in_use, 0u, __ATOMIC_SEQ_CST);
	if (p != SCHED_NONE) {
		struct sched_switch sw;

		run_end(v, now);
		sched_wake_drain(&b->h, p, now);
		if (sched_schedule(&b->h, p, now, &sw))
			sw.next = SCHED_NONE;
		v->pcpu = SCHED_NONE;
		sched_bind_hand_on(b, p, sw.next);
	}
	sched_bind_service_pending(b);
	if (v->has_timer)
		timer_delete(v->timer);
	v->has_timer = false;
	if (sched_bind_self == v)
		sched_bind_self = NULL;
}

uint64_t sched_bind_vcpu_wait_ns(const struct sched_bind_vcpu *v)
{
	return __atomic_load_n(&v->b->shm->vcpus[v->id].wait_ns, __ATOMIC_RELAXED);
}
