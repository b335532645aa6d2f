/* The machines behind the front: lagvisor's VM, and the stand-in (no KVM,
 * for tests); front.c picks one per launch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "vmm/qemu/front.h"
#include "vmm/x86/vm_reset.h"

/* vm_build, as lagvisor run does, with the console on the serial chardev. */
static int front_vm_build(struct front *f, struct vm_config *cfg)
{
	const struct qemu_chardev *chr = f->launch->serial ?
		qemu_launch_chardev(f->launch, f->launch->serial) : NULL;
	char err[512] = "";
	bool bad_input;

	/* stdio by hand gets lagvisor's own console (raw mode, Ctrl-A x). */
	if (chr && chr->kind == QEMU_CHR_STDIO)
		cfg->serial = SERIAL_STDIO;
	else
		cfg->serial = f->serial.out_fd >= 0 ? SERIAL_FD : SERIAL_NONE;
	cfg->serial_out_fd = f->serial.out_fd;
	cfg->serial_in_fd = f->serial.in_fd;
	if (vm_build(&f->vm, cfg, &bad_input, err, sizeof(err))) {
		log_error("%s", err);
		return bad_input ? EXIT_USAGE : EXIT_RUNTIME;
	}
	/* The VM's I/O thread reads the same signals: route them here. */
	f->vm.iothread.on_signal = front_on_signal;
	f->vm.iothread.sig_opaque = f;
	f->vm.guest_reset = front_guest_reset;
	f->vm.guest_reset_arg = f;
	return 0;
}

static int vm_run_(struct front *f)
{
	return vm_run(&f->vm);
}

static int vm_pause_(struct front *f)
{
	return vm_pause(&f->vm);
}

static void vm_resume_(struct front *f)
{
	vm_resume(&f->vm);
}

static void vm_stop_(struct front *f)
{
	vm_stop(&f->vm, 0);
}

static int vm_vcpu_tids_(struct front *f, int *tids, unsigned n, int timeout_ms)
{
	return vm_vcpu_tids(&f->vm, tids, n, timeout_ms);
}

static int vm_snapshot_(struct front *f)
{
	return vm_snapshot_take(&f->vm, FRONT_TID_WAIT_MS, &f->snap);
}

static int vm_reset_(struct front *f)
{
	char err[256] = "";
	int r = vm_reset(&f->vm, f->snap, err, sizeof(err));

	if (r)
		log_error("%s", err);
	return r;
}

static void vm_destroy_(struct front *f)
{
	vm_destroy(&f->vm);
	vm_snapshot_free(f->snap);
	f->snap = NULL;
}

const struct front_machine_ops front_vm_ops = {
	.build = front_vm_build,
	.run = vm_run_,
	.pause = vm_pause_,
	.resume = vm_resume_,
	.stop = vm_stop_,
	.vcpu_tids = vm_vcpu_tids_,
	.snapshot = vm_snapshot_,
	.reset = vm_reset_,
	.destroy = vm_destroy_,
};

static int standin_build(struct front *f, struct vm_config *cfg)
{
	int r = standin_create(&f->standin, cfg->nr_cpus, f->serial.out_fd);

	if (r) {
		log_error("stand-in machine: %s", strerror(-r));
		return EXIT_RUNTIME;
	}
	return 0;
}

static int standin_run_(struct front *f)
{
	return standin_run(&f->standin);
}

static int standin_pause_(struct front *f)
{
	standin_pause(&f->standin);
	return 0;
}

static void standin_resume_(struct front *f)
{
	standin_resume(&f->standin);
}

static void standin_stop_(struct front *f)
{
	standin_stop(&f->standin, 0);
}

static int standin_vcpu_tids_(struct front *f, int *tids, unsigned n, int timeout_ms)
{
	return standin_vcpu_tids(&f->standin, tids, n, timeout_ms);
}

static int standin_snapshot_(struct front *f)
{
	(void)f;
	return 0;
}

static int standin_reset_(struct front *f)
{
	standin_reset(&f->standin);
	return 0;
}

static void standin_destroy_(struct front *f)
{
	standin_destroy(&f->standin);
}

const struct front_machine_ops front_standin_ops = {
	.build = standin_build,
	.run = standin_run_,
	.pause = standin_pause_,
	.resume = standin_resume_,
	.stop = standin_stop_,
	.vcpu_tids = standin_vcpu_tids_,
	.snapshot = standin_snapshot_,
	.reset = standin_reset_,
	.destroy = standin_destroy_,
};

