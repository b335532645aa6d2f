/* KVM's paravirtual interface as a guest sees it (the parts tests use):
 * CPUID 0x40000001 feature bits and the steal-time area. */
#ifndef GUEST_KVM_PARA_H
#define GUEST_KVM_PARA_H

#include <stdint.h>

#define MSR_KVM_STEAL_TIME     0x4b564d03
#define KVM_FEATURE_STEAL_TIME 5

/* 64 bytes, 64-byte aligned; `version` is odd while the host writes. */
struct kvm_steal_time {
	uint64_t steal;
	uint32_t version;
	uint32_t flags;
	uint8_t preempted;
	uint8_t pad8[3];
	uint32_t pad[11];
};

/* Steal so far, read consistently (odd version: the VMM is writing). */
static inline uint64_t kvm_steal_read(const volatile struct kvm_steal_time *a)
{
	uint32_t v;
	uint64_t s;

	do {
		v = a->version;
		__asm__ volatile("" : : : "memory");
		s = a->steal;
		__asm__ volatile("" : : : "memory");
	} while ((v & 1) || v != a->version);
	return s;
}

#endif
