/*
 * A vCPU's interrupts with --irqchip user: its local APIC, how interrupts
 * reach the thread, HLT, the LAPIC timer, INIT/SIPI and steal time.
 *
 * Notification. Whoever changes what a vCPU has to take (apic_bus kick,
 * a new timer deadline) calls vcpu_irq_notify after the change: it bumps
 * `gen` and looks at `mode`:
 *   IN_RUN  the thread is in, or about to enter, KVM_RUN: immediate_exit
 *           + VCPU_KICK_SIGNAL, so KVM_RUN returns and the interrupt is
 *           injected on the next entry;
 *   HALTED  the thread sleeps on the futex `gen` (timeout: its LAPIC
 *           timer deadline): FUTEX_WAKE;
 *   OUTSIDE it is handling an exit and will look before entering.
 * The thread publishes its mode before it looks at the LAPIC, the notifier
 * changes the LAPIC before it reads the mode (both sequentially
 * consistent), so one of them always sees the other: nothing is lost.
 * A running vCPU's timer deadline is a per-thread POSIX timer
 * (CLOCK_MONOTONIC, SIGEV_THREAD_ID) that sends the kick signal.
 */
#ifndef LAGVISOR_VMM_VCPU_IRQ_H
#define LAGVISOR_VMM_VCPU_IRQ_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "devices/lapic.h"
#include "vmm/halt_poll.h"
#include "vmm/x86/pv_eoi.h"
#include "vmm/x86/steal_time.h"

struct vcpu;

enum vcpu_mode { VCPU_OUTSIDE, VCPU_IN_RUN, VCPU_HALTED };

struct vcpu_irq {
	struct lapic lapic;
	bool lapic_ok;
	pid_t tid;                 /* the vCPU thread, 0 before it runs */
	uint32_t gen;              /* futex word, bumped by every notify */
	int mode;                  /* enum vcpu_mode, atomic */
	uint64_t deadline_ns;      /* LAPIC timer, LAPIC_NO_DEADLINE; atomic */
	bool reset_pending;        /* vcpu_irq_reset done, the thread has not
	                            * looked yet; atomic */

	/* Owned by the vCPU thread. */
	timer_t host_timer;
	bool host_timer_ok;
	uint64_t host_timer_ns;    /* what host_timer is armed for */
	bool wait_sipi;            /* reset, not running until a SIPI */
	bool entered;              /* has been in KVM_RUN since creation */
	struct kvm_sregs reset_sregs;
	struct kvm_regs reset_regs;
	uint64_t tsc_khz;          /* KVM_GET_TSC_KHZ */
	int tsc_is_host;           /* native guest, rdtsc = host TSC: 1 yes,
	                            * -1 no, 0 not checked (vcpu_irq_exits.c) */
	uint32_t tsc_host_uses;    /* deadlines since the last check */
	uint8_t cr8;               /* what was given to KVM in run->cr8 */
	const volatile uint8_t *vif; /* native vCPU: its VIF page (x86/pvm.h) */
	bool nmi_in_kvm;           /* KVM_NMI given, not yet seen delivered */
	struct steal_time steal;
	struct pv_eoi pv_eoi;
	struct halt_poll poll;
	uint64_t nr_injected, nr_nmi, nr_halts, nr_kicks;
};

/* vcpu_create: the LAPIC on vm->irqchip.bus. 0 or -errno (message). */
int vcpu_irq_create(struct vcpu *v, char *err, size_t errlen);
/* In the vCPU thread after x86_vcpu_init: host timer, TSC rate, reset
 * state (for a later INIT), steal time. 0 or -errno (logged). */
int vcpu_irq_thread_init(struct vcpu *v);
void vcpu_irq_destroy(struct vcpu *v);

/*
 * System reset of a paused VM (vm_reset; the thread is parked): the LAPIC
 * back to power-on, then the thread, when it runs again, drops what it
 * kept of the old guest (steal-time area, injection state) and starts
 * over: the BSP at the regs vm_reset restored, an AP waiting for its SIPI,
 * even if it was halted or waiting for a SIPI when the VM paused.
 */
void vcpu_irq_reset(struct vcpu *v);

/* Something changed for v (see above). Any thread, any lock held but v's
 * own futex (there is none): never takes an irqchip lock. */
void vcpu_irq_notify(struct vcpu *v);
/* apic_bus arm_timer: record the deadline, tell the thread. */
void vcpu_irq_set_deadline(struct vcpu *v, uint64_t deadline_ns);

/* The exit loop's hooks (vCPU thread). Return VCPU_CONTINUE or VCPU_STOP. */
int vcpu_irq_before_run(struct vcpu *v);
void vcpu_irq_after_run(struct vcpu *v);
int vcpu_irq_exit_hlt(struct vcpu *v);
int vcpu_irq_exit_msr(struct vcpu *v);
/* KVM_EXIT_MMIO: true when the access was the LAPIC page (handled). */
bool vcpu_irq_exit_mmio(struct vcpu *v);

#endif
