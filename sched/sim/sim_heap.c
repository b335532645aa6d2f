#include "sim_heap.h"

#include <errno.h>
#include <stdlib.h>

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
	if (a->time_ns != b->time_ns)
		return a->time_ns < b->time_ns;
	return a->seq < b->seq;
}

void sim_heap_init(struct sim_heap *h)
{
	h->ev = NULL;
	h->n = h->cap = 0;
	h->next_seq = 0;
}

void sim_heap_free(struct sim_heap *h)
{
	free(h->ev);
	sim_heap_init(h);
}

int sim_heap_push(struct sim_heap *h, const struct sim_event *e)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 256;
		struct sim_event *ev = realloc(h->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		h->ev = ev;
		h->cap = cap;
	}
	size_t i = h->n++;
	struct sim_event x = *e;

	x.seq = h->next_seq++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&x, &h->ev[p]))
			break;
		h->ev[i] = h->ev[p];
		i = p;
	}
	h->ev[i] = x;
	return 0;
}

bool sim_heap_pop(struct sim_heap *h, struct sim_event *out)
{
	if (h->n == 0)
		return false;
	*out = h->ev[0];
	struct sim_event x = h->ev[--h->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct sim_event *best = &x;

		if (l < h->n && ev_before(&h->ev[l], best)) {
			m = l;
			best = &h->ev[l];
		}
		if (r < h->n && ev_before(&h->ev[r], best))
			m = r;
		if (m == i)
			break;
		h->ev[i] = h->ev[m];
		i = m;
	}
	if (h->n)
		h->ev[i] = x;
	return true;
}

uint64_t sim_heap_peek_time(const struct sim_heap *h)
{
	return h->n ? h->ev[0].time_ns : UINT64_MAX;
}
