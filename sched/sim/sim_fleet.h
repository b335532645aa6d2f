/*
 * lagvisor against the host scheduler (issue 18 item 4): a fleet of
 * wakebench-like latency VMs beside hog VMs, run under the HOST model and
 * under lagvisor's policy with each side's mechanism costs, and the
 * calibration of both models against bench-tail's measurements at 2 pCPUs.
 */
#ifndef LAGVISOR_SIM_FLEET_H
#define LAGVISOR_SIM_FLEET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define SIM_FLEET_MAX_SIZES 8
#define SIM_FLEET_MAX_MEASURED 16

struct sim_fleet_opts {
	uint64_t seed;
	double scale;			/* multiplies simulated time */
	const char *features;		/* extra lagvisor features, or NULL */
	const char *host_features;	/* changes to the host model's flags, or NULL */
	const char *costs;		/* cost set name, NULL = every set */
	unsigned nr_sizes;
	unsigned pcpus[SIM_FLEET_MAX_SIZES];	/* --vs-host sizes */
	unsigned nr_ratios;
	unsigned ratios[SIM_FLEET_MAX_SIZES];	/* vCPU:pCPU levels */
	uint64_t lat_slice_ns;		/* lagvisor's --slice for latency VMs */
	uint64_t base_slice_ns;		/* lagvisor's base slice, 0 = the library's */
	/* --calibrate: bench-tail's pooled numbers, config "host" or "eevdf" */
	unsigned nr_measured;
	struct sim_measured {
		char config[16];
		unsigned level;
		double p50_us, p99_us;
	} measured[SIM_FLEET_MAX_MEASURED];
	double tolerance;		/* calibration: |sim/measured - 1| allowed */
	unsigned sis_scan;		/* --model-check: the host's scan, 0 = all */
};

void sim_fleet_opts_default(struct sim_fleet_opts *o);
/* "CONFIG:LEVEL:P50_US:P99_US" into o->measured. 0 or -EINVAL. */
int sim_fleet_add_measured(struct sim_fleet_opts *o, const char *spec);

/* Print the markdown report. Return 0 when every check passed, 1 when one
 * failed, 2 on a simulation error. */
int sim_fleet_vs_host(FILE *f, const struct sim_fleet_opts *o);
int sim_fleet_calibrate(FILE *f, const struct sim_fleet_opts *o);
/* The host model set up exactly as lagvisor (flags, slices, costs, an
 * unbounded scan) must give lagvisor's numbers to the bit. */
int sim_fleet_model_check(FILE *f, const struct sim_fleet_opts *o);

#endif
