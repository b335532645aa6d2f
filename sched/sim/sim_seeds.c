/*
 * Seeds 000, 001 and 003 as simulator experiments (002 and 004 are in
 * sim_schbench.c). Each builds its host, runs one variant, and turns the run
 * into metrics; the check functions state what the seed thread claims, in
 * the direction and rough size the model should reproduce.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "sim_exp.h"

/* ---- shared helpers ------------------------------------------------------ */

void sim_exp_lat_metrics(struct sim_result *r, unsigned vi, const char *what,
			 struct sim_samples *s, double div, const char *unit)
{
	static const char *const names[SIM_NR_PCTS] = { "p50", "p90", "p99", "p99.5", "p99.9" };
	char name[64];

	snprintf(name, sizeof(name), "%s mean", what);
	sim_metric_set(r, name, unit, vi, sim_samples_mean(s) / div);
	for (unsigned i = 0; i < SIM_NR_PCTS; i++) {
		snprintf(name, sizeof(name), "%s %s", what, names[i]);
		sim_metric_set(r, name, unit, vi, (double)sim_samples_pct(s, sim_pcts[i]) / div);
	}
	snprintf(name, sizeof(name), "%s max", what);
	sim_metric_set(r, name, unit, vi, (double)sim_samples_max(s) / div);
	snprintf(name, sizeof(name), "%s samples", what);
	sim_metric_set(r, name, "n", vi, (double)s->n);
}

static double ratio(double b, double a)
{
	return a > 0.0 ? b / a : (b > 0.0 ? INFINITY : 1.0);
}

/* ---- 000 / 001: new vCPUs on a loaded host ------------------------------- */

/*
 * The seed: 416 CPU hogs on 104 CPUs (4 per CPU), then short commands (date,
 * ls) started now and then; bpf measured wake_up_new_task -> first switch.
 * Here: 4 hog vCPUs per pCPU and a short-lived vCPU (300 µs of work) created
 * every ~5 ms by a thread on a random pCPU; SIM_LAT_START is its
 * start-to-first-run latency.
 */
#define NEW_PCPUS 8
#define NEW_HOGS_PER_PCPU 4
#define NEW_PERIOD_NS (5 * SIM_NS_PER_MS)
#define NEW_RUN_NS (300 * SIM_NS_PER_US)

struct newvcpu_out {
	uint64_t nr_new;
	uint64_t nr_half;	/* first-pick d - v == slice / 2 */
	uint64_t nr_full;	/* first-pick d - v == slice */
	double dv_mean_us;
};

static int run_newvcpu(struct sim_result *r, unsigned vi, struct sim *s,
		       struct newvcpu_out *out)
{
	struct sim_params p;
	int err;

	sim_exp_params(r, vi, &p);
	p.nr_pcpus = NEW_PCPUS;
	p.duration_ns = sim_exp_scaled(r, 20 * SIM_NS_PER_S);
	p.warmup_ns = 500 * SIM_NS_PER_MS;
	err = sim_init(s, &p);
	if (err)
		return err;
	for (unsigned i = 0; i < NEW_PCPUS * NEW_HOGS_PER_PCPU; i++) {
		struct sim_vcpu *v = sim_vcpu_add(s, SIM_WL_HOG, 0, false);

		if (!v)
			break;
		sim_vcpu_start_at(s, v, i % NEW_PCPUS, i * 50 * SIM_NS_PER_US, 0);
	}
	for (uint64_t t = p.warmup_ns; t + 100 * SIM_NS_PER_MS < p.duration_ns;
	     t += NEW_PERIOD_NS) {
		struct sim_vcpu *v = sim_vcpu_add(s, SIM_WL_ONESHOT, 0, false);

		if (!v)
			break;
		v->run_ns = NEW_RUN_NS;
		v->group = 1;
		sim_vcpu_start_at(s, v, (int)sim_rng_below(&s->rng, NEW_PCPUS),
				  t + sim_rng_below(&s->rng, SIM_NS_PER_MS), 0);
	}
	err = s->error ? s->error : sim_run(s);
	if (err)
		return err;

	memset(out, 0, sizeof(*out));
	double dv_sum = 0.0;

