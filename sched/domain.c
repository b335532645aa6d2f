/*
 * Domain layout, handles, feature flags and the entity table.
 *
 * Block layout (offsets, no pointers):
 *   struct sched_domain | nr_pcpus x struct sched_rq | max_entities x struct sched_ent
 */
#include <errno.h>
#include <string.h>

#include "sched/internal.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

static const char *const feature_names[SCHED_FEAT_COUNT] = {
#define SCHED_FEATURE_NAME(name, def) [SCHED_FEAT_##name] = #name,
	SCHED_FEATURES(SCHED_FEATURE_NAME)
#undef SCHED_FEATURE_NAME
};

static const uint64_t feature_defaults = 0
#define SCHED_FEATURE_DEF(name, def) | ((uint64_t)(def) << SCHED_FEAT_##name)
	SCHED_FEATURES(SCHED_FEATURE_DEF)
#undef SCHED_FEATURE_DEF
	;

/* Linux's sched_prio_to_weight: nice -20..19, each step ~1.25x. */
static const uint32_t nice_weights[40] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
	1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
	110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};


uint32_t sched_nice_to_weight(int nice)
{
	if (nice < -20)
		nice = -20;
	if (nice > 19)
		nice = 19;
	return nice_weights[nice + 20];
}

static size_t rq_off(void)
{
	return ALIGN_UP(sizeof(struct sched_domain), 64);
}

static size_t ent_off(unsigned nr_pcpus)
{
	return ALIGN_UP(rq_off() + (size_t)nr_pcpus * sizeof(struct sched_rq), 64);
}

size_t sched_domain_size(unsigned nr_pcpus, unsigned max_entities)
{
	if (nr_pcpus < 1 || nr_pcpus > SCHED_MAX_PCPUS || max_entities < 1 ||
	    max_entities > SCHED_MAX_ENTITIES)
		return 0;
	return ent_off(nr_pcpus) + (size_t)max_entities * sizeof(struct sched_ent);
}

uint64_t sched_default_slice_ns(unsigned nr_pcpus)
{
	unsigned factor = 1;

	for (unsigned n = nr_pcpus < 8 ? nr_pcpus : 8; n > 1; n /= 2)
		factor++;
	return SCHED_SLICE_UNIT_NS * factor;
}

int sched_domain_init(void *mem, size_t len, unsigned nr_pcpus, unsigned max_entities,
		      const struct sched_domain_params *params)
{
	size_t need = sched_domain_size(nr_pcpus, max_entities);
	struct sched_domain *d = mem;
	int r;

	if (!mem || !need || len < need || ((uintptr_t)mem & 15))
		return -EINVAL;
	if (params && ((params->base_slice_ns && params->base_slice_ns > 1000000000ull) ||
		       params->tick_ns > 1000000000ull))
		return -EINVAL;
	memset(mem, 0, need);
	d->size = need;
	d->nr_pcpus = nr_pcpus;
	d->max_entities = max_entities;
	d->base_slice_ns = params && params->base_slice_ns ? params->base_slice_ns
							    : sched_default_slice_ns(nr_pcpus);
	d->tick_ns = params && params->tick_ns ? params->tick_ns : SCHED_DEFAULT_TICK_NS;
	d->features = feature_defaults;
	d->rq_off = rq_off();
	d->ent_off = ent_off(nr_pcpus);
	r = sched_lock_init(&d->lock);
	if (r)
		return r;
	for (unsigned i = 0; i < nr_pcpus; i++) {
		struct sched_rq *rq = dom_rq(d, i);

		rq->index = i;
		rq->v0 = params ? params->start_vruntime : 0;
		rq->root = rq->curr = SCHED_NONE;
		rq->wake_head = rq->wake_tail = rq->drain_head = rq->drain_tail = SCHED_NONE;
		r = sched_lock_init(&rq->lock);
		if (r)
			return r;
		d->idle_mask[i / 64] |= 1ull << (i % 64);
		d->idle_normal_mask[i / 64] |= 1ull << (i % 64);
	}
	for (unsigned i = 0; i < max_entities; i++) {
		struct sched_ent *e = dom_ent(d, i);

		e->state = SCHED_ES_FREE;
		e->left = e->right = SCHED_NONE;
		e->next = i + 1 < max_entities ? i + 1 : SCHED_NONE;
		r = sched_lock_init(&e->lock);
		if (r)
			return r;
	}
	d->free_head = 0;
	if (params && params->features) {
		r = sched_features_parse(d, params->features);
		if (r)
			return r;
	}
	d->magic = SCHED_MAGIC;
	return 0;
}

