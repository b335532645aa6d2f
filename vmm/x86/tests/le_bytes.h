/* Little-endian reads and writes for the vmm/x86 tests, written out again
 * here so that the tests do not use the code under test. */
#ifndef LAGVISOR_VMM_X86_TESTS_LE_BYTES_H
#define LAGVISOR_VMM_X86_TESTS_LE_BYTES_H

#include <stdint.h>

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