	for (unsigned i = 0; i < s->nr_vcpus; i++) {
		struct sim_vcpu *v = s->vcpu[i];

		if (v->group != 1 || !v->first_pick_seen || v->created_ns < p.warmup_ns)
			continue;
		int64_t dv = v->first_pick_dv;

		out->nr_new++;
		dv_sum += (double)dv;
		if (llabs(dv - (int64_t)(p.slice_ns / 2)) <= (int64_t)(p.slice_ns / 100))
			out->nr_half++;
		if (llabs(dv - (int64_t)p.slice_ns) <= (int64_t)(p.slice_ns / 100))
			out->nr_full++;
	}
	out->dv_mean_us = out->nr_new ? dv_sum / (double)out->nr_new / 1e3 : 0.0;
	return 0;
}

/* Power-of-two buckets as in the seed's bpf histogram: [4K,8K) ... [32M,64M) ns. */
static void start_histogram(struct sim_result *r, unsigned vi, struct sim_samples *lat)
{
	struct sim_series *se = sim_series_get(r, 0);
	static const char *const lbl[] = { "4K", "8K", "16K", "32K", "64K", "128K", "256K",
					   "512K", "1M", "2M", "4M", "8M", "16M", "32M" };
	unsigned nb = sizeof(lbl) / sizeof(lbl[0]);

	se->style = SIM_PLOT_BARS;
	snprintf(se->title, sizeof(se->title), "start-to-first-run latency, histogram");
	snprintf(se->xlabel, sizeof(se->xlabel), "latency bucket [ns, 2x ns)");
	snprintf(se->ylabel, sizeof(se->ylabel), "new vCPUs");
	se->n = nb;
	for (unsigned b = 0; b < nb; b++) {
		snprintf(se->label[b], sizeof(se->label[b]), "%s", lbl[b]);
		se->x[b] = (double)(4096ULL << b);
		se->y[vi][b] = 0;
	}
	for (size_t i = 0; i < lat->n; i++) {
		uint64_t x = lat->v[i];
		unsigned b = 0;

		while (b + 1 < nb && x >= (4096ULL << (b + 1)))
			b++;
		se->y[vi][b] += 1;
	}
}

static int run_000(struct sim_result *r, unsigned vi)
{
	struct sim s;
	struct newvcpu_out o;
	int err = run_newvcpu(r, vi, &s, &o);

	if (!err) {
		struct sim_sched_counts c;
		uint64_t invol = 0;
		double secs = (double)(s.p.duration_ns - s.p.warmup_ns) / 1e9;

		for (unsigned i = 0; i < s.nr_vcpus; i++)
			invol += s.vcpu[i]->nr_preempted;
		sim_sched_counts(&s, &c);
		sim_exp_lat_metrics(r, vi, "start latency", &s.lat[SIM_LAT_START], 1e6, "ms");
		sim_metric_set(r, "wakeup preemptions", "/s", vi, (double)c.wakeup_preempts / secs);
		sim_metric_set(r, "involuntary switches (all vCPUs)", "/s", vi, (double)invol / secs);
		start_histogram(r, vi, &s.lat[SIM_LAT_START]);
	}
	sim_fini(&s);
	return err;
}

static void check_000(struct sim_result *r)
{
	double a = sim_metric_get(r, "start latency mean", 0);
	double b = sim_metric_get(r, "start latency mean", 1);
	double n = sim_metric_get(r, "start latency samples", 0);

	sim_check(r, n >= 100, "enough new vCPUs measured (%.0f >= 100)", n);
	sim_check(r, ratio(b, a) >= 1.5,
		  "placement at creation makes the average start latency >= 1.5x worse "
		  "(%.2f ms vs %.2f ms = %.2fx; seed 12.8 vs 4.6 ms = 2.8x)",
		  b, a, ratio(b, a));
}

