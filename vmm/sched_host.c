#include "vmm/sched_host.h"

#include "common/clock.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

int sched_host_cpus(const struct sched_options *o, struct host_cpu_list *out,
		    char *err, size_t errlen)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set)) {
		snprintf(err, errlen, "cannot read this process's CPU affinity: %s",
			 strerror(errno));
		return -errno;
	}
	memset(out, 0, sizeof(*out));
	for (unsigned c = 0; c < SCHED_OPTS_MAX_HOST_CPUS && c < CPU_SETSIZE; c++) {
		bool mine = CPU_ISSET(c, &set);

		if (o->host_cpus_set && host_cpu_list_test(&o->host_cpus, c)) {
			if (!mine) {
				snprintf(err, errlen, "--host-cpus: CPU %u is not one this "
					 "process may run on (see taskset/cgroup cpuset)", c);
				return -EINVAL;
			}
			out->bits[c / 64] |= 1ull << (c % 64);
		} else if (!o->host_cpus_set && mine) {
			out->bits[c / 64] |= 1ull << (c % 64);
		}
	}
	if (!host_cpu_list_count(out)) {
		snprintf(err, errlen, "no host CPU for the scheduling domain");
		return -EINVAL;
	}
	return 0;
}

int sched_host_open(struct sched_host *sh, const struct sched_options *o, unsigned nr_vcpus,
		    int kick_signal, char *err, size_t errlen)
{
	struct sched_domain_params dp = { .features = o->features };
	struct host_cpu_list cpus;
	struct sched_shm_params p = {
		.name = o->domain, .host_cpus = &cpus, .dom_params = &dp,
		.max_entities = nr_vcpus > SCHED_SHM_DEFAULT_ENTITIES ? nr_vcpus
								      : SCHED_SHM_DEFAULT_ENTITIES,
	};
	int r;

	memset(sh, 0, sizeof(*sh));
	r = sched_host_cpus(o, &cpus, err, errlen);
	if (r)
		return r;
	r = sched_shm_open(&sh->shm, &p, err, errlen);
	if (r)
		return r;
	sh->shm_ok = true;
	r = sched_bind_init(&sh->bind, &sh->shm, kick_signal);
	if (r) {
		snprintf(err, errlen, "scheduler binding: %s", strerror(-r));
		goto fail;
	}
	sh->bind_ok = true;
	if (o->domain)
		log_info("scheduling domain %s (%s): %s, %u member(s) now", o->domain,
			 sh->shm.path, sh->shm.created ? "created" : "joined",
			 sched_shm_nr_members(&sh->shm));
	if (!sh->shm.created && o->features) {
		r = sched_features_parse(sh->shm.dom, o->features);
		if (r) {
			snprintf(err, errlen, "--sched-feature '%s': %s", o->features, strerror(-r));
			goto fail;
		}
		log_info("%s: --sched-feature %s applied to the shared domain", sh->shm.path,
			 o->features);
	}
	if (o->trace_path) {
		r = trace_writer_open(&sh->trace, o->trace_path, sh->shm.hdr->nr_pcpus, &sh->shm,
				      err, errlen);
		if (r)
			goto fail;
		sh->trace_ok = true;
		sh->bind.trace = trace_writer_event;
		sh->bind.trace_arg = &sh->trace;
	}
	sh->ep.nice = o->nice_set ? o->nice : 0;
	sh->ep.weight = o->weight;
	sh->ep.idle_class = o->idle;
	sh->ep.slice_ns = o->slice_ns ? o->slice_ns :
			  o->latency_low ? SCHED_OPTS_LOW_LATENCY_SLICE_NS : 0;
	return 0;
fail:
	sched_host_close(sh);
	return r;
}

int sched_host_vcpu_add(struct sched_host *sh, struct sched_bind_vcpu *v, unsigned index,
			void (*kick)(void *opaque), void *opaque)
{
	struct sched_entity_params ep = sh->ep;

	/* spread the first wakes' "previous pCPU" over the domain */
	ep.create_pcpu = index % sh->shm.hdr->nr_pcpus;
	return sched_bind_vcpu_add(&sh->bind, v, &ep, index, kick, opaque);
}

void sched_host_close(struct sched_host *sh)
{
	if (sh->trace_ok) {
		sh->bind.trace = NULL;
		if (trace_writer_close(&sh->trace, clock_now_ns()))
			log_warn("--trace: the trace file may be incomplete (write error)");
	}
	sh->trace_ok = false;
	if (sh->bind_ok)
		sched_bind_destroy(&sh->bind);
	sh->bind_ok = false;
	if (sh->shm_ok)
		sched_shm_close(&sh->shm);
	sh->shm_ok = false;
}
