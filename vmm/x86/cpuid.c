/*
 * CPUID filtering (see cpuid.h). Topology: APIC ID = vCPU index, all
 * vCPUs cores of one package with one thread each. The core level's
 * x2APIC shift is ceil(log2(nr_cpus)) so IDs 0..nr_cpus-1 fit, and the
 * legacy "addressable IDs" fields use the same power of two.
 */
#include <errno.h>
#include <string.h>
#include <asm/kvm_para.h>

#include "vmm/x86/cpuid.h"

#define LEAF1_ECX_MONITOR     (1u << 3)
#define LEAF1_ECX_VMX         (1u << 5)
#define LEAF1_ECX_PDCM        (1u << 15)
#define LEAF1_ECX_X2APIC      (1u << 21)
#define LEAF1_ECX_TSC_DEADLINE (1u << 24)
#define LEAF1_ECX_HYPERVISOR  (1u << 31)
#define LEAF1_EDX_HTT         (1u << 28)
#define LEAF7_ECX_WAITPKG     (1u << 5)
#define EXT1_ECX_SVM          (1u << 2)
#define KVM_CPUID_SIGNATURE_LEAF 0x40000000u
#define KVM_CPUID_FEATURES_LEAF  0x40000001u
#define TOPO_LEVEL_SMT        1
#define TOPO_LEVEL_CORE       2

uint32_t x86_cpuid_kvm_features(enum irqchip_mode irqchip)
{
	/*
	 * kvmclock (both MSR sets + the stable bit) and steal time work with
	 * any irqchip (lagvisor owns steal time in user mode), and so does PV
	 * EOI (KVM's, or lagvisor's: pv_eoi.h). With KVM's LAPIC also no
	 * port 0x80 delays. Nothing
	 * that needs a hypercall (PV unhalt, PV IPIs, sched yield): lagvisor
	 * would have to implement it, and some hosts cannot run vmcall.
	 */
	uint32_t f = (1u << KVM_FEATURE_CLOCKSOURCE) | (1u << KVM_FEATURE_CLOCKSOURCE2) |
		     (1u << KVM_FEATURE_CLOCKSOURCE_STABLE_BIT) | (1u << KVM_FEATURE_STEAL_TIME) |
		     (1u << KVM_FEATURE_PV_EOI);

	if (irqchip == IRQCHIP_KERNEL)
		f |= 1u << KVM_FEATURE_NOP_IO_DELAY;
	return f;
}

static unsigned ceil_log2(unsigned n)
{
	unsigned s = 0;

	while ((1u << s) < n)
		s++;
	return s;
}

static const struct kvm_cpuid_entry2 *find_leaf(const struct kvm_cpuid_entry2 *in,
						unsigned nr, uint32_t function)
{
	for (unsigned i = 0; i < nr; i++)
		if (in[i].function == function)
			return &in[i];
	return NULL;
}

static struct kvm_cpuid_entry2 leaf(uint32_t function, uint32_t index, uint32_t flags,
				    uint32_t eax, uint32_t ebx, uint32_t ecx, uint32_t edx)
{
	return (struct kvm_cpuid_entry2){ .function = function, .index = index, .flags = flags,
					  .eax = eax, .ebx = ebx, .ecx = ecx, .edx = edx };
}

/* Cache leaves (4, 0x8000001D): EAX[25:14] = logical CPUs sharing - 1. */
static void fix_cache_leaf(struct kvm_cpuid_entry2 *e, unsigned ids, bool cores_field)
{
	unsigned level = (e->eax >> 5) & 7;
	uint32_t sharing = level >= 3 ? ids - 1 : 0;

	if ((e->eax & 0x1f) == 0)          /* no more caches */
		return;
	e->eax = (e->eax & ~(0xfffu << 14)) | (sharing << 14);
	if (cores_field)                   /* EAX[31:26] = addressable core IDs - 1 */
		e->eax = (e->eax & 0x03ffffffu) | ((ids - 1 > 63 ? 63 : ids - 1) << 26);
}

