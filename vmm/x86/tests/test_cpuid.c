/*
 * CPUID filter on a canned KVM_GET_SUPPORTED_CPUID table (values shaped
 * like an Intel host's), expected outputs computed by hand.
 */
#include <errno.h>

#include "vmm/x86/cpuid.h"
#include "common/test_check.h"

#define SIG 0x1    /* KVM_CPUID_FLAG_SIGNIFCANT_INDEX */

static const struct kvm_cpuid_entry2 canned[] = {
	{ .function = 0, .eax = 0x1f, .ebx = 0x756e6547, .ecx = 0x6c65746e, .edx = 0x49656e69 },
	/* leaf 1: host APIC ID 0x0e, 16 logical; ECX has MONITOR(3), VMX(5),
	 * PDCM(15), not TSC-deadline(24) */
	{ .function = 1, .eax = 0x000906ea, .ebx = 0x0e100800, .ecx = 0x7efafbff, .edx = 0xbfebfbff },
	/* leaf 4: L1d (2 threads share, 8 cores), L3 (16 share), terminator */
	{ .function = 4, .index = 0, .flags = SIG, .eax = 0x1c004121, .ebx = 0x01c0003f, .ecx = 0x3f },
	{ .function = 4, .index = 3, .flags = SIG, .eax = 0x1c03c163, .ebx = 0x03c0003f, .ecx = 0x2fff },
	{ .function = 4, .index = 4, .flags = SIG, .eax = 0 },
	{ .function = 5, .eax = 0x40, .ebx = 0x40, .ecx = 3, .edx = 0x11142120 },
	{ .function = 7, .index = 0, .flags = SIG, .ebx = 0x029c6fbf, .ecx = 0x40000020 },
	{ .function = 0xa, .eax = 0x07300404, .edx = 0x603 },
	/* host topology: must be replaced, never passed through */
	{ .function = 0xb, .index = 0, .flags = SIG, .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 0x0e },
	{ .function = 0xb, .index = 1, .flags = SIG, .eax = 4, .ebx = 16, .ecx = 0x201, .edx = 0x0e },
	{ .function = 0x1f, .index = 0, .flags = SIG, .eax = 1, .ebx = 2, .ecx = 0x100, .edx = 0x0e },
	{ .function = 0x40000000, .eax = 0x40000001, .ebx = 0x4b4d564b, .ecx = 0x564b4d56, .edx = 0x4d },
	/* everything this KVM offers: bits 0-7, 9, 11-14 and 24 */
	{ .function = 0x40000001, .eax = 0x01007afb },
	{ .function = 0x80000000, .eax = 0x8000000a },
	{ .function = 0x80000001, .ecx = 0x00000125, .edx = 0x2c100800 },  /* LAHF, SVM, ABM, PREFETCHW */
	{ .function = 0x8000000a, .eax = 1, .ebx = 0x8000, .edx = 0x1ebfbcff },
	{ .function = 0x80000008, .eax = 0x3027, .ecx = 0 },
};
#define NR_CANNED (sizeof(canned) / sizeof(canned[0]))

static const struct kvm_cpuid_entry2 *get(const struct kvm_cpuid_entry2 *e, int n,
					  uint32_t fn, uint32_t idx)
{
	const struct kvm_cpuid_entry2 *found = NULL;

	for (int i = 0; i < n; i++)
		if (e[i].function == fn && e[i].index == idx) {
			CHECK(found == NULL);          /* no duplicates */
			found = &e[i];
		}
	return found;
}

static int count_fn(const struct kvm_cpuid_entry2 *e, int n, uint32_t fn)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += e[i].function == fn;
	return c;
}

static void test_six_cpus_kernel(void)
{
	struct kvm_cpuid_entry2 out[NR_CANNED + X86_CPUID_EXTRA];
	struct x86_cpuid_params p = { .apic_id = 3, .nr_cpus = 6, .irqchip = IRQCHIP_KERNEL,
				      .tsc_deadline = true };
	int n = x86_cpuid_filter(canned, NR_CANNED, out, NR_CANNED + X86_CPUID_EXTRA, &p);
	const struct kvm_cpuid_entry2 *e;
	char sig[13] = { 0 };

	/* 17 in - 2 (0xB) - 1 (0x1F) - 2 (KVM) + 3 + 3 + 2 */
	CHECK_EQ(n, 20);
	if (n < 0)
		return;
	e = get(out, n, 1, 0);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ(e->eax, 0x000906ea);
		CHECK_EQ(e->ebx, 0x03060800);            /* APIC ID 3, 6 logical */
		CHECK_EQ(e->ecx, 0xfffa7bd7);            /* +hypervisor, +TSC-deadline, -MONITOR, -VMX, -PDCM */
		CHECK_EQ(e->edx, 0xbfebfbff);            /* HTT stays set */
	}
	/* leaf 4: 8 addressable core IDs (shift 3); L1 private, L3 shared by 8 */
	e = get(out, n, 4, 0);
	CHECK(e && e->eax == 0x1c000121);
	e = get(out, n, 4, 3);
	CHECK(e && e->eax == 0x1c01c163);
	e = get(out, n, 4, 4);
	CHECK(e && e->eax == 0);
	e = get(out, n, 5, 0);
	CHECK(e && !e->eax && !e->ebx && !e->ecx && !e->edx);
	e = get(out, n, 7, 0);
	CHECK(e && e->ecx == 0x40000000 && e->ebx == 0x029c6fbf);   /* WAITPKG off */
	e = get(out, n, 0xa, 0);
	CHECK(e && !e->eax && !e->ebx && !e->ecx && !e->edx);

	CHECK_EQ(count_fn(out, n, 0xb), 3);
	e = get(out, n, 0xb, 0);
	CHECK(e && e->eax == 0 && e->ebx == 1 && e->ecx == 0x100 && e->edx == 3 && e->flags == SIG);
	e = get(out, n, 0xb, 1);
	CHECK(e && e->eax == 3 && e->ebx == 6 && e->ecx == 0x201 && e->edx == 3 && e->flags == SIG);
	e = get(out, n, 0xb, 2);
	CHECK(e && e->eax == 0 && e->ebx == 0 && e->ecx == 2 && e->edx == 3);
	CHECK_EQ(count_fn(out, n, 0x1f), 3);
	e = get(out, n, 0x1f, 1);
	CHECK(e && e->eax == 3 && e->ebx == 6 && e->ecx == 0x201 && e->edx == 3);

	e = get(out, n, 0x40000000, 0);
	CHECK(e != NULL);
	if (e) {
		CHECK_EQ(e->eax, 0x40000001);
		memcpy(sig, &e->ebx, 4);
		memcpy(sig + 4, &e->ecx, 4);
		memcpy(sig + 8, &e->edx, 4);
		CHECK(memcmp(sig, "KVMKVMKVM\0\0\0", 12) == 0);
	}
	/* kvmclock (0, 3, 24), NOP_IO_DELAY (1), steal time (5), PV EOI (6) */
	e = get(out, n, 0x40000001, 0);
	CHECK(e && e->eax == 0x0100006b && e->edx == 0);
	/* AMD core count: ApicIdSize 3, NC 5 */
	e = get(out, n, 0x80000008, 0);
	CHECK(e && e->ecx == 0x3005 && e->eax == 0x3027);
	e = get(out, n, 0x80000001, 0);
	CHECK(e && e->ecx == 0x00000121 && e->edx == 0x2c100800);   /* SVM off */
	e = get(out, n, 0x8000000a, 0);
	CHECK(e && !e->eax && !e->ebx && !e->ecx && !e->edx);
}