static int run_001(struct sim_result *r, unsigned vi)
{
	struct sim s;
	struct newvcpu_out o;
	int err = run_newvcpu(r, vi, &s, &o);

	if (!err) {
		double n = o.nr_new ? (double)o.nr_new : 1.0;

		sim_metric_set(r, "new vCPUs picked", "n", vi, (double)o.nr_new);
		sim_metric_set(r, "first pick: d - v mean", "us", vi, o.dv_mean_us);
		sim_metric_set(r, "first pick: d - v = slice/2", "%", vi, 100.0 * (double)o.nr_half / n);
		sim_metric_set(r, "first pick: d - v = slice", "%", vi, 100.0 * (double)o.nr_full / n);
		sim_exp_lat_metrics(r, vi, "start latency", &s.lat[SIM_LAT_START], 1e6, "ms");

		struct sim_series *se = sim_series_get(r, 0);

		se->style = SIM_PLOT_BARS;
		snprintf(se->title, sizeof(se->title), "first deadline and start latency");
		snprintf(se->ylabel, sizeof(se->ylabel), "µs (virtual for d - v)");
		se->n = 4;
		snprintf(se->label[0], sizeof(se->label[0]), "d-v at 1st pick");
		snprintf(se->label[1], sizeof(se->label[1]), "start lat p50");
		snprintf(se->label[2], sizeof(se->label[2]), "start lat mean");
		snprintf(se->label[3], sizeof(se->label[3]), "start lat p90");
		se->y[vi][0] = o.dv_mean_us;
		se->y[vi][1] = (double)sim_samples_pct(&s.lat[SIM_LAT_START], 50) / 1e3;
		se->y[vi][2] = sim_samples_mean(&s.lat[SIM_LAT_START]) / 1e3;
		se->y[vi][3] = (double)sim_samples_pct(&s.lat[SIM_LAT_START], 90) / 1e3;
	}
	sim_fini(&s);
	return err;
}

static void check_001(struct sim_result *r)
{
	const char *k = "first pick: d - v = slice/2";
	double a = sim_metric_get(r, k, 0), b = sim_metric_get(r, k, 1), c = sim_metric_get(r, k, 2);
	double fb = sim_metric_get(r, "first pick: d - v = slice", 1);
	double fc = sim_metric_get(r, "first pick: d - v = slice", 2);
	double la = sim_metric_get(r, "start latency mean", 0);
	double lc = sim_metric_get(r, "start latency mean", 2);

	sim_check(r, a >= 99.0, "initial half-slice deadline survives to the first pick "
		  "(%.1f%% of new vCPUs, want >= 99%%)", a);
	sim_check(r, b <= 1.0 && fb >= 99.0,
		  "NO_PLACE_DEADLINE_INITIAL: full-slice first deadline (%.1f%% half, %.1f%% full)",
		  b, fb);
	sim_check(r, c <= 1.0 && fc >= 99.0,
		  "NO_PLACE_FIRST_ENQUEUE: re-placement overwrites it, as in the seed's bug "
		  "(%.1f%% half, %.1f%% full)", c, fc);
	sim_check(r, la < lc, "surviving initial deadline starts vCPUs sooner (%.2f < %.2f ms)",
		  la, lc);
}

/* ---- 003: idle-class vCPU beside 100 % normal vCPUs ---------------------- */

/*
 * rt-app in the seed: task_other runs 100 % on CPU 2; task_idle (SCHED_IDLE)
 * has an absolute 16 ms timer and runs 1 µs per period; the trace shows how
 * often task_idle switches in over task_other.
 *
 * Under EEVDF the seed's exact setup cannot show the effect: with ONE normal
 * entity of weight 1024 and an idle one of weight 3 queued at or left of V,
 * the normal one is ineligible as soon as it has run past the idle one
 * (V = (1024 v_n + 3 v_i) / 1027 < v_n), so the idle vCPU gets the pCPU at
 * the next slice end whatever its placement. With TWO normal vCPUs one of
 * them is always eligible, the pick is by deadline, and the idle vCPU's
 * deadline (a slice of virtual time scaled by 1024/3, ~1 s) decides: placed
 * at V (no compensation) it waits for that deadline; carrying its positive
 * lag (compensation) it is placed far left and gets in within a few slices.
 * Both setups run; the checks hold each to what EEVDF predicts.
 */
#define IDLE_PERIOD_NS (16 * SIM_NS_PER_MS)

/*
 * The 2-hog case settles into long-lived phase patterns between the hogs'
 * slices and the 16 ms timer, so one run's mean depends on its seed far
 * more than its length suggests; pooling independent runs (seeds derived
 * from the experiment seed) gives a stable estimate.
 */
#define IDLE_RUNS 6

