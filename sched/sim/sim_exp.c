/*
 * Experiment plumbing: metric table, checks, markdown and gnuplot output.
 * Output is formatted with fixed precision from values that are themselves
 * deterministic, so equal seeds print byte-identical reports.
 */
#include "sim_exp.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "common/log.h"

const struct sim_experiment *sim_experiment_find(const char *id)
{
	for (unsigned i = 0; i < sim_nr_experiments; i++)
		if (!strcmp(sim_experiments[i]->id, id))
			return sim_experiments[i];
	return NULL;
}

void sim_metric_set(struct sim_result *r, const char *name, const char *unit, unsigned vi,
		    double value)
{
	unsigned i;

	for (i = 0; i < r->nr_metrics; i++)
		if (!strcmp(r->m[i].name, name))
			break;
	if (i == r->nr_metrics) {
		if (r->nr_metrics == SIM_MAX_METRICS) {
			log_once(LOG_WARN, "sim: too many metrics, dropping %s", name);
			return;
		}
		r->nr_metrics++;
		snprintf(r->m[i].name, sizeof(r->m[i].name), "%s", name);
		snprintf(r->m[i].unit, sizeof(r->m[i].unit), "%s", unit);
	}
	if (vi < SIM_MAX_VARIANTS)
		r->m[i].v[vi] = value;
}

double sim_metric_get(const struct sim_result *r, const char *name, unsigned vi)
{
	for (unsigned i = 0; i < r->nr_metrics; i++)
		if (!strcmp(r->m[i].name, name) && vi < SIM_MAX_VARIANTS)
			return r->m[i].v[vi];
	return 0.0;
}

struct sim_series *sim_series_get(struct sim_result *r, unsigned idx)
{
	if (idx >= SIM_MAX_SERIES)
		return NULL;
	if (idx >= r->nr_series)
		r->nr_series = idx + 1;
	return &r->series[idx];
}

void sim_check(struct sim_result *r, bool ok, const char *fmt, ...)
{
	va_list ap;

	if (r->nr_checks == SIM_MAX_CHECKS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->check[r->nr_checks], sizeof(r->check[0]), fmt, ap);
	va_end(ap);
	r->check_ok[r->nr_checks++] = ok;
}

bool sim_result_ok(const struct sim_result *r)
{
	if (r->error)
		return false;
	for (unsigned i = 0; i < r->nr_checks; i++)
		if (!r->check_ok[i])
			return false;
	return true;
}

uint64_t sim_exp_scaled(const struct sim_result *r, uint64_t ns)
{
	return (uint64_t)((double)ns * r->o.scale);
}

const char *const sim_set_names[] = {
	/* sim_params, in ns */
	"exit_ns", "kick_ns", "wake_ns", "ctxsw_ns", "flush_ns", "wake_cost_ns", "round_cost_ns",
	"slice_ns",
	"balance_ns", "cost_jitter_pct", "check_every", "trace_until_ns",
	/* workload knobs, read by the experiments that have them */
	"work_ns", "msg_sleep_ns", "pcpus", "workers", "msgs",
	NULL,
};

bool sim_set_known(const char *name)
{
	for (unsigned i = 0; sim_set_names[i]; i++)
		if (!strcmp(sim_set_names[i], name))
			return true;
	return false;
}

uint64_t sim_opt(const struct sim_result *r, const char *name, uint64_t def)
{
	for (unsigned i = 0; i < r->o.nr_sets; i++)
		if (!strcmp(r->o.set_name[i], name))
			return r->o.set_val[i];
	return def;
}

void sim_exp_params(const struct sim_result *r, unsigned vi, struct sim_params *p)
{
	const char *vf = r->exp->features[vi] ? r->exp->features[vi] : "";
	const char *extra = r->o.features ? r->o.features : "";

	sim_params_default(p);
	p->seed = r->o.seed;
	snprintf(p->features, sizeof(p->features), "%s%s%s", vf, vf[0] && extra[0] ? "," : "",
		 extra);
	p->exit_ns = sim_opt(r, "exit_ns", p->exit_ns);
	p->kick_ns = sim_opt(r, "kick_ns", p->kick_ns);
	p->wake_ns = sim_opt(r, "wake_ns", p->wake_ns);
	p->ctxsw_ns = sim_opt(r, "ctxsw_ns", p->ctxsw_ns);
	p->flush_ns = sim_opt(r, "flush_ns", p->flush_ns);
	p->wake_cost_ns = sim_opt(r, "wake_cost_ns", p->wake_cost_ns);
	p->round_cost_ns = sim_opt(r, "round_cost_ns", p->round_cost_ns);
	p->slice_ns = sim_opt(r, "slice_ns", p->slice_ns);
	p->balance_ns = sim_opt(r, "balance_ns", p->balance_ns);
	p->cost_jitter_pct = (unsigned)sim_opt(r, "cost_jitter_pct", p->cost_jitter_pct);
	p->check_every = sim_opt(r, "check_every", p->check_every);
	p->trace_until_ns = sim_opt(r, "trace_until_ns", p->trace_until_ns);
}

