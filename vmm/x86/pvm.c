/* Native guests on a PVM backend: detection, the note, registration (pvm.h). */
#include "vmm/x86/pvm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "common/log.h"
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"

struct one_msr {
	struct kvm_msrs hdr;
	struct kvm_msr_entry e;
};

/* KVM_SET_MSRS/KVM_GET_MSRS of one MSR: the count KVM took (0 or 1), or -errno. */
static int msr_io(int vcpu_fd, unsigned long req, uint32_t index, uint64_t *val)
{
	struct one_msr m;
	int n;

	memset(&m, 0, sizeof(m));
	m.hdr.nmsrs = 1;
	m.e.index = index;
	m.e.data = *val;
	n = ioctl(vcpu_fd, req, &m);
	if (n < 0)
		return -errno;
	*val = m.e.data;
	return n;
}

/*
 * On a scratch VM, so that the real one's vCPU ids and state are untouched.
 * This backend takes a host write of the MSR only for a page in a memory
 * slot, with bit 10 set; it reads 0 back until the vCPU has run, so the
 * read-back proves nothing. What does: ordinary KVM refuses the MSR, and
 * with ignore_msrs it takes any MSR, so the backend is the one that takes
 * this MSR while refusing its unused neighbour X86_PVM_MSR_VIF + 0xf.
 */
int x86_pvm_probe(int kvm_fd)
{
	struct kvm_userspace_memory_region slot = {
		.slot = 0, .guest_phys_addr = 0x1000, .memory_size = 4096,
	};
	uint64_t v = 0x1000 | X86_PVM_VIF_HOST_BIT, zero = 0;
	int vm = -1, vcpu = -1, r;
	void *page;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return -errno;
	slot.userspace_addr = (uint64_t)(uintptr_t)page;
	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	r = vm < 0 ? -errno : 0;
	if (!r && ioctl(vm, KVM_SET_USER_MEMORY_REGION, &slot) < 0)
		r = -errno;
	if (!r && (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) < 0)
		r = -errno;
	if (!r)
		r = msr_io(vcpu, KVM_SET_MSRS, X86_PVM_MSR_VIF, &v);
	if (r == 1)
		r = msr_io(vcpu, KVM_SET_MSRS, X86_PVM_MSR_VIF + 0xf, &zero) == 0;
	if (vcpu >= 0)
		close(vcpu);
	if (vm >= 0)
		close(vm);
	munmap(page, 4096);
	return r;
}

int x86_pvm_vif_register(int vcpu_fd, unsigned index, uint64_t gpa)
{
	uint64_t v = gpa | X86_PVM_VIF_HOST_BIT;
	int r = msr_io(vcpu_fd, KVM_SET_MSRS, X86_PVM_MSR_VIF, &v);

	if (r == 1) {
		log_info("vCPU %u: native mode, VIF page at 0x%" PRIx64, index, gpa);
		return 0;
	}
	r = r < 0 ? r : -EIO;
	log_error("vCPU %u: KVM refused its VIF page at 0x%" PRIx64 " (MSR 0x%x): %s",
		  index, gpa, X86_PVM_MSR_VIF, strerror(-r));
	return r;
}

int x86_native_setup(int kvm_fd, const struct guest_mem *mem,
		     const struct vm_config *cfg, struct x86_boot_info *boot,
		     char *err, size_t errlen)
{
	char *cmdline;
	int r;

	boot->native = false;
	if (!boot->vif_gpa) {
		boot->native_why = "the guest declares no VIF pages";
		return 0;
	}
	if (boot->vif_pages < cfg->nr_cpus) {
		boot->native_why = "the guest declares fewer VIF pages than vCPUs";
		return 0;
	}
	if (cfg->no_native) {
		boot->native_why = "--native off";
		return 0;
	}
	r = x86_pvm_probe(kvm_fd);
	if (r <= 0) {
		boot->native_why = r ? "probing KVM for a PVM backend failed" :
			"KVM is not a PVM backend (no VIF MSR)";
		return 0;
	}
	cmdline = (char *)guest_mem_ptr(mem, X86_CMDLINE_GPA, X86_CMDLINE_MAX);
	if (!cmdline || x86_pvm_cmdline_append(cmdline, X86_CMDLINE_MAX, boot->vif_gpa)) {
		snprintf(err, errlen, "native mode: no room on the kernel command line for pvm.vif=");
		return -E2BIG;
	}
	boot->native = true;
	boot->native_why = "PVM backend, the guest declares VIF pages";
	return 0;
}
