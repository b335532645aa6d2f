/*
 * Mechanism cost sets for the vs-host comparison: what one wake, exit,
 * kick and switch costs lagvisor (userspace: its irqchip, futex handoffs,
 * exits to the VMM) and the host kernel (KVM's irqchip, in-kernel switches)
 * on one kind of machine. Each set is printed with every table that uses it.
 */
#ifndef LAGVISOR_SIM_COSTS_H
#define LAGVISOR_SIM_COSTS_H

#include <stdio.h>

#include "sim.h"

struct sim_costs {
	uint64_t exit_ns, kick_ns, wake_ns, ctxsw_ns, flush_ns, wake_cost_ns, round_cost_ns;
};

struct sim_cost_set {
	const char *name;		/* --costs NAME */
	const char *what;		/* one line: where the numbers come from */
	struct sim_costs lagvisor, host;
};

extern const struct sim_cost_set sim_cost_sets[];
extern const unsigned sim_nr_cost_sets;

const struct sim_cost_set *sim_cost_set_find(const char *name);
/* Writes model's costs of set into p. */
void sim_costs_apply(struct sim_params *p, const struct sim_cost_set *set, enum sim_model model);
/* The set as a markdown table, both models, in us. */
void sim_costs_print_md(FILE *f, const struct sim_cost_set *set);

#endif