int sim_experiment_run(const struct sim_experiment *e, const struct sim_opts *o,
		       struct sim_result *r)
{
	memset(r, 0, sizeof(*r));
	r->exp = e;
	r->o = *o;
	if (r->o.scale <= 0.0)
		r->o.scale = 1.0;
	for (unsigned vi = 0; vi < e->nr_variants; vi++) {
		int err = e->run(r, vi);

		if (err) {
			log_error("sim: experiment %s variant \"%s\" failed: %d", e->id,
				  e->label[vi], err);
			r->error = err;
			return err;
		}
	}
	e->check(r);
	return 0;
}

/* Column width for the markdown table, so the text form lines up too. */
#define COLW 14

static void md_value(FILE *f, double v)
{
	char buf[32];

	if (v != 0.0 && (v >= 1e6 || v <= -1e6))
		snprintf(buf, sizeof(buf), "%.4g", v);
	else if (v == (double)(long long)v)
		snprintf(buf, sizeof(buf), "%lld", (long long)v);
	else
		snprintf(buf, sizeof(buf), "%.2f", v);
	fprintf(f, " %*s |", COLW, buf);
}

void sim_result_print_md(FILE *f, const struct sim_result *r)
{
	const struct sim_experiment *e = r->exp;
	unsigned nv = e->nr_variants;

	fprintf(f, "### %s: %s\n\n", e->id, e->title);
	fprintf(f, "Seed: %s  \nSimulator seed %llu, scale %.2f.\n\n", e->seed_claim,
		(unsigned long long)r->o.seed, r->o.scale);
	fprintf(f, "| %-48s |", "metric");
	for (unsigned vi = 0; vi < nv; vi++)
		fprintf(f, " %*s |", COLW, e->label[vi]);
	if (nv == 2)
		fprintf(f, " %*s |", 8, "B/A");
	fprintf(f, "\n|%.*s|", 50, "--------------------------------------------------------------");
	for (unsigned vi = 0; vi < nv; vi++)
		fprintf(f, "%.*s:|", COLW + 1, "------------------------------------------");
	if (nv == 2)
		fprintf(f, "---------:|");
	fprintf(f, "\n");
	for (unsigned i = 0; i < r->nr_metrics; i++) {
		char name[80];

		snprintf(name, sizeof(name), "%s (%s)", r->m[i].name, r->m[i].unit);
		fprintf(f, "| %-48s |", name);
		for (unsigned vi = 0; vi < nv; vi++)
			md_value(f, r->m[i].v[vi]);
		if (nv == 2) {
			if (r->m[i].v[0] != 0.0)
				fprintf(f, " %8.2f |", r->m[i].v[1] / r->m[i].v[0]);
			else
				fprintf(f, " %8s |", "-");
		}
		fprintf(f, "\n");
	}
	fprintf(f, "\nVariants:");
	for (unsigned vi = 0; vi < nv; vi++)
		fprintf(f, " %s = `%s`%s", e->label[vi],
			e->features[vi] && e->features[vi][0] ? e->features[vi] : "defaults",
			vi + 1 < nv ? ";" : ".");
	fprintf(f, "\n\nChecks:\n");
	for (unsigned i = 0; i < r->nr_checks; i++)
		fprintf(f, "- %s: %s\n", r->check_ok[i] ? "PASS" : "FAIL", r->check[i]);
	fprintf(f, "\n");
}

void sim_summary_print_md(FILE *f, struct sim_result *const *rs, unsigned n)
{
	fprintf(f, "### Summary: each seed's A/B\n\n");
	fprintf(f, "| seed | %-44s | %-26s | %-26s | %7s | checks |\n", "metric", "A", "B", "B/A");
	fprintf(f, "|------|%.46s|%.28s|%.28s|--------:|--------|\n",
		"----------------------------------------------------",
		"----------------------------------------------------",
		"----------------------------------------------------");
	for (unsigned i = 0; i < n; i++) {
		const struct sim_result *r = rs[i];
		const struct sim_experiment *e = r->exp;
		unsigned b = e->summary_b ? e->summary_b : 1;

		for (unsigned k = 0; k < 4 && e->headline[k]; k++) {
			for (unsigned m = 0; m < r->nr_metrics; m++) {
				const struct sim_metric *mt = &r->m[m];
				char name[80], va[40], vb[40], rat[16];

				if (strcmp(mt->name, e->headline[k]))
					continue;
				snprintf(name, sizeof(name), "%s (%s)", mt->name, mt->unit);
				snprintf(va, sizeof(va), "%s %.2f", e->label[0], mt->v[0]);
				snprintf(vb, sizeof(vb), "%s %.2f", e->label[b], mt->v[b]);
				if (mt->v[0] != 0.0)
					snprintf(rat, sizeof(rat), "%.2f", mt->v[b] / mt->v[0]);
				else
					snprintf(rat, sizeof(rat), "-");
				fprintf(f, "| %s  | %-44s | %-26s | %-26s | %7s | %-6s |\n", e->id, name,
					va, vb, rat, k ? "" : (sim_result_ok(r) ? "PASS" : "FAIL"));
			}
		}
	}
	fprintf(f, "\n");
}

