/*
 * `lagvisor stat [--domain NAME] [--vms] [--json] [--interval S] [--once]`:
 * the counters of a shared scheduling domain (without --domain: every
 * user's default domain there is, else the only domain), by VM (the
 * members' --name), read live from its file (never
 * joining it, never taking its locks). Per vCPU: run, wait and steal time,
 * wakeups, wakeup latency percentiles from the log2 histogram, preemptions,
 * migrations, blocks, the weight (JSON); per pCPU: utilisation (time a vCPU thread held it)
 * and who holds it. Refreshes in place like top (ANSI home + clear) every
 * interval, or prints one snapshot with --once; --json prints one JSON
 * object per snapshot (one line each).
 */
#ifndef LAGVISOR_VMM_STAT_H
#define LAGVISOR_VMM_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vmm/sched/sched_shm.h"

struct stat_options {
	const char *domain;            /* NULL: the only domain in the directory */
	const char *dir;               /* NULL: as sched_shm_path */
	bool json;
	bool once;
	bool vms;                      /* --vms: one line per VM */
	uint64_t interval_ns;          /* default 1 s */
	uint64_t count;                /* snapshots to print; 0: until killed */
};

/* argv after "stat". 0, 1 for --help, or -EINVAL with err. Pure. */
int stat_parse_args(int argc, char *const argv[], struct stat_options *o, char *err,
		    size_t errlen);

/* Upper bound in ns of the latency below which `pct` percent of the
 * samples of hist lie (bucket resolution); 0 if empty. */
uint64_t stat_hist_percentile_ns(const uint64_t *hist, unsigned nr_buckets, double pct);

/* Counters of one snapshot, for the per-pCPU utilisation deltas. */
struct stat_prev {
	uint64_t t_ns;
	uint64_t busy_ns[SCHED_MAX_PCPUS];
};

/* One snapshot of s to f, as text or a JSON line. prev (may be NULL) gives
 * utilisation over the interval since it, else since the domain's creation;
 * it is updated. */
void stat_print(FILE *f, const struct sched_shm *s, bool json, struct stat_prev *prev);

/* The short view: one line per VM (its vCPUs' counters summed, latency
 * percentiles from their merged histograms), 80 columns. */
void stat_print_vms(FILE *f, const struct sched_shm *s);

/* `s` with quotes, backslashes and control characters escaped for JSON. */
void stat_json_string(FILE *f, const char *s);

/* The whole command; returns the process exit status (2: usage). */
int stat_main(int argc, char *const argv[]);

void stat_usage(FILE *f);

#endif
