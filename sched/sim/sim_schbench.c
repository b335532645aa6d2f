/*
 * Seeds 002 and 004: schbench-like wake bursts, and a sleeper beside a hog.
 *
 * schbench model (the 2016 schbench the seeds ran): m message vCPUs, each
 * with t worker vCPUs. A message vCPU sleeps sleep_ns, then wakes every
 * worker of its group that is waiting, spending wake_cost_ns per wake; a
 * woken worker records its wakeup latency (message's wake call to first
 * guest instruction), burns run_ns of CPU, and waits for the next message.
 */
#include <math.h>
#include <string.h>

#include "sim_exp.h"

struct schbench {
	unsigned nr_pcpus;
	unsigned msgs, workers;		/* per message */
	uint64_t work_ns, msg_sleep_ns;
	uint64_t duration_ns;
};

/* Runs the model with base parameters p (pCPUs and duration from sb). */
static int run_schbench_p(const struct sim_params *base, const struct schbench *sb,
			  struct sim *s)
{
	struct sim_params p = *base;
	unsigned next = 0;
	int err;

	p.nr_pcpus = sb->nr_pcpus;
	p.duration_ns = sb->duration_ns;
	p.warmup_ns = 500 * SIM_NS_PER_MS;
	if (sb->msgs * (sb->workers + 1) > SIM_MAX_ENTITIES)
		p.max_entities = sb->msgs * (sb->workers + 1);
	err = sim_init(s, &p);
	if (err)
		return err;
	for (unsigned m = 0; m < sb->msgs && !s->error; m++) {
		struct sim_vcpu *msg = sim_vcpu_add(s, SIM_WL_MSG, 0, false);

		if (!msg)
			break;
		msg->sleep_ns = sb->msg_sleep_ns;
		msg->group = 0;
		msg->nr_workers = sb->workers;
		msg->worker0 = msg->id + 1;
		/* Threads start spread over the pCPUs, like a process whose
		 * threads were created in a burst. */
		sim_vcpu_start_at(s, msg, (int)(next++ % p.nr_pcpus), m * 10 * SIM_NS_PER_US, 0);
		for (unsigned w = 0; w < sb->workers; w++) {
			struct sim_vcpu *v = sim_vcpu_add(s, SIM_WL_WORKER, 0, false);

			if (!v)
				break;
			v->run_ns = sb->work_ns;
			v->group = 1;
			sim_vcpu_start_at(s, v, (int)(next++ % p.nr_pcpus),
					  (m * 10 + w + 1) * SIM_NS_PER_US, 0);
		}
	}
	return s->error ? s->error : sim_run(s);
}

static int run_schbench(struct sim_result *r, unsigned vi, const struct schbench *sb,
			struct sim *s)
{
	struct sim_params p;

	sim_exp_params(r, vi, &p);
	return run_schbench_p(&p, sb, s);
}

/* The percentile curve of one latency set as a lines series (µs, log y). */
static void pct_series(struct sim_result *r, unsigned vi, struct sim_samples *lat)
{
	static const double pcts[] = { 50, 75, 90, 95, 99, 99.5, 99.9 };
	static const char *const lbl[] = { "50", "75", "90", "95", "99", "99.5", "99.9" };
	struct sim_series *se = sim_series_get(r, 0);

	se->style = SIM_PLOT_LINES;
	snprintf(se->title, sizeof(se->title), "schbench wakeup latency percentiles");
	snprintf(se->xlabel, sizeof(se->xlabel), "percentile");
	snprintf(se->ylabel, sizeof(se->ylabel), "wakeup latency (µs)");
	se->logy = true;
	se->n = sizeof(pcts) / sizeof(pcts[0]);
	for (unsigned i = 0; i < se->n; i++) {
		snprintf(se->label[i], sizeof(se->label[i]), "%s", lbl[i]);
		se->x[i] = i;
		se->y[vi][i] = (double)sim_samples_pct(lat, pcts[i]) / 1e3;
	}
}

