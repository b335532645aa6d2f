/*
 * Experiments: each seed thread's A/B rerun as a function of (seed, variant),
 * where a variant is a sched/ feature list. An experiment fills named
 * metrics (one column per variant), optional plot series, and checks that
 * assert the direction and rough size of the seed's effect.
 */
#ifndef LAGVISOR_SIM_EXP_H
#define LAGVISOR_SIM_EXP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim.h"

#define SIM_MAX_VARIANTS 3
#define SIM_MAX_METRICS 48
#define SIM_MAX_SERIES 2
#define SIM_MAX_POINTS 48
#define SIM_MAX_CHECKS 12

struct sim_metric {
	char name[64];
	char unit[12];
	double v[SIM_MAX_VARIANTS];
};

enum sim_plot { SIM_PLOT_LINES, SIM_PLOT_BARS };

/* One plot panel: y per variant over shared x points (or bar labels). */
struct sim_series {
	enum sim_plot style;
	char title[96];
	char xlabel[48], ylabel[48];
	bool logx, logy;
	unsigned n;
	char label[SIM_MAX_POINTS][24];	/* x tick label (bars) */
	double x[SIM_MAX_POINTS];	/* x value (lines) */
	double y[SIM_MAX_VARIANTS][SIM_MAX_POINTS];
};

#define SIM_MAX_SETS 16

struct sim_result;

struct sim_opts {
	uint64_t seed;
	double scale;		/* multiplies simulated durations (tests: < 1) */
	const char *features;	/* extra features appended to every variant */
	unsigned nr_sets;	/* --set NAME=VALUE overrides */
	char set_name[SIM_MAX_SETS][32];
	uint64_t set_val[SIM_MAX_SETS];
};

/* Names --set accepts: host costs (sim_params) and workload knobs. */
extern const char *const sim_set_names[];
bool sim_set_known(const char *name);
/* Value of --set name, or def. */
uint64_t sim_opt(const struct sim_result *r, const char *name, uint64_t def);

struct sim_experiment;

struct sim_result {
	const struct sim_experiment *exp;
	struct sim_opts o;
	unsigned nr_metrics;
	struct sim_metric m[SIM_MAX_METRICS];
	unsigned nr_series;
	struct sim_series series[SIM_MAX_SERIES];
	unsigned nr_checks;
	char check[SIM_MAX_CHECKS][200];
	bool check_ok[SIM_MAX_CHECKS];
	int error;
};

struct sim_experiment {
	const char *id;			/* "000" .. "004" */
	const char *title;
	const char *seed_claim;		/* what the seed thread measured */
	unsigned nr_variants;
	const char *label[SIM_MAX_VARIANTS];	/* column headers */
	const char *features[SIM_MAX_VARIANTS];	/* sched_features_parse lists */
	/* Runs variant vi and fills its metric column; 0 or -errno. */
	int (*run)(struct sim_result *r, unsigned vi);
	/* Adds checks comparing the columns. */
	void (*check)(struct sim_result *r);
	/* Rows of the cross-experiment summary: variant 0 against summary_b. */
	const char *headline[4];
	unsigned summary_b;
};

extern const struct sim_experiment *const sim_experiments[];
extern const unsigned sim_nr_experiments;

const struct sim_experiment *sim_experiment_find(const char *id);

/* Runs every variant, then the checks. 0 or the first error. */
int sim_experiment_run(const struct sim_experiment *e, const struct sim_opts *o,
		       struct sim_result *r);

/* Sets metric name's column vi (creating the row on first use). */
void sim_metric_set(struct sim_result *r, const char *name, const char *unit, unsigned vi,
		    double value);
/* Value of metric name in column vi (0 if absent). */
double sim_metric_get(const struct sim_result *r, const char *name, unsigned vi);
struct sim_series *sim_series_get(struct sim_result *r, unsigned idx);
/* Records a check: ok plus a printf-style description of what was compared. */
void sim_check(struct sim_result *r, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool sim_result_ok(const struct sim_result *r);

/* Parameters for variant vi of r: defaults, the seed, the variant's features. */
void sim_exp_params(const struct sim_result *r, unsigned vi, struct sim_params *p);
uint64_t sim_exp_scaled(const struct sim_result *r, uint64_t ns);
/* Adds "<what> mean/pXX/max" rows (value / div, in unit) and the count. */
void sim_exp_lat_metrics(struct sim_result *r, unsigned vi, const char *what,
			 struct sim_samples *s, double div, const char *unit);

/* Output. */
void sim_result_print_md(FILE *f, const struct sim_result *r);
/* One table over several experiments' headline metrics. */
void sim_summary_print_md(FILE *f, struct sim_result *const *rs, unsigned n);
/* Writes dir/<id>.dat and dir/<id>.gp (gnuplot, pngcairo to dir/<id>.png). */
int sim_result_write_plot(const struct sim_result *r, const char *dir);

#endif