static void fix_leaf(struct kvm_cpuid_entry2 *e, const struct x86_cpuid_params *p,
		     unsigned shift)
{
	unsigned ids = 1u << shift;

	switch (e->function) {
	case 1:
		e->ecx |= LEAF1_ECX_HYPERVISOR;
		e->ecx &= ~(LEAF1_ECX_MONITOR | LEAF1_ECX_VMX | LEAF1_ECX_PDCM |
			    LEAF1_ECX_TSC_DEADLINE);
		if (p->tsc_deadline)
			e->ecx |= LEAF1_ECX_TSC_DEADLINE;
		if (p->no_x2apic)
			e->ecx &= ~LEAF1_ECX_X2APIC;
		e->ebx = (e->ebx & 0xffff) | (p->apic_id << 24) |
			 ((p->nr_cpus > 255 ? 255 : p->nr_cpus) << 16);
		if (p->nr_cpus > 1)
			e->edx |= LEAF1_EDX_HTT;
		else
			e->edx &= ~LEAF1_EDX_HTT;
		break;
	case 4:
		fix_cache_leaf(e, ids, true);
		break;
	case 5:                            /* MONITOR/MWAIT: not offered */
	case 0xa:                          /* no virtual PMU */
		e->eax = e->ebx = e->ecx = e->edx = 0;
		break;
	case 7:
		if (e->index == 0)
			e->ecx &= ~LEAF7_ECX_WAITPKG;
		break;
	case 0x80000001:                   /* no nested SVM: lagvisor keeps no nested state */
		e->ecx &= ~EXT1_ECX_SVM;
		break;
	case 0x8000000a:                   /* SVM features */
		e->eax = e->ebx = e->ecx = e->edx = 0;
		break;
	case 0x80000008:                   /* AMD: ApicIdSize[15:12], NC[7:0] */
		e->ecx = (e->ecx & ~0xf0ffu) | (shift << 12) | (p->nr_cpus - 1);
		break;
	case 0x8000001d:
		fix_cache_leaf(e, ids, false);
		break;
	case 0x8000001e:                   /* AMD: ext APIC ID, 1 thread/core, node 0 */
		e->eax = p->apic_id;
		e->ebx = (e->ebx & ~0xffffu) | (p->apic_id & 0xff);
		e->ecx &= ~0x7ffu;
		break;
	}
}

static int push(struct kvm_cpuid_entry2 *out, unsigned *n, unsigned max,
		struct kvm_cpuid_entry2 e)
{
	if (*n >= max)
		return -E2BIG;
	out[(*n)++] = e;
	return 0;
}

/* Extended topology (0xB or 0x1F): SMT level, core level, end marker. */
static int push_topology(struct kvm_cpuid_entry2 *out, unsigned *n, unsigned max,
			 uint32_t function, const struct x86_cpuid_params *p, unsigned shift)
{
	uint32_t f = KVM_CPUID_FLAG_SIGNIFCANT_INDEX;
	const struct kvm_cpuid_entry2 levels[] = {
		leaf(function, 0, f, 0, 1, TOPO_LEVEL_SMT << 8, p->apic_id),
		leaf(function, 1, f, shift, p->nr_cpus, (TOPO_LEVEL_CORE << 8) | 1, p->apic_id),
		leaf(function, 2, f, 0, 0, 2, p->apic_id),  /* level type 0: end */
	};

	for (unsigned i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (push(out, n, max, levels[i]))
			return -E2BIG;
	return 0;
}

int x86_cpuid_filter(const struct kvm_cpuid_entry2 *in, unsigned nr_in,
		     struct kvm_cpuid_entry2 *out, unsigned max_out,
		     const struct x86_cpuid_params *p)
{
	const struct kvm_cpuid_entry2 *l0 = find_leaf(in, nr_in, 0);
	const struct kvm_cpuid_entry2 *kvm = find_leaf(in, nr_in, KVM_CPUID_FEATURES_LEAF);
	unsigned shift, n = 0;
	uint32_t features;
	int ret;

	if (p->nr_cpus == 0 || p->nr_cpus > 255 || p->apic_id >= p->nr_cpus)
		return -EINVAL;
	shift = ceil_log2(p->nr_cpus);
	for (unsigned i = 0; i < nr_in; i++) {
		struct kvm_cpuid_entry2 e = in[i];

		if (e.function == 0xb || e.function == 0x1f ||
		    e.function == KVM_CPUID_SIGNATURE_LEAF || e.function == KVM_CPUID_FEATURES_LEAF)
			continue;
		fix_leaf(&e, p, shift);
		if (push(out, &n, max_out, e))
			return -E2BIG;
	}
	if (l0 && l0->eax >= 0xb) {
		ret = push_topology(out, &n, max_out, 0xb, p, shift);
		if (ret)
			return ret;
	}
	if (l0 && l0->eax >= 0x1f && find_leaf(in, nr_in, 0x1f)) {
		ret = push_topology(out, &n, max_out, 0x1f, p, shift);
		if (ret)
			return ret;
	}
	/* "KVMKVMKVM\0\0\0" in EBX, ECX, EDX, little-endian. */
	ret = push(out, &n, max_out, leaf(KVM_CPUID_SIGNATURE_LEAF, 0, 0, KVM_CPUID_FEATURES_LEAF,
					  0x4b4d564b, 0x564b4d56, 0x0000004d));
	if (ret)
		return ret;
	features = x86_cpuid_kvm_features(p->irqchip);
	if (kvm)
		features &= kvm->eax;
	ret = push(out, &n, max_out, leaf(KVM_CPUID_FEATURES_LEAF, 0, 0, features, 0, 0, 0));
	return ret ? ret : (int)n;
}
