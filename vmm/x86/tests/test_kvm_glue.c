/*
 * The KVM-touching glue (vm_init.c, vcpu_init.c) against a fake ioctl
 * (linked with --wrap=ioctl): which ioctls, in which order, with which
 * arguments, and that failures come back as -errno. No /dev/kvm needed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/kvm.h>

#include "vmm/x86/arch.h"
#include "common/test_check.h"
#include "le_bytes.h"

#define KVM_FD   3
#define VM_FD    4
#define VCPU_FD  5
#define MAX_CALLS 64

static unsigned long calls[MAX_CALLS];
static unsigned nr_calls;
static unsigned long fail_req;          /* this request fails with fail_errno */
static int fail_errno;
static unsigned cpuid_min_nent = 200;   /* smaller buffers get E2BIG */

/* What the fake saw. */
static struct kvm_irq_routing_entry routes[64];
static unsigned nr_routes, routing_flags;
static uint64_t identity_addr;
static unsigned long tss_addr;
static unsigned pit_flags;
static struct kvm_cpuid_entry2 cpuid_set[64];
static unsigned nr_cpuid_set;
static struct kvm_sregs sregs;
static struct kvm_regs regs;
static struct kvm_fpu fpu;
static struct kvm_lapic_state lapic;
static struct kvm_msr_entry msrs[4];
static unsigned nr_msrs;

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...);

static void fake_supported_cpuid(struct kvm_cpuid2 *c)
{
	static const struct kvm_cpuid_entry2 host[] = {
		{ .function = 0, .eax = 0xd },
		{ .function = 1, .eax = 0x906ea, .ebx = 0x0e100800, .ecx = 0x00000008 },
		{ .function = 0x40000001, .eax = 0x01007afb },
	};

	memcpy(c->entries, host, sizeof(host));
	c->nent = 3;
}

int __wrap_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (nr_calls < MAX_CALLS)
		calls[nr_calls++] = req;
	if (req == fail_req) {
		errno = fail_errno;
		return -1;
	}
	switch (req) {
	case KVM_CHECK_EXTENSION:
		CHECK(fd == VM_FD || fd == KVM_FD);
		return 1;
	case KVM_SET_IDENTITY_MAP_ADDR:
		identity_addr = *(uint64_t *)arg;
		return 0;
	case KVM_SET_TSS_ADDR:
		tss_addr = (unsigned long)arg;
		return 0;
	case KVM_CREATE_IRQCHIP:
		return 0;
	case KVM_SET_GSI_ROUTING: {
		struct kvm_irq_routing *r = arg;

		nr_routes = r->nr;
		routing_flags = r->flags;
		memcpy(routes, r->entries, r->nr * sizeof(routes[0]));
		return 0;
	}
	case KVM_CREATE_PIT2:
		pit_flags = ((struct kvm_pit_config *)arg)->flags;
		return 0;
	case KVM_GET_SUPPORTED_CPUID: {
		struct kvm_cpuid2 *c = arg;

		CHECK(fd == KVM_FD);
		if (c->nent < cpuid_min_nent) {
			errno = E2BIG;
			return -1;
		}
		fake_supported_cpuid(c);
		return 0;
	}
	case KVM_SET_CPUID2: {
		struct kvm_cpuid2 *c = arg;

		CHECK(fd == VCPU_FD);
		nr_cpuid_set = c->nent;
		memcpy(cpuid_set, c->entries, c->nent * sizeof(cpuid_set[0]));
		return 0;
	}
	case KVM_SET_MSRS: {
		struct kvm_msrs *m = arg;

		nr_msrs = m->nmsrs;
		memcpy(msrs, m->entries, m->nmsrs * sizeof(msrs[0]));
		return (int)m->nmsrs;
	}
	case KVM_GET_LAPIC:
		memset(arg, 0, sizeof(lapic));
		wr((uint8_t *)((struct kvm_lapic_state *)arg)->regs + 0x350, 4, 0x10000);
		wr((uint8_t *)((struct kvm_lapic_state *)arg)->regs + 0x360, 4, 0x10000);
		return 0;
	case KVM_SET_LAPIC:
		memcpy(&lapic, arg, sizeof(lapic));
		return 0;
	case KVM_GET_SREGS:
		memset(arg, 0, sizeof(sregs));
		((struct kvm_sregs *)arg)->apic_base = 0xfee00900;
		return 0;
	case KVM_SET_SREGS:
		memcpy(&sregs, arg, sizeof(sregs));
		return 0;
	case KVM_GET_REGS:
		memset(arg, 0, sizeof(regs));
		((struct kvm_regs *)arg)->rip = 0xfff0;
		return 0;
	case KVM_SET_REGS:
		memcpy(&regs, arg, sizeof(regs));
		return 0;
	case KVM_SET_FPU:
		memcpy(&fpu, arg, sizeof(fpu));
		return 0;
	}
	fprintf(stderr, "unexpected ioctl 0x%lx\n", req);
	check_failures++;
	errno = ENOTTY;
	return -1;
}

