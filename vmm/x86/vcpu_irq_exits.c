/* The exits of --irqchip user that reach a vCPU's LAPIC: MSRs (x2APIC,
 * IA32_APIC_BASE, TSC deadline, steal time, PV EOI, and the #GP KVM would give for
 * the rest) and the xAPIC MMIO page. Interface in vcpu_irq.h. */
#include "common/clock.h"
#include "vmm/x86/vcpu_irq.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"
#include "vmm/x86/irqchip_user.h"

#define MSR_IA32_TSC 0x10

/* One MSR of KVM's through KVM_GET_MSRS or KVM_SET_MSRS (req). 0 or -EIO. */
static int kvm_msr(struct vcpu *v, unsigned long req, uint32_t index, uint64_t *data)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e;
	} m;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = 1;
	m.e.index = index;
	m.e.data = *data;
	if (ioctl(v->fd, req, &m) != 1)
		return -EIO;
	*data = m.e.data;
	return 0;
}

/* Keep KVM's IA32_APIC_BASE equal to ours: KVM derives the CPUID APIC bit
 * from its copy (host-initiated writes pass the filter). */
static void mirror_apic_base(struct vcpu *v)
{
	uint64_t base = lapic_apic_base(&v->irq.lapic);

	if (kvm_msr(v, KVM_SET_MSRS, MSR_IA32_APIC_BASE, &base))
		log_once(LOG_WARN, "vCPU %u: KVM_SET_MSRS(APIC_BASE 0x%llx) refused",
			 v->index, (unsigned long long)base);
}

/*
 * The guest's TSC, against which it wrote a deadline. In general the
 * host's scaled and offset by KVM: one KVM_GET_MSRS, ~1-2 us on VMX, but
 * an ioctl costs tens of us of CPU on a PVM host. There a native guest's
 * rdtsc is not intercepted at all: it reads the host's TSC, which is then
 * the guest's TSC. That is checked against KVM's value (they must agree
 * within 1 ms) before the ioctl is dropped, and again every 64th deadline:
 * a guest's write of IA32_TSC goes to KVM, not to us, and if the backend
 * then offsets the guest's rdtsc, at most 63 deadlines were computed on the
 * old base before the shortcut is given up for good.
 */
static int guest_tsc(struct vcpu *v, uint64_t *tsc)
{
	struct vcpu_irq *q = &v->irq;
	uint64_t host, kvm = 0, slack;

	if (q->tsc_is_host > 0 && (++q->tsc_host_uses & 63)) {
		*tsc = __builtin_ia32_rdtsc();
		return 0;
	}
	if (kvm_msr(v, KVM_GET_MSRS, MSR_IA32_TSC, &kvm))
		return -EIO;
	*tsc = kvm;
	if (q->tsc_is_host >= 0 && q->vif) {
		int was = q->tsc_is_host;

		host = __builtin_ia32_rdtsc();
		slack = q->tsc_khz ? q->tsc_khz : 1000000;     /* 1 ms of cycles */
		q->tsc_is_host = host >= kvm && host - kvm < slack ? 1 : -1;
		if (was != q->tsc_is_host)
			log_debug("vCPU %u: native guest's TSC %s the host's", v->index,
				  q->tsc_is_host > 0 ? "is" : "is no longer or not");
	}
	return 0;
}

static int tsc_deadline_write(struct vcpu *v, uint64_t val)
{
	uint64_t tsc = 0, now;

	if (guest_tsc(v, &tsc)) {
		log_once(LOG_ERROR, "vCPU %u: cannot read the guest TSC: TSC deadline "
			 "ignored", v->index);
		return 0;
	}
	/* Host time read after the TSC: deadline_ns can only be later. */
	now = clock_now_ns();
	return lapic_tsc_deadline_write(&v->irq.lapic, val, tsc, v->irq.tsc_khz, now);
}

int vcpu_irq_exit_msr(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	struct vcpu_irq *q = &v->irq;
	bool write = run->exit_reason == KVM_EXIT_X86_WRMSR;
	uint32_t msr = run->msr.index;
	uint64_t now = clock_now_ns();
	int r;

	log_debug("vCPU %u: %s 0x%x (reason %u) data 0x%llx", v->index, write ? "WRMSR" : "RDMSR",
		  msr, run->msr.reason, (unsigned long long)run->msr.data);
	if (msr == MSR_IA32_APIC_BASE || (msr >= MSR_X2APIC_FIRST && msr <= MSR_X2APIC_LAST)) {
		uint64_t val = run->msr.data;

		r = write ? lapic_msr_write(&q->lapic, msr, val, now)
			  : lapic_msr_read(&q->lapic, msr, &val, now);
		if (!write)
			run->msr.data = val;
		if (!r && write && msr == MSR_IA32_APIC_BASE)
			mirror_apic_base(v);
	} else if (msr == MSR_IA32_TSC_DEADLINE) {
		r = 0;
		if (write)
			r = tsc_deadline_write(v, run->msr.data);
		else
			run->msr.data = lapic_tsc_deadline_read(&q->lapic);
	} else if (msr == MSR_KVM_STEAL_TIME_NEW) {
		r = 0;
		if (write) {
			r = steal_time_msr_write(&q->steal, &v->vm->mem, run->msr.data);
			steal_time_update(&q->steal, now, false, true);
		} else {
			run->msr.data = steal_time_msr_read(&q->steal);
		}
	} else if (msr == MSR_KVM_PV_EOI_EN) {
		r = 0;
		if (write)
			r = pv_eoi_msr_write(&q->pv_eoi, &v->vm->mem, run->msr.data);
		else
			run->msr.data = pv_eoi_msr_read(&q->pv_eoi);
	} else {
		/* KVM refused it (INVAL) or does not know it (UNKNOWN):
		 * the #GP KVM would have given. */
		log_once(LOG_INFO, "vCPU %u: %s of MSR 0x%x %s: #GP", v->index,
			 write ? "WRMSR" : "RDMSR", msr,
			 run->msr.reason == KVM_MSR_EXIT_REASON_INVAL ? "refused by KVM"
								      : "unknown to KVM");
		r = -EINVAL;
	}
	run->msr.error = r ? 1 : 0;
	return VCPU_CONTINUE;
}

bool vcpu_irq_exit_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	struct lapic *l = &v->irq.lapic;
	uint64_t gpa = run->mmio.phys_addr;

	if (!lapic_mmio_claims(l, gpa))
		return false;
	if (run->mmio.is_write)
		lapic_mmio_write(l, gpa & (LAPIC_MMIO_SIZE - 1), run->mmio.data,
				 run->mmio.len, clock_now_ns());
	else
		lapic_mmio_read(l, gpa & (LAPIC_MMIO_SIZE - 1), run->mmio.data,
				run->mmio.len, clock_now_ns());
	return true;
}
