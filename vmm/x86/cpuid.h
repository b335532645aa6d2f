/*
 * The CPUID a vCPU sees: what KVM supports (KVM_GET_SUPPORTED_CPUID),
 * filtered to what lagvisor offers, as a pure function over entry arrays.
 */
#ifndef LAGVISOR_VMM_X86_CPUID_H
#define LAGVISOR_VMM_X86_CPUID_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>

#include "vmm/config.h"

struct x86_cpuid_params {
	unsigned apic_id;          /* = vCPU index = KVM vcpu id */
	unsigned nr_cpus;
	enum irqchip_mode irqchip;
	bool tsc_deadline;         /* offer the TSC-deadline timer (leaf 1 ECX[24]):
				    * KVM_CAP_TSC_DEADLINE_TIMER with KVM's LAPIC,
				    * always with lagvisor's */
	bool no_x2apic;            /* hide x2APIC (leaf 1 ECX[21]) */
};

/* Entries x86_cpuid_filter may add beyond its input (0xB, 0x1F, 0x4000000x). */
#define X86_CPUID_EXTRA 8

/* KVM paravirt features (leaf 0x40000001 EAX) offered in this irqchip mode. */
uint32_t x86_cpuid_kvm_features(enum irqchip_mode irqchip);

/*
 * out = in filtered for one vCPU:
 *  - leaf 1: hypervisor bit set; MONITOR, VMX and PDCM cleared; TSC-deadline
 *    as p->tsc_deadline says (KVM does not list it itself); x2APIC cleared
 *    when p->no_x2apic (either irqchip emulates it otherwise); EBX[31:24] =
 *    APIC ID, EBX[23:16] = nr_cpus, HTT set when nr_cpus > 1;
 *  - leaves 5 (MONITOR/MWAIT), 0xA (PMU), 0x8000000A (SVM) zeroed; leaf 7
 *    WAITPKG and 0x80000001 SVM cleared (no nested virtualization);
 *  - topology: one package, nr_cpus cores, one thread each. Leaf 0xB (and
 *    0x1F when KVM lists it) regenerated as SMT and core levels with the
 *    x2APIC ID; leaf 4 / 0x8000001D sharing counts and 0x80000008 /
 *    0x8000001E core fields made to agree;
 *  - leaves 0x40000000 ("KVMKVMKVM", max 0x40000001) and 0x40000001
 *    (x86_cpuid_kvm_features AND what KVM listed, if it listed the leaf).
 * Returns the number of entries written, or -E2BIG if max_out is too small
 * (nr_in + X86_CPUID_EXTRA is always enough), -EINVAL for bad params.
 */
int x86_cpuid_filter(const struct kvm_cpuid_entry2 *in, unsigned nr_in,
		     struct kvm_cpuid_entry2 *out, unsigned max_out,
		     const struct x86_cpuid_params *p);

#endif
