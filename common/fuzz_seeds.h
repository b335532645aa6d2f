/*
 * For the seed generators of the fuzz/ folders (seeds.c, run at build
 * time as `GENERATOR TARGET DIR`): build an input as little-endian fields,
 * as common/fuzz_input.h reads them, and write it as DIR/NAME.
 */
#ifndef LAGVISOR_COMMON_FUZZ_SEEDS_H
#define LAGVISOR_COMMON_FUZZ_SEEDS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct fz_out {
	uint8_t buf[65536];
	size_t len;
};

static inline void fz_put(struct fz_out *o, unsigned bytes, uint64_t v)
{
	for (unsigned i = 0; i < bytes && o->len < sizeof(o->buf); i++)
		o->buf[o->len++] = (uint8_t)(v >> (8 * i));
}

static inline void fz_put_bytes(struct fz_out *o, const void *p, size_t n)
{
	if (n > sizeof(o->buf) - o->len)
		n = sizeof(o->buf) - o->len;
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

/* A NULL-terminated argument list as the command-line targets read one:
 * the arguments separated by NUL bytes (common/fuzz_argv.h). */
static inline void fz_put_argv(struct fz_out *o, const char *const *args)
{
	for (unsigned i = 0; args[i]; i++) {
		if (i)
			fz_put(o, 1, 0);
		fz_put_bytes(o, args[i], strlen(args[i]));
	}
}

/* Write DIR/NAME with len bytes; exits 1 on failure (a build step). */
static inline void fz_write_seed(const char *dir, const char *name, const void *p, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(p, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static const char *fz_seed_dir;
static unsigned fz_seed_count;

/* The seed in o, as fz_seed_dir/name. */
static inline void fz_emit(const char *name, const struct fz_out *o)
{
	fz_write_seed(fz_seed_dir, name, o->buf, o->len);
	fz_seed_count++;
}

struct fz_seed_gen {
	const char *target;
	void (*gen)(void);
};

/* main() of a generator: run the one for argv[1] into directory argv[2]. */
static inline int fz_seeds_main(int argc, char **argv, const struct fz_seed_gen *g, unsigned n)
{
	if (argc == 3) {
		fz_seed_dir = argv[2];
		if (mkdir(fz_seed_dir, 0755) && errno != EEXIST) {
			perror(fz_seed_dir);
			return 1;
		}
		for (unsigned i = 0; i < n; i++)
			if (!strcmp(argv[1], g[i].target)) {
				g[i].gen();
				return fz_seed_count ? 0 : 1;
			}
	}
	fprintf(stderr, "usage: %s TARGET DIR (targets:", argv[0]);
	for (unsigned i = 0; i < n; i++)
		fprintf(stderr, " %s", g[i].target);
	fprintf(stderr, ")\n");
	return 2;
}

#endif
