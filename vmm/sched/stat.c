#include "vmm/sched/stat.h"

#include "common/clock.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

void stat_usage(FILE *f)
{
	fputs("Usage: lagvisor stat [--domain NAME] [--vms] [--json] [--interval S] [--once]\n"
	      "\n"
	      "Live counters of a scheduling domain, VM by VM: per vCPU run/wait/steal\n"
	      "time, wakeups and wakeup latency, preemptions, migrations, and KVM's\n"
	      "exits and instruction emulations (a vCPU that runs natively has about\n"
	      "one emulation per exit); per pCPU utilisation.\n"
	      "\n"
	      "  --domain NAME   the domain (default: every user's default domain,\n"
	      "                  default-UID, else the only domain there is)\n"
	      "  --vms           one line per VM\n"
	      "  --json          one JSON object per domain and snapshot, one per line\n"
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
		} else if (!strcmp(a, "--vms")) {
			o->vms = true;
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

void stat_json_string(FILE *f, const char *str)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

/* A member slot's name, copied out (a writer may be reusing the slot). */
static void member_name(const struct sched_shm_member *m, char *buf, size_t len)
{
	memcpy(buf, m->name, len < sizeof(m->name) ? len : sizeof(m->name));
	buf[len - 1] = '\0';
	if (!buf[0])
		snprintf(buf, len, "-");
}

/* Whether a vCPU slot belongs to member slot m (NULL: to no live member:
 * a member that died and is not reaped yet). */
static bool vcpu_of(const struct sched_shm *s, const struct sched_shm_vcpu *v,
		    const struct sched_shm_member *m)
{
	int32_t pid = LD(v->pid);

	if (m)
		return LD(m->pid) == pid;
	for (unsigned i = 0; i < s->hdr->max_members; i++)
		if (LD(s->members[i].pid) == pid)
			return false;
	return true;
}

static void print_vcpu(FILE *f, const struct sched_shm *s, unsigned e, bool json, bool first,
		       const char *vm, uint64_t now)
{
	const struct sched_shm_vcpu *v = &s->vcpus[e];
	uint64_t hist[SCHED_SHM_LAT_BUCKETS];

	for (unsigned i = 0; i < SCHED_SHM_LAT_BUCKETS; i++)
		hist[i] = LD(v->lat_hist[i]);
	if (json) {
		fprintf(f, "%s{\"vm\":", first ? "" : ",");
		stat_json_string(f, vm);
		fprintf(f, ",\"pid\":%d,\"vcpu\":%u,\"entity\":%u,\"weight\":%u,\"run_ns\":%" PRIu64
			",\"wait_ns\":%" PRIu64 ",\"steal_ns\":%" PRIu64 ",\"wakeups\":%"
			PRIu64 ",\"preemptions\":%" PRIu64 ",\"migrations\":%" PRIu64
			",\"blocks\":%" PRIu64 ",\"lat_max_ns\":%" PRIu64
			",\"kvm_exits\":%" PRIu64 ",\"kvm_emulations\":%" PRIu64
			",\"lat_hist_log2_us\":[", (int)v->pid,
			v->vcpu_index, e, entity_weight(s, e), run_now(v, now), LD(v->wait_ns),
			LD(v->steal_ns), LD(v->nr_wakeups), LD(v->nr_preemptions), LD(v->nr_migrations),
			LD(v->nr_blocks), LD(v->lat_max_ns), LD(v->kvm_exits),
			LD(v->kvm_emulations));
		for (unsigned i = 0; i < SCHED_SHM_LAT_BUCKETS; i++)
			fprintf(f, "%s%" PRIu64, i ? "," : "", hist[i]);
		fputs("]}", f);
		return;
	}
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

/* The vCPUs VM by VM (member slot order), then any of a member that died
 * and is not reaped yet. */
static void print_vcpus(FILE *f, const struct sched_shm *s, bool json, uint64_t now)
{
	bool first = true;

	if (!json)
		fprintf(f, "\n  %7s %5s %10s %10s %10s %9s %8s %8s %8s %7s %7s %10s %10s\n", "pid",
			"vcpu", "run ms", "wait ms", "steal ms", "wakeups", "p50 us", "p99 us",
			"max us", "preempt", "migr", "kvm exits", "kvm emul");
	for (unsigned i = 0; i <= s->hdr->max_members; i++) {
		const struct sched_shm_member *m = i < s->hdr->max_members ? &s->members[i] : NULL;
		char name[SCHED_SHM_VM_NAME_LEN + 1] = "(gone)";
		bool header = false;

		if (m && LD(m->pid) <= 0)
			continue;
		if (m)
			member_name(m, name, sizeof(name));
		for (unsigned e = 0; e < s->hdr->max_entities; e++) {
			if (!__atomic_load_n(&s->vcpus[e].in_use, __ATOMIC_ACQUIRE) ||
			    !vcpu_of(s, &s->vcpus[e], m))
				continue;
			if (!json && !header)
				fprintf(f, "  VM %s (pid %d)\n", name, m ? (int)LD(m->pid) : 0);
			header = true;
			print_vcpu(f, s, e, json, first, name, now);
			first = false;
		}
	}
}

static void print_members_json(FILE *f, const struct sched_shm *s)
{
	bool first = true;

	for (unsigned i = 0; i < s->hdr->max_members; i++) {
		const struct sched_shm_member *m = &s->members[i];
		char name[SCHED_SHM_VM_NAME_LEN + 1];
		unsigned n = 0;
		int32_t pid = LD(m->pid);

		if (pid <= 0)
			continue;
		member_name(m, name, sizeof(name));
		for (unsigned e = 0; e < s->hdr->max_entities; e++)
			n += __atomic_load_n(&s->vcpus[e].in_use, __ATOMIC_ACQUIRE) &&
			     LD(s->vcpus[e].pid) == pid;
		fprintf(f, "%s{\"name\":", first ? "" : ",");
		stat_json_string(f, name);
		fprintf(f, ",\"pid\":%d,\"vcpus\":%u}", (int)pid, n);
		first = false;
	}
}

void stat_print_vms(FILE *f, const struct sched_shm *s)
{
	uint64_t now = clock_now_ns();

	fprintf(f, "lagvisor stat: %s, %u VM(s), %u pCPU(s)\n\n", s->path,
		sched_shm_nr_members(s), s->hdr->nr_pcpus);
	/* 79 columns */
	fprintf(f, "  %-20s %7s %5s %8s %8s %9s %6s %6s\n", "VM", "pid", "vCPUs", "run s",
		"wait s", "wakeups", "p50us", "p99us");
	for (unsigned i = 0; i < s->hdr->max_members; i++) {
		const struct sched_shm_member *m = &s->members[i];
		uint64_t hist[SCHED_SHM_LAT_BUCKETS] = { 0 }, run = 0, wait = 0, wakes = 0;
		char name[SCHED_SHM_VM_NAME_LEN + 1];
		int32_t pid = LD(m->pid);
		unsigned n = 0;

		if (pid <= 0)
			continue;
		member_name(m, name, sizeof(name));
		for (unsigned e = 0; e < s->hdr->max_entities; e++) {
			const struct sched_shm_vcpu *v = &s->vcpus[e];

			if (!__atomic_load_n(&v->in_use, __ATOMIC_ACQUIRE) || LD(v->pid) != pid)
				continue;
			n++;
			run += run_now(v, now);
			wait += LD(v->wait_ns);
			wakes += LD(v->nr_wakeups);
			for (unsigned b = 0; b < SCHED_SHM_LAT_BUCKETS; b++)
				hist[b] += LD(v->lat_hist[b]);
		}
		fprintf(f, "  %-20.20s %7d %5u %8.1f %8.1f %9" PRIu64 " %6" PRIu64 " %6" PRIu64
			"\n", name, (int)pid, n, run / 1e9, wait / 1e9, wakes,
			stat_hist_percentile_ns(hist, SCHED_SHM_LAT_BUCKETS, 50) / 1000,
			stat_hist_percentile_ns(hist, SCHED_SHM_LAT_BUCKETS, 99) / 1000);
	}
	fflush(f);
}

void stat_print(FILE *f, const struct sched_shm *s, bool json, struct stat_prev *prev)
{
	uint64_t now = clock_now_ns();

	if (json) {
		fputs("{\"domain\":", f);
		stat_json_string(f, s->path);
		fprintf(f, ",\"time_ns\":%" PRIu64 ",\"members\":%u,\"vms\":[", now,
			sched_shm_nr_members(s));
		print_members_json(f, s);
		fputs("],\"pcpus\":[", f);
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

#define STAT_MAX_DOMAINS 16u

/* The domains to show without --domain: every default domain (one per
 * user, SCHED_SHM_DEFAULT_PREFIX), else the only lagvisor-* file there. */
static int find_domains(const char *dir, char names[][80], unsigned *n, char *err,
			size_t errlen)
{
	char path[PATH_MAX], other[80] = "";
	unsigned nr_other = 0;
	struct dirent *d;
	DIR *dp;

	*n = 0;
	if (sched_shm_path(dir, "x", path, sizeof(path)))
		return -EINVAL;
	*strrchr(path, '/') = '\0';
	dp = opendir(path);
	if (!dp) {
		snprintf(err, errlen, "stat: %s: %s", path, strerror(errno));
		return -errno;
	}
	while ((d = readdir(dp))) {
		const char *name = d->d_name + 9;

		if (strncmp(d->d_name, "lagvisor-", 9) || !sched_opts_domain_name_ok(name))
			continue;
		if (!strncmp(name, SCHED_SHM_DEFAULT_PREFIX, strlen(SCHED_SHM_DEFAULT_PREFIX))) {
			struct stat st;

			/* another user's (0600) is root's to read only */
			if (fstatat(dirfd(dp), d->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    (st.st_uid != geteuid() && geteuid() != 0))
				continue;
			if (*n < STAT_MAX_DOMAINS)
				snprintf(names[(*n)++], 80, "%s", name);
		} else if (nr_other++ == 0) {
			snprintf(other, sizeof(other), "%s", name);
		}
	}
	closedir(dp);
	if (*n)
		return 0;
	if (nr_other == 1) {
		snprintf(names[(*n)++], 80, "%s", other);
		return 0;
	}
	if (nr_other)
		snprintf(err, errlen, "stat: no default domain and %u others in %s: choose one "
			 "with --domain NAME", nr_other, path);
	else
		snprintf(err, errlen, "stat: no scheduling domain in %s (no lagvisor VM with "
			 "--sched eevdf runs)", path);
	return -ENOENT;
}

int stat_main(int argc, char *const argv[])
{
	struct stat_options o;
	struct stat_prev *prev;
	struct sched_shm s[STAT_MAX_DOMAINS];
	char err[PATH_MAX + 128] = "", names[STAT_MAX_DOMAINS][80];
	unsigned nr = 0, open_nr = 0;
	uint64_t n = 0;
	int r, code = 0;

	r = stat_parse_args(argc, argv, &o, err, sizeof(err));
	if (r == 1) {
		stat_usage(stdout);
		return 0;
	}
	if (r) {
		log_error("%s", err);
		return 2;
	}
	if (o.domain) {
		snprintf(names[0], sizeof(names[0]), "%s", o.domain);
		nr = 1;
	} else if (find_domains(o.dir, names, &nr, err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	for (unsigned i = 0; i < nr; i++) {
		struct sched_shm_params p = { .name = names[i], .dir = o.dir, .observe = true };

		/* another user's default domain we may not read: say so, show the rest */
		if (sched_shm_open(&s[open_nr], &p, err, sizeof(err))) {
			log_error("%s", err);
			code = 1;
			continue;
		}
		open_nr++;
	}
	if (!open_nr)
		return 1;
	prev = calloc(open_nr, sizeof(*prev));
	if (!prev) {
		for (unsigned i = 0; i < open_nr; i++)
			sched_shm_close(&s[i]);
		return 1;
	}
	for (;;) {
		if (!o.json && !o.once)
			fputs("\033[H\033[2J", stdout);        /* home, clear: like top */
		for (unsigned i = 0; i < open_nr; i++) {
			if (i && !o.json)
				fputc('\n', stdout);
			if (o.vms && !o.json)
				stat_print_vms(stdout, &s[i]);
			else
				stat_print(stdout, &s[i], o.json, o.once ? NULL : &prev[i]);
		}
		if (o.count && ++n >= o.count)
			break;
		if (ferror(stdout))
			break;
		struct timespec ts = clock_ns_to_timespec(o.interval_ns);
		nanosleep(&ts, NULL);
	}
	free(prev);
	for (unsigned i = 0; i < open_nr; i++)
		sched_shm_close(&s[i]);
	return code;
}
