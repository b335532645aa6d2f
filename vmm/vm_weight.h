/*
 * A running VM's scheduler weight changed from outside: libvirt's
 * <cputune><shares> through the domain cgroup, which `virsh schedinfo
 * --set cpu_shares=N --live` rewrites while the VM runs.
 */
#ifndef LAGVISOR_VMM_VM_WEIGHT_H
#define LAGVISOR_VMM_VM_WEIGHT_H

#include <stdint.h>

struct vm;

/*
 * Every vCPU entity of the VM takes `weight` (1..SCHED_MAX_WEIGHT) now,
 * lag kept (sched_set_weight); an idle-class vCPU keeps its idle weight
 * and takes this one when it leaves the class. Any thread; takes the VM's
 * lock, then the scheduler's. 0, -EINVAL for a weight out of range,
 * -EOPNOTSUPP under --sched host (the host kernel weighs the threads),
 * -ESRCH when the VM is stopping (its entities are going away).
 */
int vm_set_weight(struct vm *vm, uint32_t weight);

#endif
