/*
 * In-kernel irqchip wiring as pure data: the GSI routing table and the
 * boot CPU's LINT pins, matching the MP table (mptable.c).
 */
#ifndef LAGVISOR_VMM_X86_IRQCHIP_H
#define LAGVISOR_VMM_X86_IRQCHIP_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/kvm.h>

#define X86_IOAPIC_PINS       24
/* PIC master 0-7 without the cascade (7), slave 8-15 (8), IOAPIC 0-23 without GSI 2 (23). */
#define X86_GSI_ROUTES        38

#define X86_APIC_LVT0         0x350
#define X86_APIC_LVT1         0x360
#define X86_APIC_DM_MASK      0x700
#define X86_APIC_DM_NMI       0x400
#define X86_APIC_DM_EXTINT    0x700

/*
 * Fill e[X86_GSI_ROUTES]: GSI n -> PIC pin n (master 0-7 except the
 * cascade 2, slave 8-15) and -> IOAPIC pin n, except GSI 0 (the PIT) ->
 * IOAPIC pin 2, as the MP table says; GSI 2 has no route.
 */
void x86_gsi_routes_build(struct kvm_irq_routing_entry *e);

/* LINT0 = ExtINT (8259 virtual wire), LINT1 = NMI; mask bits untouched. */
void x86_lapic_set_lints(uint8_t regs[KVM_APIC_REG_SIZE]);

/*
 * Whether KVM delivers an NMI on the next entry: one is being injected
 * (nmi.injected), or one is pending and not blocked by an NMI handler in
 * progress (nmi.pending && !nmi.masked). --irqchip user hands NMIs to KVM
 * with KVM_NMI, which queues them, and asks this
 *  - before KVM_INTERRUPT: that marks the vector as already injected, and
 *    KVM re-injects an already-injected event before it looks at new
 *    ones, so the vector would be delivered before the queued NMI (a guest
 *    that sends NMIs and then a fixed IPI "to make sure the NMIs arrived",
 *    kvm-unit-tests apic "multiple nmi", ran the IPI's handler first). The
 *    vector waits for the interrupt window instead. A pending NMI blocked
 *    by a handler in progress does not hold it back: the CPU takes
 *    maskable interrupts inside an NMI handler that sets IF, and waiting
 *    there would spin on window exits that never see the NMI go;
 *  - on a HLT exit: an NMI ends HLT, so the vCPU must not sleep on one
 *    KVM holds.
 */
bool x86_nmi_due(const struct kvm_vcpu_events *ev);
/* Whether KVM still holds an NMI that KVM_NMI gave it. */
bool x86_nmi_in_kvm(const struct kvm_vcpu_events *ev);

/*
 * Whether the guest takes a maskable interrupt on the next entry, as the
 * last exit left it. Ordinarily kvm_run says: IF set, no interrupt shadow,
 * nothing queued. A native vCPU on a PVM backend (x86/pvm.h) has its
 * interrupt flag in its VIF page (byte 0, `vif`), and there kvm_run's
 * if_flag was seen to disagree with it in both directions; the page is the
 * guest's own word, read while the vCPU is outside KVM_RUN. KVM still
 * clears ready_for_interrupt_injection while a vector it was given is
 * queued: a KVM_INTERRUPT then replaces that vector (ipi-storm lost IPIs
 * and hung without this check). vif NULL: not native.
 */
bool x86_irq_allowed(const struct kvm_run *run, const volatile uint8_t *vif);
/* The interrupt flag alone (HLT with IF = 0 waits only for NMI/INIT/SIPI). */
bool x86_irq_flag(const struct kvm_run *run, const volatile uint8_t *vif);

#endif
