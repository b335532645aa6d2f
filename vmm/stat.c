#include "vmm/stat.h"

#include "common/clock.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

void stat_usage(FILE *f)
{
	fputs("Usage: lagvisor stat [--domain NAME] [--json] [--interval S] [--once]\n"
	      "\n"
	      "Live counters of a shared scheduling domain (--sched-domain NAME):\n"
	      "per vCPU run/wait/steal time, wakeups and wakeup latency, preemptions,\n"
	      "migrations, and KVM's exits and instruction emulations (a vCPU that\n"
	      "runs natively has about one emulation per exit); per pCPU utilisation.\n"
	      "\n"
	      "  --domain NAME   the domain (default: the only one there is)\n"
	      "  --json          one JSON object per snapshot, one per line\n"
	      "  --interval S    seconds between snapshots (default 1; e.g. 0.5)\n"
	      "  --once          one snapshot, then exit\n"
	      "  --count N       N snapshots, then exit\n", f);
}

static int parse_interval(const char *v, uint64_t *ns)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(v, &end);
	if (errno || end == v || *end || !(s >= 0.01 && s <= 3600))
		return -EINVAL;
	*ns = (uint64_t)(s * 1e9);
	return 0;
}

int stat_parse_args(int argc, char *const argv[], struct stat_options *o, char *err,
		    size_t errlen)
{
	memset(o, 0, sizeof(*o));
	o->interval_ns = 1000000000ull;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		bool needs = !strcmp(a, "--domain") || !strcmp(a, "--interval") ||
			     !strcmp(a, "--count");
		const char *v = NULL;

		if (needs) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "stat: %s needs a value", a);
				return -EINVAL;
			}
			v = argv[++i];
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			return 1;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--once")) {
			o->once = true;
		} else if (!strcmp(a, "--domain")) {
			if (!sched_opts_domain_name_ok(v)) {
				snprintf(err, errlen, "stat: --domain '%s': not a domain name", v);
				return -EINVAL;
			}
			o->domain = v;
		} else if (!strcmp(a, "--interval")) {
			if (parse_interval(v, &o->interval_ns)) {
				snprintf(err, errlen, "stat: --interval '%s': expected seconds "
					 "between 0.01 and 3600", v);
				return -EINVAL;
			}
		} else if (!strcmp(a, "--count")) {
			char *end;

			o->count = strtoull(v, &end, 10);
			if (!*v || *end || o->count == 0) {
				snprintf(err, errlen, "stat: --count '%s': expected a positive number", v);
				return -EINVAL;
			}
		} else {
			snprintf(err, errlen, "stat: unknown argument '%s' (see lagvisor stat --help)", a);
			return -EINVAL;
		}
	}
	if (o->once)
		o->count = 1;
	return 0;
}

uint64_t stat_hist_percentile_ns(const uint64_t *hist, unsigned n, double pct)
{
	uint64_t total = 0, acc = 0, want;

	for (unsigned i = 0; i < n; i++)
		total += hist[i];
	if (!total)
		return 0;
	want = (uint64_t)((double)total * pct / 100.0 + 0.5);
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < n; i++) {
		acc += hist[i];
		if (acc >= want)
			return (1ull << i) * 1000ull;  /* bucket i ends at 2^i us */
	}
	return (1ull << (n - 1)) * 1000ull;
}

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* run_ns plus the stint in progress (a lone vCPU runs tickless: its
 * counters move only when it gives the pCPU up). */
static uint64_t run_now(const struct sched_shm_vcpu *v, uint64_t now)
{
	uint64_t st = __atomic_load_n(&v->stint_start_ns, __ATOMIC_ACQUIRE);

	return LD(v->run_ns) + (st && now > st ? now - st : 0);
}

