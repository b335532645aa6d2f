/*
 * The two cost sets. In the engine's terms (sim.h): exit_ns is a guest exit
 * and the return to it (a kicked hog pays it once), wake_cost_ns the
 * waker's CPU for one IPI send (the ICR write's exit), wake_ns a parked or
 * halted thread on an idle pCPU woken until its guest runs, kick_ns a
 * running guest interrupted until it has exited, ctxsw_ns one vCPU thread
 * handing its pCPU to another up to the next guest entry, flush_ns the
 * target's wake-list drain.
 *
 * "pvm": measured on the PVM-backend host the project runs on (native
 * guests, bench-irq, guest-tests' NATIVE-COSTS):
 *   PIO exit to the VMM and back 22 us                 -> lagvisor exit 22
 *   LAPIC access, lagvisor's irqchip 22-25 us           -> lagvisor wake_cost 23.5
 *   LAPIC access, KVM's irqchip 6-7 us (in-kernel exit) -> host exit, wake_cost 6.5
 *   IPI round trip p50: KVM's irqchip 46.9 us, lagvisor's 123.5 us. One way
 *   is half: 23.5 = 6.5 (send) + wake + drain -> host wake 16 (drain 1);
 *   62 = 23.5 + wake + drain -> lagvisor wake 35.5 (drain 3).
 *   Not measured: the kick of a running guest is the host's cross-CPU wake
 *   without the send (23.5 - 6.5 = 17 us; lagvisor's signal adds ~3 us); a
 *   switch between vCPU threads is taken as an entry (half the 22 us exit)
 *   for the kernel, plus two futex calls (~4 us each here) for lagvisor.
 *   These four are what the calibration (sim_fleet.c) tests.
 *   By December 2026 the same host's exit to userspace cost ~55 us of CPU
 *   more than KVM's in-kernel handling (sched/README.md section 7.1), about
 *   three times the 22 us above: this set is the earlier host's, and its
 *   calibration against today's bench-tail is to be redone.
 *
 * "vmx": published figures for VT-x hardware. A VM exit and entry handled
 * in the kernel cost hundreds to thousands of cycles (Intel, "Virtualization
 * and Performance: Understanding VM Exits", 2009), ~0.5-1 us; an exit to
 * the VMM through KVM_RUN about 2500 cycles more (LKML, "[PATCH v2] KVM:
 * SVM: use vmsave/vmload for saving/restoring additional host state",
 * December 2020: ioctl entry to exit 2528 cycles), ~1 us at 2.5 GHz; a
 * thread context switch 1-2 us (pipe ping-pong, Linux 6.6: 1.07 us per
 * switch; 2-5 us with the caches refilled), a futex wake of a thread on an
 * idle CPU a few us plus the idle exit. Hence:
 *   kernel: exit 1, send 1.5, kick 2 (IPI + exit), wake 6 (IPI, idle exit,
 *   switch, entry), switch 2.5 (switch + vcpu_load + entry), drain 1;
 *   lagvisor: exit 2 (+ KVM_RUN), send 3 (exit to the VMM, the irqchip,
 *   sched_wake, a futex wake), kick 3 (signal + IPI + exit), wake 8, switch
 *   4.5 (futex wake, futex wait, switch, entry), drain 2.
 */
#include "sim_costs.h"

#include <string.h>

#define US(x) ((uint64_t)((x) * 1000.0))

const struct sim_cost_set sim_cost_sets[] = {
	{
		.name = "pvm",
		.what = "measured on this host (KVM PVM backend, native guests): exits, LAPIC, IPI round trip",
		.lagvisor = { .exit_ns = US(22), .kick_ns = US(20), .wake_ns = US(35.5),
			      .ctxsw_ns = US(19), .flush_ns = US(3), .wake_cost_ns = US(23.5) },
		.host = { .exit_ns = US(6.5), .kick_ns = US(17), .wake_ns = US(16),
			  .ctxsw_ns = US(11), .flush_ns = US(1), .wake_cost_ns = US(6.5) },
	},
	{
		.name = "vmx",
		.what = "published VT-x figures: exit/entry ~1 us, KVM_RUN round trip +1 us, switch 1-2.5 us",
		.lagvisor = { .exit_ns = US(2), .kick_ns = US(3), .wake_ns = US(8),
			      .ctxsw_ns = US(4.5), .flush_ns = US(2), .wake_cost_ns = US(3) },
		.host = { .exit_ns = US(1), .kick_ns = US(2), .wake_ns = US(6),
			  .ctxsw_ns = US(2.5), .flush_ns = US(1), .wake_cost_ns = US(1.5) },
	},
};
const unsigned sim_nr_cost_sets = sizeof(sim_cost_sets) / sizeof(sim_cost_sets[0]);

const struct sim_cost_set *sim_cost_set_find(const char *name)
{
	for (unsigned i = 0; i < sim_nr_cost_sets; i++)
		if (!strcmp(sim_cost_sets[i].name, name))
			return &sim_cost_sets[i];
	return NULL;
}

void sim_costs_apply(struct sim_params *p, const struct sim_cost_set *set, enum sim_model model)
{
	const struct sim_costs *c = model == SIM_MODEL_HOST ? &set->host : &set->lagvisor;

	p->exit_ns = c->exit_ns;
	p->kick_ns = c->kick_ns;
	p->wake_ns = c->wake_ns;
	p->ctxsw_ns = c->ctxsw_ns;
	p->flush_ns = c->flush_ns;
	p->wake_cost_ns = c->wake_cost_ns;
}

void sim_costs_print_md(FILE *f, const struct sim_cost_set *set)
{
	static const char *const rows[] = { "exit + return", "kick a running guest",
					    "wake on an idle pCPU", "switch vCPU threads",
					    "wake-list drain", "IPI send (waker)" };
	const struct sim_costs *c[2] = { &set->host, &set->lagvisor };

	fprintf(f, "Cost set `%s`: %s.\n\n| cost (us) | host (kernel) | lagvisor (userspace) |\n"
		   "|---|---:|---:|\n", set->name, set->what);
	for (unsigned i = 0; i < 6; i++) {
		double v[2];

		for (unsigned m = 0; m < 2; m++) {
			const uint64_t x[6] = { c[m]->exit_ns, c[m]->kick_ns, c[m]->wake_ns,
						c[m]->ctxsw_ns, c[m]->flush_ns, c[m]->wake_cost_ns };

			v[m] = (double)x[i] / 1e3;
		}
		fprintf(f, "| %s | %.1f | %.1f |\n", rows[i], v[0], v[1]);
	}
	fprintf(f, "\n");
}