void sched_domain_destroy(void *mem)
{
	struct sched_domain *d = mem;

	if (!d || d->magic != SCHED_MAGIC)
		return;
	for (unsigned i = 0; i < d->nr_pcpus; i++)
		sched_lock_destroy(&dom_rq(d, i)->lock);
	for (unsigned i = 0; i < d->max_entities; i++)
		sched_lock_destroy(&dom_ent(d, i)->lock);
	sched_lock_destroy(&d->lock);
	d->magic = 0;
}

int sched_handle_init(struct sched_handle *h, void *mem, size_t len,
		      const struct sched_host_ops *ops, void *opaque)
{
	struct sched_domain *d = mem;

	if (!h || !d || !ops || !ops->kick || len < sizeof(*d) || d->magic != SCHED_MAGIC ||
	    d->size > len)
		return -EINVAL;
	/* The block may be a file another process wrote: its shape must be
	 * the one its sizes give, or the queues and entities lie elsewhere. */
	if (d->size != sched_domain_size(d->nr_pcpus, d->max_entities) ||
	    d->rq_off != rq_off() || d->ent_off != ent_off(d->nr_pcpus))
		return -EINVAL;
	h->dom = d;
	h->ops = ops;
	h->opaque = opaque;
	return 0;
}

unsigned sched_nr_pcpus(const struct sched_handle *h)
{
	return h->dom->nr_pcpus;
}

unsigned sched_max_entities(const struct sched_handle *h)
{
	return h->dom->max_entities;
}

void sched_trace(struct sched_handle *h, uint32_t type, uint32_t pcpu, uint32_t ent,
		 uint32_t other, int64_t a0, int64_t a1, uint64_t now_ns)
{
	struct sched_trace_event ev = {
		.now_ns = now_ns, .type = type, .pcpu = pcpu, .entity = ent,
		.other = other, .arg0 = a0, .arg1 = a1,
	};

	if (h->ops->trace)
		h->ops->trace(h->opaque, &ev);
}

/* ---- features ----------------------------------------------------------- */

static int feature_lookup(const char *name, size_t len)
{
	for (int i = 0; i < SCHED_FEAT_COUNT; i++)
		if (strlen(feature_names[i]) == len && !strncmp(feature_names[i], name, len))
			return i;
	return -1;
}

static int feature_set_n(struct sched_domain *d, const char *s, size_t len)
{
	bool on = true;
	int f;

	if (len > 3 && !strncmp(s, "NO_", 3)) {
		on = false;
		s += 3;
		len -= 3;
	}
	f = feature_lookup(s, len);
	if (f < 0)
		return -EINVAL;
	if (on)
		__atomic_fetch_or(&d->features, 1ull << f, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&d->features, ~(1ull << f), __ATOMIC_RELAXED);
	return 0;
}

int sched_feature_set(struct sched_domain *d, const char *name)
{
	if (!d || !name)
		return -EINVAL;
	return feature_set_n(d, name, strlen(name));
}

int sched_features_parse(struct sched_domain *d, const char *list)
{
	if (!d || !list)
		return -EINVAL;
	while (*list) {
		size_t n = strcspn(list, ",");

		if (n) {
			int r = feature_set_n(d, list, n);
			if (r)
				return r;
		}
		list += n;
		if (*list == ',')
			list++;
	}
	return 0;
}

bool sched_feature_enabled(const struct sched_domain *d, enum sched_feature f)
{
	return (unsigned)f < SCHED_FEAT_COUNT && feat(d, f);
}

const char *sched_feature_name(enum sched_feature f)
{
	return (unsigned)f < SCHED_FEAT_COUNT ? feature_names[f] : NULL;
}

/* ---- helpers ------------------------------------------------------------ */

bool sched_ent_allowed(struct sched_domain *d, const struct sched_ent *e, unsigned pcpu)
{
	return pcpu < d->nr_pcpus && sched_cpuset_test(&e->allowed, pcpu);
}

unsigned sched_least_loaded_in(struct sched_domain *d, const struct sched_cpuset *set)
{
	unsigned best = SCHED_NONE, best_load = UINT32_MAX;

	for (unsigned i = 0; i < d->nr_pcpus; i++) {
		struct sched_rq *rq = dom_rq(d, i);
		unsigned load;

		if (!sched_cpuset_test(set, i))
			continue;
		load = rq_runnable(rq) + LOAD(rq->ttwu_pending);
		if (load < best_load) {
			best = i;
			best_load = load;
		}
	}
	return best;
}

unsigned sched_least_loaded_allowed(struct sched_domain *d, const struct sched_ent *e)
{
	return sched_least_loaded_in(d, &e->allowed);
}

int sched_check_id(struct sched_handle *h, unsigned id)
{
	return h && h->dom && id < h->dom->max_entities ? 0 : -EINVAL;
}
