#include "vmm/config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/halt_poll.h"

void config_init(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cmdline = "";
	cfg->nr_cpus = VM_DEFAULT_CPUS;
	cfg->mem_bytes = VM_DEFAULT_MEM_BYTES;
	cfg->mem_opt = "--memory";
	/* lagvisor's scheduler is the point of lagvisor; it needs the
	 * userspace irqchip (see config_validate). */
	cfg->sched = SCHED_MODE_EEVDF;
	cfg->irqchip = IRQCHIP_USER;
	cfg->serial = SERIAL_STDIO;
	cfg->serial_out_fd = cfg->serial_in_fd = -1;
	/* The benchmarks' A/B switch reaches every lagvisor they start, the
	 * libvirt-run ones included: --native / native= still win. */
	cfg->no_native = getenv(CONFIG_NATIVE_ENV) && !strcmp(getenv(CONFIG_NATIVE_ENV), "off");
	/* what KVM polls for with its own irqchip */
	cfg->halt_poll_ns = HALT_POLL_DEFAULT_MAX_NS;
}

void config_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const struct { char name; unsigned shift; } units[] = {
		{ 'G', 30 }, { 'M', 20 }, { 'K', 10 },
	};

	/* The largest unit that fits: whole when exact ("512M"), else one
	 * decimal rounded down ("31.2G"), which is what a message needs. */
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		uint64_t whole = bytes >> units[i].shift;
		uint64_t frac = bytes & ((1ull << units[i].shift) - 1);

		if (!whole)
			continue;
		if (frac)
			snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", whole,
				 (frac * 10) >> units[i].shift, units[i].name);
		else
			snprintf(buf, len, "%" PRIu64 "%c", whole, units[i].name);
		return;
	}
	snprintf(buf, len, "%" PRIu64, bytes);
}

int config_validate(const struct vm_config *cfg, const struct host_limits *limits,
		    char *err, size_t errlen)
{
	const char *mem_opt = cfg->mem_opt ? cfg->mem_opt : "--memory";
	const char *mem = cfg->mem_arg;
	char a[32], b[32];

	if (!cfg->kernel_path || !cfg->kernel_path[0]) {
		snprintf(err, errlen, "missing --kernel PATH (see lagvisor help run)");
		return -EINVAL;
	}
	if (cfg->initrd_path && !cfg->initrd_path[0]) {
		snprintf(err, errlen, "--initrd: empty path");
		return -EINVAL;
	}
	/* With KVM's in-kernel LAPIC a guest HLT never leaves KVM_RUN, so the
	 * scheduler would never see a vCPU go idle or an interrupt wake it. */
	if (cfg->sched == SCHED_MODE_EEVDF && cfg->irqchip == IRQCHIP_KERNEL) {
		snprintf(err, errlen, "--sched eevdf needs --irqchip user (with KVM's "
			 "in-kernel irqchip lagvisor never sees a vCPU halt)");
		return -EINVAL;
	}
	if (cfg->sched == SCHED_MODE_HOST) {
		const struct sched_options *o = &cfg->sched_opts;
		const char *knob = o->host_cpus_set ? "--host-cpus" :
				   o->weight ? "--weight" : o->nice_set ? "--nice" :
				   o->slice_ns ? "--slice" : o->idle ? "--idle" :
				   o->latency_low ? "--latency" :
				   o->features ? "--sched-feature" :
				   o->domain || o->domain_private ? "--sched-domain" : o->trace_path ? "--trace" : NULL;

		if (knob) {
			snprintf(err, errlen, "%s: only with --sched eevdf (--sched host "
				 "leaves vCPU threads to the host scheduler)", knob);
			return -EINVAL;
		}
	}
	if (cfg->nr_cpus == 0) {
		snprintf(err, errlen, "--cpus 0: a VM needs at least one vCPU");
		return -EINVAL;
	}
	if (cfg->nr_cpus > VM_MAX_CPUS) {
		snprintf(err, errlen, "--cpus %u: lagvisor supports at most %u vCPUs",
			 cfg->nr_cpus, VM_MAX_CPUS);
		return -EINVAL;
	}
	if (limits && limits->max_cpus && cfg->nr_cpus > limits->max_cpus) {
		snprintf(err, errlen, "--cpus %u: this host's KVM allows at most %u vCPUs",
			 cfg->nr_cpus, limits->max_cpus);
		return -EINVAL;
	}
	if (!mem) {
		config_format_size(cfg->mem_bytes, a, sizeof(a));
		mem = a;
	}
	if (cfg->mem_bytes < VM_MIN_MEM_BYTES) {
		config_format_size(VM_MIN_MEM_BYTES, b, sizeof(b));
		snprintf(err, errlen, "%s %s: too small (at least %s)", mem_opt, mem, b);
		return -EINVAL;
	}
	if (cfg->mem_bytes % VM_MEM_ALIGN_BYTES) {
		snprintf(err, errlen, "%s %s: not a multiple of 4K", mem_opt, mem);
		return -EINVAL;
	}
	if (limits && limits->mem_bytes && cfg->mem_bytes > limits->mem_bytes) {
		config_format_size(limits->mem_bytes, b, sizeof(b));
		snprintf(err, errlen, "%s %s: more than this host's memory (%s)", mem_opt,
			 mem, b);
		return -EINVAL;
	}
	if (cfg->serial == SERIAL_FILE && (!cfg->serial_path || !cfg->serial_path[0])) {
		snprintf(err, errlen, "--serial file: needs a path (file:PATH)");
		return -EINVAL;
	}
	return 0;
}

static int check_file(const char *opt, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "%s %s: %s", opt, path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st)) {
		r = -errno;
		snprintf(err, errlen, "%s %s: %s", opt, path, strerror(errno));
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(err, errlen, "%s %s: not a regular file", opt, path);
	} else if (st.st_size == 0) {
		r = -EINVAL;
		snprintf(err, errlen, "%s %s: empty file", opt, path);
	}
	close(fd);
	return r;
}

int config_check_files(const struct vm_config *cfg, char *err, size_t errlen)
{
	int r = check_file("--kernel", cfg->kernel_path, err, errlen);

	if (!r && cfg->initrd_path)
		r = check_file("--initrd", cfg->initrd_path, err, errlen);
	return r;
}

int config_parse_meminfo(const char *text, uint64_t *mem_bytes)
{
	const char *p = text;

	/* Lines look like "MemTotal:       32794468 kB". */
	while (p && *p) {
		if (!strncmp(p, "MemTotal:", 9)) {
			unsigned long long kb;
			char unit[4];

			if (sscanf(p + 9, " %llu %3s", &kb, unit) != 2 ||
			    strcmp(unit, "kB") || kb == 0 || kb > UINT64_MAX / 1024)
				return -EINVAL;
			*mem_bytes = (uint64_t)kb * 1024;
			return 0;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -EINVAL;
}

void config_read_host_mem(struct host_limits *limits)
{
	char buf[4096];
	ssize_t n;
	int fd;

	limits->mem_bytes = 0;
	fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	if (config_parse_meminfo(buf, &limits->mem_bytes))
		limits->mem_bytes = 0;
}