static void test_one_cpu_user(void)
{
	struct kvm_cpuid_entry2 out[NR_CANNED + X86_CPUID_EXTRA];
	struct x86_cpuid_params p = { .apic_id = 0, .nr_cpus = 1, .irqchip = IRQCHIP_USER };
	int n = x86_cpuid_filter(canned, NR_CANNED, out, NR_CANNED + X86_CPUID_EXTRA, &p);
	const struct kvm_cpuid_entry2 *e;

	CHECK_EQ(n, 20);
	if (n < 0)
		return;
	e = get(out, n, 1, 0);
	CHECK(e && e->ebx == 0x00010800 && e->edx == (0xbfebfbffu & ~(1u << 28)));
	/* tsc_deadline false: bit 24 stays clear; x2APIC (21) offered in both
	 * modes (lagvisor's own through MSR exits in user mode) */
	CHECK(e && e->ecx == 0xfefa7bd7u);
	e = get(out, n, 0xb, 1);
	CHECK(e && e->eax == 0 && e->ebx == 1 && e->edx == 0);
	e = get(out, n, 4, 3);
	CHECK(e && e->eax == 0x00000163);        /* 1 core ID, nothing shared */
	/* user irqchip: kvmclock, steal time and PV EOI (lagvisor's own) */
	e = get(out, n, 0x40000001, 0);
	CHECK(e && e->eax == 0x01000069);
	/* --no-x2apic: only bit 21 goes */
	p.no_x2apic = true;
	n = x86_cpuid_filter(canned, NR_CANNED, out, NR_CANNED + X86_CPUID_EXTRA, &p);
	CHECK_EQ(n, 20);
	e = n < 0 ? NULL : get(out, n, 1, 0);
	CHECK(e && e->ecx == (0xfefa7bd7u & ~(1u << 21)));
}

static void test_edges(void)
{
	struct kvm_cpuid_entry2 out[NR_CANNED + X86_CPUID_EXTRA];
	struct x86_cpuid_params p = { .apic_id = 0, .nr_cpus = 2, .irqchip = IRQCHIP_KERNEL };
	/* a KVM that does not list 0x40000001 and has max basic leaf 0xd */
	struct kvm_cpuid_entry2 small[2] = {
		{ .function = 0, .eax = 0xd },
		{ .function = 1, .ecx = 0, .ebx = 0 },
	};
	const struct kvm_cpuid_entry2 *e;
	int n;

	CHECK_EQ(x86_cpuid_filter(canned, NR_CANNED, out, 19, &p), -E2BIG);
	p.apic_id = 2;
	CHECK_EQ(x86_cpuid_filter(canned, NR_CANNED, out, 30, &p), -EINVAL);
	p.apic_id = 0;
	p.nr_cpus = 0;
	CHECK_EQ(x86_cpuid_filter(canned, NR_CANNED, out, 30, &p), -EINVAL);

	p.nr_cpus = 2;
	n = x86_cpuid_filter(small, 2, out, 10, &p);
	CHECK_EQ(n, 7);                          /* 0, 1, 0xB x3, 0x4000000x x2 */
	CHECK_EQ(count_fn(out, n, 0x1f), 0);     /* max leaf 0xd: no 0x1F */
	e = get(out, n, 1, 0);
	CHECK(e && e->ebx == 0x00020000 && e->ecx == 0x80000000 && e->edx == 0x10000000);
	e = get(out, n, 0x40000001, 0);
	CHECK(e && e->eax == 0x0100006b);        /* the allow list as is */
}

int main(void)
{
	test_six_cpus_kernel();
	test_one_cpu_user();
	test_edges();
	return check_report("x86_test_cpuid");
}
