/*
 * steal-time: the KVM steal-time area (CPUID 0x40000001 EAX bit 5,
 * MSR_KVM_STEAL_TIME) is kept up to date by the VMM: after registering a
 * 64-byte aligned struct, `version` changes while the vCPU keeps exiting
 * (HLTs on a LAPIC one-shot here), is even whenever read consistently,
 * `steal` never goes backwards and `preempted` reads 0 while the vCPU runs.
 * Steal itself may stay 0 on an idle host; its value is printed.
 */
#include "guest.h"

#define MSR_KVM_STEAL_TIME  0x4b564d03
#define KVM_FEATURE_STEAL_TIME 5
#define VEC_TIMER  0x40
#define ROUNDS     200
#define TICKS      (1u << 20)      /* ~1 ms at 1 GHz */

struct kvm_steal_time {
	uint64_t steal;
	uint32_t version;
	uint32_t flags;
	uint8_t preempted;
	uint8_t pad8[3];
	uint32_t pad[11];
};

static volatile struct kvm_steal_time st __attribute__((aligned(64)));

static void timer_handler(struct trap_frame *f)
{
	(void)f;
}

/* One consistent read: retry while the VMM is in the middle of an update. */
static void snapshot(uint32_t *version, uint64_t *steal, uint8_t *preempted)
{
	uint32_t v;

	do {
		v = st.version;
		barrier();
		*steal = st.steal;
		*preempted = st.preempted;
		barrier();
	} while ((v & 1) || v != st.version);
	*version = v;
}

int main(int argc, char **argv)
{
	uint32_t v0, v, versions = 0;
	uint64_t s0, s, backwards = 0;
	uint8_t pre, pre_seen = 0;

	(void)argc, (void)argv;
	if (cpuid(0x40000000).a < 0x40000001 ||
	    !(cpuid(0x40000001).a & (1u << KVM_FEATURE_STEAL_TIME))) {
		report_skip("no KVM steal time in CPUID 0x40000001");
		return report_summary();
	}
	report(true, "CPUID 0x40000001 offers steal time (EAX 0x%x)", cpuid(0x40000001).a);
	irq_set_handler(VEC_TIMER, timer_handler);
	wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&st | 1);
	report(rdmsr(MSR_KVM_STEAL_TIME) == ((uint64_t)(uintptr_t)&st | 1),
	       "MSR_KVM_STEAL_TIME reads back");
	snapshot(&v0, &s0, &pre);
	for (unsigned i = 0; i < ROUNDS; i++) {
		irq_disable();
		lapic_timer_oneshot(VEC_TIMER, TICKS);
		safe_halt();
		snapshot(&v, &s, &pre);
		if (v != v0)
			versions++;
		if (s < s0)
			backwards++;
		pre_seen |= pre;
		v0 = v;
		s0 = s;
	}
	irq_enable();
	report(versions > 0, "steal-time area updated (version changed %u times over "
	       "%u halts, now %u)", versions, ROUNDS, v);
	report(backwards == 0, "steal never went backwards (now %lu ns)", s);
	report(pre_seen == 0, "preempted reads 0 while running");
	wrmsr(MSR_KVM_STEAL_TIME, 0);
	return report_summary();
}
