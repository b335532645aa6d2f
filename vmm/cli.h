/*
 * The command line: `lagvisor run [options]`, `lagvisor help [run]`,
 * `lagvisor --help`, `lagvisor --version`. Parsing is a pure function from
 * argv to a struct vm_config (strings point into argv); whether the values
 * make sense for this host is config_validate's job.
 */
#ifndef LAGVISOR_VMM_CLI_H
#define LAGVISOR_VMM_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/config.h"

enum cli_action {
	CLI_RUN,        /* cfg is filled: boot the VM */
	CLI_HELP,       /* print cli_usage to stdout, exit 0 */
	CLI_HELP_RUN,   /* print cli_usage_run to stdout, exit 0 */
	CLI_VERSION,    /* print the version, exit 0 */
};

/*
 * Parse argv (argv[0] is the program). Returns an enum cli_action, or
 * -EINVAL with one line naming the problem in err (the caller prints it and
 * exits 2). Only syntax is checked here: unknown options and commands,
 * missing values, numbers and sizes that do not parse, unknown modes.
 */
int cli_parse(int argc, char *const argv[], struct vm_config *cfg,
	      char *err, size_t errlen);

/*
 * A byte count: decimal digits, optionally followed by one suffix K, M or
 * G (powers of 1024, either case). Rejects empty strings, signs, spaces,
 * other suffixes, 0 and values that do not fit in 64 bits. 0 or -EINVAL.
 */
int cli_parse_size(const char *s, uint64_t *bytes);

/* Decimal digits only, value in [min, max]. 0, -EINVAL, or -ERANGE. */
int cli_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);

void cli_usage(FILE *f);
void cli_usage_run(FILE *f);

#endif
