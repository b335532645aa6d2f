/*
 * The fleet: latency VMs shaped like bench-tail's wakebench guest (a
 * message vCPU that, at every 1 ms tick of its LAPIC timer, wakes each idle
 * worker vCPU by IPI; a woken worker does 50 us of work and halts) beside
 * hog VMs whose vCPUs spin. At k vCPUs per pCPU half the vCPUs are latency
 * VMs' and half hogs', as bench-tail lays out its two VMs; a latency VM has
 * VM_VCPUS vCPUs (one message, the rest workers), fewer when the fleet is
 * one VM of each (the calibration: bench-tail's k-vCPU latency VM).
 *
 * Latency is bench-tail's: from the message's TSC stamp before its ICR
 * write to the worker's first instruction, so each side's IPI send cost is
 * inside it. Both models run the same seed, the same fleet and the same
 * guest work; only the scheduler (sim_host.c) and the costs
 * (sim_costs.c) differ.
 */
#include "sim_fleet.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_costs.h"

#define VM_VCPUS 4
#define WORK_NS (50 * SIM_NS_PER_US)
#define PERIOD_NS SIM_NS_PER_MS
#define BALANCE_NS (4 * SIM_NS_PER_MS)

struct fleet_shape {
	unsigned pcpus, lat_vms, lat_vcpus, hogs;
};

struct fleet_out {
	double p50_us, p99_us, p999_us;
	size_t samples;
	double hog_share;	/* hogs' CPU / (pCPUs x measured time) */
};

void sim_fleet_opts_default(struct sim_fleet_opts *o)
{
	static const unsigned sizes[] = { 8, 64, 256, 1024 };

	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->scale = 1.0;
	o->nr_sizes = 4;
	memcpy(o->pcpus, sizes, sizeof(sizes));
	o->nr_ratios = 2;
	o->ratios[0] = 2;
	o->ratios[1] = 3;
	/* --vs-host: the latency VMs at lagvisor's --latency low (100 us),
	 * what a VM whose rounds are shorter than that asks for (a wakebench
	 * round on VMX). --calibrate overrides it with bench-tail's --slice
	 * default since b63ac49, the base slice (sim_main.c). */
	o->lat_slice_ns = 100 * SIM_NS_PER_US;
	o->tolerance = 0.30;
}

int sim_fleet_add_measured(struct sim_fleet_opts *o, const char *spec)
{
	struct sim_measured m;
	char cfg[16];
	int n = 0;

	if (o->nr_measured == SIM_FLEET_MAX_MEASURED)
		return -EINVAL;
	if (sscanf(spec, "%15[a-z-]:%u:%lf:%lf%n", cfg, &m.level, &m.p50_us, &m.p99_us, &n) != 4 ||
	    spec[n] || m.level < 1 || m.level > 8 || !(m.p50_us > 0) || !(m.p99_us > 0))
		return -EINVAL;
	if (strcmp(cfg, "host") && strcmp(cfg, "eevdf"))
		return -EINVAL;
	snprintf(m.config, sizeof(m.config), "%s", cfg);
	o->measured[o->nr_measured++] = m;
	return 0;
}

/* Simulated time: enough for tens of thousands of wakes at 8 pCPUs; larger
 * fleets wake proportionally more per second, so they get less time. */
static uint64_t fleet_time_ns(unsigned pcpus, double scale)
{
	double s = pcpus <= 8 ? 4.0 : pcpus <= 64 ? 2.0 : pcpus <= 256 ? 1.0 : 0.6;

	return (uint64_t)(s * scale * (double)SIM_NS_PER_S);
}

static void fleet_params(struct sim_params *p, const struct sim_fleet_opts *o,
			 const struct sim_cost_set *cs, enum sim_model model, unsigned pcpus,
			 uint64_t time_ns)
{
	sim_params_default(p);
	p->model = model;
	p->seed = o->seed;
	p->nr_pcpus = pcpus;
	p->duration_ns = time_ns;
	p->warmup_ns = time_ns / 5;
	p->balance_ns = BALANCE_NS;
	p->lat_from_stamp = true;
	sim_costs_apply(p, cs, model);
	if (model == SIM_MODEL_HOST) {
		size_t n;

		sim_host_features(p->features, sizeof(p->features));
		n = strlen(p->features);
		if (o->host_features && n < sizeof(p->features))
			snprintf(p->features + n, sizeof(p->features) - n, ",%s", o->host_features);
		p->slice_ns = sim_host_slice_ns(pcpus);
	} else {
		/* 0: the library's own default, lagvisor's whatever it is. */
		p->slice_ns = o->base_slice_ns;
		if (o->features)
			snprintf(p->features, sizeof(p->features), "%s", o->features);
	}
}

