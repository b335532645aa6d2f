/*
 * Per-vCPU x86 setup through KVM: CPUID for every vCPU, a few MSRs the
 * firmware would have set, and for the boot vCPU its LAPIC wiring and the
 * entry registers. APs stay in KVM's reset state: with the in-kernel
 * irqchip KVM runs INIT/SIPI; with the userspace one, x86_vcpu_sipi.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "common/log.h"
#include "vmm/kvm.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/cpuid.h"
#include "vmm/x86/irqchip.h"
#include "vmm/x86/pvm.h"
#include "vmm/x86/regs.h"

#define CPUID_MAX_ENTRIES     4096
#define MSR_IA32_MISC_ENABLE  0x1a0
#define MSR_MTRR_DEF_TYPE     0x2ff
#define MISC_ENABLE_FAST_STRING 0x1
#define MTRR_DEF_ENABLE_WB    0x806   /* E (bit 11) | default type WB (6) */
#define MSR_IA32_APIC_BASE    0x1b
#define APIC_BASE_POWER_UP    0xfee00800ULL   /* 0xfee00000 | EN (bit 11) */
#define APIC_BASE_BSP         0x100ULL

static struct kvm_cpuid2 *cpuid_alloc(unsigned nent)
{
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + nent * sizeof(c->entries[0]));

	if (c)
		c->nent = nent;
	return c;
}

/* KVM_GET_SUPPORTED_CPUID with a buffer grown until KVM stops saying E2BIG. */
static int get_supported_cpuid(int kvm_fd, struct kvm_cpuid2 **out)
{
	for (unsigned nent = 128; nent <= CPUID_MAX_ENTRIES; nent *= 2) {
		struct kvm_cpuid2 *c = cpuid_alloc(nent);

		if (!c)
			return -ENOMEM;
		int e;

		if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			*out = c;
			return 0;
		}
		e = errno;
		free(c);
		if (e != E2BIG) {
			log_error("KVM_GET_SUPPORTED_CPUID: %s", strerror(e));
			return -e;
		}
	}
	return -E2BIG;
}

static int set_cpuid(int kvm_fd, int vcpu_fd, unsigned index, unsigned nr_cpus,
		     const struct x86_boot_info *boot)
{
	enum irqchip_mode irqchip = boot->irqchip;
	struct x86_cpuid_params p = {
		.apic_id = index, .nr_cpus = nr_cpus, .irqchip = irqchip,
		.no_x2apic = boot->no_x2apic,
		/* lagvisor's LAPIC implements the TSC-deadline MSR; KVM's says so */
		.tsc_deadline = irqchip == IRQCHIP_USER ||
				ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0,
	};
	struct kvm_cpuid2 *sup = NULL, *mine;
	int n, ret;

	ret = get_supported_cpuid(kvm_fd, &sup);
	if (ret)
		return ret;
	mine = cpuid_alloc(sup->nent + X86_CPUID_EXTRA);
	if (!mine) {
		free(sup);
		return -ENOMEM;
	}
	n = x86_cpuid_filter(sup->entries, sup->nent, mine->entries, mine->nent, &p);
	if (n < 0) {
		log_error("vCPU %u: CPUID filter failed: %s", index, strerror(-n));
		ret = n;
	} else {
		mine->nent = (unsigned)n;
		ret = kvm_ioctl(vcpu_fd, KVM_SET_CPUID2, mine, "vCPU %u: KVM_SET_CPUID2", index);
	}
	free(mine);
	free(sup);
	return ret;
}

/*
 * Fast strings on, MTRRs on with write-back default: what firmware leaves
 * behind. Every vCPU gets the same values (Linux compares MTRRs across CPUs).
 * With the userspace irqchip KVM has no LAPIC and IA32_APIC_BASE reads 0
 * there, and KVM clears the CPUID APIC bit to match: give its copy the
 * power-up value (after KVM_SET_CPUID2, which it follows). lagvisor's
 * LAPIC keeps it in step afterwards.
 */
static int set_msrs(int vcpu_fd, unsigned index, enum irqchip_mode irqchip)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[3];
	} m;
	int n;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = irqchip == IRQCHIP_USER ? 3 : 2;
	m.e[0] = (struct kvm_msr_entry){ .index = MSR_IA32_MISC_ENABLE, .data = MISC_ENABLE_FAST_STRING };
	m.e[1] = (struct kvm_msr_entry){ .index = MSR_MTRR_DEF_TYPE, .data = MTRR_DEF_ENABLE_WB };
	m.e[2] = (struct kvm_msr_entry){ .index = MSR_IA32_APIC_BASE,
		.data = APIC_BASE_POWER_UP | (index == 0 ? APIC_BASE_BSP : 0) };
	n = kvm_ioctl(vcpu_fd, KVM_SET_MSRS, &m, "vCPU %u: KVM_SET_MSRS", index);
	if (n < 0)
		return n;
	if (n < (int)m.hdr.nmsrs)
		log_warn("vCPU %u: KVM accepted %d of %u boot MSRs (MSR 0x%x refused)",
			 index, n, m.hdr.nmsrs, m.e[n].index);
	return 0;
}

static int setup_lapic(int vcpu_fd)
{
	struct kvm_lapic_state lapic;
	int r = kvm_ioctl(vcpu_fd, KVM_GET_LAPIC, &lapic, "KVM_GET_LAPIC");

	if (r)
		return r;
	x86_lapic_set_lints((uint8_t *)lapic.regs);
	return kvm_ioctl(vcpu_fd, KVM_SET_LAPIC, &lapic, "KVM_SET_LAPIC");
}

static int setup_boot_regs(int vcpu_fd, const struct x86_boot_info *boot)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_fpu fpu;
	int r = kvm_ioctl(vcpu_fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");

	if (r)
		return r;
	x86_boot_sregs(&sregs, boot->mode);
	x86_boot_regs(&regs, boot);
	/* FPU as after FNINIT, SSE exceptions masked (MXCSR power-on value). */
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if ((r = kvm_ioctl(vcpu_fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS")) ||
	    (r = kvm_ioctl(vcpu_fd, KVM_SET_REGS, &regs, "KVM_SET_REGS")))
		return r;
	return kvm_ioctl(vcpu_fd, KVM_SET_FPU, &fpu, "KVM_SET_FPU");
}

int x86_vcpu_init(int kvm_fd, int vcpu_fd, unsigned index, unsigned nr_cpus,
		  const struct x86_boot_info *boot)
{
	int ret = set_cpuid(kvm_fd, vcpu_fd, index, nr_cpus, boot);

	if (!ret)
		ret = set_msrs(vcpu_fd, index, boot->irqchip);
	if (!ret && boot->native)
		ret = x86_pvm_vif_register(vcpu_fd, index, x86_native_vif_gpa(boot, index));
	if (ret || index != 0)
		return ret;
	if (boot->irqchip == IRQCHIP_KERNEL) {
		ret = setup_lapic(vcpu_fd);
		if (ret)
			return ret;
	}
	return setup_boot_regs(vcpu_fd, boot);
}

int x86_vcpu_sipi(int vcpu_fd, uint8_t vector)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	int r;

	if ((r = kvm_ioctl(vcpu_fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS")) ||
	    (r = kvm_ioctl(vcpu_fd, KVM_GET_REGS, &regs, "KVM_GET_REGS")))
		return r;
	x86_sipi_regs(&sregs, &regs, vector);
	if ((r = kvm_ioctl(vcpu_fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS")))
		return r;
	return kvm_ioctl(vcpu_fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
}
