/*
 * What a vCPU thread publishes in its domain slot for lagvisor stat beside
 * the scheduler's own accounting (sched_bind.c): KVM's counters.
 */
#include "vmm/sched/sched_bind.h"
#include "vmm/sched/sched_bind_internal.h"

void sched_bind_vcpu_publish_kvm(struct sched_bind_vcpu *v, uint64_t exits, uint64_t emulations)
{
	struct sched_shm_vcpu *vs = bind_vcpu(v->b, v->id);

	__atomic_store_n(&vs->kvm_exits, exits, __ATOMIC_RELAXED);
	__atomic_store_n(&vs->kvm_emulations, emulations, __ATOMIC_RELAXED);
}