/* ---- 002: ttwu_pending cleared early vs after the enqueue ----------------- */

/*
 * The seed: "schbench -m 2 -t 16" in a 32-vCPU VM, i.e. 34 threads on 32
 * CPUs; here 34 vCPUs on 32 pCPUs. A worker thinks 5 ms and a message round
 * comes every 10 ms, so each round is a burst: a message wakes all 16 of its
 * workers, 2 µs apart (m*t = 32 = pCPUs, the seed's condition). Later wakes
 * of a burst scan for idle pCPUs while the targets of earlier ones are
 * draining their wake lists (wake_ns to wake the parked thread, flush_ns to
 * the enqueue): with TTWU_PENDING_EARLY_CLEAR such a target looks idle in
 * that window and gets a second worker, which then waits a whole slice.
 */
/*
 * How the tail depends on the drain window: the same bursts with flush_ns
 * from 1 to 40 µs. Early clear only hurts when a later wake of a burst lands
 * inside some target's window, so its tail appears once the window is a few
 * wake spacings wide; clear-after stays flat.
 */
/*
 * Simulated time for a run of p pCPUs: full up to 128, then shrunk by
 * 128 / p, because the samples per simulated second grow with p (a round
 * wakes every worker) while the cost per second of simulation grows about
 * as p too. 1024 pCPUs get 1/8 of the time and still more samples than
 * 128 do. Never below 1 s, twice the warm-up.
 */
static uint64_t big_scale(unsigned p, uint64_t ns)
{
	uint64_t t = p > 128 ? ns / p * 128 : ns;

	return t < SIM_NS_PER_S ? SIM_NS_PER_S : t;
}

static int sweep_002(struct sim_result *r, unsigned vi, const struct schbench *base)
{
	static const unsigned win_us[] = { 1, 2, 5, 10, 20, 40 };
	struct sim_series *se = sim_series_get(r, 1);
	int err = 0;

	se->style = SIM_PLOT_LINES;
	snprintf(se->title, sizeof(se->title), "p99.5 vs target drain window (flush_ns)");
	snprintf(se->xlabel, sizeof(se->xlabel), "drain window, mean (µs)");
	snprintf(se->ylabel, sizeof(se->ylabel), "p99.5 wakeup latency (µs)");
	se->logx = se->logy = true;
	se->n = sizeof(win_us) / sizeof(win_us[0]);
	for (unsigned i = 0; i < se->n && !err; i++) {
		struct schbench sb = *base;
		struct sim_params p;
		struct sim s;

		sb.duration_ns = sim_exp_scaled(r, big_scale(sb.nr_pcpus, 10 * SIM_NS_PER_S));
		sim_exp_params(r, vi, &p);
		p.flush_ns = win_us[i] * SIM_NS_PER_US;
		err = run_schbench_p(&p, &sb, &s);
		if (!err) {
			se->x[i] = win_us[i];
			se->y[vi][i] = (double)sim_samples_pct(&s.lat_group[1], 99.5) / 1e3;
		}
		sim_fini(&s);
	}
	return err;
}

/*
 * Wakes that waited at least a millisecond: a stacked wakee waits for the
 * other worker's slice (3 ms) or its 5 ms of work, an unstacked one tens of
 * microseconds, so this fraction is the rate of stacking itself. A
 * percentile pXX shows the effect only when the fraction exceeds 100 - XX
 * percent: this row says which percentiles can.
 */
static double slow_pct(struct sim_samples *lat)
{
	size_t slow = 0;

	for (size_t i = 0; i < lat->n; i++)
		slow += lat->v[i] >= SIM_NS_PER_MS;
	return lat->n ? 100.0 * (double)slow / (double)lat->n : 0.0;
}

