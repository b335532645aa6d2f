/*
 * The scheduler's command-line knobs as plain data, and the pure parsers
 * behind them (`--sched`, `--host-cpus`, `--weight`/`--nice`, `--slice`,
 * `--idle`, `--sched-feature`, `--sched-domain`, `--trace`). cli.c calls
 * sched_opts_apply for each of these options; nothing here touches the host.
 * All-zero is the default for every field (config_init memsets).
 */
#ifndef LAGVISOR_VMM_SCHED_OPTS_H
#define LAGVISOR_VMM_SCHED_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCHED_OPTS_MAX_HOST_CPUS 1024u
#define SCHED_OPTS_VM_NAME_MAX 48u     /* --name, with its NUL */
/* --latency low without --slice: a slice short enough that a waking vCPU
 * of this VM cuts a neighbour's protection (PREEMPT_SHORT) and its own
 * deadline comes first, yet ~30 exits' worth of run on a PVM backend. */
#define SCHED_OPTS_LOW_LATENCY_SLICE_NS 100000ull

/* A set of host CPU numbers (as sched_setaffinity counts them). */
struct host_cpu_list {
	uint64_t bits[SCHED_OPTS_MAX_HOST_CPUS / 64];
};

struct sched_options {
	bool host_cpus_set;            /* false: the CPUs the process may use */
	struct host_cpu_list host_cpus;
	uint32_t weight;               /* --weight 1..2^20; 0: from nice */
	bool nice_set;
	int nice;                      /* --nice -20..19 */
	uint64_t slice_ns;             /* --slice; 0: the domain's base slice */
	bool latency_low;              /* --latency low */
	bool idle;                     /* --idle: idle class (weight 3) */
	const char *features;          /* --sched-feature list, validated; NULL: defaults */
	const char *domain;            /* --sched-domain NAME; NULL: the default */
	bool domain_private;           /* --sched-domain private: this VM's own */
	const char *trace_path;        /* --trace FILE; NULL: no trace */
	const char *vm_name;           /* --name (-name guest=): for lagvisor stat */
};

static inline bool host_cpu_list_test(const struct host_cpu_list *l, unsigned cpu)
{
	return cpu < SCHED_OPTS_MAX_HOST_CPUS && (l->bits[cpu / 64] >> (cpu % 64)) & 1;
}
unsigned host_cpu_list_count(const struct host_cpu_list *l);

/* "0-3,8,10-11": decimal CPU numbers and ascending ranges, comma separated,
 * each below SCHED_OPTS_MAX_HOST_CPUS; not empty. 0 or -EINVAL. */
int sched_opts_parse_cpulist(const char *s, struct host_cpu_list *out);

/* "3ms", "500us", "2000000ns", "1s"; a bare number is nanoseconds. Must be
 * > 0 and fit in 64 bits. 0 or -EINVAL. */
int sched_opts_parse_duration(const char *s, uint64_t *ns);

/* Every feature name in the comma list is known to the scheduler (checked
 * with sched_features_parse on a scratch domain). 0, -EINVAL (err names the
 * first bad entry) or -ENOMEM. */
int sched_opts_check_features(const char *list, char *err, size_t errlen);

/*
 * Apply one option by its long name ("host-cpus", "weight", "nice", "slice",
 * "idle", "sched-feature", "sched-domain", "trace"; value NULL for "idle").
 * Returns 0, -ENOENT when the name is not a scheduler option, or -EINVAL
 * with one line naming the problem in err (includes --weight with --nice,
 * and --idle with either).
 */
int sched_opts_apply(struct sched_options *o, const char *name, const char *value,
		     char *err, size_t errlen);

/* ASCII letters, digits, '-', '_' and '.', 1..64 chars, not
 * starting with '.': a domain name is part of a file name. */
bool sched_opts_domain_name_ok(const char *name);

#endif
