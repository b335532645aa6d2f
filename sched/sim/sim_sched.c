/*
 * The simulator's binding of the real sched/ library: one domain in a
 * malloc'd block, a host-ops table whose kick and timer become simulator
 * events, and a trace hook that only counts. This is the one file that
 * includes sched/sched.h, so an API change touches nothing else here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "sim.h"

_Static_assert(SIM_MAX_PCPUS == SCHED_MAX_PCPUS, "the simulator takes every pCPU count sched/ does");

struct sim_sched {
	struct sched_handle h;
	void *mem;
	struct sim_vcpu **by_id;	/* entity id -> vCPU, max_entities of them */
	unsigned max_entities;
	struct sim_sched_counts counts;
};

static void host_kick(void *opaque, unsigned pcpu)
{
	sim_host_kick(opaque, pcpu);
}

static void host_arm_timer(void *opaque, unsigned pcpu, uint64_t deadline_ns)
{
	sim_host_timer(opaque, pcpu, deadline_ns);
}

static void host_trace(void *opaque, const struct sched_trace_event *ev)
{
	struct sim *s = opaque;
	struct sim_sched_counts *c = &s->sched->counts;
	static const char *const names[] = {
		[SCHED_TRACE_ENQUEUE] = "enqueue", [SCHED_TRACE_DEQUEUE] = "dequeue",
		[SCHED_TRACE_SWITCH] = "switch", [SCHED_TRACE_WAKE] = "wake",
		[SCHED_TRACE_PREEMPT] = "preempt", [SCHED_TRACE_MIGRATE] = "migrate",
		[SCHED_TRACE_RESCHED] = "resched", [SCHED_TRACE_REWEIGHT] = "reweight",
		[SCHED_TRACE_YIELD] = "yield",
	};

	if (ev->now_ns < s->p.trace_until_ns) {
		const char *n = ev->type < sizeof(names) / sizeof(names[0]) && names[ev->type] ?
					names[ev->type] : "?";

		fprintf(stderr, "%12.6f ms cpu%u %-8s ent %d other %d arg %lld %lld\n",
			(double)ev->now_ns / 1e6, ev->pcpu, n, (int)ev->entity, (int)ev->other,
			(long long)ev->arg0, (long long)ev->arg1);
	}
	if (ev->now_ns < s->p.warmup_ns)
		return;
	switch (ev->type) {
	case SCHED_TRACE_WAKE:
		if (ev->arg0 == SCHED_WAKE_LISTED)
			c->wake_listed++;
		else if (ev->arg0 == SCHED_WAKE_ENQUEUED)
			c->wake_enqueued++;
		break;
	case SCHED_TRACE_PREEMPT:
		c->wakeup_preempts++;
		break;
	case SCHED_TRACE_MIGRATE:
		c->migrations++;
		break;
	default:
		break;
	}
}

static const struct sched_host_ops sim_host_ops = {
	.kick = host_kick,
	.arm_timer = host_arm_timer,
	.trace = host_trace,
};

int sim_sched_init(struct sim *s)
{
	struct sched_domain_params dp = {
		.base_slice_ns = s->p.slice_ns,
		.tick_ns = SCHED_DEFAULT_TICK_NS,
		.features = s->p.features[0] ? s->p.features : NULL,
	};
	unsigned max_ent = s->p.max_entities ? s->p.max_entities : SIM_MAX_ENTITIES;
	size_t len = sched_domain_size(s->nr_pcpus, max_ent);
	struct sim_sched *ss;
	int r;

	if (!len)
		return -EINVAL;
	len = (len + 63) & ~(size_t)63;
	ss = calloc(1, sizeof(*ss));
	if (!ss)
		return -ENOMEM;
	ss->max_entities = max_ent;
	ss->by_id = calloc(max_ent, sizeof(*ss->by_id));
	ss->mem = aligned_alloc(64, len);
	if (!ss->mem || !ss->by_id) {
		free(ss->mem);
		free(ss->by_id);
		free(ss);
		return -ENOMEM;
	}
	memset(ss->mem, 0, len);
	r = sched_domain_init(ss->mem, len, s->nr_pcpus, max_ent, &dp);
	if (r) {
		fprintf(stderr, "lagvisor-sim: bad scheduler parameters (features \"%s\"): %d\n",
			s->p.features, r);
		free(ss->mem);
		free(ss->by_id);
		free(ss);
		return r;
	}
	r = sched_handle_init(&ss->h, ss->mem, len, &sim_host_ops, s);
	if (r) {
		sched_domain_destroy(ss->mem);
		free(ss->mem);
		free(ss->by_id);
		free(ss);
		return r;
	}
	s->sched = ss;
	return 0;
}

