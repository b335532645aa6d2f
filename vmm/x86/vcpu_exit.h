/*
 * The x86 side of a vCPU's exits: the arch hook of the generic run loop
 * (vmm/vcpu.c). The loop handles what every architecture has (port and
 * MMIO accesses, system events, entry failures, internal errors) and hands
 * every other exit reason to x86_vcpu_handle_exit, as kvmtool's
 * kvm_cpu__handle_exit does: HLT and MSR exits (--irqchip user, vcpu_irq.h),
 * the interrupt window and TPR exits.
 */
#ifndef LAGVISOR_VMM_X86_VCPU_EXIT_H
#define LAGVISOR_VMM_X86_VCPU_EXIT_H

#include <stdint.h>

#include "vmm/exit_report.h"

struct vcpu;

/* x86_vcpu_handle_exit's answer for an exit reason that is not x86's:
 * the generic loop reports it as unhandled. */
#define X86_EXIT_UNHANDLED (-1)

/* On the vCPU's thread, after KVM_RUN returned with an exit reason the
 * generic loop does not handle: VCPU_CONTINUE, VCPU_STOP, or
 * X86_EXIT_UNHANDLED. */
int x86_vcpu_handle_exit(struct vcpu *v);

/*
 * Instruction bytes at RIP from guest memory, for an emulation-failure
 * report: the linear address (CS base + RIP outside 64-bit mode)
 * translated page by page with KVM_TRANSLATE, since the 15 bytes may
 * straddle two pages. Returns how many were read.
 */
unsigned x86_vcpu_read_insn(struct vcpu *v, uint64_t rip,
			    uint8_t out[X86_MAX_INSN_BYTES]);

#endif