static void reset(void)
{
	nr_calls = 0;
	fail_req = 0;
	nr_cpuid_set = nr_msrs = nr_routes = 0;
	memset(&sregs, 0, sizeof(sregs));
	memset(&regs, 0, sizeof(regs));
	memset(&lapic, 0, sizeof(lapic));
}

static bool called(unsigned long req)
{
	for (unsigned i = 0; i < nr_calls; i++)
		if (calls[i] == req)
			return true;
	return false;
}

static const struct kvm_cpuid_entry2 *leaf(uint32_t fn, uint32_t idx)
{
	for (unsigned i = 0; i < nr_cpuid_set; i++)
		if (cpuid_set[i].function == fn && cpuid_set[i].index == idx)
			return &cpuid_set[i];
	return NULL;
}

static void test_vm_init(void)
{
	struct vm_config cfg = { .irqchip = IRQCHIP_KERNEL, .nr_cpus = 2 };
	static const unsigned long order[] = {
		KVM_CHECK_EXTENSION, KVM_SET_IDENTITY_MAP_ADDR, KVM_SET_TSS_ADDR,
		KVM_CREATE_IRQCHIP, KVM_SET_GSI_ROUTING, KVM_CREATE_PIT2,
	};

	reset();
	CHECK_EQ(x86_vm_init(VM_FD, &cfg), 0);
	CHECK_EQ(nr_calls, 6);
	for (unsigned i = 0; i < 6 && i < nr_calls; i++)
		CHECK_EQ(calls[i], order[i]);
	CHECK_EQ(identity_addr, 0xfffbc000);
	CHECK_EQ(tss_addr, 0xfffbd000);
	CHECK_EQ(nr_routes, 38);
	CHECK_EQ(routing_flags, 0);
	CHECK_EQ(pit_flags, KVM_PIT_SPEAKER_DUMMY);
	for (unsigned i = 0; i < nr_routes; i++)
		if (routes[i].gsi == 0 && routes[i].u.irqchip.irqchip == KVM_IRQCHIP_IOAPIC)
			CHECK_EQ(routes[i].u.irqchip.pin, 2);

	reset();
	cfg.irqchip = IRQCHIP_USER;
	CHECK_EQ(x86_vm_init(VM_FD, &cfg), 0);
	CHECK(!called(KVM_CREATE_IRQCHIP) && !called(KVM_CREATE_PIT2) &&
	      !called(KVM_SET_GSI_ROUTING) && called(KVM_SET_TSS_ADDR));

	reset();
	cfg.irqchip = IRQCHIP_KERNEL;
	fail_req = KVM_CREATE_IRQCHIP;
	fail_errno = EEXIST;
	CHECK_EQ(x86_vm_init(VM_FD, &cfg), -EEXIST);
	CHECK(!called(KVM_CREATE_PIT2));
	reset();
	fail_req = KVM_SET_GSI_ROUTING;
	fail_errno = EINVAL;
	CHECK_EQ(x86_vm_init(VM_FD, &cfg), -EINVAL);
}

