/*
 * One virtual machine: KVM handles, guest memory, buses and devices, the
 * vCPU threads and how the VM stops. The thread that calls vm_run creates
 * the vCPU threads and then only waits: for the first vm_stop, then for
 * every vCPU thread to leave KVM_RUN and be joined.
 *
 * Lifecycle: vm_init -> vm_map_memory -> vm_load_kernel -> kvm_open(&vm->kvm)
 * -> vm_create -> vm_run -> vm_destroy. vm_destroy is safe after any prefix
 * of that sequence. vm_build runs the steps up to vm_create, with the
 * config checks around them.
 */
#ifndef LAGVISOR_VMM_VM_H
#define LAGVISOR_VMM_VM_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/mutex.h"
#include "devices/bus.h"
#include "vmm/config.h"
#include "vmm/console.h"
#include "vmm/guest_mem.h"
#include "vmm/io_policy.h"
#include "vmm/iothread.h"
#include "vmm/kvm.h"
#include "vmm/sched/sched_host.h"
#include "vmm/vm_devices.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/irqchip_user.h"

struct vcpu;

struct vm {
	bool sched_on;
	struct sched_host sched;
	const struct vm_config *cfg;
	struct kvm kvm;                /* fd -1 until kvm_open */
	int fd;                        /* VM fd, -1 before vm_create */
	struct guest_mem mem;
	struct x86_boot_info boot;
	struct bus pio, mmio;
	struct io_policy io;
	struct vm_devices devices;
	struct irqchip_user irqchip;   /* --irqchip user only */
	struct console console;
	struct iothread iothread;
	unsigned nr_vcpus;             /* vCPUs created (fd + kvm_run mapped) */
	uint32_t nr_stuck;             /* --irqchip user: vCPUs only NMI/INIT/SIPI can
	                                * move (HLT with IF=0, wait for SIPI) */
	struct vcpu *vcpus;            /* cfg->nr_cpus entries */
	bool leaked;                   /* a vCPU thread never stopped */
	cpu_set_t start_cpus;          /* the host CPUs lagvisor started with */
	bool start_cpus_ok;
	/* A guest's reset request (port 0xcf9, the i8042), from its vCPU
	 * thread: must not wait for that vCPU. NULL: the VM ends, as a
	 * firecracker microVM does (lagvisor run); the QEMU front resets it
	 * in place, as QEMU does. */
	void (*guest_reset)(void *arg);
	void *guest_reset_arg;
	/* The sandbox vm_run's thread enters once every vCPU runs
	 * (vmm/seccomp.h): lagvisor run's main; 0 (none) for the QEMU front,
	 * whose main thread has its own. */
	int seccomp_main;

	struct mutex lock;             /* guards the fields below */
	pthread_cond_t cond;           /* signalled whenever one changes */
	unsigned nr_ready;             /* vCPU threads done with their setup */
	bool go;                       /* every vCPU is ready: enter the guest */
	bool stopping;                 /* the VM is ending (first vm_stop);
	                                * written under lock, read atomically */
	bool paused;                   /* vm_pause: vCPUs park before KVM_RUN;
	                                * written under lock, read atomically */
	unsigned nr_parked;            /* vCPU threads parked now */
	int exit_code;                 /* set by the first vm_stop */
};

/*
 * Check `cfg` against this host (memory, files, KVM's vCPU limit) and
 * build the VM up to vm_create, ready for vm_run (vm_build.c says why in
 * this order). Returns 0, or -errno with one line in err, the VM destroyed
 * (nothing to undo) and *bad_input saying whether the cause was the input
 * (options, files, a file that is not a kernel) rather than the host.
 */
int vm_build(struct vm *vm, const struct vm_config *cfg, bool *bad_input,
	     char *err, size_t errlen);

/* Empty VM for `cfg` (kept by pointer). Returns 0 or -errno. */
int vm_init(struct vm *vm, const struct vm_config *cfg);

/* Guest RAM per x86_mem_layout, mmap'd. 0 or -errno (message in err). */
int vm_map_memory(struct vm *vm, char *err, size_t errlen);

/* x86_load_kernel into the mapped RAM; its message on failure. */
int vm_load_kernel(struct vm *vm, char *err, size_t errlen);

/*
 * After kvm_open: create the KVM VM, register memory, x86_vm_init, the
 * devices and console, and every vCPU (fd and kvm_run; the threads start
 * in vm_run). 0 or -errno (message in err).
 */
int vm_create(struct vm *vm, char *err, size_t errlen);

/*
 * Run until the VM stops; returns the process exit code. Puts the console
 * in raw mode for the duration and restores it before returning.
 */
int vm_run(struct vm *vm);

/*
 * Ask the VM to stop with `exit_code` (the first call wins; later ones
 * are ignored). Safe from any thread, including vCPU threads inside an
 * exit handler and device callbacks; never blocks on a vCPU.
 */
void vm_stop(struct vm *vm, int exit_code);

/* The guest asked for a reset (vCPU thread): vm->guest_reset, or the VM
 * stops with status 0. Returns whether the VM goes on. */
bool vm_guest_reset(struct vm *vm);
bool vm_stopping(struct vm *vm);

/*
 * Called by each vCPU thread once its setup is done (ok = false: it
 * failed and the VM stops). Returns true when every vCPU is ready and the
 * guest may run, false when the VM is stopping instead.
 */
bool vm_vcpu_ready(struct vm *vm, bool ok);

/*
 * Pause: every vCPU thread leaves KVM_RUN and parks until vm_resume (the
 * threads and their IDs stay). Before vm_run it only sets the flag, so the
 * vCPUs park before their first KVM_RUN (QEMU's -S). Waits until every
 * running vCPU is parked or the VM stops; 0, or -ETIMEDOUT if a vCPU does
 * not park within VM_PAUSE_TIMEOUT_MS (it stays asked to). Any thread
 * except a vCPU thread.
 */
int vm_pause(struct vm *vm);
void vm_resume(struct vm *vm);
bool vm_pause_requested(struct vm *vm);

/* For vCPU threads: park while paused (returns when resumed or stopping). */
void vm_vcpu_park(struct vm *vm);
/* For vCPU threads that wait for the resume elsewhere (in the scheduler):
 * count themselves parked (+1) and unparked (-1) for vm_pause. */
void vm_vcpu_count_parked(struct vm *vm, int delta);

/* For vCPU threads: publish the thread's host ID. */
void vm_vcpu_set_tid(struct vm *vm, struct vcpu *v, pid_t tid);

/*
 * Host thread IDs of vCPUs 0..n-1 (n <= cfg->nr_cpus), waiting up to
 * timeout_ms for threads that vm_run is still starting. 0, -ETIMEDOUT,
 * or -EINVAL (n too large).
 */
int vm_vcpu_tids(struct vm *vm, int *tids, unsigned n, int timeout_ms);

/* Raise/lower an interrupt line through KVM_IRQ_LINE (irq_line.set);
 * with --irqchip user, devices use ioapic_irq_line_set instead. */
void vm_irq_set_kvm(void *opaque, unsigned gsi, int level);

void vm_destroy(struct vm *vm);

#endif
