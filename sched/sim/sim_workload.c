/*
 * What each vCPU's guest does with the CPU it gets. A workload is a sequence
 * of CPU-work segments separated by actions (waking another vCPU) and halts.
 * Work is CPU time, not wall time: a preempted segment resumes where it
 * stopped, so a vCPU that waits longer finishes later, as a guest spinning on
 * a work loop would.
 */
#include "sim.h"

/* A hog's single segment: effectively endless, but time + it cannot wrap. */
#define SIM_FOREVER_NS (1ULL << 62)

static bool worker_waiting(const struct sim_vcpu *w)
{
	return w->state == SIM_V_SLEEP;
}

/* Next worker of msg (from msg_next on) that waits for a message, or NULL. */
static struct sim_vcpu *msg_next_worker(struct sim *s, struct sim_vcpu *msg)
{
	while (msg->msg_next < msg->nr_workers) {
		struct sim_vcpu *w = s->vcpu[msg->worker0 + msg->msg_next];

		if (worker_waiting(w))
			return w;
		msg->msg_next++;
	}
	return NULL;
}

uint64_t sim_workload_begin(struct sim *s, struct sim_vcpu *v)
{
	switch (v->wl) {
	case SIM_WL_HOG:
		return SIM_FOREVER_NS;
	case SIM_WL_PERIODIC:
	case SIM_WL_WORKER:
	case SIM_WL_ONESHOT:
		return sim_rng_jitter(&s->rng, v->run_ns, v->jitter_pct);
	case SIM_WL_TIMER:
		return v->run_ns;
	case SIM_WL_MSG:
		/* Each wake it sends costs it wake_cost_ns of CPU (the ICR
		 * write exit and the futex/IPI work); a round with nobody
		 * waiting is a short look at the list. */
		v->msg_next = 0;
		v->msg_tail_done = false;
		return msg_next_worker(s, v) ? s->p.wake_cost_ns : s->p.wake_cost_ns / 2 + 1;
	}
	return 1;
}

uint64_t sim_workload_step(struct sim *s, struct sim_vcpu *v, uint64_t *wake_at, bool *dead)
{
	*wake_at = UINT64_MAX;
	*dead = false;
	switch (v->wl) {
	case SIM_WL_HOG:
		return SIM_FOREVER_NS;
	case SIM_WL_PERIODIC:
		*wake_at = s->now + sim_rng_jitter(&s->rng, v->sleep_ns, v->jitter_pct);
		return 0;
	case SIM_WL_TIMER:
		/* Absolute periodic timer (rt-app "mode": "absolute"): a late
		 * run does not shift later expiries. */
		if (v->period_next == 0)
			v->period_next = v->period_ns;
		while (v->period_next <= s->now)
			v->period_next += v->period_ns;
		*wake_at = v->period_next;
		return 0;
	case SIM_WL_WORKER:
		return 0;	/* waits for its message vCPU */
	case SIM_WL_ONESHOT:
		*dead = true;
		return 0;
	case SIM_WL_MSG: {
		struct sim_vcpu *w = msg_next_worker(s, v);

		if (w) {
			/* wakebench stamps the TSC before its ICR write, so
			 * there the sample holds the send's exit as well, and
			 * any wait of the message vCPU preempted mid-send (a
			 * slice shorter than its round): the stamp is the
			 * send segment's first guest instant. */
			uint64_t stamp = s->now;

			if (s->p.lat_from_stamp && v->seg_start_ns <= stamp)
				stamp = v->seg_start_ns;
			v->msg_next++;
			sim_wake_stamped(s, w, v->pcpu, SIM_LAT_WAKE, stamp);
			if (msg_next_worker(s, v))
				return s->p.wake_cost_ns;
		}
		/* The rest of the round, once, between the last send and the
		 * halt: wakebench arms its next TSC deadline there (an exit),
		 * and with lagvisor's irqchip the VMM's per-round work lands
		 * in the same stretch. A worker handed this pCPU at the halt
		 * (IPI_HANDOFF) waits for it. */
		if (s->p.round_cost_ns && !v->msg_tail_done) {
			v->msg_tail_done = true;
			return s->p.round_cost_ns;
		}
		if (v->period_ns) {
			/* wakebench's rounds: a LAPIC one-shot at the next
			 * multiple of the period, late rounds not made up. */
			if (v->period_next <= s->now)
				v->period_next = (s->now / v->period_ns + 1) * v->period_ns;
			*wake_at = v->period_next;
			return 0;
		}
		*wake_at = s->now + sim_rng_jitter(&s->rng, v->sleep_ns, v->jitter_pct);
		return 0;
	}
	}
	return 0;
}
