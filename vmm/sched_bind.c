#include "vmm/sched_bind.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GRANT_CLAIM 0x80000000u        /* grant word: "claim this pCPU and drain it" */

/* The vCPU this thread is (NULL for I/O and other threads), and the idle
 * pCPUs that a host op asked this thread to find a holder for: host ops
 * run under rq locks and may not call sched/, so the work is done after the
 * sched_* call returns (service_pending). */
static __thread struct sched_bind_vcpu *self_vcpu;
static __thread uint64_t to_service[SCHED_MAX_PCPUS / 64];
static __thread bool any_to_service;

uint64_t sched_bind_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct sched_shm_pcpu *pcpu_slot(struct sched_bind *b, unsigned p)
{
	return &b->shm->pcpus[p];
}

static struct sched_shm_vcpu *vslot(struct sched_bind *b, unsigned id)
{
	return &b->shm->vcpus[id];
}

static long futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	/* not FUTEX_PRIVATE: the word may live in a file shared by processes */
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Make the holder of a pCPU (entity id) leave guest mode. */
static void signal_entity(struct sched_bind *b, unsigned id, unsigned p)
{
	struct sched_shm_vcpu *vs = vslot(b, id);

	if (vs->pid == b->pid) {
		struct sched_bind_vcpu *v = __atomic_load_n(&b->local[id], __ATOMIC_ACQUIRE);

		if (v && v->kick)
			v->kick(v->opaque);
		else if (v && v->tid)
			syscall(SYS_tgkill, b->pid, v->tid, b->signo);
		return;
	}
	if (vs->tid > 0 && syscall(SYS_tgkill, vs->pid, vs->tid, b->signo) && errno == ESRCH) {
		/* Its member died holding the pCPU: take the token back so
		 * that someone (this thread, after its sched_* call) decides. */
		uint32_t exp = id;

		if (__atomic_compare_exchange_n(&pcpu_slot(b, p)->released, &exp, SCHED_NONE,
						false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			to_service[p / 64] |= 1ull << (p % 64);
			any_to_service = true;
		}
	}
}

static void op_kick(void *opaque, unsigned p)
{
	struct sched_bind *b = opaque;
	struct sched_shm_pcpu *pc = pcpu_slot(b, p);
	uint32_t r;

	__atomic_store_n(&pc->kicked, 1u, __ATOMIC_SEQ_CST);
	r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
	if (r == SCHED_NONE) {
		to_service[p / 64] |= 1ull << (p % 64);
		any_to_service = true;
	} else if (r < SCHED_SHM_CLAIM_BASE && !(self_vcpu && self_vcpu->id == r)) {
		signal_entity(b, r, p);
	}
	/* a claimer, or ourselves: it reads `kicked` before it lets go */
}

static void op_arm_timer(void *opaque, unsigned p, uint64_t deadline_ns)
{
	struct sched_bind *b = opaque;
	struct sched_shm_pcpu *pc = pcpu_slot(b, p);
	uint32_t r;

	__atomic_store_n(&pc->timer_ns, deadline_ns, __ATOMIC_SEQ_CST);
	r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
	/* The holder arms its own timer (a timer signals the thread that
	 * created it): tell it, unless we are it (we sync before returning). */
	if (r < SCHED_SHM_CLAIM_BASE && !(self_vcpu && self_vcpu->id == r))
		signal_entity(b, r, p);
}

static void op_trace(void *opaque, const struct sched_trace_event *ev)
{
	struct sched_bind *b = opaque;
	struct sched_shm_vcpu *vs;

	switch (ev->type) {
	case SCHED_TRACE_PREEMPT:
		if (ev->other < b->shm->hdr->max_entities)
			__atomic_fetch_add(&vslot(b, ev->other)->nr_preemptions, 1, __ATOMIC_RELAXED);
		break;
	case SCHED_TRACE_MIGRATE:
		if (ev->entity < b->shm->hdr->max_entities) {
			vs = vslot(b, ev->entity);
			__atomic_fetch_add(&vs->nr_migrations, 1, __ATOMIC_RELAXED);
		}
		break;
	default:
		break;
	}
	if (b->trace)
		b->trace(b->trace_arg, ev);
}

static const struct sched_host_ops bind_ops = {
	.kick = op_kick,
	.arm_timer = op_arm_timer,
	.trace = op_trace,
};

static void noop_handler(int sig)
{
	(void)sig;
}

int sched_bind_init(struct sched_bind *b, struct sched_shm *shm, int signo)
{
	struct sigaction sa, old;
	int r;

	memset(b, 0, sizeof(*b));
	b->shm = shm;
	b->signo = signo;
	b->pid = getpid();
	b->reap_period_ns = 100000000ull;
	b->balance_period_ns = 4000000ull;
	r = sched_handle_init(&b->h, shm->dom, shm->dom_len, &bind_ops, b);
	if (r)
		return r;
	b->local = calloc(shm->hdr->max_entities, sizeof(*b->local));
	if (!b->local)
		return -ENOMEM;
	/* A signal without a handler would kill the process: keep one that
	 * is already there (vcpu.c's), else install a no-op. */
	if (sigaction(signo, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = noop_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(signo, &sa, NULL);
	}
	return 0;
}

void sched_bind_destroy(struct sched_bind *b)
{
	free(b->local);
	b->local = NULL;
}

static void grant(struct sched_bind *b, unsigned id, uint32_t word)
{
	struct sched_shm_vcpu *vs = vslot(b, id);

	if (word & GRANT_CLAIM) {
		/* Never over a real grant: if the pCPU was already handed to
		 * it by someone who drained first, the claim has no work. */
		uint32_t zero = 0;

		if (!__atomic_compare_exchange_n(&vs->grant, &zero, word, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;
	} else {
		__atomic_store_n(&vs->grant, word, __ATOMIC_SEQ_CST);
	}
	futex(&vs->grant, FUTEX_WAKE, 1, NULL);
}

static void service_pending(struct sched_bind *b);

/*
 * p has no holder and a decision is wanted: claim it, drain and pick, hand
 * it to the pick. Loops while kicks arrive during the claim (they saw the
 * claim and left the work to us).
 */
static void service(struct sched_bind *b, unsigned p)
{
	struct sched_shm_pcpu *pc = pcpu_slot(b, p);
	uint32_t claim = SCHED_SHM_CLAIM_BASE + (b->shm->member == SCHED_NONE ? 0 : b->shm->member);

	for (;;) {
		uint32_t exp = SCHED_NONE;
		struct sched_switch sw;
		uint64_t now = sched_bind_now_ns();

		if (!__atomic_compare_exchange_n(&pc->released, &exp, claim, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;                /* it has a holder or a claimer */
		__atomic_store_n(&pc->kicked, 0u, __ATOMIC_SEQ_CST);
		sched_wake_drain(&b->h, p, now);
		if (sched_schedule(&b->h, p, now, &sw))
			sw.next = SCHED_NONE;
		if (sw.next != SCHED_NONE) {
			__atomic_store_n(&pc->released, sw.next, __ATOMIC_SEQ_CST);
			grant(b, sw.next, p + 1);
			return;
		}
		__atomic_store_n(&pc->released, SCHED_NONE, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&pc->kicked, __ATOMIC_SEQ_CST))
			return;
	}
}

static void service_pending(struct sched_bind *b)
{
	while (any_to_service) {
		any_to_service = false;
		for (unsigned w = 0; w < (b->shm->hdr->nr_pcpus + 63) / 64; w++) {
			while (to_service[w]) {
				unsigned p = w * 64 + (unsigned)__builtin_ctzll(to_service[w]);

				to_service[w] &= to_service[w] - 1;
				service(b, p);
			}
		}
	}
}

/* The holder lets p go to next (SCHED_NONE: p goes idle). */
static void pcpu_hand_on(struct sched_bind *b, unsigned p, uint32_t next)
{
	struct sched_shm_pcpu *pc = pcpu_slot(b, p);

	if (next != SCHED_NONE) {
		__atomic_store_n(&pc->released, next, __ATOMIC_SEQ_CST);
		grant(b, next, p + 1);
		return;
	}
	__atomic_store_n(&pc->released, SCHED_NONE, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&pc->kicked, __ATOMIC_SEQ_CST))
		service(b, p);
}

static void timer_set(struct sched_bind_vcpu *v, uint64_t t)
{
	struct itimerspec its;

	if (!v->has_timer || t == v->armed_ns)
		return;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(t / 1000000000ull);
	its.it_value.tv_nsec = (long)(t % 1000000000ull);
	timer_settime(v->timer, TIMER_ABSTIME, &its, NULL);
	v->armed_ns = t;
}

static void timer_sync(struct sched_bind_vcpu *v)
{
	if (v->pcpu != SCHED_NONE)
		timer_set(v, __atomic_load_n(&pcpu_slot(v->b, v->pcpu)->timer_ns, __ATOMIC_SEQ_CST));
}

/* Account the end of a run on the held pCPU. */
static void run_end(struct sched_bind_vcpu *v, uint64_t now)
{
	struct sched_shm_vcpu *vs = vslot(v->b, v->id);

	if (v->run_start_ns && now > v->run_start_ns && v->pcpu != SCHED_NONE) {
		__atomic_fetch_add(&vs->run_ns, now - v->run_start_ns, __ATOMIC_RELAXED);
		__atomic_fetch_add(&pcpu_slot(v->b, v->pcpu)->busy_ns, now - v->run_start_ns,
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
		sched_set_allowed(&b->h, v->id, &allowed, sched_bind_now_ns());
	v->pinned_cpu = -1;                    /* re-pin below, within the new set */
}

/* Got pCPU p: pin if it moved, sync the timer, account. */
static void got_pcpu(struct sched_bind_vcpu *v, unsigned p)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = vslot(b, v->id);
	uint64_t now, ws;
	int cpu = b->shm->pcpus[p].host_cpu;

	v->pcpu = p;
	check_external_affinity(v);
	if (cpu != v->pinned_cpu) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) == 0)
			v->pinned_cpu = cpu;
	}
	now = sched_bind_now_ns();
	ws = __atomic_exchange_n(&vs->runnable_since_ns, 0, __ATOMIC_RELAXED);
	if (ws && now > ws) {
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
	v->run_start_ns = now;
	__atomic_store_n(&vs->stint_start_ns, now, __ATOMIC_RELEASE);
	timer_sync(v);
	/* a decision may have been asked of p between the grant and now */
}

/*
 * Park until granted a pCPU. deadline_ns (0: none) bounds the wait; in a
 * shared domain parked threads also wake every reap period to look for
 * dead members. Returns 1 granted, 0 deadline passed.
 */
static int park(struct sched_bind_vcpu *v, uint64_t deadline_ns)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = vslot(b, v->id);
	bool parked_told = false;

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

			/* LISTED: drain on the target pCPU's own CPU (spec §4) */
			if (cpu != v->pinned_cpu) {
				cpu_set_t set;

				CPU_ZERO(&set);
				CPU_SET(cpu, &set);
				if (sched_setaffinity(0, sizeof(set), &set) == 0)
					v->pinned_cpu = cpu;
			}
			service(b, p);
			service_pending(b);
			continue;
		}
		if (g) {
			got_pcpu(v, g - 1);
			return 1;
		}
		now = sched_bind_now_ns();
		if (deadline_ns && now >= deadline_ns)
			return 0;
		until = deadline_ns;
		if (b->shm->fd >= 0 && sched_shm_nr_members(b->shm) > 1 &&
		    (!until || until > now + b->reap_period_ns))
			until = now + b->reap_period_ns;
		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time */
		if (v->parked && !parked_told) {
			v->parked(v->opaque, __atomic_load_n(&vs->runnable_since_ns,
							      __ATOMIC_RELAXED) != 0);
			parked_told = true;
			continue;              /* look at the grant word again */
		}
		futex(&vs->grant, FUTEX_WAIT_BITSET, 0, until ? &ts : NULL);
		if (until && sched_bind_now_ns() >= until && until != deadline_ns)
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
	uint64_t now = sched_bind_now_ns();
	int r;

	__atomic_store_n(&pcpu_slot(b, p)->kicked, 0u, __ATOMIC_SEQ_CST);
	sched_wake_drain(&b->h, p, now);
	r = sched_schedule(&b->h, p, now, &sw);
	if (r)
		return r;
	if (sw.next == v->id) {
		service_pending(b);
		timer_sync(v);
		return 1;
	}
	run_end(v, now);
	if (!blocked)                          /* preempted: still runnable */
		__atomic_store_n(&vslot(b, v->id)->runnable_since_ns, now, __ATOMIC_RELAXED);
	v->pcpu = SCHED_NONE;
	pcpu_hand_on(b, p, sw.next);
	service_pending(b);
	return park(v, deadline_ns);
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
	v->kick = kick;
	v->opaque = opaque;
	ep.owner = (uint32_t)b->pid;
	r = sched_entity_add(&b->h, &ep, sched_bind_now_ns(), &v->id);
	if (r)
		return r;
	vs = vslot(b, v->id);
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

	self_vcpu = v;
	v->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&vslot(v->b, v->id)->tid, (int32_t)v->tid, __ATOMIC_RELEASE);
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
	int r = park(v, 0);

	return r < 0 ? r : 0;
}

