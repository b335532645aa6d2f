/*
 * Every statistic in one of KVM's binary statistics files (KVM_GET_STATS_FD
 * of a VM or of a vCPU; Linux >= 5.14): what QEMU's query-stats and
 * query-stats-schemas report, so lagvisor-qemu reports the same from the
 * same source. kvm_stats.h reads a few named vCPU counters cheaply; this
 * reads them all, descriptors included, for an occasional query.
 */
#ifndef LAGVISOR_VMM_KVM_STATS_ALL_H
#define LAGVISOR_VMM_KVM_STATS_ALL_H

#include <stdint.h>

struct vm;

/* One statistic: its descriptor's fields and its values. */
struct kvm_stat {
	const char *name;
	uint32_t flags;                /* KVM_STATS_TYPE_*, _UNIT_*, _BASE_* (linux/kvm.h) */
	int16_t exponent;              /* value * base^exponent in the unit */
	uint32_t bucket_size;          /* linear histograms */
	const uint64_t *values;        /* 1 for a counter, the buckets of a histogram */
	unsigned nr_values;
};

/* fn for each statistic of the stats file fd, in the file's order (the
 * pointers live for the call only). 0 or -errno. */
int kvm_stats_each(int fd, void (*fn)(void *arg, const struct kvm_stat *s), void *arg);

/*
 * The same for a running VM: vcpu -1 is the VM's own file (opened and
 * closed here), 0.. a vCPU's (its thread keeps it open). Any thread; holds
 * the VM's lock, so the vCPU threads cannot close theirs meanwhile. 0,
 * -ENOENT when that vCPU has no stats file (yet), -ESRCH when the VM is
 * stopping, or -errno.
 */
int vm_kvm_stats(struct vm *vm, int vcpu, void (*fn)(void *arg, const struct kvm_stat *s),
		 void *arg);

#endif
