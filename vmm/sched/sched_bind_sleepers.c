/*
 * Blocked vCPUs' own deadlines, watched by the holder of their pCPU.
 *
 * A vCPU that halts with its LAPIC timer armed blocks in sched/ until an
 * interrupt wakes it; its timer is an interrupt only lagvisor can raise,
 * at the deadline. If the thread itself had to notice the deadline (a
 * futex wait that times out), the wake would need the host to run that
 * thread first, on a host CPU where the holder of the pCPU is running: the
 * host scheduler decides, sched/ still thinks the vCPU blocked, and nothing
 * preempts the holder. On a loaded host, or with the two VMs in different
 * autogroups, that took seconds (the chaos-neighbour test: 1.5-6.5 s).
 *
 * So the deadline is also published: the vCPU's slot keeps it
 * (sleep_deadline_ns, sleep_pcpu) and the pCPU's `sleeper_ns` keeps the
 * earliest one of the vCPUs that blocked there. The holder arms its slice
 * timer at the earlier of its slice end and that word (timer_sync), and
 * when it fires wakes every overdue sleeper of its pCPU through sched/, so
 * that the wakee preempts the holder as an IPI would and gets the host CPU
 * by the hand-over. The sleeper's own futex timeout stays as the fallback
 * for a pCPU that went idle (then its host CPU is free anyway).
 *
 * No lock: the word is a lower bound, updated by an atomic min. A scan
 * first takes the word (exchange to 0) and then reads the slots, and a
 * blocker stores its slot before its min-update, so every deadline is
 * either still in the word or seen by the scan. A stale word (its sleeper
 * woke by an interrupt) only makes one early scan; a stale slot (read just
 * before its vCPU woke) only a wake that finds the vCPU runnable, or a
 * spurious one that its sleep loop absorbs.
 */
#include "vmm/sched/sched_bind_internal.h"

#include <errno.h>
#include <signal.h>

static void word_min(uint64_t *word, uint64_t t)
{
	uint64_t cur = __atomic_load_n(word, __ATOMIC_SEQ_CST);

	while ((!cur || t < cur) &&
	       !__atomic_compare_exchange_n(word, &cur, t, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST))
		;
}

void sched_bind_sleeper_arm(struct sched_bind_vcpu *v, uint64_t deadline_ns)
{
	struct sched_shm_vcpu *vs = bind_vcpu(v->b, v->id);

	if (!deadline_ns || v->pcpu == SCHED_NONE ||
	    !sched_feature_enabled(v->b->shm->dom, SCHED_FEAT_HOLDER_WAKE))
		return;
	__atomic_store_n(&vs->sleep_pcpu, v->pcpu, __ATOMIC_SEQ_CST);
	__atomic_store_n(&vs->sleep_deadline_ns, deadline_ns, __ATOMIC_SEQ_CST);
	word_min(&bind_pcpu(v->b, v->pcpu)->sleeper_ns, deadline_ns);
}

void sched_bind_sleeper_disarm(struct sched_bind_vcpu *v)
{
	__atomic_store_n(&bind_vcpu(v->b, v->id)->sleep_deadline_ns, 0, __ATOMIC_SEQ_CST);
}

int sched_bind_sleepers_wake(struct sched_bind *b, unsigned p, uint64_t now)
{
	uint64_t *word = &bind_pcpu(b, p)->sleeper_ns;
	uint64_t w = __atomic_load_n(word, __ATOMIC_SEQ_CST), next = 0;
	int woken = 0;

	if (!w || now < w)
		return 0;
	__atomic_store_n(word, 0, __ATOMIC_SEQ_CST);
	for (unsigned id = 0; id < b->shm->hdr->max_entities; id++) {
		struct sched_shm_vcpu *vs = bind_vcpu(b, id);
		uint64_t d = __atomic_load_n(&vs->sleep_deadline_ns, __ATOMIC_SEQ_CST);

		if (!d || __atomic_load_n(&vs->sleep_pcpu, __ATOMIC_SEQ_CST) != p ||
		    !__atomic_load_n(&vs->in_use, __ATOMIC_SEQ_CST))
			continue;
		if (d > now) {
			if (!next || d < next)
				next = d;
			continue;
		}
		/* A member that died keeps its slots until a reap: waking
		 * its vCPU would hand the pCPU to a thread that is gone. */
		if (vs->pid != b->pid && kill(vs->pid, 0) && errno == ESRCH)
			continue;
		/* its own thread disarms when it runs again; until then a
		 * later scan's wake finds it runnable and does nothing */
		if (sched_bind_wake_entity(b, id, p, 0) > 0)
			woken++;
	}
	if (next)
		word_min(word, next);
	return woken;
}
