#include "vmm/x86/vm_reset.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"
#include "vmm/x86/irqchip_user.h"
#include "vmm/x86/vcpu_irq.h"

/*
 * MSRs a guest changes that must be back at power-on values: the KVM
 * paravirtual areas above all (a kvmclock or steal-time area left
 * registered would be written into the freshly loaded kernel), the
 * syscall entry points, the TSC deadline, and what x86_vcpu_init sets.
 * Each is kept only if KVM lets the host read it.
 */
static const uint32_t reset_msrs[] = {
	0x00000011, 0x00000012,                 /* MSR_KVM_WALL_CLOCK/SYSTEM_TIME */
	0x4b564d00, 0x4b564d01,                 /* ..._NEW */
	0x4b564d02, 0x4b564d03, 0x4b564d04,     /* ASYNC_PF_EN, STEAL_TIME, PV_EOI_EN */
	0x000001a0, 0x000002ff, 0x00000277,     /* MISC_ENABLE, MTRRdefType, PAT */
	0x000006e0,                             /* IA32_TSC_DEADLINE */
	0x00000174, 0x00000175, 0x00000176,     /* SYSENTER_CS/ESP/EIP */
	0xc0000081, 0xc0000082, 0xc0000083,     /* STAR, LSTAR, CSTAR */
	0xc0000084, 0xc0000102,                 /* SYSCALL_MASK, KERNEL_GS_BASE */
};

struct vcpu_snapshot {
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct kvm_fpu fpu;
	struct kvm_lapic_state lapic;
	struct kvm_mp_state mp;
	struct kvm_vcpu_events events;
	struct kvm_xcrs xcrs;
	bool has_xcrs;
	unsigned nr_msrs;
	struct kvm_msr_entry msrs[ARRAY_SIZE(reset_msrs)];
};

struct vm_snapshot {
	unsigned nr_vcpus;
	bool kernel_irqchip;                    /* chips and pit are valid */
	struct kvm_irqchip chips[3];            /* PIC master, PIC slave, IOAPIC */
	struct kvm_pit_state2 pit;
	struct vcpu_snapshot vcpus[];
};

struct msrs_one {
	struct kvm_msrs hdr;
	struct kvm_msr_entry e;
};

/*
 * With --irqchip user KVM has no LAPIC (KVM_GET_LAPIC fails) and keeps
 * every vCPU RUNNABLE (an AP's wait for SIPI is lagvisor's): the LAPICs
 * and the IOAPIC are reset through devices/ instead (vcpu_irq_reset).
 */
static int vcpu_take(struct vcpu *v, struct vcpu_snapshot *s)
{
	int fd = v->fd, r;
	bool kern = !v->user_irqchip;

	if ((r = kvm_ioctl(fd, KVM_GET_REGS, &s->regs, "reset: vCPU %u: KVM_GET_REGS", v->index)) ||
	    (r = kvm_ioctl(fd, KVM_GET_SREGS, &s->sregs, "reset: vCPU %u: KVM_GET_SREGS", v->index)) ||
	    (r = kvm_ioctl(fd, KVM_GET_FPU, &s->fpu, "reset: vCPU %u: KVM_GET_FPU", v->index)) ||
	    (kern &&
	     (r = kvm_ioctl(fd, KVM_GET_LAPIC, &s->lapic, "reset: vCPU %u: KVM_GET_LAPIC", v->index))) ||
	    (kern &&
	     (r = kvm_ioctl(fd, KVM_GET_MP_STATE, &s->mp, "reset: vCPU %u: KVM_GET_MP_STATE", v->index))) ||
	    (r = kvm_ioctl(fd, KVM_GET_VCPU_EVENTS, &s->events, "reset: vCPU %u: KVM_GET_VCPU_EVENTS", v->index)))
		return r;
	s->has_xcrs = ioctl(fd, KVM_GET_XCRS, &s->xcrs) == 0;
	for (size_t i = 0; i < ARRAY_SIZE(reset_msrs); i++) {
		struct msrs_one m = { .hdr.nmsrs = 1, .e.index = reset_msrs[i] };

		if (ioctl(fd, KVM_GET_MSRS, &m) == 1)
			s->msrs[s->nr_msrs++] = m.e;
	}
	return 0;
}

