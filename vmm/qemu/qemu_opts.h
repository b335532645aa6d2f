/*
 * QEMU option values, the two spellings libvirt uses: key=value lists
 * ("socket,id=charmonitor,fd=31,server=on", ",," is a literal comma, a
 * first bare word is the option's implied key, a later bare word "k" means
 * k=on) and JSON objects ({"driver":"isa-serial","index":0}, top-level
 * members only; nested values are kept as their JSON text). Both become
 * the same flat list of string pairs. Pure; allocates only the strings.
 */
#ifndef LAGVISOR_VMM_QEMU_OPTS_H
#define LAGVISOR_VMM_QEMU_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_OPTS_MAX 48

struct qemu_opt {
	char *key;
	char *value;
};

struct qemu_opts {
	unsigned nr;
	struct qemu_opt o[QEMU_OPTS_MAX];
};

/*
 * Parse `s` into `opts` (initialised here; free with qemu_opts_free even
 * on failure). `implied`: key for a leading bare word (NULL: the word is a
 * flag, key=on). Returns 0, or -EINVAL/-E2BIG/-ENOMEM with one line in err.
 */
int qemu_opts_parse(struct qemu_opts *opts, const char *s, const char *implied,
		    char *err, size_t errlen);

/* The last value given for `key` (QEMU: the last one wins), or NULL. */
const char *qemu_opts_get(const struct qemu_opts *opts, const char *key);

/*
 * on/off/yes/no/true/false for `key`; `def` when absent. 0 or -EINVAL
 * (value is something else).
 */
int qemu_opts_get_bool(const struct qemu_opts *opts, const char *key, bool def,
		       bool *out);

/* Decimal number for `key` in [0, max]; -ENOENT when absent, -EINVAL. */
int qemu_opts_get_uint(const struct qemu_opts *opts, const char *key,
		       uint64_t max, uint64_t *out);

/* on/off/yes/no/true/false/y/n. 0 or -EINVAL. */
int qemu_parse_bool(const char *v, bool *out);

/* Decimal digits only, value in [0, max]. 0 or -EINVAL. */
int qemu_parse_uint(const char *s, uint64_t max, uint64_t *out);

void qemu_opts_free(struct qemu_opts *opts);

#endif
