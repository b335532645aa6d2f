/*
 * sched_bind's two halves share this: sched_bind_pcpu.c (the per-pCPU
 * runner-token protocol, the host ops sched/ calls, grants, dead members)
 * and sched_bind.c (what a vCPU thread does: block, wake, check, park).
 * See sched_bind.h for the protocol.
 */
#ifndef LAGVISOR_VMM_SCHED_BIND_INTERNAL_H
#define LAGVISOR_VMM_SCHED_BIND_INTERNAL_H

#include <time.h>

#include "vmm/sched/sched_bind.h"

#define GRANT_CLAIM 0x80000000u        /* grant word: "claim this pCPU and drain it" */

/* The vCPU this thread is (NULL for I/O and other threads). */
extern __thread struct sched_bind_vcpu *sched_bind_self;

static inline struct sched_shm_pcpu *bind_pcpu(struct sched_bind *b, unsigned p)
{
	return &b->shm->pcpus[p];
}

static inline struct sched_shm_vcpu *bind_vcpu(struct sched_bind *b, unsigned id)
{
	return &b->shm->vcpus[id];
}

/* The token a thread of this member writes into `released` while it
 * claims a pCPU (sched_shm.h). */
static inline uint32_t bind_claim_token(const struct sched_bind *b)
{
	return SCHED_SHM_CLAIM_BASE + (b->shm->member == SCHED_NONE ? 0 : b->shm->member);
}

/* futex(2) on a word that may be shared between processes. */
long sched_bind_futex(uint32_t *uaddr, int op, uint32_t val, const struct timespec *ts);

/* Hand pCPU word-1 to entity id's thread (word: pCPU + 1, | GRANT_CLAIM
 * for "claim and drain it"; a claim never overwrites a real grant). */
void sched_bind_grant(struct sched_bind *b, unsigned id, uint32_t word);

/* Idle pCPU p needs a decision: claim it, drain, pick, grant. */
void sched_bind_service(struct sched_bind *b, unsigned p);

/* What host ops of this thread's last sched_* calls left to do. */
void sched_bind_service_pending(struct sched_bind *b);

/* Drop p from that list (the woken thread will claim it instead). */
void sched_bind_unservice(unsigned p);

/* The holder of p lets it go to next (SCHED_NONE: idle). */
void sched_bind_hand_on(struct sched_bind *b, unsigned p, uint32_t next);

/* Wake entity id (sched_bind_vcpu_wake's work, for any entity of the
 * domain): waker_pcpu as sched_wake_hint's, hint its SCHED_WAKE_* flags.
 * enum sched_wake_how or -errno. */
int sched_bind_wake_entity(struct sched_bind *b, unsigned id, unsigned waker_pcpu,
			   unsigned hint);

/* The holder of a pCPU wakes blocked vCPUs whose deadline passed
 * (sched_bind_sleepers.c). _arm: v, still holding its pCPU, blocks until
 * deadline_ns (0: none, nothing published); _disarm: it runs again. */
void sched_bind_sleeper_arm(struct sched_bind_vcpu *v, uint64_t deadline_ns);
void sched_bind_sleeper_disarm(struct sched_bind_vcpu *v);

/* Wake p's sleepers whose deadline is <= now (any thread that holds or
 * decides for p). Returns how many were woken. */
int sched_bind_sleepers_wake(struct sched_bind *b, unsigned p, uint64_t now);

#endif