void sim_sched_fini(struct sim *s)
{
	sched_domain_destroy(s->sched->mem);
	free(s->sched->mem);
	free(s->sched->by_id);
	free(s->sched);
	s->sched = NULL;
}

static void check(struct sim *s, int r, const char *what)
{
	if (r < 0) {
		char buf[96];

		snprintf(buf, sizeof(buf), "sched/ %s failed", what);
		sim_fail(s, r, buf);
	}
}

void sim_sched_create(struct sim *s, struct sim_vcpu *v)
{
	struct sched_entity_params ep = {
		.weight = v->weight,
		.idle_class = v->idle_class,
		.slice_ns = v->slice_ns,
		.create_pcpu = (unsigned)v->creator,
		.cookie = v->id,
	};
	unsigned id = 0;
	int r = sched_entity_add(&s->sched->h, &ep, s->now, &id);

	check(s, r, "entity_add");
	if (r < 0)
		return;
	if (id >= s->sched->max_entities) {
		sim_fail(s, -ERANGE, "entity id out of range");
		return;
	}
	v->se = id;
	s->sched->by_id[id] = v;
}

void sim_sched_remove(struct sim *s, struct sim_vcpu *v)
{
	check(s, sched_entity_remove(&s->sched->h, v->se, s->now), "entity_remove");
	s->sched->by_id[v->se] = NULL;
	v->se = UINT32_MAX;
}

/*
 * The HOST model's wake: the pCPU is select_idle_sibling's (sim_host.c),
 * not the library's domain-wide idle scan, so the entity is allowed only
 * that pCPU for the wake (sched_wake then takes it, as the least loaded
 * allowed one) and everything again after. Linux has no such pinning; it
 * is how the model reuses the library's placement and preemption with
 * another choice of queue.
 */
static int wake_pinned(struct sim *s, struct sim_vcpu *v, int waker, struct sched_wake_result *res)
{
	int prev = sim_sched_prev(s, v);
	unsigned target = sim_host_select(s, prev < 0 ? v->creator : prev, waker);
	struct sched_cpuset one, all;
	int r;

	sched_cpuset_zero(&one);
	sched_cpuset_set(&one, target);
	sched_cpuset_zero(&all);
	for (unsigned i = 0; i < s->nr_pcpus; i++)
		sched_cpuset_set(&all, i);
	r = sched_set_allowed(&s->sched->h, v->se, &one, s->now);
	if (r < 0)
		return r;
	r = sched_wake(&s->sched->h, v->se, s->now, waker < 0 ? SCHED_NONE : (unsigned)waker, res);
	if (r < 0)
		return r;
	return sched_set_allowed(&s->sched->h, v->se, &all, s->now);
}

/* What vmm/sched/sched_bind.c's sync_learn converges to: a message vCPU halts
 * right after its wakes, so they are marked SCHED_WAKE_SYNC (IPI_HANDOFF);
 * no other workload's are. The binding marks only the first wake after
 * each halt; here every wake of a burst is marked, the same with one
 * worker per round (bench-tail's 2:1 on 2 pCPUs), more handoff with more. */
static unsigned sync_hint(struct sim *s, int waker)
{
	const struct sim_vcpu *w = waker >= 0 ? s->pcpu[waker].guest : NULL;

	return w && w->wl == SIM_WL_MSG ? SCHED_WAKE_SYNC : 0;
}

