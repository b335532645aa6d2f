/*
 * Seeded pseudo-random numbers for the simulator: xoshiro256** seeded
 * through splitmix64, so one 64-bit seed expands into a full 256-bit state
 * with no all-zero risk. No global state: every stream is a struct, so two
 * simulations in one process (the A and B run of an experiment) draw
 * identical sequences from identical seeds. Never reads a clock.
 */
#ifndef LAGVISOR_SIM_RNG_H
#define LAGVISOR_SIM_RNG_H

#include <stdint.h>

struct sim_rng {
	uint64_t s[4];
};

static inline uint64_t sim_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline void sim_rng_seed(struct sim_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = sim_splitmix64(&seed);
}

static inline uint64_t sim_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t sim_rng_next(struct sim_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = sim_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = sim_rotl(s[3], 45);
	return out;
}

/*
 * Uniform in [0, n) by Lemire's multiply-shift; the bias is below 2^-32 for
 * the n we use (< 2^32), which no experiment can resolve.
 */
static inline uint64_t sim_rng_below(struct sim_rng *r, uint64_t n)
{
	if (n == 0)
		return 0;
	return (uint64_t)(((unsigned __int128)sim_rng_next(r) * n) >> 64);
}

/* Uniform in [lo, hi] (inclusive); hi < lo yields lo. */
static inline uint64_t sim_rng_range(struct sim_rng *r, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + sim_rng_below(r, hi - lo + 1);
}

/* x scaled by a uniform factor in [1 - pct/100, 1 + pct/100]: jitter. */
static inline uint64_t sim_rng_jitter(struct sim_rng *r, uint64_t x, unsigned pct)
{
	uint64_t span = x / 100 * pct;

	return sim_rng_range(r, x - span, x + span);
}

#endif
