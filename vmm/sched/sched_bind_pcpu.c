/* The per-pCPU runner-token protocol and the host ops (see sched_bind.h). */
#include "vmm/sched/sched_bind_internal.h"

#include "common/clock.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The vCPU this thread is (NULL for I/O and other threads), and the idle
 * pCPUs that a host op asked this thread to find a holder for: host ops
 * run under rq locks and may not call sched/, so the work is done after the
 * sched_* call returns (service_pending). */
__thread struct sched_bind_vcpu *sched_bind_self;
static __thread uint64_t to_service[SCHED_MAX_PCPUS / 64];
static __thread bool any_to_service;

long sched_bind_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts)
{
	/* not FUTEX_PRIVATE: the word may live in a file shared by processes */
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Make the holder of a pCPU (entity id) leave guest mode. */
static void signal_entity(struct sched_bind *b, unsigned id, unsigned p)
{
	struct sched_shm_vcpu *vs = bind_vcpu(b, id);

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

		if (__atomic_compare_exchange_n(&bind_pcpu(b, p)->released, &exp, SCHED_NONE,
						false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			to_service[p / 64] |= 1ull << (p % 64);
			any_to_service = true;
		}
	}
}

static void op_kick(void *opaque, unsigned p)
{
	struct sched_bind *b = opaque;
	struct sched_shm_pcpu *pc = bind_pcpu(b, p);
	uint32_t r;

	__atomic_store_n(&pc->kicked, 1u, __ATOMIC_SEQ_CST);
	r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
	if (r == SCHED_NONE) {
		to_service[p / 64] |= 1ull << (p % 64);
		any_to_service = true;
	} else if (r < SCHED_SHM_CLAIM_BASE && !(sched_bind_self && sched_bind_self->id == r)) {
		signal_entity(b, r, p);
	}
	/* a claimer, or ourselves: it reads `kicked` before it lets go */
}

static void op_arm_timer(void *opaque, unsigned p, uint64_t deadline_ns)
{
	struct sched_bind *b = opaque;
	struct sched_shm_pcpu *pc = bind_pcpu(b, p);
	uint32_t r;

	__atomic_store_n(&pc->timer_ns, deadline_ns, __ATOMIC_SEQ_CST);
	r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
	/* The holder arms its own timer (a timer signals the thread that
	 * created it): tell it, unless we are it (we sync before returning). */
	if (r < SCHED_SHM_CLAIM_BASE && !(sched_bind_self && sched_bind_self->id == r))
		signal_entity(b, r, p);
}

static void op_trace(void *opaque, const struct sched_trace_event *ev)
{
	struct sched_bind *b = opaque;
	struct sched_shm_vcpu *vs;

	switch (ev->type) {
	case SCHED_TRACE_PREEMPT:
		if (ev->other < b->shm->hdr->max_entities)
			__atomic_fetch_add(&bind_vcpu(b, ev->other)->nr_preemptions, 1, __ATOMIC_RELAXED);
		break;
	case SCHED_TRACE_MIGRATE:
		if (ev->entity < b->shm->hdr->max_entities) {
			vs = bind_vcpu(b, ev->entity);
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

void sched_bind_grant(struct sched_bind *b, unsigned id, uint32_t word)
{
	struct sched_shm_vcpu *vs = bind_vcpu(b, id);

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
	sched_bind_futex(&vs->grant, FUTEX_WAKE, 1, NULL);
}

/*
 * p has no holder and a decision is wanted: claim it, drain and pick, hand
 * it to the pick. Loops while kicks arrive during the claim (they saw the
 * claim and left the work to us).
 */
void sched_bind_service(struct sched_bind *b, unsigned p)
{
	struct sched_shm_pcpu *pc = bind_pcpu(b, p);
	uint32_t claim = bind_claim_token(b);

	for (;;) {
		uint32_t exp = SCHED_NONE;
		struct sched_switch sw;
		uint64_t now = clock_now_ns();

		if (!__atomic_compare_exchange_n(&pc->released, &exp, claim, false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return;                /* it has a holder or a claimer */
		__atomic_store_n(&pc->kicked, 0u, __ATOMIC_SEQ_CST);
		sched_wake_drain(&b->h, p, now);
		if (sched_schedule(&b->h, p, now, &sw))
			sw.next = SCHED_NONE;
		if (sw.next != SCHED_NONE) {
			__atomic_store_n(&pc->released, sw.next, __ATOMIC_SEQ_CST);
			sched_bind_grant(b, sw.next, p + 1);
			return;
		}
		__atomic_store_n(&pc->released, SCHED_NONE, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&pc->kicked, __ATOMIC_SEQ_CST))
			return;
	}
}

void sched_bind_service_pending(struct sched_bind *b)
{
	while (any_to_service) {
		any_to_service = false;
		for (unsigned w = 0; w < (b->shm->hdr->nr_pcpus + 63) / 64; w++) {
			while (to_service[w]) {
				unsigned p = w * 64 + (unsigned)__builtin_ctzll(to_service[w]);

				to_service[w] &= to_service[w] - 1;
				sched_bind_service(b, p);
			}
		}
	}
}

/* The holder lets p go to next (SCHED_NONE: p goes idle). */
void sched_bind_hand_on(struct sched_bind *b, unsigned p, uint32_t next)
{
	struct sched_shm_pcpu *pc = bind_pcpu(b, p);

	if (next != SCHED_NONE) {
		__atomic_store_n(&pc->released, next, __ATOMIC_SEQ_CST);
		sched_bind_grant(b, next, p + 1);
		return;
	}
	__atomic_store_n(&pc->released, SCHED_NONE, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&pc->kicked, __ATOMIC_SEQ_CST))
		sched_bind_service(b, p);
}

void sched_bind_unservice(unsigned p)
{
	to_service[p / 64] &= ~(1ull << (p % 64));
}

/* p's token still says r, which will never let go: take p back (if r is
 * still there) and have this thread decide for it. */
static void take_back(struct sched_bind *b, unsigned p, uint32_t r)
{
	struct sched_shm_pcpu *pc = bind_pcpu(b, p);

	if (__atomic_compare_exchange_n(&pc->released, &r, SCHED_NONE, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&pc->kicked, 1u, __ATOMIC_SEQ_CST);
		to_service[p / 64] |= 1ull << (p % 64);
		any_to_service = true;
	}
}

/* A dead member's threads held pCPUs or claims: take them back and decide. */
static void member_dead(void *arg, pid_t pid)
{
	struct sched_bind *b = arg;

	for (unsigned p = 0; p < b->shm->hdr->nr_pcpus; p++) {
		struct sched_shm_pcpu *pc = bind_pcpu(b, p);
		uint32_t r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);
		bool dead;

		if (r == SCHED_NONE)
			continue;
		if (r >= SCHED_SHM_CLAIM_BASE)
			dead = b->shm->members[r - SCHED_SHM_CLAIM_BASE].pid == pid;
		else
			dead = bind_vcpu(b, r)->pid == pid;
		if (dead)
			take_back(b, p, r);
	}
}

/*
 * A pCPU handed to an entity whose thread has already left: a holder
 * picked it (sched/ made it curr) just before its VM stopped and its
 * thread, on the way out, removed it without seeing the grant. Nobody
 * would ever decide for that pCPU again and everything queued there would
 * starve. in_use drops only after an exiting thread passed on what it
 * held (sched_bind_vcpu_exit), so a holder token naming an entity not in
 * use is an orphan: take it back like a dead member's.
 */
static void reap_orphans(struct sched_bind *b)
{
	for (unsigned p = 0; p < b->shm->hdr->nr_pcpus; p++) {
		struct sched_shm_pcpu *pc = bind_pcpu(b, p);
		uint32_t r = __atomic_load_n(&pc->released, __ATOMIC_SEQ_CST);

		if (r == SCHED_NONE || r >= SCHED_SHM_CLAIM_BASE ||
		    __atomic_load_n(&bind_vcpu(b, r)->in_use, __ATOMIC_SEQ_CST))
			continue;
		take_back(b, p, r);
	}
}

int sched_bind_reap(struct sched_bind *b)
{
	int r = sched_shm_reap(b->shm, &b->h, clock_now_ns(), member_dead, b);

	reap_orphans(b);
	sched_bind_service_pending(b);
	return r;
}

void sched_bind_stop(struct sched_bind *b)
{
	__atomic_store_n(&b->stopping, true, __ATOMIC_SEQ_CST);
	for (unsigned id = 0; id < b->shm->hdr->max_entities; id++) {
		struct sched_bind_vcpu *v = __atomic_load_n(&b->local[id], __ATOMIC_ACQUIRE);

		if (v)
			sched_bind_futex(&bind_vcpu(b, id)->grant, FUTEX_WAKE, 1, NULL);
	}
}