void sim_sched_wake(struct sim *s, struct sim_vcpu *v, int waker)
{
	struct sched_wake_result res;
	int r;

	if (s->p.model == SIM_MODEL_HOST)
		r = wake_pinned(s, v, waker, &res);
	else
		r = sched_wake_hint(&s->sched->h, v->se, s->now,
				    waker < 0 ? SCHED_NONE : (unsigned)waker, sync_hint(s, waker),
				    &res);
	check(s, r, "wake");
	if (r >= 0 && res.how == SCHED_WAKE_ALREADY)
		sim_fail(s, -EPROTO, "sched_wake: blocked vCPU reported already runnable");
}

bool sim_sched_pcpu_idle(struct sim *s, unsigned pcpu)
{
	struct sched_pcpu_info info;
	int r = sched_pcpu_get_info(&s->sched->h, pcpu, &info);

	check(s, r, "pcpu_get_info");
	return r >= 0 && info.idle;
}

int sim_sched_prev(struct sim *s, struct sim_vcpu *v)
{
	struct sched_entity_info info;
	int r = sched_entity_get_info(&s->sched->h, v->se, &info);

	check(s, r, "entity_get_info");
	return r < 0 || info.pcpu == SCHED_NONE ? -1 : (int)info.pcpu;
}

int sim_sched_take(struct sim *s, unsigned pcpu)
{
	int r = sched_wake_take(&s->sched->h, pcpu);

	check(s, r, "wake_take");
	return r;
}

void sim_sched_finish(struct sim *s, unsigned pcpu)
{
	check(s, sched_wake_finish(&s->sched->h, pcpu, s->now), "wake_finish");
}

void sim_sched_block(struct sim *s, struct sim_vcpu *v)
{
	check(s, sched_block(&s->sched->h, v->se, s->now), "block");
}

bool sim_sched_tick(struct sim *s, unsigned pcpu)
{
	int r = sched_tick(&s->sched->h, pcpu, s->now);

	check(s, r, "tick");
	return r > 0;
}

struct sim_vcpu *sim_sched_schedule(struct sim *s, unsigned pcpu)
{
	struct sched_switch sw;
	struct sim_vcpu *next;
	int r = sched_schedule(&s->sched->h, pcpu, s->now, &sw);

	check(s, r, "schedule");
	if (r < 0 || sw.next == SCHED_NONE)
		return NULL;
	next = sw.next < s->sched->max_entities ? s->sched->by_id[sw.next] : NULL;
	if (!next) {
		sim_fail(s, -EPROTO, "sched_schedule picked an unknown entity");
		return NULL;
	}
	if (!next->first_pick_seen) {
		next->first_pick_seen = true;
		next->first_pick_dv = sim_sched_dv(s, next);
	}
	return next;
}

void sim_sched_balance(struct sim *s, unsigned pcpu)
{
	check(s, sched_balance(&s->sched->h, pcpu, s->now), "balance");
}

int64_t sim_sched_dv(struct sim *s, struct sim_vcpu *v)
{
	struct sched_entity_info info;
	int r = sched_entity_get_info(&s->sched->h, v->se, &info);

	check(s, r, "entity_get_info");
	if (r < 0)
		return 0;
	return (int64_t)(info.deadline - info.vruntime);
}

int sim_sched_check(struct sim *s)
{
	char msg[256];
	int r = sched_domain_check(&s->sched->h, msg, sizeof(msg));

	if (r < 0) {
		char buf[320];

		snprintf(buf, sizeof(buf), "scheduler invariant broken: %s", msg);
		sim_fail(s, r, buf);
	}
	return r < 0 ? r : 0;
}

void sim_sched_counts(const struct sim *s, struct sim_sched_counts *out)
{
	*out = s->sched->counts;
}

int sim_sched_features_check(const char *list, char *bad, size_t bad_len)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		const char *name = p;
		bool known = false;

		if (n > 3 && !strncmp(name, "NO_", 3)) {
			name += 3;
			n -= 3;
		}
		for (unsigned f = 0; f < SCHED_FEAT_COUNT && !known; f++) {
			const char *fn = sched_feature_name((enum sched_feature)f);

			known = fn && strlen(fn) == n && !strncmp(fn, name, n);
		}
		if (n && !known) {
			snprintf(bad, bad_len, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)), p);
			return -EINVAL;
		}
		p = end ? end + 1 : NULL;
	}
	return 0;
}