static void print_pcpus(FILE *f, const struct sched_shm *s, bool json, struct stat_prev *prev,
			uint64_t now)
{
	uint64_t since = prev && prev->t_ns ? prev->t_ns : s->hdr->created_ns;
	uint64_t span = now > since ? now - since : 1;

	for (unsigned p = 0; p < s->hdr->nr_pcpus; p++) {
		const struct sched_shm_pcpu *pc = &s->pcpus[p];
		uint64_t busy = LD(pc->busy_ns), base = prev && prev->t_ns ? prev->busy_ns[p] : 0;
		uint32_t holder = LD(pc->released);
		double util;
		char who[32];

		if (holder < s->hdr->max_entities) {
			uint64_t st = __atomic_load_n(&s->vcpus[holder].stint_start_ns,
						      __ATOMIC_ACQUIRE);

			busy += st && now > st ? now - st : 0;
		}
		util = 100.0 * (double)(busy - base) / (double)span;

		if (util > 100.0)
			util = 100.0;
		if (holder == SCHED_NONE)
			snprintf(who, sizeof(who), "idle");
		else if (holder >= SCHED_SHM_CLAIM_BASE)
			snprintf(who, sizeof(who), "deciding");
		else if (holder < s->hdr->max_entities)
			snprintf(who, sizeof(who), "vCPU %u/%d", s->vcpus[holder].vcpu_index,
				 (int)s->vcpus[holder].pid);
		else
			snprintf(who, sizeof(who), "?");
		if (json)
			fprintf(f, "%s{\"pcpu\":%u,\"host_cpu\":%d,\"util_pct\":%.1f,\"busy_ns\":%"
				PRIu64 ",\"holder\":\"%s\"}", p ? "," : "", p, pc->host_cpu, util,
				busy, who);
		else
			fprintf(f, "  pCPU %-3u host CPU %-4d %5.1f %%  %s\n", p, pc->host_cpu,
				util, who);
		if (prev)
			prev->busy_ns[p] = busy;
	}
	if (prev)
		prev->t_ns = now;
}

static void observer_kick(void *opaque, unsigned pcpu)
{
	(void)opaque; (void)pcpu;
}

/* Entity e's weight, read without the domain's locks; 0: unreadable. */
static uint32_t entity_weight(const struct sched_shm *s, unsigned e)
{
	static const struct sched_host_ops ops = { .kick = observer_kick };
	struct sched_handle h;
	uint32_t w = 0;

	if (sched_handle_init(&h, s->dom, s->dom_len, &ops, NULL) == 0)
		sched_entity_peek_weight(&h, e, &w);
	return w;
}

static void print_vcpus(FILE *f, const struct sched_shm *s, bool json, uint64_t now)
{
	bool first = true;

	if (!json)
		fprintf(f, "\n  %7s %5s %10s %10s %10s %9s %8s %8s %8s %7s %7s %10s %10s\n", "pid",
			"vcpu", "run ms", "wait ms", "steal ms", "wakeups", "p50 us", "p99 us",
			"max us", "preempt", "migr", "kvm exits", "kvm emul");
	for (unsigned e = 0; e < s->hdr->max_entities; e++) {
		const struct sched_shm_vcpu *v = &s->vcpus[e];
		uint64_t hist[SCHED_SHM_LAT_BUCKETS];

		if (!__atomic_load_n(&v->in_use, __ATOMIC_ACQUIRE))
			continue;
		for (unsigned i = 0; i < SCHED_SHM_LAT_BUCKETS; i++)
			hist[i] = LD(v->lat_hist[i]);
		if (json) {
			fprintf(f, "%s{\"pid\":%d,\"vcpu\":%u,\"entity\":%u,\"weight\":%u,\"run_ns\":%" PRIu64
				",\"wait_ns\":%" PRIu64 ",\"steal_ns\":%" PRIu64 ",\"wakeups\":%"
				PRIu64 ",\"preemptions\":%" PRIu64 ",\"migrations\":%" PRIu64
				",\"blocks\":%" PRIu64 ",\"lat_max_ns\":%" PRIu64
				",\"kvm_exits\":%" PRIu64 ",\"kvm_emulations\":%" PRIu64
				",\"lat_hist_log2_us\":[", first ? "" : ",", (int)v->pid,
				v->vcpu_index, e, entity_weight(s, e), run_now(v, now), LD(v->wait_ns),
				LD(v->steal_ns),
				LD(v->nr_wakeups), LD(v->nr_preemptions), LD(v->nr_migrations),
				LD(v->nr_blocks), LD(v->lat_max_ns), LD(v->kvm_exits),
				LD(v->kvm_emulations));
			for (unsigned i = 0; i < SCHED_SHM_LAT_BUCKETS; i++)
				fprintf(f, "%s%" PRIu64, i ? "," : "", hist[i]);
			fputs("]}", f);
		} else {
			fprintf(f, "  %7d %5u %10.1f %10.1f %10.1f %9" PRIu64 " %8" PRIu64 " %8"
				PRIu64 " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 " %10" PRIu64 " %10"
				PRIu64 "\n", (int)v->pid,
				v->vcpu_index, run_now(v, now) / 1e6, LD(v->wait_ns) / 1e6,
				LD(v->steal_ns) / 1e6, LD(v->nr_wakeups),
				stat_hist_percentile_ns(hist, SCHED_SHM_LAT_BUCKETS, 50) / 1000,
				stat_hist_percentile_ns(hist, SCHED_SHM_LAT_BUCKETS, 99) / 1000,
				LD(v->lat_max_ns) / 1000, LD(v->nr_preemptions),
				LD(v->nr_migrations), LD(v->kvm_exits), LD(v->kvm_emulations));
		}
		first = false;
	}
}