static int run_002(struct sim_result *r, unsigned vi)
{
	unsigned pcpus = (unsigned)sim_opt(r, "pcpus", 32);
	/*
	 * The seed's shape at any size: m = 2 message vCPUs, m * t = pCPUs
	 * (2 x 16 on 32). The stacked share (the ">= 1 ms" row) is not
	 * scale-free: a stack is a worker displaced from its previous pCPU
	 * (its message runs the burst there) whose forward scan crosses a
	 * pCPU the burst listed 20-40 us before, inside its early-clear
	 * window. That happens ~0.5 times per round whatever the size, so the
	 * share falls as 1 / pCPUs: 1.6 % at 32, 0.3 % at 128, 0.02-0.04 %
	 * at 1024. A percentile pXX shows the bug only while the share
	 * exceeds 100 - XX %; README.md has the table.
	 */
	unsigned workers = (unsigned)sim_opt(r, "workers", pcpus / 2 ? pcpus / 2 : 1);
	unsigned msgs = (unsigned)sim_opt(r, "msgs", 2);
	struct schbench sb = {
		.nr_pcpus = pcpus,
		.msgs = msgs,
		.workers = workers,
		.work_ns = sim_opt(r, "work_ns", 5 * SIM_NS_PER_MS),
		.msg_sleep_ns = sim_opt(r, "msg_sleep_ns", 10 * SIM_NS_PER_MS),
		.duration_ns = sim_exp_scaled(r, big_scale(pcpus, 30 * SIM_NS_PER_S)),
	};
	struct sim s;
	int err = run_schbench(r, vi, &sb, &s);

	if (!err) {
		struct sim_sched_counts c;

		sim_exp_lat_metrics(r, vi, "wakeup latency", &s.lat_group[1], 1e3, "us");
		sim_metric_set(r, "wakes waiting >= 1 ms", "%", vi, slow_pct(&s.lat_group[1]));
		sim_sched_counts(&s, &c);
		sim_metric_set(r, "wakes via wake list", "n", vi, (double)c.wake_listed);
		sim_metric_set(r, "wakes enqueued by waker", "n", vi, (double)c.wake_enqueued);
		sim_metric_set(r, "wakeup preemptions", "n", vi, (double)c.wakeup_preempts);
		sim_metric_set(r, "migrations", "n", vi, (double)c.migrations);
		pct_series(r, vi, &s.lat_group[1]);
	}
	sim_fini(&s);
	return err ? err : sweep_002(r, vi, &sb);
}

static void check_002(struct sim_result *r)
{
	double a50 = sim_metric_get(r, "wakeup latency p50", 0);
	double b50 = sim_metric_get(r, "wakeup latency p50", 1);
	double a995 = sim_metric_get(r, "wakeup latency p99.5", 0);
	double b995 = sim_metric_get(r, "wakeup latency p99.5", 1);
	double a999 = sim_metric_get(r, "wakeup latency p99.9", 0);
	double b999 = sim_metric_get(r, "wakeup latency p99.9", 1);
	double n = sim_metric_get(r, "wakeup latency samples", 0);

	sim_check(r, n >= 2000, "enough wakeups measured (%.0f >= 2000)", n);
	sim_check(r, a995 > 0 && b995 >= 10.0 * a995,
		  "early clear makes p99.5 >= 10x worse (%.0f vs %.0f us = %.1fx; seed 3364 vs 27 us)",
		  b995, a995, b995 / (a995 > 0 ? a995 : 1));
	sim_check(r, a999 > 0 && b999 >= 10.0 * a999,
		  "early clear makes p99.9 >= 10x worse (%.0f vs %.0f us = %.1fx; seed 12560 vs 30 us)",
		  b999, a999, b999 / (a999 > 0 ? a999 : 1));
	sim_check(r, b50 <= 2.0 * a50 + 5.0,
		  "the median is not what changes (p50 %.0f vs %.0f us; seed 9 vs 9 us)", b50, a50);
}

/* ---- 004: lag placement vs sleeper credit -------------------------------- */

/*
 * Shares: one pCPU, a hog and a vCPU that alone would use 50 % (run one
 * slice, sleep one slice). Lag placement keeps the sleeper's negative lag
 * across the sleep, so while both are runnable they split the pCPU and the
 * sleeper ends at 1/3 (it needs 2 slices of wall time per slice of work,
 * then sleeps one). FAIR_SLEEPERS hands it a slice of credit at each wake,
 * enough to run its whole burst at once: 1/2.
 */