static void test_vcpu_init(void)
{
	struct x86_boot_info boot = { .mode = X86_ENTRY_LINUX64, .entry_gpa = 0x100200,
				      .param_gpa = 0x7000, .irqchip = IRQCHIP_KERNEL };
	const struct kvm_cpuid_entry2 *e;

	reset();
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 0, 2, &boot), 0);
	/* TSC-deadline capability, then E2BIG at 128 entries, retried with 256 */
	CHECK_EQ(calls[0], KVM_CHECK_EXTENSION);
	CHECK_EQ(calls[1], KVM_GET_SUPPORTED_CPUID);
	CHECK_EQ(calls[2], KVM_GET_SUPPORTED_CPUID);
	CHECK_EQ(calls[3], KVM_SET_CPUID2);
	e = leaf(1, 0);
	CHECK(e && e->ebx == 0x00020800 && (e->ecx & (1u << 31)) && !(e->ecx & 8) &&
	      (e->ecx & (1u << 24)));
	e = leaf(0x40000001, 0);
	CHECK(e && e->eax == 0x0100006b);
	CHECK(leaf(0x40000000, 0) != NULL);
	CHECK(nr_msrs == 2 && msrs[0].index == 0x1a0 && msrs[0].data == 1 &&
	      msrs[1].index == 0x2ff && msrs[1].data == 0x806);
	CHECK_EQ(rd((uint8_t *)lapic.regs + 0x350, 4), 0x10700);
	CHECK_EQ(rd((uint8_t *)lapic.regs + 0x360, 4), 0x10400);
	CHECK(sregs.cr0 == 0x80000011 && sregs.cr3 == 0x9000 && sregs.efer == 0x500 &&
	      sregs.cs.l == 1 && sregs.apic_base == 0xfee00900);
	CHECK(regs.rip == 0x100200 && regs.rsi == 0x7000 && regs.rflags == 2);
	CHECK(fpu.fcw == 0x37f && fpu.mxcsr == 0x1f80);

	/* an AP: CPUID and MSRs only, its own APIC ID */
	reset();
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 1, 2, &boot), 0);
	e = leaf(1, 0);
	CHECK(e && e->ebx >> 24 == 1);
	CHECK(nr_msrs == 2 && !called(KVM_SET_SREGS) && !called(KVM_SET_REGS) &&
	      !called(KVM_GET_LAPIC));

	/* userspace irqchip, PVH: no LAPIC ioctls, TSC-deadline without asking KVM */
	reset();
	boot.irqchip = IRQCHIP_USER;
	boot.mode = X86_ENTRY_PVH32;
	boot.entry_gpa = 0x100010;
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 0, 1, &boot), 0);
	CHECK(!called(KVM_GET_LAPIC) && !called(KVM_SET_LAPIC) && !called(KVM_CHECK_EXTENSION));
	e = leaf(1, 0);
	CHECK(e && (e->ecx & (1u << 24)));
	e = leaf(0x40000001, 0);
	CHECK(e && e->eax == 0x01000069);
	CHECK(sregs.cr0 == 0x11 && sregs.efer == 0 && sregs.cs.db == 1 && regs.rbx == 0x7000 &&
	      regs.rip == 0x100010);

	/* failures come back as -errno */
	reset();
	fail_req = KVM_SET_CPUID2;
	fail_errno = EINVAL;
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 0, 1, &boot), -EINVAL);
	CHECK(!called(KVM_SET_SREGS));
	reset();
	fail_req = KVM_SET_SREGS;
	fail_errno = EFAULT;
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 0, 1, &boot), -EFAULT);
	reset();
	cpuid_min_nent = 100000;           /* KVM always says E2BIG: give up */
	CHECK_EQ(x86_vcpu_init(KVM_FD, VCPU_FD, 0, 1, &boot), -E2BIG);
	cpuid_min_nent = 200;
}

static void test_sipi(void)
{
	reset();
	CHECK_EQ(x86_vcpu_sipi(VCPU_FD, 0x08), 0);
	CHECK(sregs.cs.selector == 0x0800 && sregs.cs.base == 0x8000 && regs.rip == 0);
}

int main(void)
{
	test_vm_init();
	test_vcpu_init();
	test_sipi();
	return check_report("x86_test_kvm_glue");
}
