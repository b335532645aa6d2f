/* The x86 exits of the generic run loop (see vcpu_exit.h). */
#include "vmm/x86/vcpu_exit.h"

#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"

int x86_vcpu_handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IRQ_WINDOW_OPEN:
		run->request_interrupt_window = 0;
		return VCPU_CONTINUE;
	case KVM_EXIT_HLT:
		/* Only without an in-kernel LAPIC, i.e. --irqchip user. */
		if (v->user_irqchip)
			return vcpu_irq_exit_hlt(v);
		log_once(LOG_WARN, "vCPU %u: KVM_EXIT_HLT with KVM's irqchip", v->index);
		return VCPU_CONTINUE;
	case KVM_EXIT_X86_RDMSR:
	case KVM_EXIT_X86_WRMSR:
		if (v->user_irqchip)
			return vcpu_irq_exit_msr(v);
		log_once(LOG_WARN, "vCPU %u: MSR exit with KVM's irqchip: #GP", v->index);
		run->msr.error = 1;
		return VCPU_CONTINUE;
	case KVM_EXIT_SET_TPR:
		return VCPU_CONTINUE;          /* CR8 is synced after every exit */
	default:
		return X86_EXIT_UNHANDLED;
	}
}

unsigned x86_vcpu_read_insn(struct vcpu *v, uint64_t rip,
			    uint8_t out[X86_MAX_INSN_BYTES])
{
	struct kvm_sregs sregs;
	uint64_t lin;
	unsigned n = 0;

	if (ioctl(v->fd, KVM_GET_SREGS, &sregs))
		return 0;
	lin = (sregs.efer & (1u << 10) /* EFER.LMA */) && sregs.cs.l ? rip
								  : sregs.cs.base + rip;
	while (n < X86_MAX_INSN_BYTES) {
		struct kvm_translation tr = { .linear_address = lin + n };
		unsigned chunk = 4096 - (unsigned)((lin + n) & 4095);
		const uint8_t *p;

		chunk = MIN(chunk, X86_MAX_INSN_BYTES - n);
		if (ioctl(v->fd, KVM_TRANSLATE, &tr) || !tr.valid)
			break;
		p = guest_mem_ptr(&v->vm->mem, tr.physical_address, chunk);
		if (!p)
			break;
		memcpy(out + n, p, chunk);
		n += chunk;
	}
	return n;
}

