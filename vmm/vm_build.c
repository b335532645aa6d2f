/*
 * The build sequence both binaries share: `lagvisor run` (vmm/main.c) and
 * lagvisor-qemu (vmm/qemu/front_machines.c) turn a parsed config into a
 * VM ready for vm_run the same way, so they fail the same way too.
 *
 * The order decides which failures are bad input and which are the
 * host's: the config and the files are checked first, and the kernel is
 * loaded into guest RAM before /dev/kvm is opened, so that a file that is
 * not a kernel is reported the same on a host without KVM. Only then is
 * the vCPU count checked again, against KVM's own limit.
 */
#include "vmm/vm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int vm_build(struct vm *vm, const struct vm_config *cfg, bool *bad_input,
	     char *err, size_t errlen)
{
	struct host_limits limits = { 0 };
	int r;

	*bad_input = true;
	config_read_host_mem(&limits);
	r = config_validate(cfg, &limits, err, errlen);
	if (!r)
		r = config_check_files(cfg, err, errlen);
	if (r)
		return r;
	*bad_input = false;
	r = vm_init(vm, cfg);
	if (r) {
		snprintf(err, errlen, "cannot set up the VM: %s", strerror(-r));
		return r;
	}
	r = vm_map_memory(vm, err, errlen);
	if (!r) {
		r = vm_load_kernel(vm, err, errlen);
		*bad_input = r != 0;
	}
	if (!r)
		r = kvm_open(&vm->kvm, cfg->irqchip, err, errlen);
	if (!r) {
		limits.max_cpus = vm->kvm.max_cpus;
		r = config_validate(cfg, &limits, err, errlen);
		*bad_input = r != 0;
	}
	if (!r)
		r = vm_create(vm, err, errlen);
	if (r) {
		if (!err[0])
			snprintf(err, errlen, "unknown error");
		vm_destroy(vm);
	}
	return r;
}
