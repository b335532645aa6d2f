/* prefix.key=N command-line options (see options.h). */
#include "options.h"

#include <stdbool.h>

#include "bootinfo.h"
#include "printf.h"
#include "string.h"

/* Decimal digits only, no overflow past 2^64 - 1. */
static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (*s < '0' || *s > '9' || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static const struct guest_opt *find(const struct guest_opt *opts, unsigned n,
				    const char *key, size_t len)
{
	for (unsigned i = 0; i < n; i++)
		if (strlen(opts[i].key) == len && !strncmp(opts[i].key, key, len))
			return &opts[i];
	return 0;
}

int guest_opts_parse(const char *prefix, const struct guest_opt *opts, unsigned n)
{
	size_t plen = strlen(prefix);
	char **argv;
	int argc = bootinfo_args(&argv);

	for (int i = 1; i < argc; i++) {
		const char *w = argv[i], *key, *eq;
		const struct guest_opt *o;
		uint64_t v;

		if (strncmp(w, prefix, plen) || w[plen] != '.')
			continue;
		key = w + plen + 1;
		for (eq = key; *eq && *eq != '='; eq++)
			;
		o = find(opts, n, key, (size_t)(eq - key));
		if (!o) {
			printf("options: unknown option '%s'; known:", w);
			for (unsigned k = 0; k < n; k++)
				printf(" %s.%s", prefix, opts[k].key);
			printf("\n");
			return -1;
		}
		if (*eq != '=' || !parse_u64(eq + 1, &v) || v < o->min || v > o->max) {
			printf("options: bad value in '%s': want %s.%s=%lu..%lu (%s)\n",
			       w, prefix, o->key, o->min, o->max, o->help);
			return -1;
		}
		*o->val = v;
	}
	return 0;
}