/* Loads of the seed's table: worker threads as % of CPUs. */
static const unsigned load_pct[] = { 25, 50, 75, 100, 125, 150, 175, 200 };
#define NR_LOADS (sizeof(load_pct) / sizeof(load_pct[0]))
#define LOAD_PCPUS 8

static int run_shares(struct sim_result *r, unsigned vi)
{
	struct sim_params p;
	struct sim s;
	int err;

	sim_exp_params(r, vi, &p);
	p.nr_pcpus = 1;
	p.duration_ns = sim_exp_scaled(r, 20 * SIM_NS_PER_S);
	p.warmup_ns = SIM_NS_PER_S;
	err = sim_init(&s, &p);
	if (err)
		return err;
	struct sim_vcpu *hog = sim_vcpu_add(&s, SIM_WL_HOG, 0, false);
	struct sim_vcpu *slp = sim_vcpu_add(&s, SIM_WL_PERIODIC, 0, false);

	if (hog && slp) {
		/* Alone it would use 50 %: run one slice, sleep one slice. */
		slp->run_ns = p.slice_ns;
		slp->sleep_ns = p.slice_ns;
		slp->jitter_pct = 0;
		sim_vcpu_start_at(&s, hog, 0, 0, 0);
		sim_vcpu_start_at(&s, slp, 0, 50 * SIM_NS_PER_US, 0);
	}
	err = s.error ? s.error : sim_run(&s);
	if (!err) {
		double total = (double)(p.duration_ns - p.warmup_ns);

		sim_metric_set(r, "50% sleeper CPU share", "%", vi,
			       100.0 * (double)slp->run_measured_ns / total);
		sim_metric_set(r, "100% hog CPU share", "%", vi,
			       100.0 * (double)hog->run_measured_ns / total);
		sim_metric_set(r, "sleeper switched in over the hog", "/s", vi,
			       (double)slp->nr_preempts / (total / 1e9));
		struct sim_series *se = sim_series_get(r, 0);

		se->style = SIM_PLOT_BARS;
		snprintf(se->title, sizeof(se->title), "CPU shares: 50%% sleeper vs 100%% hog");
		snprintf(se->ylabel, sizeof(se->ylabel), "CPU share (%%)");
		se->n = 2;
		snprintf(se->label[0], sizeof(se->label[0]), "sleeper");
		snprintf(se->label[1], sizeof(se->label[1]), "hog");
		se->y[vi][0] = 100.0 * (double)slp->run_measured_ns / total;
		se->y[vi][1] = 100.0 * (double)hog->run_measured_ns / total;
	}
	sim_fini(&s);
	return err;
}

/*
 * The seed's second experiment: schbench p90 with worker threads at 25..200 %
 * of the CPUs (m = 2). Workers think 30 ms (schbench's default) against a
 * 10 ms message period, so each worker is busy ~80 % of the time and the
 * load levels mean what they say.
 */
static int run_004(struct sim_result *r, unsigned vi)
{
	int err = run_shares(r, vi);
	struct sim_series *se = sim_series_get(r, 1);

	se->style = SIM_PLOT_LINES;
	snprintf(se->title, sizeof(se->title), "schbench p90 across load (%u pCPUs, m=2)",
		 LOAD_PCPUS);
	snprintf(se->xlabel, sizeof(se->xlabel), "worker vCPUs (%% of pCPUs)");
	snprintf(se->ylabel, sizeof(se->ylabel), "p90 wakeup latency (µs)");
	se->logy = true;
	se->n = NR_LOADS;
	for (unsigned li = 0; li < NR_LOADS && !err; li++) {
		struct schbench sb = {
			.nr_pcpus = LOAD_PCPUS,
			.msgs = 2,
			.workers = (LOAD_PCPUS * load_pct[li] / 100 + 1) / 2,
			.work_ns = 30 * SIM_NS_PER_MS,
			.msg_sleep_ns = 10 * SIM_NS_PER_MS,
			.duration_ns = sim_exp_scaled(r, 10 * SIM_NS_PER_S),
		};
		struct sim s;
		char name[64];

		err = run_schbench(r, vi, &sb, &s);
		if (!err) {
			double p90 = (double)sim_samples_pct(&s.lat_group[1], 90) / 1e3;

			snprintf(name, sizeof(name), "schbench p90 @%u%%", load_pct[li]);
			sim_metric_set(r, name, "us", vi, p90);
			se->x[li] = load_pct[li];
			se->y[vi][li] = p90;
		}
		sim_fini(&s);
	}
	return err;
}

