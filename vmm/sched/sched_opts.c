#include "vmm/sched/sched_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

unsigned host_cpu_list_count(const struct host_cpu_list *l)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SCHED_OPTS_MAX_HOST_CPUS / 64; i++)
		n += (unsigned)__builtin_popcountll(l->bits[i]);
	return n;
}

/* Digits at *p into *v (< limit); advances *p. */
static int parse_num(const char **p, uint64_t limit, uint64_t *v)
{
	const char *s = *p;

	*v = 0;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		*v = *v * 10 + (uint64_t)(*s - '0');
		if (*v >= limit)
			return -EINVAL;
	}
	*p = s;
	return 0;
}

int sched_opts_parse_cpulist(const char *s, struct host_cpu_list *out)
{
	struct host_cpu_list l;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	memset(&l, 0, sizeof(l));
	for (;;) {
		uint64_t a, b;

		if (parse_num(&p, SCHED_OPTS_MAX_HOST_CPUS, &a))
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (parse_num(&p, SCHED_OPTS_MAX_HOST_CPUS, &b) || b < a)
				return -EINVAL;
		}
		for (uint64_t c = a; c <= b; c++)
			l.bits[c / 64] |= 1ull << (c % 64);
		if (!*p)
			break;
		if (*p++ != ',')
			return -EINVAL;
	}
	*out = l;
	return 0;
}

int sched_opts_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *suffix; uint64_t mul; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000 },
	};
	const char *p = s;
	uint64_t v;

	if (!s || parse_num(&p, UINT64_MAX / 10, &v) || v == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix))
			continue;
		if (v > UINT64_MAX / units[i].mul)
			return -EINVAL;
		*ns = v * units[i].mul;
		return 0;
	}
	return -EINVAL;
}

int sched_opts_check_features(const char *list, char *err, size_t errlen)
{
	size_t len = sched_domain_size(1, 1);
	void *mem = aligned_alloc(64, (len + 63) & ~(size_t)63);
	char *copy = NULL, *tok, *save = NULL;
	int r = -ENOMEM;

	if (!mem)
		goto out;
	r = sched_domain_init(mem, len, 1, 1, NULL);
	if (r) {
		snprintf(err, errlen, "--sched-feature: cannot set up a scratch domain");
		goto out_mem;
	}
	copy = strdup(list);
	if (!copy) {
		r = -ENOMEM;
		goto out_dom;
	}
	/* One name at a time, so the message can name the bad one. */
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		r = sched_feature_set(mem, tok);
		if (r) {
			snprintf(err, errlen, "--sched-feature '%s': unknown feature "
				 "(NAME enables, NO_NAME disables; e.g. NO_PLACE_LAG)", tok);
			goto out_dom;
		}
	}
	/* and the scheduler's own list parser agrees (empty items etc.) */
	r = sched_features_parse(mem, list);
	if (r)
		snprintf(err, errlen, "--sched-feature '%s': not a comma-separated "
			 "list of feature names", list);
out_dom:
	free(copy);
	sched_domain_destroy(mem);
out_mem:
	free(mem);
out:
	if (r == -ENOMEM)
		snprintf(err, errlen, "--sched-feature: out of memory");
	return r;
}

bool sched_opts_domain_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64 || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

static int parse_nice(const char *v, int *out)
{
	const char *p = v;
	bool neg = false;
	uint64_t n;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (parse_num(&p, 100, &n) || *p)
		return -EINVAL;
	if ((!neg && n > 19) || (neg && n > 20))
		return -EINVAL;
	*out = neg ? -(int)n : (int)n;
	return 0;
}

int sched_opts_apply(struct sched_options *o, const char *name, const char *v,
		     char *err, size_t errlen)
{
	uint64_t n;
	const char *p = v;

	if (!strcmp(name, "host-cpus")) {
		if (sched_opts_parse_cpulist(v, &o->host_cpus)) {
			snprintf(err, errlen, "--host-cpus '%s': not a CPU list "
				 "(e.g. 0-3,6; CPUs below %u)", v, SCHED_OPTS_MAX_HOST_CPUS);
			return -EINVAL;
		}
		o->host_cpus_set = true;
	} else if (!strcmp(name, "weight")) {
		if (parse_num(&p, (uint64_t)SCHED_MAX_WEIGHT + 1, &n) || *p || n == 0) {
			snprintf(err, errlen, "--weight '%s': expected 1..%u (nice 0 = %u)",
				 v, SCHED_MAX_WEIGHT, SCHED_NICE_0_WEIGHT);
			return -EINVAL;
		}
		o->weight = (uint32_t)n;
	} else if (!strcmp(name, "nice")) {
		if (parse_nice(v, &o->nice)) {
			snprintf(err, errlen, "--nice '%s': expected -20..19", v);
			return -EINVAL;
		}
		o->nice_set = true;
	} else if (!strcmp(name, "slice")) {
		if (sched_opts_parse_duration(v, &o->slice_ns)) {
			snprintf(err, errlen, "--slice '%s': not a duration "
				 "(e.g. 3ms, 750us, 100000ns)", v);
			return -EINVAL;
		}
	} else if (!strcmp(name, "latency")) {
		if (strcmp(v, "low") && strcmp(v, "normal")) {
			snprintf(err, errlen, "--latency '%s': takes low or normal", v);
			return -EINVAL;
		}
		o->latency_low = !strcmp(v, "low");
	} else if (!strcmp(name, "idle")) {
		o->idle = true;
	} else if (!strcmp(name, "sched-feature")) {
		int r = sched_opts_check_features(v, err, errlen);

		if (r)
			return r == -ENOMEM ? -ENOMEM : -EINVAL;
		o->features = v;
	} else if (!strcmp(name, "sched-domain")) {
		o->domain_private = !strcmp(v, "private");
		o->domain = NULL;
		if (o->domain_private)
			return 0;
		if (!sched_opts_domain_name_ok(v)) {
			snprintf(err, errlen, "--sched-domain '%s': a name is 1-64 letters, "
				 "digits, '-', '_' or '.', not starting with '.'", v);
			return -EINVAL;
		}
		o->domain = v;
	} else if (!strcmp(name, "name")) {
		size_t n = strlen(v);

		if (n == 0 || n >= SCHED_OPTS_VM_NAME_MAX) {
			snprintf(err, errlen, "--name: 1 to %u bytes", SCHED_OPTS_VM_NAME_MAX - 1);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
				snprintf(err, errlen, "--name: no control characters");
				return -EINVAL;
			}
		o->vm_name = v;
	} else if (!strcmp(name, "trace")) {
		if (!*v) {
			snprintf(err, errlen, "--trace: empty path");
			return -EINVAL;
		}
		o->trace_path = v;
	} else {
		return -ENOENT;
	}
	if (o->weight && o->nice_set) {
		snprintf(err, errlen, "--weight and --nice are exclusive (a weight "
			 "is what a nice value maps to)");
		return -EINVAL;
	}
	if (o->idle && o->latency_low) {
		snprintf(err, errlen, "--idle excludes --latency low (an idle-class vCPU "
			 "runs only when nothing else wants to)");
		return -EINVAL;
	}
	if (o->idle && (o->weight || o->nice_set)) {
		snprintf(err, errlen, "--idle excludes --weight and --nice (an idle-class "
			 "vCPU has weight %u)", SCHED_IDLE_WEIGHT);
		return -EINVAL;
	}
	return 0;
}
