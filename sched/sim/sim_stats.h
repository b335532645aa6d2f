/*
 * Latency samples and their percentiles. Every sample is kept (a run has at
 * most a few hundred thousand), so percentiles are exact nearest-rank values
 * rather than histogram-bucket estimates: p99.9 of 20000 samples is the
 * 19980th smallest, which is what schbench and the seeds report.
 */
#ifndef LAGVISOR_SIM_STATS_H
#define LAGVISOR_SIM_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim_samples {
	uint64_t *v;
	size_t n, cap;
	bool sorted;
};

void sim_samples_init(struct sim_samples *s);
void sim_samples_free(struct sim_samples *s);

/* 0 or -ENOMEM. */
int sim_samples_add(struct sim_samples *s, uint64_t x);

/*
 * Nearest-rank percentile: the smallest sample with at least pct % of the
 * samples <= it (index ceil(pct/100 * n) - 1). 0 when empty. Sorts on
 * first use after an add.
 */
uint64_t sim_samples_pct(struct sim_samples *s, double pct);

/* Arithmetic mean, 0 when empty. */
double sim_samples_mean(const struct sim_samples *s);

uint64_t sim_samples_max(struct sim_samples *s);

/* The percentiles every report prints, in this order. */
#define SIM_NR_PCTS 5
extern const double sim_pcts[SIM_NR_PCTS];	/* 50, 90, 99, 99.5, 99.9 */

#endif
