/*
 * The two cost sets. In the engine's terms (sim.h): exit_ns is a guest exit
 * and the return to it (a kicked hog pays it once), wake_cost_ns the
 * waker's CPU for one IPI send (the ICR write's exit), wake_ns a parked or
 * halted thread on an idle pCPU woken until its guest runs, kick_ns a
 * running guest interrupted until it has exited, ctxsw_ns one vCPU thread
 * handing its pCPU to another up to the next guest entry, flush_ns the
 * target's wake-list drain, round_cost_ns what a message vCPU spends once
 * a round besides its sends (sim_workload.c: after them, before its halt).
 *
 * "pvm": measured on the PVM-backend host the project runs on (native
 * guests), December 2026 (sched/README.md section 7.1, commits 9c5a981,
 * 5688cbb, e26f47d). The first set (same host, earlier: 22 us exits, LAPIC
 * access 22-25 vs 6-7 us, IPI round trip 123.5 vs 46.9 us) gave exit 22 /
 * 6.5, switch 19 / 11, send 23.5 / 6.5; by December an exit cost about
 * five times that and the set gave 0.16-0.28 of bench-tail's p50. Measured:
 *   (a) an exit to lagvisor's userspace costs 53-56 us of CPU more than
 *       KVM's in-kernel handling of it (per-thread CPU over ioctls:
 *       (746 - 329) / 7.9 = 53 message vCPU, (347 - 185) / 2.9 = 56
 *       worker)                                                  -> +55;
 *   (b) PV EOI, which removes one EOI exit to userspace per interrupt,
 *       cut the worker's minimum wakeup 236 -> 126 us (--irqchip user; the
 *       worker's handler, EOI included, runs before it reads the TSC):
 *       one exit to userspace and back is 110 us                 -> lagvisor
 *       exit 110, and 110 - 55 = 55 for the same exit handled in KVM ->
 *       host exit 55 (perf trace's ioctl average, ~100 us, agrees);
 *   (c) wakebench alone, CPU per round (1000 rounds/s, one worker): the
 *       worker 185 us with KVM's irqchip, 347 with lagvisor's, 50 of it its
 *       work; the message vCPU with TSC-deadline timers 245 us (KVM's),
 *       645 (eevdf). All four were taken before PV EOI, which bench-tail's
 *       December runs had (both irqchips offer it, 5688cbb): each loses the
 *       EOI exit of its one interrupt a round, 55 in the kernel, 110 to
 *       userspace.
 * The model charges a woken worker's pCPU ctxsw (entry) + exit (HLT) +
 * flush (a wake from idle), so the switch is what is left of (c):
 *   host:     185 - 50 - 55 (EOI) = 80 = 55 + ctxsw + 1     -> ctxsw 24
 *   lagvisor: 347 - 50 - 110 (EOI) = 187 = 110 + ctxsw + 3  -> ctxsw 74
 * (74 - 24 = 50: the worker's 2.9 ioctls less the HLT's and the EOI's
 * leave 0.9, ~0.9 x 55.) The waker's send is the ICR write's exit, host
 * 55, lagvisor 110. The message's round is ctxsw + send + the rest +
 * exit (HLT) + flush; the rest (round_cost: its deadline write's exit,
 * and under eevdf the VMM's per-round work, 645 - 545 = 100 us of it):
 *   host:     245 - 55 (EOI) = 190 = 24 + 55 + rest + 55 + 1   -> 55
 *   lagvisor: 645 - 110 (EOI) = 535 = 74 + 110 + rest + 110 + 3 -> 238
 * (one KVM_GET_MSRS per deadline write went after the 645 (ef73a2c),
 * "tens of us", not measured and not subtracted; the worker's 347 is the
 * user irqchip's under the host scheduler, eevdf's was not measured).
 * Not remeasured in December, kept from the first set: the kick of a
 * running guest is the host's cross-CPU wake without the send (23.5 - 6.5
 * = 17 us; lagvisor's signal adds ~3 us), the wake of a parked thread on
 * an idle pCPU (16 / 35.5) and the drain (1 / 3), from the IPI round trip
 * of the time (one way 23.5 = 6.5 send + 16 + 1; 62 = 23.5 + 35.5 + 3).
 * Known misfit: the model's uncontended lagvisor wake is send + wake +
 * drain + switch = 110 + 35.5 + 3 + 74 = 222 us against (b)'s 126 minimum:
 * it charges the whole send before the target wakes and the whole switch
 * before the guest entry, where the target's thread runs while the
 * waker's exit returns. CPU per round is what these costs preserve; the
 * calibration (sim_fleet.c, sched/sim/README.md) tests the result.
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
 *   4.5 (futex wake, futex wait, switch, entry), drain 2; the message's
 *   round besides its sends is its deadline write, one exit: 1 and 2.
 */
#include "sim_costs.h"

#include <string.h>

#define US(x) ((uint64_t)((x) * 1000.0))

const struct sim_cost_set sim_cost_sets[] = {
	{
		.name = "pvm",
		.what = "measured on this host (KVM PVM backend, native guests, December 2026): "
			"exits, CPU per wakebench round",
		.lagvisor = { .exit_ns = US(110), .kick_ns = US(20), .wake_ns = US(35.5),
			      .ctxsw_ns = US(74), .flush_ns = US(3), .wake_cost_ns = US(110),
			      .round_cost_ns = US(238) },
		.host = { .exit_ns = US(55), .kick_ns = US(17), .wake_ns = US(16),
			  .ctxsw_ns = US(24), .flush_ns = US(1), .wake_cost_ns = US(55),
			  .round_cost_ns = US(55) },
	},
	{
		.name = "vmx",
		.what = "published VT-x figures: exit/entry ~1 us, KVM_RUN round trip +1 us, switch 1-2.5 us",
		.lagvisor = { .exit_ns = US(2), .kick_ns = US(3), .wake_ns = US(8),
			      .ctxsw_ns = US(4.5), .flush_ns = US(2), .wake_cost_ns = US(3),
			      .round_cost_ns = US(2) },
		.host = { .exit_ns = US(1), .kick_ns = US(2), .wake_ns = US(6),
			  .ctxsw_ns = US(2.5), .flush_ns = US(1), .wake_cost_ns = US(1.5),
			  .round_cost_ns = US(1) },
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
	p->round_cost_ns = c->round_cost_ns;
}

void sim_costs_print_md(FILE *f, const struct sim_cost_set *set)
{
	static const char *const rows[] = { "exit + return", "kick a running guest",
					    "wake on an idle pCPU", "switch vCPU threads",
					    "wake-list drain", "IPI send (waker)",
					    "message round besides sends" };
	const struct sim_costs *c[2] = { &set->host, &set->lagvisor };

	fprintf(f, "Cost set `%s`: %s.\n\n| cost (us) | host (kernel) | lagvisor (userspace) |\n"
		   "|---|---:|---:|\n", set->name, set->what);
	for (unsigned i = 0; i < 7; i++) {
		double v[2];

		for (unsigned m = 0; m < 2; m++) {
			const uint64_t x[7] = { c[m]->exit_ns, c[m]->kick_ns, c[m]->wake_ns,
						c[m]->ctxsw_ns, c[m]->flush_ns, c[m]->wake_cost_ns,
						c[m]->round_cost_ns };

			v[m] = (double)x[i] / 1e3;
		}
		fprintf(f, "| %s | %.1f | %.1f |\n", rows[i], v[0], v[1]);
	}
	fprintf(f, "\n");
}
