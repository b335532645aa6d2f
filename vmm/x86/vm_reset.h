/*
 * A system reset that keeps the VM's vCPU threads (owner: libvirt helper).
 * libvirt records the vCPU thread IDs once, at start (query-cpus-fast),
 * pins them and moves them into cgroups; `virsh reboot` (powerdown, then
 * system_reset and cont) must not replace them. So a reset puts back the
 * state every vCPU and the in-kernel irqchip/PIT had before the guest first
 * ran, clears guest RAM and loads the kernel again, while the vCPU threads
 * stay parked (vm_pause). vCPU ioctls come from the resetting thread: KVM
 * serialises them per vCPU, and a parked thread is not in KVM_RUN.
 *
 * With --irqchip user the LAPICs and the IOAPIC are lagvisor's: a reset
 * puts them back to power-on through devices/ (vcpu_irq_reset), and each
 * vCPU thread, parked wherever it was (in the guest, halted, or waiting for
 * its SIPI), starts over when the VM resumes; the UART is reset too (the
 * RTC, battery-backed on a PC, keeps its time). Under --sched eevdf the
 * threads stay in the scheduler throughout, with their pinning.
 */
#ifndef LAGVISOR_VMM_VM_RESET_H
#define LAGVISOR_VMM_VM_RESET_H

#include <stddef.h>

struct vm;
struct vm_snapshot;

/*
 * Record the power-on state into *out (free with vm_snapshot_free). Call
 * while the VM is paused before any vCPU has entered the guest (vm_pause
 * before vm_run, QEMU's -S); waits up to timeout_ms for every vCPU thread
 * to finish its setup and park. 0, -ETIMEDOUT, -ENOMEM, or the
 * -errno of a KVM call (logged).
 */
int vm_snapshot_take(struct vm *vm, int timeout_ms, struct vm_snapshot **out);

/*
 * Reset to `s`: pause (if running), restore every vCPU and the irqchip
 * and PIT, clear RAM, load the kernel and boot structures again. The VM
 * is left paused: vm_resume runs it. 0, or -errno with one line in err.
 */
int vm_reset(struct vm *vm, const struct vm_snapshot *s, char *err, size_t errlen);

void vm_snapshot_free(struct vm_snapshot *s);

#endif
