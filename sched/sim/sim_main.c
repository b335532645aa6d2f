/*
 * lagvisor-sim: reruns the seed threads' A/B experiments against the real
 * sched/ library and prints markdown tables (and gnuplot inputs).
 * Exit status: 0 all checks passed (or --check not given), 1 a check
 * failed, 2 bad usage or a simulation error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "sim_costs.h"
#include "sim_exp.h"
#include "sim_fleet.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: lagvisor-sim [--exp ID|all] [--seed N] [--scale X] [--check]\n"
		"                    [--sched-feature LIST] [--set NAME=VALUE]... [--plot-dir DIR]\n"
		"                    [--md FILE] [--summary]\n"
		"       lagvisor-sim --vs-host [--costs NAME] [--sizes LIST] [--ratios LIST]\n"
		"       lagvisor-sim --calibrate [--costs NAME] [--measured C:K:P50:P99]...\n"
		"                    [--tolerance PCT] [--lat-slice US]\n"
		"       lagvisor-sim --model-check [--sis-scan N]\n"
		"       lagvisor-sim --selftest | --list\n"
		"  --exp ID           experiment 000..004 (default all)\n"
		"  --seed N           simulator seed (default 1); same seed, same output\n"
		"  --scale X          multiply simulated durations (default 1.0)\n"
		"  --check            exit 1 unless every check of the experiment passes\n"
		"  --sched-feature L  extra sched feature list for every variant\n"
		"  --set NAME=VALUE   override a host cost or workload knob (ns, counts):\n"
		"                     exit_ns kick_ns wake_ns ctxsw_ns flush_ns wake_cost_ns\n"
		"                     round_cost_ns\n"
		"                     slice_ns balance_ns cost_jitter_pct check_every\n"
		"                     trace_until_ns (library trace to stderr until then)\n"
		"                     work_ns msg_sleep_ns pcpus workers msgs\n"
		"  --plot-dir DIR     write DIR/<id>.dat and DIR/<id>.gp for gnuplot\n"
		"  --md FILE          also append the markdown report to FILE\n"
		"  --summary          end with one table of every experiment's headline A/B\n"
		"  --expect-check-failure  exit 0 only if a check failed (and nothing else\n"
		"                     did): for tests that neutralise the flag under test\n"
		"  --selftest         check the engine (heap, percentiles, determinism)\n"
		"  --vs-host          latency VMs beside hog VMs under the host model and\n"
		"                     lagvisor's policy: p99/p99.9 ratios (sim_fleet.c)\n"
		"  --costs NAME       mechanism cost set: pvm (measured here) or vmx\n"
		"                     (published); default both (--calibrate: pvm)\n"
		"  --sizes LIST       pCPU counts for --vs-host (default 8,64,256,1024)\n"
		"  --ratios LIST      vCPU:pCPU levels for --vs-host (default 2,3)\n"
		"  --calibrate        bench-tail's workload at 2 pCPUs against measured\n"
		"                     numbers; exit 1 if one is off by more than --tolerance\n"
		"  --measured C:K:P50:P99  a measurement: C host or eevdf, level K, p50 and\n"
		"                     p99 in us (default: bench-tail here, December 2026)\n"
		"  --tolerance PCT    calibration tolerance (default 30)\n"
		"  --lat-slice US     lagvisor's slice for the latency VMs, 0 = the base\n"
		"                     slice (--vs-host default 100, --latency low;\n"
		"                     --calibrate default 0, bench-tail's --slice base)\n"
		"  --host-feature L   change the host model's flags (what-if only)\n"
		"  --model-check      the host model set up as lagvisor must reproduce it\n"
		"                     exactly (--sis-scan N: a bounded scan, must differ)\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);

	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* ---- selftest --------------------------------------------------------- */

