/*
 * For the libFuzzer targets (the fuzz/ folders, built with -Dfuzz=true): read a fuzz
 * input as a stream of little-endian fields (the seed generators write
 * theirs with common/fuzz_seeds.h, in the same encoding).
 *
 * Reading past the end yields zeros, so a truncated input is still a
 * complete program; fz_done() tells the op loop to stop.
 */
#ifndef LAGVISOR_COMMON_FUZZ_INPUT_H
#define LAGVISOR_COMMON_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fz_in {
	const uint8_t *p;
	size_t len;
};

static inline bool fz_done(const struct fz_in *in)
{
	return in->len == 0;
}

static inline uint64_t fz_uint(struct fz_in *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->len; i++, in->p++, in->len--)
		v |= (uint64_t)in->p[0] << (8 * i);
	return v;
}

static inline uint8_t fz_u8(struct fz_in *in) { return (uint8_t)fz_uint(in, 1); }
static inline uint16_t fz_u16(struct fz_in *in) { return (uint16_t)fz_uint(in, 2); }
static inline uint32_t fz_u32(struct fz_in *in) { return (uint32_t)fz_uint(in, 4); }
static inline uint64_t fz_u64(struct fz_in *in) { return fz_uint(in, 8); }

/* Up to n bytes in place; *got says how many. */
static inline const uint8_t *fz_bytes(struct fz_in *in, size_t n, size_t *got)
{
	const uint8_t *p = in->p;

	if (n > in->len)
		n = in->len;
	in->p += n;
	in->len -= n;
	*got = n;
	return p;
}

/* An invariant of the code under test failed: report and crash, so that
 * libFuzzer saves the input. */
#define FZ_ASSERT(cond)                                                      \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", \
				__FILE__, __LINE__, #cond);                  \
			abort();                                             \
		}                                                            \
	} while (0)

#endif