struct idle_pool {
	double secs, runs, preempts, run_ns;
	struct sim_samples lat;
};

static int run_idle_once(struct sim_result *r, unsigned vi, unsigned hogs, unsigned k,
			 struct idle_pool *pool)
{
	struct sim_params p;
	struct sim s;
	struct sim_vcpu *idle;
	uint64_t mix = r->o.seed * 0x9e3779b97f4a7c15ULL + k;
	int err;

	sim_exp_params(r, vi, &p);
	p.seed = sim_splitmix64(&mix);
	p.nr_pcpus = 1;
	p.duration_ns = sim_exp_scaled(r, 20 * SIM_NS_PER_S);
	p.warmup_ns = 2 * SIM_NS_PER_S;
	err = sim_init(&s, &p);
	if (err)
		return err;
	for (unsigned i = 0; i < hogs; i++) {
		struct sim_vcpu *hog = sim_vcpu_add(&s, SIM_WL_HOG, 0, false);

		if (hog)
			sim_vcpu_start_at(&s, hog, 0, i * 10 * SIM_NS_PER_US, 0);
	}
	idle = sim_vcpu_add(&s, SIM_WL_TIMER, SCHED_IDLE_WEIGHT, true);
	if (idle) {
		idle->run_ns = SIM_NS_PER_US;
		idle->period_ns = IDLE_PERIOD_NS;
		idle->group = 1;
		sim_vcpu_start_at(&s, idle, 0, 100 * SIM_NS_PER_US, 0);
	}
	err = s.error ? s.error : sim_run(&s);
	if (!err) {
		pool->secs += (double)(p.duration_ns - p.warmup_ns) / 1e9;
		pool->runs += (double)idle->nr_runs;
		pool->preempts += (double)idle->nr_preempts;
		pool->run_ns += (double)idle->run_measured_ns;
		for (size_t i = 0; i < s.lat_group[1].n && !err; i++)
			err = sim_samples_add(&pool->lat, s.lat_group[1].v[i]);
	}
	sim_fini(&s);
	return err;
}

static void idle_metric(struct sim_result *r, unsigned vi, unsigned hogs, const char *what,
			const char *unit, double v)
{
	char name[80];

	snprintf(name, sizeof(name), "%u hog%s: %s", hogs, hogs > 1 ? "s" : "", what);
	sim_metric_set(r, name, unit, vi, v);
}

static int run_idle_case(struct sim_result *r, unsigned vi, unsigned hogs)
{
	struct idle_pool pool = { 0 };
	int err = 0;

	sim_samples_init(&pool.lat);
	for (unsigned k = 0; k < IDLE_RUNS && !err; k++)
		err = run_idle_once(r, vi, hogs, k, &pool);
	if (!err) {
		double ival = pool.runs > 0 ? pool.secs * 1e3 / pool.runs : pool.secs * 1e3;
		double p50 = (double)sim_samples_pct(&pool.lat, 50) / 1e6;
		double p99 = (double)sim_samples_pct(&pool.lat, 99) / 1e6;
		struct sim_series *se = sim_series_get(r, hogs == 1 ? 0 : 1);

		idle_metric(r, vi, hogs, "mean interval between idle runs", "ms", ival);
		idle_metric(r, vi, hogs, "idle vCPU preempts a hog", "/s", pool.preempts / pool.secs);
		idle_metric(r, vi, hogs, "idle wake-to-run p50", "ms", p50);
		idle_metric(r, vi, hogs, "idle wake-to-run p99", "ms", p99);
		idle_metric(r, vi, hogs, "idle vCPU CPU share", "%", 100.0 * pool.run_ns / (pool.secs * 1e9));

		se->style = SIM_PLOT_BARS;
		snprintf(se->title, sizeof(se->title), "idle-class vCPU beside %u 100%% vCPU%s",
			 hogs, hogs > 1 ? "s" : "");
		snprintf(se->ylabel, sizeof(se->ylabel), "ms");
		se->logy = true;
		se->n = 3;
		snprintf(se->label[0], sizeof(se->label[0]), "interval between runs");
		snprintf(se->label[1], sizeof(se->label[1]), "wake-to-run p50");
		snprintf(se->label[2], sizeof(se->label[2]), "wake-to-run p99");
		se->y[vi][0] = ival;
		se->y[vi][1] = p50;
		se->y[vi][2] = p99;
	}
	sim_samples_free(&pool.lat);
	return err;
}

