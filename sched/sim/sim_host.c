/*
 * The HOST model: Linux's fair class scheduling vCPU threads it knows
 * nothing about. Linux (6.6 and later) runs EEVDF on per-CPU queues with the
 * same placement, eligibility and deadline rules sched/ implements from the
 * same spec, so the model reuses the library rather than a second EEVDF of
 * its own (whose bugs would be counted as differences between the
 * schedulers). What differs, and what this file supplies:
 *   - the feature defaults of Linux 6.12+ (delayed dequeue, short-slice
 *     preemption), for those flags this sched/ has; a flag the table does
 *     not name is lagvisor's own (Linux has no such feature), so the model
 *     switches it off and prints it: a VM-aware flag added later can never
 *     silently join the baseline;
 *   - the base slice, 0.7 ms scaled by 1 + log2 of the CPUs (at most 8);
 *   - the wake's CPU: select_idle_sibling looks at the previous CPU and a
 *     bounded number of its last-level-cache siblings, never the whole host
 *     (lagvisor scans every pCPU of its domain);
 *   - in-kernel mechanism costs (sim_costs.c), set by the caller.
 * What it lacks: wake_affine (pulling a wakee to the waker's CPU),
 * recent_used_cpu, SIS_UTIL's load-dependent scan depth, NUMA and the
 * hierarchy of balancing domains, KVM's halt polling, cgroups.
 */
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"
#include "sim.h"

/* Linux 6.12+ kernel/sched/features.h, as these flags mean it in sched/. */
static const struct {
	const char *name;
	bool on;
} linux_flags[] = {
	{ "PLACE_LAG", true },
	{ "FAIR_SLEEPERS", false },		/* gone since EEVDF (6.6) */
	{ "PLACE_DEADLINE_INITIAL", true },
	{ "PLACE_FIRST_ENQUEUE", true },	/* placement at the first enqueue */
	{ "PLACE_REL_DEADLINE", true },
	{ "RUN_TO_PARITY", true },
	{ "PREEMPT_SHORT", true },
	{ "WAKEUP_PREEMPTION", true },
	{ "IDLE_NO_COMPENSATION", true },
	{ "TTWU_PENDING", true },		/* ttwu_queue's wake list, ttwu_pending */
	{ "TTWU_PENDING_EARLY_CLEAR", false },
	{ "DELAY_DEQUEUE", true },
	{ "DELAY_ZERO", true },
	{ "PREEMPT_ELIGIBLE", true },
	{ "PV_PREEMPTED", true },		/* KVM's steal-time preempted flag */
	{ "HOLDER_WAKE", true },		/* a timer interrupt wakes a task whatever runs */
};
#define NR_LINUX_FLAGS (sizeof(linux_flags) / sizeof(linux_flags[0]))

static bool in_sched(const char *name)
{
	for (unsigned f = 0; f < SCHED_FEAT_COUNT; f++) {
		const char *n = sched_feature_name((enum sched_feature)f);

		if (n && !strcmp(n, name))
			return true;
	}
	return false;
}

static bool in_table(const char *name)
{
	for (unsigned i = 0; i < NR_LINUX_FLAGS; i++)
		if (!strcmp(linux_flags[i].name, name))
			return true;
	return false;
}

static void append(char *buf, size_t len, const char *prefix, const char *name)
{
	size_t n = strlen(buf);

	if (n < len)
		snprintf(buf + n, len - n, "%s%s%s", n ? "," : "", prefix, name);
}

void sim_host_features(char *buf, size_t len)
{
	buf[0] = 0;
	for (unsigned i = 0; i < NR_LINUX_FLAGS; i++)
		if (in_sched(linux_flags[i].name))
			append(buf, len, linux_flags[i].on ? "" : "NO_", linux_flags[i].name);
	for (unsigned f = 0; f < SCHED_FEAT_COUNT; f++) {
		const char *n = sched_feature_name((enum sched_feature)f);

		if (n && !in_table(n))
			append(buf, len, "NO_", n);
	}
}

void sim_host_features_unknown(char *buf, size_t len)
{
	buf[0] = 0;
	for (unsigned f = 0; f < SCHED_FEAT_COUNT; f++) {
		const char *n = sched_feature_name((enum sched_feature)f);

		if (n && !in_table(n))
			append(buf, len, "", n);
	}
}

uint64_t sim_host_slice_ns(unsigned nr_pcpus)
{
	unsigned cpus = nr_pcpus < 8 ? nr_pcpus : 8, factor = 1;

	while (cpus > 1) {	/* 1 + ilog2 */
		cpus >>= 1;
		factor++;
	}
	return 700 * SIM_NS_PER_US * factor;
}

/*
 * select_idle_sibling with target = prev: prev if idle, else the first idle
 * CPU among the next sis_scan CPUs of prev's LLC (wrapping inside it), else
 * prev, where the wakee queues behind whatever runs there. The scan starts
 * after prev as select_idle_cpu's does, so wakers whose prev CPUs are
 * neighbours find the same idle CPU, as they do on Linux.
 */
unsigned sim_host_select(struct sim *s, int prev, int waker)
{
	unsigned llc = s->p.llc_pcpus ? s->p.llc_pcpus : 16;
	unsigned scan = s->p.sis_scan ? s->p.sis_scan : 8;
	unsigned p = prev >= 0 ? (unsigned)prev : (waker >= 0 ? (unsigned)waker : 0);
	unsigned base, size;

	if (p >= s->nr_pcpus)
		p = 0;
	if (sim_sched_pcpu_idle(s, p))
		return p;
	if (llc > s->nr_pcpus)
		llc = s->nr_pcpus;
	base = p / llc * llc;
	size = base + llc <= s->nr_pcpus ? llc : s->nr_pcpus - base;
	if (scan > size - 1)
		scan = size - 1;
	for (unsigned k = 1; k <= scan; k++) {
		unsigned c = base + (p - base + k) % size;

		if (sim_sched_pcpu_idle(s, c))
			return c;
	}
	return p;
}
