/*
 * For the command-line fuzz targets: an input as an argv, arguments
 * separated by NUL bytes (the last one need not end with one), after a
 * fixed argv[0]. The strings are copies the target owns until
 * fz_argv_free, so that ASan sees a read past an argument's end.
 */
#ifndef LAGVISOR_COMMON_FUZZ_ARGV_H
#define LAGVISOR_COMMON_FUZZ_ARGV_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FZ_ARGV_MAX 64

struct fz_argv {
	int argc;
	char *argv[FZ_ARGV_MAX + 2];
};

static inline void fz_argv_make(struct fz_argv *a, const char *prog, const uint8_t *p, size_t n)
{
	a->argc = 0;
	a->argv[a->argc++] = strdup(prog);
	while (n && a->argc <= FZ_ARGV_MAX) {
		const uint8_t *z = memchr(p, 0, n);
		size_t len = z ? (size_t)(z - p) : n;
		char *s = malloc(len + 1);

		memcpy(s, p, len);
		s[len] = 0;
		a->argv[a->argc++] = s;
		p += len + (z ? 1 : 0);
		n -= len + (z ? 1 : 0);
	}
	a->argv[a->argc] = NULL;
}

static inline void fz_argv_free(struct fz_argv *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	a->argc = 0;
}

/* One line naming the problem: not empty, no newline, NUL-terminated. */
static inline int fz_one_line(const char *err, size_t size)
{
	size_t len = strnlen(err, size);

	return len > 0 && len < size && !memchr(err, '\n', len);
}

#endif