static int selftest_heap(void)
{
	struct sim_heap h;
	struct sim_event e = { 0 }, out;
	uint64_t times[] = { 50, 10, 30, 10, 40, 10, 20 };
	uint64_t last_t = 0, last_seq = 0;
	int bad = 0;

	sim_heap_init(&h);
	for (unsigned i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		e.time_ns = times[i];
		e.arg = i;
		if (sim_heap_push(&h, &e))
			bad = 1;
	}
	for (unsigned i = 0; sim_heap_pop(&h, &out); i++) {
		if (i && (out.time_ns < last_t || (out.time_ns == last_t && out.seq < last_seq)))
			bad = 1;
		last_t = out.time_ns;
		last_seq = out.seq;
	}
	sim_heap_free(&h);
	if (bad)
		fprintf(stderr, "selftest: heap order (time, then insertion) broken\n");
	return bad;
}

static int selftest_pct(void)
{
	struct sim_samples s;
	int bad = 0;

	sim_samples_init(&s);
	for (uint64_t i = 1000; i >= 1; i--)
		if (sim_samples_add(&s, i))
			bad = 1;
	/* Nearest rank over 1..1000: p50 = 500, p99.9 = 999, p99.5 = 995. */
	if (sim_samples_pct(&s, 50) != 500 || sim_samples_pct(&s, 99.9) != 999 ||
	    sim_samples_pct(&s, 99.5) != 995 || sim_samples_max(&s) != 1000 ||
	    sim_samples_mean(&s) != 500.5)
		bad = 1;
	sim_samples_free(&s);
	if (bad)
		fprintf(stderr, "selftest: percentiles wrong\n");
	return bad;
}

static char *report(const struct sim_experiment *e, const struct sim_opts *o, int *err)
{
	struct sim_result *r = calloc(1, sizeof(*r));
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = sim_experiment_run(e, o, r);
	f = open_memstream(&buf, &len);
	if (f) {
		sim_result_print_md(f, r);
		fclose(f);
	}
	free(r);
	return buf;
}

static int selftest_determinism(void)
{
	struct sim_opts o = { .seed = 7, .scale = 0.1 };
	const struct sim_experiment *e = sim_experiment_find("002");
	int e1, e2, e3, bad = 0;
	char *a = report(e, &o, &e1), *b = report(e, &o, &e2);

	o.seed = 8;
	char *c = report(e, &o, &e3);

	if (e1 || e2 || e3 || !a || !b || !c) {
		fprintf(stderr, "selftest: experiment 002 failed to run\n");
		bad = 1;
	} else if (strcmp(a, b)) {
		fprintf(stderr, "selftest: same seed gave different output\n");
		bad = 1;
	} else if (!strcmp(a, c)) {
		fprintf(stderr, "selftest: a different seed gave identical output\n");
		bad = 1;
	}
	free(a);
	free(b);
	free(c);
	return bad;
}

/*
 * Accounting sanity through the whole stack: hogs of weight 2048 and 1024 on
 * one pCPU split it 2:1 (minus host costs), and 3 hogs on 3 pCPUs spread
 * out and run ~100 % each.
 */
static int selftest_shares(void)
{
	struct sim_params p;
	struct sim s;
	int bad = 0;

	sim_params_default(&p);
	p.nr_pcpus = 1;
	p.duration_ns = 5 * SIM_NS_PER_S;
	if (sim_init(&s, &p))
		return 1;
	struct sim_vcpu *a = sim_vcpu_add(&s, SIM_WL_HOG, 2048, false);
	struct sim_vcpu *b = sim_vcpu_add(&s, SIM_WL_HOG, 1024, false);

	if (!a || !b || sim_vcpu_start_at(&s, a, 0, 0, 0) || sim_vcpu_start_at(&s, b, 0, 1000, 0) ||
	    sim_run(&s)) {
		bad = 1;
	} else {
		double total = (double)(p.duration_ns - p.warmup_ns);
		double sa = (double)a->run_measured_ns / total, sb = (double)b->run_measured_ns / total;

		if (sa < 0.64 || sa > 0.67 || sb < 0.32 || sb > 0.34 || sa + sb < 0.99) {
			fprintf(stderr, "selftest: 2:1 weights got %.3f / %.3f\n", sa, sb);
			bad = 1;
		}
	}
	sim_fini(&s);

	p.nr_pcpus = 3;
	if (sim_init(&s, &p))
		return 1;
	for (unsigned i = 0; i < 3; i++) {
		struct sim_vcpu *v = sim_vcpu_add(&s, SIM_WL_HOG, 0, false);

		if (!v || sim_vcpu_start_at(&s, v, 0, i * 1000, 0))
			bad = 1;
	}
	if (!bad && !sim_run(&s)) {
		for (unsigned i = 0; i < 3; i++) {
			double share = (double)s.vcpu[i]->run_measured_ns /
				       (double)(p.duration_ns - p.warmup_ns);

			if (share < 0.99) {
				fprintf(stderr, "selftest: hog %u on its own pCPU got %.3f\n", i, share);
				bad = 1;
			}
		}
	} else {
		bad = 1;
	}
	sim_fini(&s);
	if (bad)
		fprintf(stderr, "selftest: shares wrong\n");
	return bad;
}