void stat_print(FILE *f, const struct sched_shm *s, bool json, struct stat_prev *prev)
{
	uint64_t now = clock_now_ns();

	if (json) {
		fprintf(f, "{\"domain\":\"%s\",\"time_ns\":%" PRIu64 ",\"members\":%u,\"pcpus\":[",
			s->path, now, sched_shm_nr_members(s));
		print_pcpus(f, s, true, prev, now);
		fputs("],\"vcpus\":[", f);
		print_vcpus(f, s, true, now);
		fputs("]}\n", f);
	} else {
		fprintf(f, "lagvisor stat: %s, %u member(s), %u pCPU(s)\n\n", s->path,
			sched_shm_nr_members(s), s->hdr->nr_pcpus);
		print_pcpus(f, s, false, prev, now);
		print_vcpus(f, s, false, now);
	}
	fflush(f);
}

/* The only lagvisor-* file in the directory, if there is exactly one. */
static int find_domain(const char *dir, char *name, size_t len, char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct dirent *d;
	unsigned n = 0;
	DIR *dp;

	if (sched_shm_path(dir, "x", path, sizeof(path)))
		return -EINVAL;
	*strrchr(path, '/') = '\0';
	dp = opendir(path);
	if (!dp) {
		snprintf(err, errlen, "stat: %s: %s", path, strerror(errno));
		return -errno;
	}
	while ((d = readdir(dp))) {
		if (strncmp(d->d_name, "lagvisor-", 9) || !sched_opts_domain_name_ok(d->d_name + 9))
			continue;
		if (n++ == 0)
			snprintf(name, len, "%s", d->d_name + 9);
	}
	closedir(dp);
	if (n == 1)
		return 0;
	if (n)
		snprintf(err, errlen, "stat: %u domains in %s: choose one with --domain NAME",
			 n, path);
	else
		snprintf(err, errlen, "stat: no scheduling domain in %s (lagvisor run "
			 "--sched-domain NAME makes one)", path);
	return -ENOENT;
}

int stat_main(int argc, char *const argv[])
{
	struct stat_options o;
	struct sched_shm_params p = { 0 };
	struct stat_prev *prev;
	struct sched_shm s;
	char err[PATH_MAX + 128] = "", name[80];
	uint64_t n = 0;
	int r;

	r = stat_parse_args(argc, argv, &o, err, sizeof(err));
	if (r == 1) {
		stat_usage(stdout);
		return 0;
	}
	if (r) {
		log_error("%s", err);
		return 2;
	}
	if (!o.domain) {
		if (find_domain(o.dir, name, sizeof(name), err, sizeof(err))) {
			log_error("%s", err);
			return 1;
		}
		o.domain = name;
	}
	p.name = o.domain;
	p.dir = o.dir;
	p.observe = true;
	if (sched_shm_open(&s, &p, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	prev = calloc(1, sizeof(*prev));
	if (!prev) {
		sched_shm_close(&s);
		return 1;
	}
	for (;;) {
		if (!o.json && !o.once)
			fputs("\033[H\033[2J", stdout);        /* home, clear: like top */
		stat_print(stdout, &s, o.json, o.once ? NULL : prev);
		if (o.count && ++n >= o.count)
			break;
		if (ferror(stdout))
			break;
		struct timespec ts = { .tv_sec = (time_t)(o.interval_ns / 1000000000ull),
				       .tv_nsec = (long)(o.interval_ns % 1000000000ull) };
		nanosleep(&ts, NULL);
	}
	free(prev);
	sched_shm_close(&s);
	return 0;
}
