/* Minimal checks for the vmm/x86 unit tests: count failures, exit 1 if any. */
#ifndef LAGVISOR_VMM_X86_TESTS_CHECK_H
#define LAGVISOR_VMM_X86_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int check_failures __attribute__((unused));

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",         \
				__FILE__, __LINE__, #cond);                  \
			check_failures++;                                    \
		}                                                            \
	} while (0)

#define CHECK_EQ(a, b)                                                       \
	do {                                                                 \
		unsigned long long a_ = (unsigned long long)(a);             \
		unsigned long long b_ = (unsigned long long)(b);             \
		if (a_ != b_) {                                              \
			fprintf(stderr, "%s:%d: %s == 0x%llx, expected %s == 0x%llx\n", \
				__FILE__, __LINE__, #a, a_, #b, b_);         \
			check_failures++;                                    \
		}                                                            \
	} while (0)

#define CHECK_DONE(name)                                                     \
	do {                                                                 \
		if (check_failures)                                          \
			fprintf(stderr, "%s: %d check(s) failed\n", name,    \
				check_failures);                             \
		else                                                         \
			printf("%s: all checks passed\n", name);             \
		return check_failures ? 1 : 0;                               \
	} while (0)

/* Little-endian reads written out again here, so tests do not use the code under test. */
static inline uint64_t rd(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static inline void wr(uint8_t *p, unsigned bytes, uint64_t v)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#endif