static int selftest(void)
{
	int bad = selftest_heap() + selftest_pct() + selftest_shares() + selftest_determinism();

	printf("selftest: %s\n", bad ? "FAIL" : "ok");
	return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------- */

/* "8,64,256" into out[]; 0 or -EINVAL. */
static int parse_list(const char *s, unsigned *out, unsigned *n, unsigned max, unsigned hi)
{
	char *end;

	*n = 0;
	while (*s) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v < 1 || v > hi || *n == max || (*end && *end != ','))
			return -EINVAL;
		out[(*n)++] = (unsigned)v;
		s = *end ? end + 1 : end;
	}
	return *n ? 0 : -EINVAL;
}

/*
 * bench-tail on this host, December 2026 (native guests, --slice base,
 * TSC-deadline timers, PV EOI, 5 reps, work 50 us; pooled host-A and
 * eevdf p50 / p99 in us, sched/README.md section 7.1's "+ PV EOI" rows).
 */
static void default_measured(struct sim_fleet_opts *fo)
{
	sim_fleet_add_measured(fo, "host:2:150.5:1187.8");
	sim_fleet_add_measured(fo, "eevdf:2:407.6:2506.8");
	sim_fleet_add_measured(fo, "host:3:166.9:4112.4");
	sim_fleet_add_measured(fo, "eevdf:3:440.3:3162.1");
}

