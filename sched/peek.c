/*
 * Reads for an observer that never takes the domain's locks (lagvisor
 * stat, which maps the domain read-only beside its running members):
 * relaxed loads of one field, so a value may be a moment old but is never
 * torn.
 */
#include <errno.h>

#include "sched/internal.h"

int sched_entity_peek_weight(const struct sched_handle *h, unsigned id, uint32_t *weight)
{
	if (id >= h->dom->max_entities)
		return -EINVAL;
	*weight = LOAD(dom_ent(h->dom, id)->base_weight);
	return 0;
}
