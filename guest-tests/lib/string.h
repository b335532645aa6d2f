#ifndef GUEST_STRING_H
#define GUEST_STRING_H

#include <stddef.h>
#include <stdint.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);

/* Ascending, in place; Shell sort (Ciura gaps): no recursion, no
 * allocation, fine for the 10^4 samples a latency test keeps. */
void sort_u64(uint64_t *a, unsigned n);

/* xorshift64: a test's reproducible random numbers (*state never 0). */
static inline uint64_t xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