static int run_003(struct sim_result *r, unsigned vi)
{
	int err = run_idle_case(r, vi, 1);

	return err ? err : run_idle_case(r, vi, 2);
}

static void check_003(struct sim_result *r)
{
	const double period_ms = (double)IDLE_PERIOD_NS / 1e6;
	double a1 = sim_metric_get(r, "1 hog: mean interval between idle runs", 0);
	double b1 = sim_metric_get(r, "1 hog: mean interval between idle runs", 1);
	double a2 = sim_metric_get(r, "2 hogs: mean interval between idle runs", 0);
	double b2 = sim_metric_get(r, "2 hogs: mean interval between idle runs", 1);

	sim_check(r, a1 >= period_ms * 0.99 && b1 >= period_ms * 0.99,
		  "1 hog: the idle vCPU never runs more often than it wakes "
		  "(every %.1f / %.1f ms, period %.0f ms)", a1, b1, period_ms);
	sim_check(r, ratio(a1, b1) < 1.1 && ratio(b1, a1) < 1.1,
		  "1 hog: EEVDF eligibility alone lets it in at the next slice end, so "
		  "compensation changes nothing (%.1f vs %.1f ms)", a1, b1);
	sim_check(r, b2 > 0.0 && b2 <= 4.0 * period_ms,
		  "2 hogs, compensated: the idle vCPU gets in about every period or few "
		  "(every %.1f ms; seed: every 12 ms)", b2);
	/* Pooled over seeds 1..64 the ratio is 1.14-2.0x (median ~1.45). */
	sim_check(r, ratio(a2, b2) >= 1.1,
		  "2 hogs: IDLE_NO_COMPENSATION makes it preempt less often "
		  "(every %.1f vs %.1f ms = %.1fx; seed 16-24 vs 12 ms)", a2, b2, ratio(a2, b2));
}

/* ---- registry ------------------------------------------------------------ */

extern const struct sim_experiment sim_exp_002, sim_exp_004;

static const struct sim_experiment sim_exp_000 = {
	.id = "000",
	.title = "start-to-first-run latency of new vCPUs on a loaded host",
	.seed_claim = "average 12.8 ms (placement at fork) -> 4.6 ms (placement at first enqueue)",
	.nr_variants = 2,
	.label = { "first-enqueue", "at-creation" },
	.features = { "PLACE_FIRST_ENQUEUE", "NO_PLACE_FIRST_ENQUEUE" },
	.run = run_000,
	.check = check_000,
	.headline = { "start latency mean", "start latency p90" },
};

static const struct sim_experiment sim_exp_001 = {
	.id = "001",
	.title = "the initial half-slice deadline survives to the first pick",
	.seed_claim = "PLACE_DEADLINE_INITIAL was a no-op: the deadline was overwritten at the first wake",
	.nr_variants = 3,
	.label = { "default", "no-initial", "at-creation" },
	.features = { "", "NO_PLACE_DEADLINE_INITIAL", "NO_PLACE_FIRST_ENQUEUE" },
	.run = run_001,
	.check = check_001,
	.headline = { "first pick: d - v mean", "start latency mean" },
	.summary_b = 2,
};

static const struct sim_experiment sim_exp_003 = {
	.id = "003",
	.title = "idle-class vCPU waking every 16 ms for 1 us beside 100% vCPUs",
	.seed_claim = "the SCHED_IDLE task preempts every 12 ms with compensation, every 16-24 ms without",
	.nr_variants = 2,
	.label = { "no-compensation", "compensated" },
	.features = { "IDLE_NO_COMPENSATION", "NO_IDLE_NO_COMPENSATION" },
	.run = run_003,
	.check = check_003,
	.headline = { "1 hog: mean interval between idle runs",
		      "2 hogs: mean interval between idle runs" },
};

const struct sim_experiment *const sim_experiments[] = {
	&sim_exp_000, &sim_exp_001, &sim_exp_002, &sim_exp_003, &sim_exp_004,
};
const unsigned sim_nr_experiments = sizeof(sim_experiments) / sizeof(sim_experiments[0]);