static int run_one(const struct sim_experiment *e, const struct sim_opts *o,
		   const char *plot_dir, FILE *md, struct sim_result *r)
{
	int rc;

	if (sim_experiment_run(e, o, r))
		return 2;
	sim_result_print_md(stdout, r);
	fflush(stdout);
	if (md)
		sim_result_print_md(md, r);
	rc = sim_result_ok(r) ? 0 : 1;
	if (plot_dir && sim_result_write_plot(r, plot_dir))
		rc = 2;
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "exp", required_argument, NULL, 'e' },
		{ "seed", required_argument, NULL, 's' },
		{ "scale", required_argument, NULL, 'x' },
		{ "check", no_argument, NULL, 'c' },
		{ "sched-feature", required_argument, NULL, 'f' },
		{ "plot-dir", required_argument, NULL, 'p' },
		{ "md", required_argument, NULL, 'm' },
		{ "set", required_argument, NULL, 'S' },
		{ "selftest", no_argument, NULL, 'T' },
		{ "list", no_argument, NULL, 'l' },
		{ "summary", no_argument, NULL, 'U' },
		{ "expect-check-failure", no_argument, NULL, 'F' },
		{ "vs-host", no_argument, NULL, 'V' },
		{ "calibrate", no_argument, NULL, 'C' },
		{ "costs", required_argument, NULL, 'k' },
		{ "sizes", required_argument, NULL, 'z' },
		{ "ratios", required_argument, NULL, 'r' },
		{ "measured", required_argument, NULL, 'M' },
		{ "tolerance", required_argument, NULL, 't' },
		{ "host-feature", required_argument, NULL, 'H' },
		{ "model-check", no_argument, NULL, 'K' },
		{ "sis-scan", required_argument, NULL, 'i' },
		{ "lat-slice", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sim_opts o = { .seed = 1, .scale = 1.0 };
	const char *exp = "all", *plot_dir = NULL, *md_path = NULL;
	bool check = false, summary = false, expect_fail = false;
	int c, rc = 0, fleet_mode = 0;
	bool lat_slice_set = false;
	struct sim_fleet_opts fo;

	sim_fleet_opts_default(&fo);

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			exp = optarg;
			break;
		case 's':
			if (parse_u64(optarg, &o.seed)) {
				fprintf(stderr, "lagvisor-sim: bad --seed '%s' (want an unsigned integer)\n",
					optarg);
				return 2;
			}
			break;
		case 'x': {
			char *end;

			o.scale = strtod(optarg, &end);
			if (end == optarg || *end || !(o.scale > 0.0 && o.scale <= 100.0)) {
				fprintf(stderr, "lagvisor-sim: bad --scale '%s' (want 0 < x <= 100)\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'c':
			check = true;
			break;
		case 'U':
			summary = true;
			break;
		case 'F':
			expect_fail = true;
			break;
		case 'f':
			o.features = optarg;
			break;
		case 'p':
			plot_dir = optarg;
			break;
		case 'm':
			md_path = optarg;
			break;
		case 'S': {
			char *eq = strchr(optarg, '=');
			uint64_t val;

			if (!eq || (size_t)(eq - optarg) >= sizeof(o.set_name[0]) ||
			    parse_u64(eq + 1, &val)) {
				fprintf(stderr, "lagvisor-sim: bad --set '%s' (want NAME=UNSIGNED)\n",
					optarg);
				return 2;
			}
			*eq = 0;
			if (!sim_set_known(optarg)) {
				fprintf(stderr, "lagvisor-sim: unknown --set name '%s'; known:", optarg);
				for (unsigned i = 0; sim_set_names[i]; i++)
					fprintf(stderr, " %s", sim_set_names[i]);
				fprintf(stderr, "\n");
				return 2;
			}
			if (o.nr_sets == SIM_MAX_SETS) {
				fprintf(stderr, "lagvisor-sim: at most %u --set options\n", SIM_MAX_SETS);
				return 2;
			}
			snprintf(o.set_name[o.nr_sets], sizeof(o.set_name[0]), "%s", optarg);
			o.set_val[o.nr_sets++] = val;
			break;
		}
		case 'i': {
			uint64_t v;

			if (parse_u64(optarg, &v) || v < 1 || v > 1023) {
				fprintf(stderr, "lagvisor-sim: bad --sis-scan '%s' (1..1023)\n", optarg);
				return 2;
			}
			fo.sis_scan = (unsigned)v;
			break;
		}
		case 'V':
		case 'C':
		case 'K':
			fleet_mode = c;
			break;
		case 'k':
			if (!sim_cost_set_find(optarg)) {
				fprintf(stderr, "lagvisor-sim: unknown --costs '%s' (pvm or vmx)\n", optarg);
				return 2;
			}
			fo.costs = optarg;
			break;
		case 'z':
			if (parse_list(optarg, fo.pcpus, &fo.nr_sizes, SIM_FLEET_MAX_SIZES, 1024)) {
				fprintf(stderr, "lagvisor-sim: bad --sizes '%s' (want 1..1024,...)\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_list(optarg, fo.ratios, &fo.nr_ratios, SIM_FLEET_MAX_SIZES, 8)) {
				fprintf(stderr, "lagvisor-sim: bad --ratios '%s' (want 1..8,...)\n", optarg);
				return 2;
			}
			break;
		case 'M':
			if (sim_fleet_add_measured(&fo, optarg)) {
				fprintf(stderr, "lagvisor-sim: bad --measured '%s' (want host|eevdf:LEVEL:P50_US:P99_US)\n",
					optarg);
				return 2;
			}
			break;
		case 't': {
			char *end;
			double t = strtod(optarg, &end);

			if (end == optarg || *end || !(t > 0 && t < 1000)) {
				fprintf(stderr, "lagvisor-sim: bad --tolerance '%s' (percent)\n", optarg);
				return 2;
			}
			fo.tolerance = t / 100.0;
			break;
		}
		case 'L': {
			char *end;
			double us = strtod(optarg, &end);

			if (end == optarg || *end || !(us >= 0 && us <= 1e6)) {
				fprintf(stderr, "lagvisor-sim: bad --lat-slice '%s' (us, 0 = base)\n",
					optarg);
				return 2;
			}
			fo.lat_slice_ns = (uint64_t)(us * (double)SIM_NS_PER_US);
			lat_slice_set = true;
			break;
		}
		case 'H':
			fo.host_features = optarg;
			break;
		case 'T':
			return selftest();
		case 'l':
			for (unsigned i = 0; i < sim_nr_experiments; i++)
				printf("%s  %s\n", sim_experiments[i]->id, sim_experiments[i]->title);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "lagvisor-sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o.features) {
		char bad[64];

		if (sim_sched_features_check(o.features, bad, sizeof(bad))) {
			fprintf(stderr, "lagvisor-sim: unknown sched feature '%s' in --sched-feature\n",
				bad);
			return 2;
		}
	}
	if (fo.host_features) {
		char bad[64];

		if (sim_sched_features_check(fo.host_features, bad, sizeof(bad))) {
			fprintf(stderr, "lagvisor-sim: unknown sched feature '%s' in --host-feature\n",
				bad);
			return 2;
		}
	}
	if (fleet_mode) {
		/* --set slice_ns: lagvisor's base slice (an older default). */
		for (unsigned i = 0; i < o.nr_sets; i++)
			if (!strcmp(o.set_name[i], "slice_ns"))
				fo.base_slice_ns = o.set_val[i];
		fo.seed = o.seed;
		fo.scale = o.scale;
		fo.features = o.features;
		if (fleet_mode == 'C' && !fo.nr_measured)
			default_measured(&fo);
		/* bench-tail's --slice default (base) since b63ac49; a 100 us
		 * slice expires mid-round on the PVM host (sched/README 7.1). */
		if (fleet_mode == 'C' && !lat_slice_set)
			fo.lat_slice_ns = 0;
		rc = fleet_mode == 'V' ? sim_fleet_vs_host(stdout, &fo) :
		     fleet_mode == 'C' ? sim_fleet_calibrate(stdout, &fo) :
					 sim_fleet_model_check(stdout, &fo);
		if (expect_fail && rc < 2)
			return rc == 1 ? 0 : 1;
		return rc == 1 && !check ? 0 : rc;
	}
	if (strcmp(exp, "all") && !sim_experiment_find(exp)) {
		fprintf(stderr, "lagvisor-sim: unknown experiment '%s' (see --list)\n", exp);
		return 2;
	}
	FILE *md = NULL;

	if (md_path) {
		md = fopen(md_path, "a");
		if (!md) {
			fprintf(stderr, "lagvisor-sim: cannot open %s: %s\n", md_path, strerror(errno));
			return 2;
		}
	}
	struct sim_result *rs[16];
	unsigned nr = 0;

	for (unsigned i = 0; i < sim_nr_experiments && nr < 16; i++) {
		const struct sim_experiment *e = sim_experiments[i];

		if (strcmp(exp, "all") && strcmp(exp, e->id))
			continue;
		rs[nr] = calloc(1, sizeof(*rs[nr]));
		if (!rs[nr]) {
			fprintf(stderr, "lagvisor-sim: out of memory\n");
			rc = 2;
			break;
		}
		int r = run_one(e, &o, plot_dir, md, rs[nr]);

		nr++;
		if (r > rc)
			rc = r;
		if (r == 2)
			break;
	}
	if (summary && rc < 2) {
		sim_summary_print_md(stdout, rs, nr);
		if (md)
			sim_summary_print_md(md, rs, nr);
	}
	for (unsigned i = 0; i < nr; i++)
		free(rs[i]);
	if (md && fclose(md)) {
		fprintf(stderr, "lagvisor-sim: cannot write %s\n", md_path);
		rc = 2;
	}
	if (expect_fail && rc < 2)
		return rc == 1 ? 0 : 1;
	if (rc == 1 && !check)
		rc = 0;
	return rc;
}
