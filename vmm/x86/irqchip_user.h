/*
 * --irqchip user, the VM's side: no in-kernel irqchip; the APIC bus that
 * joins lagvisor's local APICs (one per vCPU, in struct vcpu_irq) and the
 * IOAPIC (MMIO at X86_IOAPIC_GPA, ID = nr_cpus as the MP table says), and
 * the KVM setup that sends the APIC's MSRs to userspace:
 *   KVM_CAP_X86_USER_SPACE_MSR (UNKNOWN | FILTER): x2APIC MSRs 0x800-0x8ff,
 *   which KVM does not know without its LAPIC, exit as UNKNOWN;
 *   an MSR filter denies IA32_APIC_BASE, IA32_TSC_DEADLINE and
 *   MSR_KVM_STEAL_TIME to the guest, so they exit as FILTER (host-initiated
 *   KVM_SET_MSRS still reaches KVM's copy of APIC_BASE, which its CPUID
 *   APIC bit follows).
 * Everything else about a vCPU's interrupts is in vcpu_irq.c.
 */
#ifndef LAGVISOR_VMM_IRQCHIP_USER_H
#define LAGVISOR_VMM_IRQCHIP_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/ioapic.h"
#include "devices/lapic.h"

#define MSR_KVM_STEAL_TIME_NEW 0x4b564d03u

struct vm;

struct irqchip_user {
	struct apic_bus bus;
	struct ioapic ioapic;
	bool ioapic_ok;
};

/*
 * After KVM_CREATE_VM, before devices and vCPUs: MSR exits and filter, the
 * bus and the IOAPIC on vm->mmio. 0 or -errno (message in err).
 */
int irqchip_user_init(struct vm *vm, char *err, size_t errlen);
void irqchip_user_destroy(struct vm *vm);

#endif
