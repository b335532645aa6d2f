/*
 * Numeric options of one test on the guest command line, "prefix.key=N"
 * (wb.rate=1000, hog.duration_ms=0). Unlike cmdline_uint(), every word
 * that starts with the prefix must be a known key with a valid number in
 * range: a typo must not silently run the test with its default.
 */
#ifndef GUEST_OPTIONS_H
#define GUEST_OPTIONS_H

#include <stdint.h>

struct guest_opt {
	const char *key;      /* without the prefix: "rate" */
	uint64_t *val;        /* holds the default; set when given */
	uint64_t min, max;    /* inclusive */
	const char *help;     /* unit and meaning, for the error message */
};

/*
 * Parse the command line against opts[0..n). Returns 0, or -1 after
 * printing one line that names the bad word and what was expected.
 */
int guest_opts_parse(const char *prefix, const struct guest_opt *opts, unsigned n);

#endif
