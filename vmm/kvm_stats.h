/*
 * KVM's binary statistics of one vCPU (KVM_GET_STATS_FD, Linux >= 5.14):
 * the named counters KVM keeps, such as "exits" and "insn_emulation",
 * which tell whether a vCPU really ran natively. Read from the file KVM
 * hands out, without stopping the vCPU.
 */
#ifndef LAGVISOR_VMM_KVM_STATS_H
#define LAGVISOR_VMM_KVM_STATS_H

#include <stdbool.h>
#include <stdint.h>

/* The counters lagvisor reports; a name KVM does not have reads as absent. */
enum kvm_stat_id {
	KVM_STAT_EXITS,
	KVM_STAT_INSN_EMULATION,
	KVM_STAT_HALT_EXITS,
	KVM_STAT_IRQ_INJECTIONS,
	KVM_STAT_NR,
};

struct kvm_stats {
	int fd;                          /* -1: none */
	int64_t off[KVM_STAT_NR];        /* data offset of each, -1: absent */
};

/* Open the vCPU's stats and find the counters. 0 or -errno (no stats fd:
 * an older kernel; s->fd stays -1 and reads fail). */
int kvm_stats_open(struct kvm_stats *s, int vcpu_fd);
/* Current value; false when KVM does not have the counter. */
bool kvm_stats_read(const struct kvm_stats *s, enum kvm_stat_id id, uint64_t *val);
void kvm_stats_close(struct kvm_stats *s);
/* "exits", "insn_emulation", ... */
const char *kvm_stats_name(enum kvm_stat_id id);

#endif
