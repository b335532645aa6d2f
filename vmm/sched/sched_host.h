/*
 * The lagvisor scheduler for one VM process, from its options: the domain
 * memory (private, or the shared --sched-domain file), the binding of its
 * vCPU threads, the --trace writer, and each vCPU's entity parameters
 * (--weight/--nice/--idle/--slice). vm.c owns one of these in eevdf mode.
 */
#ifndef LAGVISOR_VMM_SCHED_HOST_H
#define LAGVISOR_VMM_SCHED_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "vmm/sched/sched_bind.h"
#include "vmm/sched/sched_opts.h"
#include "vmm/sched/sched_shm.h"
#include "vmm/sched/trace.h"

struct sched_host {
	struct sched_shm shm;
	struct sched_bind bind;
	struct trace_writer trace;
	bool shm_ok, bind_ok, trace_ok;
	struct sched_entity_params ep; /* for every vCPU of this VM */
	struct sched_cpuset allowed;   /* default domain: ep.allowed, the pCPUs of
					* this VM's host CPUs */
	unsigned nr_allowed;
};

/*
 * The domain a VM joins: --sched-domain NAME; NULL for --sched-domain
 * private (a domain of its own, in private memory); else the user's
 * default domain "default-UID" (buf), which spans every online host CPU,
 * so that all of a user's VMs share one scheduler by default (the file is
 * 0600 like every domain: another user's VMs, e.g. libvirt's libvirt-qemu,
 * have their own, and lagvisor stat shows them all).
 */
const char *sched_host_domain_name(const struct sched_options *o, char *buf, size_t len);

/* The host CPUs for o: --host-cpus (each must be in the process's affinity)
 * or the affinity itself. 0 or -EINVAL with err. */
int sched_host_cpus(const struct sched_options *o, struct host_cpu_list *out,
		    char *err, size_t errlen);

/*
 * Set up for a VM of nr_vcpus. kick_signal: the vCPU kick signal (also the
 * slice timer's). A joiner's --sched-feature list is applied to the shared
 * domain (flags are per domain). 0 or -errno with one line in err.
 */
int sched_host_open(struct sched_host *sh, const struct sched_options *o, unsigned nr_vcpus,
		    int kick_signal, char *err, size_t errlen);

/* Register vCPU `index` (before its thread starts). */
int sched_host_vcpu_add(struct sched_host *sh, struct sched_bind_vcpu *v, unsigned index,
			void (*kick)(void *opaque), void *opaque);

/* After every vCPU thread called sched_bind_vcpu_exit: close the trace,
 * leave the domain. Safe after a failed or partial open. */
void sched_host_close(struct sched_host *sh);

#endif
