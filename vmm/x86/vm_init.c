/*
 * VM-wide x86 setup, before any vCPU exists (KVM refuses the identity map
 * address and the irqchip afterwards).
 *
 * KVM on Intel without unrestricted guest runs real mode through vm86 and
 * needs a 3-page TSS and a 1-page identity-mapped page table somewhere in
 * guest physical space that is not RAM: the top of the MMIO hole, below
 * the BIOS ROM's 4 GiB alias, as other VMMs place it. On AMD both are
 * accepted and unused.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "common/log.h"
#include "vmm/kvm.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/irqchip.h"

#define X86_IDENTITY_MAP_GPA  0xfffbc000ULL
#define X86_TSS_GPA           0xfffbd000ULL   /* 3 pages, after the identity map */

static int set_gsi_routing(int vm_fd)
{
	struct kvm_irq_routing *r;
	int ret;

	r = calloc(1, sizeof(*r) + X86_GSI_ROUTES * sizeof(r->entries[0]));
	if (!r)
		return -ENOMEM;
	r->nr = X86_GSI_ROUTES;
	x86_gsi_routes_build(r->entries);
	ret = kvm_ioctl(vm_fd, KVM_SET_GSI_ROUTING, r, "KVM_SET_GSI_ROUTING");
	free(r);
	return ret;
}

int x86_vm_init(int vm_fd, const struct vm_config *cfg)
{
	uint64_t identity = X86_IDENTITY_MAP_GPA;
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	int ret = 0;

	if (ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_IDENTITY_MAP_ADDR) > 0)
		ret = kvm_ioctl(vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &identity,
				"KVM_SET_IDENTITY_MAP_ADDR");
	if (!ret)
		ret = kvm_ioctl(vm_fd, KVM_SET_TSS_ADDR, (void *)(uintptr_t)X86_TSS_GPA,
				"KVM_SET_TSS_ADDR");
	if (ret || cfg->irqchip != IRQCHIP_KERNEL)
		return ret;
	/* The default routing sends GSI 0 to IOAPIC pin 0; the MP table says pin 2. */
	if ((ret = kvm_ioctl(vm_fd, KVM_CREATE_IRQCHIP, NULL, "KVM_CREATE_IRQCHIP")) ||
	    (ret = set_gsi_routing(vm_fd)))
		return ret;
	return kvm_ioctl(vm_fd, KVM_CREATE_PIT2, &pit, "KVM_CREATE_PIT2");
}
