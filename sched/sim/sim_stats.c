#include "sim_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

const double sim_pcts[SIM_NR_PCTS] = { 50.0, 90.0, 99.0, 99.5, 99.9 };

void sim_samples_init(struct sim_samples *s)
{
	s->v = NULL;
	s->n = s->cap = 0;
	s->sorted = true;
}

void sim_samples_free(struct sim_samples *s)
{
	free(s->v);
	sim_samples_init(s);
}

int sim_samples_add(struct sim_samples *s, uint64_t x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = x;
	s->sorted = false;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void sort_once(struct sim_samples *s)
{
	if (!s->sorted) {
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
		s->sorted = true;
	}
}

uint64_t sim_samples_pct(struct sim_samples *s, double pct)
{
	if (s->n == 0)
		return 0;
	sort_once(s);
	/*
	 * ceil() of a product of doubles: 99.9 % of 1000 is 999.0000000000001
	 * in binary, which must still select rank 999, so round the product
	 * to 1e-9 first.
	 */
	double rank = ceil(floor(pct / 100.0 * (double)s->n * 1e9 + 0.5) / 1e9);
	size_t idx = rank < 1.0 ? 0 : (size_t)rank - 1;

	if (idx >= s->n)
		idx = s->n - 1;
	return s->v[idx];
}

double sim_samples_mean(const struct sim_samples *s)
{
	if (s->n == 0)
		return 0.0;
	/* Sum in 128 bits: 10^5 samples of up to 2^40 ns cannot overflow. */
	unsigned __int128 sum = 0;

	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	return (double)sum / (double)s->n;
}

uint64_t sim_samples_max(struct sim_samples *s)
{
	if (s->n == 0)
		return 0;
	sort_once(s);
	return s->v[s->n - 1];
}