static void check_004(struct sim_result *r)
{
	double a = sim_metric_get(r, "50% sleeper CPU share", 0);
	double b = sim_metric_get(r, "50% sleeper CPU share", 1);

	sim_check(r, fabs(a - 100.0 / 3.0) <= 4.0,
		  "PLACE_LAG: the sleeper gets its fair third (%.1f%%, want 33.3 +- 4)", a);
	sim_check(r, fabs(b - 50.0) <= 5.0,
		  "FAIR_SLEEPERS: sleeper credit gives it about half (%.1f%%, want 50 +- 5)", b);
	/* No direction is asserted for schbench p90: the seed compares whole
	 * schedulers (CFS vs EEVDF), not one placement flag. Only that the
	 * model is sane: a lightly loaded host wakes within 200 µs. */
	double l0 = sim_metric_get(r, "schbench p90 @25%", 0), l1 = sim_metric_get(r, "schbench p90 @25%", 1);

	sim_check(r, l0 > 0 && l0 < 200 && l1 > 0 && l1 < 200,
		  "schbench at 25%% load wakes promptly in both (p90 %.0f / %.0f us)", l0, l1);
}

const struct sim_experiment sim_exp_002 = {
	.id = "002",
	.title = "wake bursts with vCPUs ~ pCPUs: ttwu_pending cleared after vs before enqueue",
	.seed_claim = "schbench -m 2 -t 16 on 32 vCPUs: p99.5/p99.9 3364/12560 us (early clear) -> 27/30 us",
	/* The third column is for reference: no wake list at all, the waker
	 * enqueues on the idle target itself. The model charges nothing for
	 * remote run-queue locking, which is what the wake list exists to
	 * avoid, so this column is a lower bound, not a recommendation. */
	.nr_variants = 3,
	.label = { "clear-after", "early-clear", "no-wake-list" },
	.features = { "TTWU_PENDING,NO_TTWU_PENDING_EARLY_CLEAR",
		      "TTWU_PENDING,TTWU_PENDING_EARLY_CLEAR", "NO_TTWU_PENDING" },
	.run = run_002,
	.check = check_002,
	.headline = { "wakeup latency p50", "wakeup latency p99.5", "wakeup latency p99.9" },
};

const struct sim_experiment sim_exp_004 = {
	.id = "004",
	.title = "lag placement vs FAIR_SLEEPERS: shares and schbench p90 across load",
	.seed_claim = "a 50% sleeper vs a 100% runner gets 33/67 with lag placement, not 50/50; "
		      "schbench p90 at 100% load 13696 -> 1040 us",
	.nr_variants = 2,
	.label = { "place-lag", "fair-sleepers" },
	/* the seed's kernels (6.6 and CFS before it) had no delayed dequeue:
	 * with it a woken sleeper is requeued in place, never re-placed with
	 * FAIR_SLEEPERS' credit */
	.features = { "PLACE_LAG,NO_FAIR_SLEEPERS,NO_DELAY_DEQUEUE",
		      "NO_PLACE_LAG,FAIR_SLEEPERS,NO_DELAY_DEQUEUE" },
	.run = run_004,
	.check = check_004,
	.headline = { "50% sleeper CPU share", "100% hog CPU share", "schbench p90 @100%" },
};