static int vcpu_put(struct vcpu *v, const struct vcpu_snapshot *s)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[ARRAY_SIZE(reset_msrs)];
	} m;
	/* The SET ioctls take non-const pointers; copies keep `s` const. */
	struct vcpu_snapshot c = *s;
	int fd = v->fd, r;
	bool kern = !v->user_irqchip;

	/* sregs (modes) before regs; the LAPIC before the MP state that
	 * refers to it; events last, clearing anything pending. */
	if ((r = kvm_ioctl(fd, KVM_SET_SREGS, &c.sregs, "reset: vCPU %u: KVM_SET_SREGS", v->index)) ||
	    (r = kvm_ioctl(fd, KVM_SET_REGS, &c.regs, "reset: vCPU %u: KVM_SET_REGS", v->index)) ||
	    (r = kvm_ioctl(fd, KVM_SET_FPU, &c.fpu, "reset: vCPU %u: KVM_SET_FPU", v->index)) ||
	    (c.has_xcrs &&
	     (r = kvm_ioctl(fd, KVM_SET_XCRS, &c.xcrs, "reset: vCPU %u: KVM_SET_XCRS", v->index))) ||
	    (kern &&
	     (r = kvm_ioctl(fd, KVM_SET_LAPIC, &c.lapic, "reset: vCPU %u: KVM_SET_LAPIC", v->index))) ||
	    (kern &&
	     (r = kvm_ioctl(fd, KVM_SET_MP_STATE, &c.mp, "reset: vCPU %u: KVM_SET_MP_STATE", v->index))) ||
	    (r = kvm_ioctl(fd, KVM_SET_VCPU_EVENTS, &c.events, "reset: vCPU %u: KVM_SET_VCPU_EVENTS", v->index)))
		return r;
	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = c.nr_msrs;
	memcpy(m.e, c.msrs, c.nr_msrs * sizeof(m.e[0]));
	r = ioctl(fd, KVM_SET_MSRS, &m);
	if (r != (int)c.nr_msrs) {
		log_error("reset: vCPU %u: KVM_SET_MSRS set %d of %u", v->index, r, c.nr_msrs);
		return r < 0 ? -errno : -EIO;
	}
	return 0;
}

/* Every vCPU thread has done its setup and parked (vm_vcpu_park). */
static int wait_all_parked(struct vm *vm, int timeout_ms)
{
	struct timespec ts = clock_cond_deadline_ms(timeout_ms);
	int r = 0;

	mutex_lock(&vm->lock);
	while (!r && !vm->stopping && vm->nr_parked < vm->nr_vcpus)
		if (mutex_cond_timedwait(&vm->lock, &vm->cond, &ts) == -ETIMEDOUT)
			r = -ETIMEDOUT;
	if (vm->stopping)
		r = -ESHUTDOWN;
	mutex_unlock(&vm->lock);
	return r;
}

int vm_snapshot_take(struct vm *vm, int timeout_ms, struct vm_snapshot **out)
{
	struct vm_snapshot *s;
	int r;

	*out = NULL;
	r = wait_all_parked(vm, timeout_ms);
	if (r)
		return r;
	s = calloc(1, sizeof(*s) + vm->nr_vcpus * sizeof(s->vcpus[0]));
	if (!s)
		return -ENOMEM;
	s->nr_vcpus = vm->nr_vcpus;
	s->kernel_irqchip = vm->cfg->irqchip == IRQCHIP_KERNEL;
	for (unsigned i = 0; s->kernel_irqchip && i < 3; i++) {
		s->chips[i].chip_id = i;
		r = kvm_ioctl(vm->fd, KVM_GET_IRQCHIP, &s->chips[i], "reset: KVM_GET_IRQCHIP");
		if (r)
			goto fail;
	}
	if (s->kernel_irqchip)
		r = kvm_ioctl(vm->fd, KVM_GET_PIT2, &s->pit, "reset: KVM_GET_PIT2");
	for (unsigned i = 0; !r && i < vm->nr_vcpus; i++)
		r = vcpu_take(&vm->vcpus[i], &s->vcpus[i]);
	if (r)
		goto fail;
	*out = s;
	return 0;
fail:
	free(s);
	return r;
}

/* Guest RAM back to zeros: fresh pages for the anonymous mapping. */
static void clear_ram(struct vm *vm)
{
	for (unsigned i = 0; i < vm->mem.nr; i++) {
		struct guest_mem_slot *m = &vm->mem.slots[i];

		if (madvise(m->hva, m->size, MADV_DONTNEED))
			memset(m->hva, 0, m->size);
	}
}

int vm_reset(struct vm *vm, const struct vm_snapshot *s, char *err, size_t errlen)
{
	int r = vm_pause(vm);

	if (r) {
		snprintf(err, errlen, "reset: the vCPUs did not stop: %s", strerror(-r));
		return r;
	}
	if (s->nr_vcpus != vm->nr_vcpus ||
	    s->kernel_irqchip != (vm->cfg->irqchip == IRQCHIP_KERNEL)) {
		snprintf(err, errlen, "reset: snapshot of another VM");
		return -EINVAL;
	}
	for (unsigned i = 0; s->kernel_irqchip && i < 3; i++) {
		struct kvm_irqchip chip = s->chips[i];

		if ((r = kvm_ioctl(vm->fd, KVM_SET_IRQCHIP, &chip, "reset: KVM_SET_IRQCHIP")))
			goto fail;
	}
	if (s->kernel_irqchip) {
		struct kvm_pit_state2 pit = s->pit;

		if ((r = kvm_ioctl(vm->fd, KVM_SET_PIT2, &pit, "reset: KVM_SET_PIT2")))
			goto fail;
	}
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if ((r = vcpu_put(&vm->vcpus[i], &s->vcpus[i])))
			goto fail;
	if (!s->kernel_irqchip) {
		if (vm->irqchip.ioapic_ok)
			ioapic_reset(&vm->irqchip.ioapic);
		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			vcpu_irq_reset(&vm->vcpus[i]);
	}
	if (vm->devices.uart_ok)
		uart_reset(&vm->devices.uart);
	clear_ram(vm);
	return vm_load_kernel(vm, err, errlen);
fail:
	snprintf(err, errlen, "reset: restoring the power-on state failed: %s",
		 strerror(-r));
	return r;
}

void vm_snapshot_free(struct vm_snapshot *s)
{
	free(s);
}