static int write_dat(const struct sim_result *r, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		log_error("sim: cannot write %s: %s", path, strerror(errno));
		return -errno;
	}
	for (unsigned si = 0; si < r->nr_series; si++) {
		const struct sim_series *s = &r->series[si];

		fprintf(f, "# series %u: %s\nlabel x", si, s->title);
		for (unsigned vi = 0; vi < r->exp->nr_variants; vi++)
			fprintf(f, " \"%s\"", r->exp->label[vi]);
		fprintf(f, "\n");
		for (unsigned i = 0; i < s->n; i++) {
			fprintf(f, "\"%s\" %.6g", s->label[i][0] ? s->label[i] : "-", s->x[i]);
			for (unsigned vi = 0; vi < r->exp->nr_variants; vi++)
				fprintf(f, " %.6g", s->y[vi][i]);
			fprintf(f, "\n");
		}
		fprintf(f, "\n\n");	/* gnuplot index separator */
	}
	if (fclose(f)) {
		log_error("sim: cannot write %s", path);
		return -EIO;
	}
	return 0;
}

int sim_result_write_plot(const struct sim_result *r, const char *dir)
{
	const struct sim_experiment *e = r->exp;
	char dat[512], gp[512];
	unsigned nv = e->nr_variants;
	int err;
	FILE *f;

	snprintf(dat, sizeof(dat), "%s/%s.dat", dir, e->id);
	snprintf(gp, sizeof(gp), "%s/%s.gp", dir, e->id);
	err = write_dat(r, dat);
	if (err)
		return err;
	f = fopen(gp, "w");
	if (!f) {
		log_error("sim: cannot write %s: %s", gp, strerror(errno));
		return -errno;
	}
	fprintf(f, "set terminal pngcairo noenhanced size %u,520 font 'sans,10'\n",
		r->nr_series > 1 ? 1200u : 760u);
	fprintf(f, "set output '%s/%s.png'\n", dir, e->id);
	fprintf(f, "set key top left\nset grid ytics\n");
	if (r->nr_series > 1)
		fprintf(f, "set multiplot layout 1,%u title '%s: %s'\n", r->nr_series, e->id,
			e->title);
	for (unsigned si = 0; si < r->nr_series; si++) {
		const struct sim_series *s = &r->series[si];

		fprintf(f, "reset\nset key top left\nset grid ytics\n");
		fprintf(f, "set title '%s%s%s'\n", r->nr_series > 1 ? "" : e->id,
			r->nr_series > 1 ? "" : ": ", s->title);
		fprintf(f, "set xlabel '%s'\nset ylabel '%s'\n", s->xlabel, s->ylabel);
		fprintf(f, "%sset logscale y\n", s->logy ? "" : "un");
		if (s->style == SIM_PLOT_BARS) {
			fprintf(f, "set style data histograms\nset style histogram clustered gap 1\n"
				   "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
				   "set xtics rotate by -20\n");
			if (!s->logy)
				fprintf(f, "set yrange [0:*]\n");
			fprintf(f, "plot for [i=3:%u] '%s' index %u using i:xtic(1) title columnheader(i)\n",
				2 + nv, dat, si);
		} else {
			fprintf(f, "%sset logscale x\n", s->logx ? "" : "un");
			if (s->label[0][0])
				fprintf(f, "set xtics (");
			for (unsigned i = 0; s->label[0][0] && i < s->n; i++)
				fprintf(f, "'%s' %.6g%s", s->label[i], s->x[i], i + 1 < s->n ? ", " : ")\n");
			fprintf(f, "plot for [i=3:%u] '%s' index %u using 2:i with linespoints "
				   "lw 2 pt 7 title columnheader(i)\n", 2 + nv, dat, si);
		}
	}
	if (r->nr_series > 1)
		fprintf(f, "unset multiplot\n");
	if (fclose(f)) {
		log_error("sim: cannot write %s", gp);
		return -EIO;
	}
	return 0;
}
