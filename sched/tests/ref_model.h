/*
 * A slow, obviously-correct reference of the scheduler for the randomized
 * test: plain arrays and linear scans, no tree, no zero point, absolute
 * virtual times. It applies the same operations with the same rules
 * (sched/README.md) and integer rounding, so after every step the library's
 * state must equal it exactly. Up to REF_MAX_PCPUS x REF_MAX_ENTS.
 */
#ifndef LAGVISOR_SCHED_TESTS_REF_MODEL_H
#define LAGVISOR_SCHED_TESTS_REF_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/sched.h"

#define REF_MAX_PCPUS 8
#define REF_MAX_ENTS 64

struct ref_ent {
	int st;                        /* enum sched_entity_state */
	unsigned pcpu;
	uint64_t v, d, vprot, slice, exec_start;
	int64_t vlag, rel, placed_lag;
	bool has_rel, never, idle, custom, delayed;
	uint32_t w, base_w;
	uint64_t allowed;              /* bit per pCPU */
	uint64_t migrations;
};

struct ref_rq {
	int curr;                      /* -1: none */
	bool resched, pending;
	uint64_t last_v;               /* V when the queue was last non-empty */
	int wake[REF_MAX_ENTS], nw;
	int drain[REF_MAX_ENTS], nd;
};

struct ref {
	const struct sched_domain *dom;   /* feature flags only */
	uint64_t base_slice, tick;
	unsigned np;
	struct ref_ent e[REF_MAX_ENTS];
	struct ref_rq q[REF_MAX_PCPUS];
	int errors;                    /* in-model invariant violations */
	char msg[200];
};

void ref_init(struct ref *r, const struct sched_domain *dom, unsigned np, uint64_t slice,
	      uint64_t tick, uint64_t v0);
uint64_t ref_V(struct ref *r, unsigned p);   /* without side effects */

void ref_add(struct ref *r, int id, uint32_t base_w, bool idle, uint64_t slice,
	     uint64_t allowed, unsigned create_pcpu, uint64_t now);
int ref_remove(struct ref *r, int id, uint64_t now);
int ref_wake(struct ref *r, int id, uint64_t now, unsigned waker, unsigned hint,
	     struct sched_wake_result *res);
int ref_take(struct ref *r, unsigned p);
int ref_finish(struct ref *r, unsigned p, uint64_t now);
int ref_block(struct ref *r, int id, uint64_t now);
int ref_schedule(struct ref *r, unsigned p, uint64_t now, struct sched_switch *sw);
int ref_tick(struct ref *r, unsigned p, uint64_t now);
int ref_yield(struct ref *r, unsigned p, uint64_t now);
int ref_migrate(struct ref *r, int id, unsigned dst, uint64_t now);
int ref_balance(struct ref *r, unsigned p, uint64_t now);
int ref_set_weight(struct ref *r, int id, uint32_t w, uint64_t now);
int ref_set_idle(struct ref *r, int id, bool idle, uint64_t now);
int ref_set_slice(struct ref *r, int id, uint64_t slice);
int ref_set_allowed(struct ref *r, int id, uint64_t allowed, uint64_t now);

#endif
