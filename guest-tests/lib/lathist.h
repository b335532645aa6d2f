/*
 * Latency histogram in the log-linear layout of schbench's (and fio's)
 * plat[] array, used by the freestanding wakebench guest and by the Linux
 * wakebench program (linux-progs/), so both print comparable numbers.
 * Header only, integers only (no FPU in guests), no libc.
 *
 * Values (nanoseconds here) below 2 * LATHIST_VAL are counted exactly, one
 * bucket each. Above that, each power of two [2^m, 2^(m+1)) is split into
 * LATHIST_VAL equal buckets: v keeps its top LATHIST_BITS + 1 bits, the
 * leading one being implied by the group. With shift = m - LATHIST_BITS
 * dropped bits, the bucket is
 *     idx = (shift + 1) * LATHIST_VAL + ((v >> shift) & (LATHIST_VAL - 1))
 * which continues the exact range without a gap: v = 2 * LATHIST_VAL has
 * m = LATHIST_BITS + 1, shift = 1, idx = 2 * LATHIST_VAL. A bucket is
 * 2^shift wide, so reporting its middle is off by at most 2^(shift-1)
 * = v / 2^(LATHIST_BITS + 1): under 0.8 % with 6 bits.
 * LATHIST_GROUPS groups reach m = LATHIST_GROUPS + LATHIST_BITS - 2, i.e.
 * values up to 2^(LATHIST_GROUPS + LATHIST_BITS - 1) - 1 ns (2^31 ns, 2.1 s,
 * with 26 groups); larger values land in the last bucket (callers keep
 * the exact maximum separately).
 */
#ifndef GUEST_LATHIST_H
#define GUEST_LATHIST_H

#include <stdint.h>

#define LATHIST_BITS    6
#define LATHIST_VAL     (1u << LATHIST_BITS)
#define LATHIST_GROUPS  26
#define LATHIST_NR      (LATHIST_GROUPS * LATHIST_VAL)

static inline unsigned lathist_index(uint64_t v)
{
	unsigned m, shift, idx;

	if (v < 2 * LATHIST_VAL)
		return (unsigned)v;
	m = 63 - (unsigned)__builtin_clzll(v);
	shift = m - LATHIST_BITS;
	idx = (shift + 1) * LATHIST_VAL + (unsigned)((v >> shift) & (LATHIST_VAL - 1));
	return idx < LATHIST_NR ? idx : LATHIST_NR - 1;
}

/* The value a bucket stands for: its middle (exact below 2 * LATHIST_VAL). */
static inline uint64_t lathist_value(unsigned idx)
{
	unsigned shift;
	uint64_t low;

	if (idx < 2 * LATHIST_VAL)
		return idx;
	shift = idx / LATHIST_VAL - 1;
	low = (uint64_t)(LATHIST_VAL + idx % LATHIST_VAL) << shift;
	return low + ((1ull << shift) >> 1);
}

/*
 * The permille-th percentile (500 = 50.0th, 999 = 99.9th) of `total`
 * samples counted in hist[LATHIST_NR]: the value of the first bucket at
 * which the cumulative count reaches ceil(total * permille / 1000), the
 * nearest-rank definition. Clamped to [min, max], the exact extremes,
 * since a bucket's middle can lie outside them. 0 when total is 0.
 */
static inline uint64_t lathist_percentile(const uint64_t *hist, uint64_t total,
					  unsigned permille, uint64_t min, uint64_t max)
{
	uint64_t want = (total * permille + 999) / 1000, seen = 0, v;

	if (!total)
		return 0;
	if (!want)
		want = 1;
	for (unsigned i = 0; i < LATHIST_NR; i++) {
		seen += hist[i];
		if (seen >= want) {
			v = lathist_value(i);
			return v < min ? min : v > max ? max : v;
		}
	}
	return max;
}

#endif
