#include "vmm/vm_weight.h"

#include <errno.h>

#include "common/clock.h"
#include "sched/sched.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

int vm_set_weight(struct vm *vm, uint32_t weight)
{
	int r = 0;

	if (weight < 1 || weight > SCHED_MAX_WEIGHT)
		return -EINVAL;
	if (!vm->sched_on)
		return -EOPNOTSUPP;
	/* Under the lock `stopping` cannot flip, so no vCPU thread has
	 * started to leave the domain: the entity ids are still ours (in a
	 * shared domain a freed id may go to another member's vCPU). */
	mutex_lock(&vm->lock);
	if (vm->stopping)
		r = -ESRCH;
	for (unsigned i = 0; !r && i < vm->nr_vcpus; i++)
		r = sched_set_weight(&vm->sched.bind.h, vm->vcpus[i].sb.id, weight,
				     clock_now_ns());
	if (!r)
		vm->sched.ep.weight = weight;
	mutex_unlock(&vm->lock);
	return r;
}
