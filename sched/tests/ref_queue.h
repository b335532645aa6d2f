/*
 * Internals of the reference model shared by ref_queue.c (per-queue math)
 * and ref_model.c (the operations). Test-only.
 */
#ifndef LAGVISOR_SCHED_TESTS_REF_QUEUE_H
#define LAGVISOR_SCHED_TESTS_REF_QUEUE_H

#include "ref_model.h"

typedef __int128 s128;

#define NONE (-1)
#define FEAT(f) sched_feature_enabled(r->dom, SCHED_FEAT_##f)

enum { F_WAKEUP = 1, F_INITIAL = 2 };

static inline bool before(uint64_t a, uint64_t b) { return (int64_t)(a - b) < 0; }
static inline uint64_t vmin(uint64_t a, uint64_t b) { return before(a, b) ? a : b; }

static inline uint64_t df(uint64_t delta, uint32_t w)
{
	return (uint64_t)((unsigned __int128)delta * 1024 / w);
}

/* sum_i w_i*(v_i - base) and W of a queue, so that eligibility of any v is
 * O(1): V_exact >= v  <=>  S - W*(v - base) >= 0 */
struct rm_load {
	uint64_t base, W;
	s128 S;
};

void rm_model_fail(struct ref *r, const char *what, int id);
bool rm_allowed(struct ref *r, int id, unsigned p);
bool rm_on_rq(struct ref *r, int id, unsigned p);
bool rm_in_tree(struct ref *r, int id, unsigned p);
unsigned rm_nr_queued(struct ref *r, unsigned p);
unsigned rm_nr_normal(struct ref *r, unsigned p);
unsigned rm_runnable(struct ref *r, unsigned p);
uint64_t rm_weight_sum(struct ref *r, unsigned p);
uint64_t rm_avg(struct ref *r, unsigned p);
struct rm_load rm_load_of(struct ref *r, unsigned p);
bool rm_eligible_in(const struct rm_load *l, uint64_t v);
bool rm_eligible(struct ref *r, unsigned p, uint64_t v);
uint64_t rm_max_slice(struct ref *r, unsigned p);
uint64_t rm_min_slice(struct ref *r, unsigned p, bool with_curr);
int64_t rm_lag_clamped(struct ref *r, unsigned p, int id, uint64_t V);
bool rm_update_deadline(struct ref *r, unsigned p, int id);
void rm_update_curr(struct ref *r, unsigned p, uint64_t now);
void rm_place(struct ref *r, unsigned p, int id, unsigned flags);
void rm_enqueue(struct ref *r, unsigned p, int id, unsigned flags);
void rm_dequeue(struct ref *r, unsigned p, int id, bool sleep);
bool rm_tree_less(struct ref *r, int a, int b);
int rm_pick(struct ref *r, unsigned p, bool protect);
void rm_set_next(struct ref *r, unsigned p, int id, uint64_t now);
void rm_put_prev(struct ref *r, unsigned p);
s128 rm_fdiv(s128 n, s128 d);
void rm_reweight(struct ref *r, unsigned p, int id, uint32_t w);
bool rm_wakeup_preempt(struct ref *r, unsigned p, int id);
void rm_migrate(struct ref *r, unsigned src, unsigned dst, int id, uint64_t now);
bool rm_idle_for(struct ref *r, unsigned p, bool idle_class);
unsigned rm_least_loaded(struct ref *r, int id);
unsigned rm_select_pcpu(struct ref *r, int id, unsigned prev, unsigned waker, unsigned hint,
			bool *idle);

#endif