uint32_t sched_bind_vcpu_prepare_block(struct sched_bind_vcpu *v)
{
	return __atomic_load_n(&vslot(v->b, v->id)->wake_seq, __ATOMIC_SEQ_CST);
}

int sched_bind_vcpu_block(struct sched_bind_vcpu *v, uint32_t token, uint64_t deadline_ns)
{
	struct sched_bind *b = v->b;
	struct sched_shm_vcpu *vs = vslot(b, v->id);
	uint64_t now = sched_bind_now_ns();
	int r;

	if (v->pcpu == SCHED_NONE)
		return -EINVAL;
	if (deadline_ns == UINT64_MAX)
		deadline_ns = 0;
	if (deadline_ns && deadline_ns <= now)
		return SCHED_BIND_TIMED_OUT;
	r = sched_block(&b->h, v->id, now);
	if (r)
		return r;
	__atomic_fetch_add(&vs->nr_blocks, 1, __ATOMIC_RELAXED);
	/* A wake between the caller's look at its interrupts and the block
	 * found us runnable and did nothing: undo the block ourselves. */
	if (__atomic_load_n(&vs->wake_seq, __ATOMIC_SEQ_CST) != token)
		sched_wake(&b->h, v->id, now, v->pcpu, NULL);
	r = schedule_and_hand_on(v, true, deadline_ns);
	if (r < 0)
		return r;
	if (r == 1)
		return SCHED_BIND_WOKEN;
	/* The deadline passed while blocked: that is this vCPU's timer
	 * interrupt, which wakes it. */
	sched_bind_vcpu_wake(b, v, v);
	r = park(v, 0);
	return r < 0 ? r : SCHED_BIND_TIMED_OUT;
}

