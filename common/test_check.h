/* The assertions of every C test (sched/, devices/, vmm/): count failures,
 * report each with its line (and the values seen), let main return the
 * verdict through check_report. */
#ifndef LAGVISOR_COMMON_TEST_CHECK_H
#define LAGVISOR_COMMON_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures __attribute__((unused));

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
			check_failures++;                                    \
		}                                                            \
	} while (0)

/* Equality of two integers, printing both in decimal and hex on failure
 * (the scheduler's times read best in decimal, registers in hex). */
#define CHECK_EQ(got, want)                                                  \
	do {                                                                 \
		long long got_ = (long long)(got), want_ = (long long)(want); \
		if (got_ != want_) {                                         \
			fprintf(stderr, "%s:%d: %s = %lld (%#llx), want %s = %lld (%#llx)\n", \
				__FILE__, __LINE__, #got, got_,              \
				(unsigned long long)got_, #want, want_,      \
				(unsigned long long)want_);                  \
			check_failures++;                                    \
		}                                                            \
	} while (0)

/* err must contain the substring `want`. */
#define CHECK_MSG(err, want)                                                 \
	do {                                                                 \
		if (!strstr((err), (want))) {                                \
			fprintf(stderr, "%s:%d: message '%s' lacks '%s'\n",  \
				__FILE__, __LINE__, (err), (want));          \
			check_failures++;                                    \
		}                                                            \
	} while (0)

static inline int check_report(const char *name)
{
	if (check_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
	else
		printf("%s: ok\n", name);
	return check_failures ? 1 : 0;
}

#endif
