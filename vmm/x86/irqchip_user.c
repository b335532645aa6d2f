/* --irqchip user: VM-wide part (see irqchip_user.h). */
#include "vmm/x86/irqchip_user.h"

#include "common/clock.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

static struct vcpu *bus_vcpu(struct vm *vm, unsigned index)
{
	/* vcpus[] is complete before any thread that can send runs. */
	if (!vm->vcpus || index >= vm->nr_vcpus)
		return NULL;
	return &vm->vcpus[index];
}

static void bus_kick(void *opaque, unsigned index)
{
	struct vcpu *v = bus_vcpu(opaque, index);

	if (v)
		vcpu_irq_notify(v);
}

static void bus_arm_timer(void *opaque, unsigned index, uint64_t deadline_ns)
{
	struct vcpu *v = bus_vcpu(opaque, index);

	if (v)
		vcpu_irq_set_deadline(v, deadline_ns);
}

static uint64_t bus_now_ns(void *opaque)
{
	(void)opaque;
	return clock_now_ns();
}

static const struct apic_bus_ops irqchip_bus_ops = {
	.kick = bus_kick,
	.arm_timer = bus_arm_timer,
	.now_ns = bus_now_ns,
};

/* MSRs KVM would handle (or ignore) itself that lagvisor's APIC and PV
 * code own. A clear bit in a range's bitmap denies the access to the
 * guest, which then exits with KVM_MSR_EXIT_REASON_FILTER. The x2APIC
 * range cannot be listed: KVM never filters 0x800-0x8ff. Without its LAPIC
 * an SVM/VMX KVM fails every access there (kvm_x2apic_msr_read/write
 * return 1, the #GP path), so the x2APIC reaches lagvisor as an INVAL
 * exit, which is why INVAL is asked for too; a PVM KVM reports the same
 * accesses as UNKNOWN. The price: every MSR access KVM would #GP comes out
 * first, and goes back as the same #GP (vcpu_irq_exit_msr). */
static const uint32_t filtered_msrs[] = {
	MSR_IA32_APIC_BASE, MSR_IA32_TSC_DEADLINE, MSR_KVM_STEAL_TIME_NEW, MSR_KVM_PV_EOI_EN,
};

static int set_msr_exits(int vm_fd, char *err, size_t errlen)
{
	static uint8_t deny[1];         /* all bits 0: deny */
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args = { KVM_MSR_EXIT_REASON_INVAL | KVM_MSR_EXIT_REASON_UNKNOWN |
			  KVM_MSR_EXIT_REASON_FILTER },
	};
	struct kvm_msr_filter filter;

	if (ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_USER_SPACE_MSR) <= 0 ||
	    ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_X86_MSR_FILTER) <= 0) {
		snprintf(err, errlen, "--irqchip user: this host's KVM lacks "
			 "KVM_CAP_X86_USER_SPACE_MSR or KVM_CAP_X86_MSR_FILTER "
			 "(Linux >= 5.10); use --irqchip kernel");
		return -ENOTSUP;
	}
	if (ioctl(vm_fd, KVM_ENABLE_CAP, &cap)) {
		int e = errno;

		snprintf(err, errlen, "KVM_ENABLE_CAP(X86_USER_SPACE_MSR): %s",
			 strerror(e));
		return -e;
	}
	memset(&filter, 0, sizeof(filter));
	filter.flags = KVM_MSR_FILTER_DEFAULT_ALLOW;
	for (size_t i = 0; i < ARRAY_SIZE(filtered_msrs); i++)
		filter.ranges[i] = (struct kvm_msr_filter_range){
			.flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE,
			.nmsrs = 1, .base = filtered_msrs[i], .bitmap = deny,
		};
	if (ioctl(vm_fd, KVM_X86_SET_MSR_FILTER, &filter)) {
		int e = errno;

		snprintf(err, errlen, "KVM_X86_SET_MSR_FILTER: %s", strerror(e));
		return -e;
	}
	return 0;
}

int irqchip_user_init(struct vm *vm, char *err, size_t errlen)
{
	struct irqchip_user *ic = &vm->irqchip;
	int r;

	r = set_msr_exits(vm->fd, err, errlen);
	if (r)
		return r;
	apic_bus_init(&ic->bus, &irqchip_bus_ops, vm);
	/* The MP table names the IOAPIC with APIC ID nr_cpus. */
	r = ioapic_init(&ic->ioapic, &ic->bus, (uint8_t)vm->cfg->nr_cpus);
	if (r) {
		snprintf(err, errlen, "IOAPIC: %s", strerror(-r));
		return r;
	}
	ic->ioapic_ok = true;
	r = ioapic_attach(&ic->ioapic, &vm->mmio, X86_IOAPIC_GPA);
	if (r)
		snprintf(err, errlen, "attaching the IOAPIC: %s", strerror(-r));
	return r;
}

void irqchip_user_destroy(struct vm *vm)
{
	struct irqchip_user *ic = &vm->irqchip;

	if (ic->ioapic_ok)
		ioapic_destroy(&ic->ioapic);
	ic->ioapic_ok = false;
}