int sched_bind_vcpu_wake(struct sched_bind *b, struct sched_bind_vcpu *target,
			 struct sched_bind_vcpu *self)
{
	struct sched_shm_vcpu *vs = vslot(b, target->id);
	struct sched_wake_result res;
	uint64_t now = sched_bind_now_ns();
	unsigned waker_pcpu;
	int r;

	if (!self)
		self = self_vcpu;
	waker_pcpu = self ? self->pcpu : SCHED_NONE;

	__atomic_fetch_add(&vs->wake_seq, 1, __ATOMIC_SEQ_CST);
	r = sched_wake(&b->h, target->id, now, waker_pcpu, &res);
	if (r)
		return r;
	if (res.how != SCHED_WAKE_ALREADY) {
		uint64_t zero = 0;

		__atomic_fetch_add(&vs->nr_wakeups, 1, __ATOMIC_RELAXED);
		__atomic_compare_exchange_n(&vs->wake_start_ns, &zero, now, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		zero = 0;
		__atomic_compare_exchange_n(&vs->runnable_since_ns, &zero, now, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
	if (res.how == SCHED_WAKE_LISTED) {
		/* the woken thread claims and drains its target itself */
		to_service[res.pcpu / 64] &= ~(1ull << (res.pcpu % 64));
		grant(b, target->id, GRANT_CLAIM | (res.pcpu + 1));
	}
	service_pending(b);
	return (int)res.how;
}

int sched_bind_vcpu_check(struct sched_bind_vcpu *v)
{
	struct sched_bind *b = v->b;
	struct sched_shm_pcpu *pc;
	uint64_t now;
	bool kicked;
	int r;

	if (v->pcpu == SCHED_NONE)
		return -EINVAL;
	pc = pcpu_slot(b, v->pcpu);
	timer_sync(v);
	kicked = __atomic_exchange_n(&pc->kicked, 0u, __ATOMIC_SEQ_CST);
	now = sched_bind_now_ns();
	if (!kicked && (!v->armed_ns || now < v->armed_ns) &&
	    now - pc->last_balance_ns < b->balance_period_ns)
		return 0;
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
	service_pending(b);
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
	uint64_t now = sched_bind_now_ns();

	__atomic_store_n(&b->local[v->id], NULL, __ATOMIC_RELEASE);
	sched_entity_remove(&b->h, v->id, now);
	__atomic_store_n(&vslot(b, v->id)->in_use, 0u, __ATOMIC_RELEASE);
	if (p != SCHED_NONE) {
		struct sched_switch sw;

		run_end(v, now);
		sched_wake_drain(&b->h, p, now);
		if (sched_schedule(&b->h, p, now, &sw))
			sw.next = SCHED_NONE;
		v->pcpu = SCHED_NONE;
		pcpu_hand_on(b, p, sw.next);
	}
	service_pending(b);
	if (v->has_timer)
		timer_delete(v->timer);
	v->has_timer = false;
	if (self_vcpu == v)
		self_vcpu = NULL;
}

/* A dead member's threads held pCPUs or claims: take them back and decide. */
static void member_dead(void *arg, pid_t pid)
{
	struct sched_bind *b = arg;

	for (unsigned p = 0; p < b->shm->hdr->nr_pcpus; p++) {
		struct sched_shm_pcpu *pc = pcpu_slot(b, p);
		uint32_t r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
		bool dead;

		if (r == SCHED_NONE)
			continue;
		if (r >= SCHED_SHM_CLAIM_BASE)
			dead = b->shm->members[r - SCHED_SHM_CLAIM_BASE].pid == pid;
		else
			dead = vslot(b, r)->pid == pid;
		if (dead && __atomic_compare_exchange_n(&pc->released, &r, SCHED_NONE, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&pc->kicked, 1u, __ATOMIC_SEQ_CST);
			to_service[p / 64] |= 1ull << (p % 64);
			any_to_service = true;
		}
	}
}

int sched_bind_reap(struct sched_bind *b)
{
	int r = sched_shm_reap(b->shm, &b->h, sched_bind_now_ns(), member_dead, b);

	service_pending(b);
	return r;
}

void sched_bind_stop(struct sched_bind *b)
{
	__atomic_store_n(&b->stopping, true, __ATOMIC_SEQ_CST);
	for (unsigned id = 0; id < b->shm->hdr->max_entities; id++) {
		struct sched_bind_vcpu *v = __atomic_load_n(&b->local[id], __ATOMIC_ACQUIRE);

		if (v)
			futex(&vslot(b, id)->grant, FUTEX_WAKE, 1, NULL);
	}
}

uint64_t sched_bind_vcpu_wait_ns(const struct sched_bind_vcpu *v)
{
	return __atomic_load_n(&v->b->shm->vcpus[v->id].wait_ns, __ATOMIC_RELAXED);
}