static int run_fleet(const struct sim_params *p, const struct fleet_shape *sh,
		     uint64_t lat_slice_ns, struct fleet_out *out)
{
	struct sim_params pp = *p;
	unsigned total = sh->lat_vms * sh->lat_vcpus + sh->hogs, next = 0;
	struct sim s;
	int err;

	if (total > SIM_MAX_ENTITIES)
		pp.max_entities = total;
	err = sim_init(&s, &pp);
	if (err)
		return err;
	/*
	 * vCPU threads start spread over the pCPUs in creation order, a
	 * latency VM's vCPUs together, then the hogs: the hogs then fill
	 * every pCPU and each latency vCPU shares one with a hog.
	 */
	for (unsigned vm = 0; vm < sh->lat_vms && !s.error; vm++) {
		struct sim_vcpu *msg = sim_vcpu_add(&s, SIM_WL_MSG, 0, false);

		if (!msg)
			break;
		msg->period_ns = PERIOD_NS;
		msg->group = 0;
		msg->slice_ns = lat_slice_ns;
		msg->nr_workers = sh->lat_vcpus - 1;
		msg->worker0 = msg->id + 1;
		sim_vcpu_start_at(&s, msg, (int)(next++ % sh->pcpus), vm * 7 * SIM_NS_PER_US, 0);
		for (unsigned w = 0; w + 1 < sh->lat_vcpus; w++) {
			struct sim_vcpu *v = sim_vcpu_add(&s, SIM_WL_WORKER, 0, false);

			if (!v)
				break;
			v->run_ns = WORK_NS;
			v->jitter_pct = 0;	/* wakebench's work is calibrated */
			v->group = 1;
			v->slice_ns = lat_slice_ns;
			sim_vcpu_start_at(&s, v, (int)(next++ % sh->pcpus),
					  (vm * 7 + w + 1) * SIM_NS_PER_US, 0);
		}
	}
	for (unsigned i = 0; i < sh->hogs && !s.error; i++) {
		struct sim_vcpu *v = sim_vcpu_add(&s, SIM_WL_HOG, 0, false);

		if (!v)
			break;
		v->group = 2;
		sim_vcpu_start_at(&s, v, (int)(next++ % sh->pcpus), 50 * SIM_NS_PER_US + i * 100, 0);
	}
	err = s.error ? s.error : sim_run(&s);
	if (!err) {
		struct sim_samples *lat = &s.lat_group[1];
		uint64_t hog_ns = 0;

		out->p50_us = (double)sim_samples_pct(lat, 50) / 1e3;
		out->p99_us = (double)sim_samples_pct(lat, 99) / 1e3;
		out->p999_us = (double)sim_samples_pct(lat, 99.9) / 1e3;
		out->samples = lat->n;
		for (unsigned i = 0; i < s.nr_vcpus; i++)
			if (s.vcpu[i]->group == 2)
				hog_ns += s.vcpu[i]->run_measured_ns;
		out->hog_share = (double)hog_ns /
				 ((double)(pp.duration_ns - pp.warmup_ns) * (double)sh->pcpus);
	}
	sim_fini(&s);
	return err;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

static void print_models(FILE *f, const struct sim_fleet_opts *o)
{
	char feat[512], unknown[256], slice[32] = "the base slice";

	if (o->lat_slice_ns)
		snprintf(slice, sizeof(slice), "%.0f us", (double)o->lat_slice_ns / 1e3);
	sim_host_features(feat, sizeof(feat));
	sim_host_features_unknown(unknown, sizeof(unknown));
	fprintf(f, "Models: **host** = the sched/ library with Linux's flags (`%s%s%s`), base slice "
		   "0.7 ms x (1 + log2 min(pCPUs, 8)), a wake on its previous pCPU if idle, else "
		   "on the first idle one of 8 of its 16-pCPU LLC, else queued on the previous; "
		   "in-kernel costs. **lagvisor** = the library with its defaults (flags and base "
		   "slice)%s%s, its "
		   "domain-wide wake choice, latency VMs' slice %s (bench-tail's --slice), "
		   "userspace costs.%s%s%s\n\n",
		feat, o->host_features ? "," : "", o->host_features ? o->host_features : "",
		o->features ? " and " : "", o->features ? o->features : "",
		slice, unknown[0] ? " lagvisor's own flags, off in the "
		"host model, at their defaults in lagvisor: `" : "", unknown, unknown[0] ? "`." : "");
}

int sim_fleet_vs_host(FILE *f, const struct sim_fleet_opts *o)
{
	int rc = 0;

	fprintf(f, "### lagvisor vs the host scheduler: latency VMs beside hog VMs\n\n");
	fprintf(f, "Each latency VM: %u vCPUs (1 message, %u workers), a round every %.0f ms, "
		   "%.0f us of work per wake; half of all vCPUs are latency VMs', half spinning "
		   "hogs'. Simulator seed %llu, scale %.2f.\n\n", VM_VCPUS, VM_VCPUS - 1,
		(double)PERIOD_NS / 1e6, (double)WORK_NS / 1e3, (unsigned long long)o->seed,
		o->scale);
	print_models(f, o);
	for (unsigned ci = 0; ci < sim_nr_cost_sets; ci++) {
		const struct sim_cost_set *cs = &sim_cost_sets[ci];

		if (o->costs && strcmp(o->costs, cs->name))
			continue;
		sim_costs_print_md(f, cs);
		fprintf(f, "| pCPUs | vCPU:pCPU | vCPUs | wakes (host/lagvisor) | host p50/p99/p99.9 us "
			   "| lagvisor p50/p99/p99.9 us | p99 lagvisor/host | p99.9 lagvisor/host "
			   "| hog share host/lagvisor |\n|---:|---|---:|---|---|---|---:|---:|---|\n");
		for (unsigned si = 0; si < o->nr_sizes; si++) {
			for (unsigned ri = 0; ri < o->nr_ratios; ri++) {
				unsigned P = o->pcpus[si], k = o->ratios[ri];
				unsigned lat_vcpus = k * P / 2;
				struct fleet_shape sh = {
					.pcpus = P,
					.lat_vms = lat_vcpus / VM_VCPUS ? lat_vcpus / VM_VCPUS : 1,
					.lat_vcpus = lat_vcpus >= VM_VCPUS ? VM_VCPUS : (lat_vcpus > 1 ? lat_vcpus : 2),
				};
				struct fleet_out h = { 0 }, l = { 0 };
				struct sim_params ph, pl;
				uint64_t t = fleet_time_ns(P, o->scale);
				int err;

				sh.hogs = k * P > sh.lat_vms * sh.lat_vcpus ?
						  k * P - sh.lat_vms * sh.lat_vcpus : 0;
				fleet_params(&ph, o, cs, SIM_MODEL_HOST, P, t);
				fleet_params(&pl, o, cs, SIM_MODEL_LAGVISOR, P, t);
				err = run_fleet(&ph, &sh, 0, &h);
				if (!err)
					err = run_fleet(&pl, &sh, o->lat_slice_ns, &l);
				if (err) {
					fprintf(f, "| %u | %u:1 | | simulation error %d | | | | | |\n", P, k,
						err);
					return 2;
				}
				fprintf(f, "| %u | %u:1 | %u | %zu / %zu | %.0f / %.0f / %.0f "
					   "| %.0f / %.0f / %.0f | %.2f | %.2f | %.1f / %.1f %% |\n",
					P, k, sh.lat_vms * sh.lat_vcpus + sh.hogs, h.samples, l.samples, h.p50_us, h.p99_us, h.p999_us,
					l.p50_us, l.p99_us, l.p999_us, ratio(l.p99_us, h.p99_us),
					ratio(l.p999_us, h.p999_us), 100 * h.hog_share, 100 * l.hog_share);
				fflush(f);
				if (h.samples < 1000 || l.samples < 1000) {
					fprintf(f, "\n- FAIL: fewer than 1000 wakes at %u pCPUs %u:1\n\n",
						P, k);
					rc = 1;
				}
			}
		}
		fprintf(f, "\n");
	}
	return rc;
}

/*
 * bench-tail at 2 pCPUs: level k runs 2k vCPUs, a k-vCPU latency VM (one
 * message, k - 1 workers) and a k-vCPU hog VM. host-A is the host model
 * with KVM's irqchip, eevdf lagvisor's policy with the latency VM's slice.
 */
int sim_fleet_calibrate(FILE *f, const struct sim_fleet_opts *o)
{
	const struct sim_cost_set *cs = sim_cost_set_find(o->costs ? o->costs : "pvm");
	int rc = 0;

	if (!cs)
		return 2;
	fprintf(f, "### Calibration: bench-tail's workload at 2 pCPUs, simulated vs measured\n\n");
	print_models(f, o);
	sim_costs_print_md(f, cs);
	/* Wakes/s and the hogs' share are printed for comparison with
	 * bench-tail's req/s and noisy CPU share columns (not checked). */
	fprintf(f, "| level | config | measured p50 / p99 us | simulated p50 / p99 / p99.9 us "
		   "| sim/measured p50 | sim/measured p99 | within %.0f %% | sim wakes/s "
		   "| sim hog share |\n"
		   "|---|---|---|---|---:|---:|---|---:|---:|\n", 100 * o->tolerance);
	for (unsigned i = 0; i < o->nr_measured; i++) {
		const struct sim_measured *m = &o->measured[i];
		bool host = !strcmp(m->config, "host");
		/* bench-tail: 2k vCPUs, half each, the latency VM >= 2. */
		unsigned lat = m->level < 2 ? 2 : m->level;
		struct fleet_shape sh = { .pcpus = 2, .lat_vms = 1, .lat_vcpus = lat,
					  .hogs = 2 * m->level - lat };
		struct fleet_out out = { 0 };
		struct sim_params p;
		int err;

		fleet_params(&p, o, cs, host ? SIM_MODEL_HOST : SIM_MODEL_LAGVISOR, 2,
			     (uint64_t)(10.0 * o->scale * (double)SIM_NS_PER_S));
		err = run_fleet(&p, &sh, host ? 0 : o->lat_slice_ns, &out);
		if (err)
			return 2;
		double r50 = out.p50_us / m->p50_us, r99 = out.p99_us / m->p99_us;
		bool ok = fabs(r50 - 1) <= o->tolerance && fabs(r99 - 1) <= o->tolerance;

		fprintf(f, "| %u:1 | %s | %.0f / %.0f | %.0f / %.0f / %.0f | %.2f | %.2f | %s "
			   "| %.0f | %.1f %% |\n",
			m->level, host ? "host-A" : "eevdf", m->p50_us, m->p99_us, out.p50_us,
			out.p99_us, out.p999_us, r50, r99, ok ? "PASS" : "FAIL",
			(double)out.samples * 1e9 / (double)(p.duration_ns - p.warmup_ns),
			100 * out.hog_share);
		if (!ok)
			rc = 1;
	}
	fprintf(f, "\n");
	return rc;
}

/*
 * What the host model changes is only what sim_host.c says: with lagvisor's
 * flags, slices and costs, and a scan over every pCPU (one LLC, P - 1
 * siblings: prev if idle, else the first idle after it, wrapping, which is
 * sched/'s own choice), the pinned wakes must reproduce lagvisor's run
 * exactly. A difference means the pinning itself (the allowed-set changes
 * around each wake) perturbs the library, and every host number would
 * carry that error. With --sis-scan N < P - 1 the choice differs and so
 * must the numbers: the check is shown able to fail.
 */
int sim_fleet_model_check(FILE *f, const struct sim_fleet_opts *o)
{
	const struct sim_cost_set *cs = sim_cost_set_find(o->costs ? o->costs : "pvm");
	const unsigned P = 8;
	/* Few hogs, so that pCPUs go idle and the wake's choice matters. */
	struct fleet_shape sh = { .pcpus = P, .lat_vms = 3, .lat_vcpus = VM_VCPUS, .hogs = 3 };
	struct fleet_out h = { 0 }, l = { 0 };
	struct sim_params ph, pl;
	uint64_t t = (uint64_t)(2.0 * o->scale * (double)SIM_NS_PER_S);
	int err;

	if (!cs)
		return 2;
	fleet_params(&pl, o, cs, SIM_MODEL_LAGVISOR, P, t);
	ph = pl;
	ph.model = SIM_MODEL_HOST;
	ph.llc_pcpus = P;
	ph.sis_scan = o->sis_scan ? o->sis_scan : P - 1;
	err = run_fleet(&pl, &sh, o->lat_slice_ns, &l);
	if (!err)
		err = run_fleet(&ph, &sh, o->lat_slice_ns, &h);
	if (err)
		return 2;
	bool same = h.samples == l.samples && h.p50_us == l.p50_us && h.p99_us == l.p99_us &&
		    h.p999_us == l.p999_us && h.hog_share == l.hog_share;

	fprintf(f, "### Model check: the host model configured as lagvisor (scan %u of %u pCPUs)\n\n"
		   "| model | wakes | p50 / p99 / p99.9 us | hog share |\n|---|---:|---|---:|\n"
		   "| lagvisor | %zu | %.1f / %.1f / %.1f | %.4f |\n"
		   "| host as lagvisor | %zu | %.1f / %.1f / %.1f | %.4f |\n\n- %s: identical runs\n\n",
		ph.sis_scan, P, l.samples, l.p50_us, l.p99_us, l.p999_us, l.hog_share, h.samples,
		h.p50_us, h.p99_us, h.p999_us, h.hog_share, same ? "PASS" : "FAIL");
	return same ? 0 : 1;
}
