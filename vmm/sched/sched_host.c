#include "vmm/sched/sched_host.h"

#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

const char *sched_host_domain_name(const struct sched_options *o, char *buf, size_t len)
{
	if (o->domain)
		return o->domain;
	if (o->domain_private)
		return NULL;
	snprintf(buf, len, SCHED_SHM_DEFAULT_PREFIX "%u", (unsigned)geteuid());
	return buf;
}

/* Every host CPU that is online: what the default domain covers, the same
 * for every member whatever its own affinity. */
static int online_cpus(struct host_cpu_list *out)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return sched_opts_parse_cpulist(buf, out);
}

/*
 * The default domain spans the host's CPUs and this VM's vCPUs may run on
 * those of its own (--host-cpus within the process's affinity, which
 * libvirt's cpuset sets): the allowed set of each entity, in pCPU numbers.
 */
static void narrow_to(struct sched_host *sh, const struct host_cpu_list *mine)
{
	sched_cpuset_zero(&sh->allowed);
	sh->nr_allowed = 0;
	for (unsigned p = 0; p < sh->shm.hdr->nr_pcpus; p++)
		if (host_cpu_list_test(mine, (unsigned)sh->shm.pcpus[p].host_cpu)) {
			sched_cpuset_set(&sh->allowed, p);
			sh->nr_allowed++;
		}
	sh->ep.allowed = &sh->allowed;
}

int sched_host_open(struct sched_host *sh, const struct sched_options *o, unsigned nr_vcpus,
		    int kick_signal, char *err, size_t errlen)
{
	struct sched_domain_params dp = { .features = o->features };
	struct host_cpu_list cpus, mine;
	char name[64];
	struct sched_shm_params p = {
		.name = sched_host_domain_name(o, name, sizeof(name)), .host_cpus = &cpus,
		.dom_params = &dp, .vm_name = o->vm_name,
		.max_entities = nr_vcpus > SCHED_SHM_DEFAULT_ENTITIES ? nr_vcpus
								      : SCHED_SHM_DEFAULT_ENTITIES,
	};
	bool by_default = !o->domain && !o->domain_private;
	int r;

	memset(sh, 0, sizeof(*sh));
	r = sched_host_cpus(o, &mine, err, errlen);
	if (r)
		return r;
	cpus = mine;
	if (by_default && online_cpus(&cpus)) {
		snprintf(err, errlen, "the default scheduling domain: cannot read the host's "
			 "online CPUs (/sys/devices/system/cpu/online); use --sched-domain private");
		return -ENOENT;
	}
	r = sched_shm_open(&sh->shm, &p, err, errlen);
	if (r)
		return r;
	sh->shm_ok = true;
	if (by_default)
		narrow_to(sh, &mine);
	r = sched_bind_init(&sh->bind, &sh->shm, kick_signal);
	if (r) {
		snprintf(err, errlen, "scheduler binding: %s", strerror(-r));
		goto fail;
	}
	sh->bind_ok = true;
	if (p.name)
		log_info("scheduling domain %s (%s): %s, %u member(s) now", p.name,
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

	/* spread the first wakes' "previous pCPU" over the pCPUs it may use */
	ep.create_pcpu = index % sh->shm.hdr->nr_pcpus;
	if (ep.allowed && sh->nr_allowed) {
		unsigned k = index % sh->nr_allowed;

		for (unsigned p = 0; p < sh->shm.hdr->nr_pcpus; p++)
			if (sched_cpuset_test(&sh->allowed, p) && k-- == 0) {
				ep.create_pcpu = p;
				break;
			}
	}
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
