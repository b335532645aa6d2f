/*
 * A vCPU: its KVM fd, the shared kvm_run page, and the host thread that
 * owns it for its whole life (every vCPU ioctl is made from that thread).
 *
 * Kicking: another thread sets run->immediate_exit and sends VCPU_KICK_SIGNAL.
 * The signal is blocked in every thread except inside KVM_RUN (KVM swaps in
 * the mask given with KVM_SET_SIGNAL_MASK for the duration of the ioctl),
 * so a kick either interrupts KVM_RUN, or stays pending and makes the next
 * KVM_RUN return EINTR at once; immediate_exit covers the window between
 * the thread's last check and the ioctl. A no-op handler is installed so
 * that the signal, unblocked inside KVM_RUN, never kills the process.
 */
#ifndef LAGVISOR_VMM_VCPU_H
#define LAGVISOR_VMM_VCPU_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "vmm/sched/sched_bind.h"
#include <sys/types.h>

#include "vmm/kvm_stats.h"
#include "vmm/x86/vcpu_irq.h"

#define VCPU_KICK_SIGNAL SIGUSR1

/* What an exit handler tells the loop. */
enum { VCPU_CONTINUE = 0, VCPU_STOP = 1 };

struct vm;

struct vcpu {
	struct vm *vm;
	unsigned index;            /* KVM vcpu id and APIC ID */
	int fd;                    /* -1 when not created */
	struct kvm_run *run;       /* NULL when not mapped */
	size_t run_bytes;
	pthread_t thread;
	pid_t tid;                 /* host thread ID, 0 until the thread runs
	                            * (written under vm->lock) */
	bool started;              /* thread created */
	bool joined;
	bool user_irqchip;         /* --irqchip user: `irq` is in use */
	struct vcpu_irq irq;
	struct kvm_stats kstats;   /* KVM's counters of this vCPU (-v report) */
	uint64_t nr_exits_seen;    /* exits handled by the loop (publishing cadence) */
	bool sched_on;             /* --sched eevdf: sb is in use */
	struct sched_bind_vcpu sb;
};

/* vCPU thread, VM paused: wait for vm_resume (or the stop). Under --sched
 * eevdf the vCPU blocks in the scheduler meanwhile, so a paused VM holds
 * no host CPU another member of its domain could use. */
void vcpu_pause_park(struct vcpu *v);

/* sched_bind's kick: immediate_exit + the kick signal. */
void vcpu_sched_kick(void *opaque);

/* KVM_CREATE_VCPU(index) and map its kvm_run. 0 or -errno (message). */
int vcpu_create(struct vcpu *v, struct vm *vm, unsigned index,
		char *err, size_t errlen);

/* Start the thread: x86_vcpu_init, wait for all vCPUs, run the exit loop. */
int vcpu_start(struct vcpu *v);

/* Make the thread leave KVM_RUN or a HLT wait (see above), so that it
 * sees vm_stopping. Any thread; idempotent. */
void vcpu_kick(struct vcpu *v);

/* Unmap and close; the thread must have been joined (or never started). */
void vcpu_destroy(struct vcpu *v);

/* Install the no-op handler for VCPU_KICK_SIGNAL (process-wide). */
int vcpu_install_kick_handler(void);

#endif
