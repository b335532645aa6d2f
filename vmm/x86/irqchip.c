/* In-kernel irqchip wiring (see irqchip.h). */
#include <string.h>

#include "vmm/x86/bytes.h"
#include "vmm/x86/irqchip.h"

static struct kvm_irq_routing_entry route(uint32_t gsi, uint32_t chip, uint32_t pin)
{
	struct kvm_irq_routing_entry e;

	memset(&e, 0, sizeof(e));
	e.gsi = gsi;
	e.type = KVM_IRQ_ROUTING_IRQCHIP;
	e.u.irqchip.irqchip = chip;
	e.u.irqchip.pin = pin;
	return e;
}

void x86_gsi_routes_build(struct kvm_irq_routing_entry *e)
{
	unsigned n = 0;

	for (uint32_t gsi = 0; gsi < 16; gsi++) {
		if (gsi == 2)
			continue;
		e[n++] = route(gsi, gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE,
			       gsi & 7);
	}
	for (uint32_t gsi = 0; gsi < X86_IOAPIC_PINS; gsi++) {
		if (gsi == 2)
			continue;
		e[n++] = route(gsi, KVM_IRQCHIP_IOAPIC, gsi == 0 ? 2 : gsi);
	}
}

void x86_lapic_set_lints(uint8_t regs[KVM_APIC_REG_SIZE])
{
	uint8_t *lvt0 = regs + X86_APIC_LVT0, *lvt1 = regs + X86_APIC_LVT1;

	put_le32(lvt0, (get_le32(lvt0) & ~X86_APIC_DM_MASK) | X86_APIC_DM_EXTINT);
	put_le32(lvt1, (get_le32(lvt1) & ~X86_APIC_DM_MASK) | X86_APIC_DM_NMI);
}

bool x86_nmi_due(const struct kvm_vcpu_events *ev)
{
	return ev->nmi.injected || (ev->nmi.pending && !ev->nmi.masked);
}

bool x86_nmi_in_kvm(const struct kvm_vcpu_events *ev)
{
	return ev->nmi.injected || ev->nmi.pending;
}

bool x86_irq_flag(const struct kvm_run *run, const volatile uint8_t *vif)
{
	return vif ? __atomic_load_n(vif, __ATOMIC_ACQUIRE) != 0 : run->if_flag != 0;
}

bool x86_irq_allowed(const struct kvm_run *run, const volatile uint8_t *vif)
{
	if (vif)
		return run->ready_for_interrupt_injection && x86_irq_flag(run, vif);
	return run->ready_for_interrupt_injection && run->if_flag;
}
