#include "vmm/qemu/qemu_cmdline.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/qemu/qemu_cmdline_opt.h"
#include "vmm/qemu/qemu_opts.h"

struct qemu_option {
	const char *name;          /* without the leading dash(es) */
	bool has_arg;
	int (*fn)(struct qemu_launch *l, const char *arg, char *err, size_t errlen);
};

int qemu_cmdline_set_str(char **slot, const char *s, char *err, size_t errlen)
{
	char *c = strdup(s);

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	free(*slot);
	*slot = c;
	return 0;
}

int qemu_cmdline_opts(struct qemu_opts *o, const char *opt, const char *arg,
		      const char *implied, char *err, size_t errlen)
{
	char msg[256];
	int r = qemu_opts_parse(o, arg, implied, msg, sizeof(msg));

	if (r)
		snprintf(err, errlen, "-%s: %s", opt, msg);
	return r;
}

int qemu_parse_mem(const char *s, uint64_t *bytes)
{
	uint64_t v = 0;
	unsigned shift = 20;          /* a bare number is MiB, as in QEMU */
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0': break;
	case 'b': case 'B': shift = 0; break;
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	default: return -EINVAL;
	}
	if (*p && p[1])
		return -EINVAL;
	if (v == 0 || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = v << shift;
	return 0;
}

static int opt_m(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	const char *size;
	int r = qemu_cmdline_opts(&o, "m", arg, "size", err, errlen);

	if (!r) {
		size = qemu_opts_get(&o, "size");
		if (size && qemu_parse_mem(size, &l->cfg.mem_bytes)) {
			snprintf(err, errlen, "-m %s: not a memory size", arg);
			r = -EINVAL;
		} else if (size) {
			r = qemu_cmdline_set_str(&l->mem, size, err, errlen);
		}
		if (qemu_opts_get(&o, "maxmem"))
			log_warn("-m maxmem: memory hotplug is not supported, ignored");
	}
	qemu_opts_free(&o);
	return r;
}

/* -smp [cpus=]N[,sockets=S,dies=D,cores=C,threads=T,maxcpus=M] */
static int opt_smp(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	static const char *const topo[] = { "sockets", "dies", "clusters", "cores",
					    "threads" };
	struct qemu_opts o;
	uint64_t cpus = 0, product = 1, v;
	bool any = false;
	int r = qemu_cmdline_opts(&o, "smp", arg, "cpus", err, errlen);

	if (r)
		goto out;
	r = qemu_opts_get_uint(&o, "cpus", VM_MAX_CPUS * 4ull, &cpus);
	if (r && r != -ENOENT)
		goto bad;
	for (size_t i = 0; i < ARRAY_SIZE(topo); i++) {
		r = qemu_opts_get_uint(&o, topo[i], VM_MAX_CPUS * 4ull, &v);
		if (r == -ENOENT)
			continue;
		if (r || v == 0)
			goto bad;
		product *= v;
		any = true;
		if (product > VM_MAX_CPUS * 4ull)
			goto bad;
	}
	/* QEMU: cpus defaults to the topology's product. A smaller cpus
	 * (room for hotplug) starts that many; lagvisor has no hotplug. */
	if (!cpus)
		cpus = any ? product : 1;
	/* Here, not in config_validate: its message would name --cpus. */
	if (cpus > VM_MAX_CPUS) {
		snprintf(err, errlen, "-smp %s: lagvisor supports at most %u vCPUs", arg,
			 VM_MAX_CPUS);
		r = -EINVAL;
		goto out;
	}
	r = qemu_opts_get_uint(&o, "maxcpus", VM_MAX_CPUS * 4ull, &v);
	if (!r && v != cpus)
		log_warn("-smp maxcpus=%llu: CPU hotplug is not supported; starting %llu",
			 (unsigned long long)v, (unsigned long long)cpus);
	l->cfg.nr_cpus = (unsigned)cpus;
	l->max_cpus = !r && v > cpus ? (unsigned)v : (unsigned)cpus;
	r = 0;
	goto out;
bad:
	snprintf(err, errlen, "-smp %s: bad CPU count or topology", arg);
	r = -EINVAL;
out:
	qemu_opts_free(&o);
	return r;
}

static int opt_kernel(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	return qemu_cmdline_set_str(&l->kernel, arg, err, errlen);
}

static int opt_initrd(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	return qemu_cmdline_set_str(&l->initrd, arg, err, errlen);
}

static int opt_append(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	return qemu_cmdline_set_str(&l->append, arg, err, errlen);
}

static int opt_pidfile(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	return qemu_cmdline_set_str(&l->pidfile, arg, err, errlen);
}

static int opt_uuid(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	return qemu_cmdline_set_str(&l->uuid, arg, err, errlen);
}

static int opt_name(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	int r = qemu_cmdline_opts(&o, "name", arg, "guest", err, errlen);

	if (!r && qemu_opts_get(&o, "guest"))
		r = qemu_cmdline_set_str(&l->name, qemu_opts_get(&o, "guest"), err, errlen);
	if (!r && l->name)
		l->cfg.sched_opts.vm_name = l->name;   /* lagvisor stat shows it */
	qemu_opts_free(&o);
	return r;
}

static int opt_flag_s(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	l->start_paused = true;
	return 0;
}

static int opt_no_reboot(struct qemu_launch *l, const char *arg, char *err,
			 size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	l->no_reboot = true;
	return 0;
}

static int opt_no_shutdown(struct qemu_launch *l, const char *arg, char *err,
			   size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	l->no_shutdown = true;
	return 0;
}

static int opt_daemonize(struct qemu_launch *l, const char *arg, char *err,
			 size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	l->daemonize = true;
	return 0;
}

/* -machine [type=]T,...: only "none" (the probe) matters. */
static int opt_machine(struct qemu_launch *l, const char *arg, char *err, size_t errlen)
{
	struct qemu_opts o;
	const char *type;
	int r = qemu_cmdline_opts(&o, "machine", arg, "type", err, errlen);

	type = r ? NULL : qemu_opts_get(&o, "type");
	if (type && !strcmp(type, "none"))
		l->probe = true;
	qemu_opts_free(&o);
	return r;
}

static int opt_nographic(struct qemu_launch *l, const char *arg, char *err,
			 size_t errlen)
{
	(void)arg; (void)err; (void)errlen;
	l->nr_ignored++;
	return 0;
}

/*
 * The scheduler options of `lagvisor run` by their long names (idle takes
 * on|off here). The options keep pointers to their strings, so those are
 * copied into the launch. -ENOENT: not a scheduler option.
 */
static int lagvisor_sched_knob(struct qemu_launch *l, const char *k, const char *v,
			       char *err, size_t errlen)
{
	char msg[256];
	bool on;
	int r;

	if (!strcmp(k, "idle")) {
		if (qemu_parse_bool(v, &on)) {
			snprintf(err, errlen, "-lagvisor idle=%s: takes on|off", v);
			return -EINVAL;
		}
		if (!on) {
			l->cfg.sched_opts.idle = false;
			return 0;
		}
		v = NULL;
	} else if (l->nr_knob_strs == QEMU_MAX_KNOB_STRS) {
		snprintf(err, errlen, "-lagvisor: too many settings");
		return -E2BIG;
	} else {
		r = qemu_cmdline_set_str(&l->knob_strs[l->nr_knob_strs], v, err, errlen);
		if (r)
			return r;
		v = l->knob_strs[l->nr_knob_strs++];
	}
	r = sched_opts_apply(&l->cfg.sched_opts, k, v, msg, sizeof(msg));
	if (r == -EINVAL)
		snprintf(err, errlen, "-lagvisor %s: %s", k, msg);
	return r;
}

/* lagvisor's own settings: -lagvisor k=v,... and LAGVISOR_QEMU_OPTS. */
static int opt_lagvisor(struct qemu_launch *l, const char *arg, char *err,
			size_t errlen)
{
	struct qemu_opts o;
	const char *v;
	bool b;
	uint64_t n;
	int r = qemu_cmdline_opts(&o, "lagvisor", arg, NULL, err, errlen);

	for (unsigned i = 0; !r && i < o.nr; i++) {
		const char *k = o.o[i].key;

		v = o.o[i].value;
		if (!strcmp(k, "sched") && (!strcmp(v, "host") || !strcmp(v, "eevdf"))) {
			l->cfg.sched = strcmp(v, "host") ? SCHED_MODE_EEVDF : SCHED_MODE_HOST;
			l->cfg.irqchip = strcmp(v, "host") ? IRQCHIP_USER : IRQCHIP_KERNEL;
		} else if (!strcmp(k, "irqchip") &&
			   (!strcmp(v, "kernel") || !strcmp(v, "user"))) {
			l->cfg.irqchip = strcmp(v, "kernel") ? IRQCHIP_USER : IRQCHIP_KERNEL;
		} else if (!strcmp(k, "strict-io") &&
			   !qemu_opts_get_bool(&o, k, false, &b)) {
			l->cfg.strict_io = b;
		} else if (!strcmp(k, "native") && (!strcmp(v, "auto") || !strcmp(v, "off"))) {
			l->cfg.no_native = !strcmp(v, "off");
		} else if (!strcmp(k, "seccomp") && !qemu_opts_get_bool(&o, k, true, &b)) {
			l->cfg.no_seccomp = !b;
		} else if (!strcmp(k, "machine") &&
			   (!strcmp(v, "kvm") || !strcmp(v, "standin"))) {
			l->standin = !strcmp(v, "standin");
		} else if (!strcmp(k, "verbose") && !qemu_opts_get_uint(&o, k, 9, &n)) {
			l->cfg.verbose = (unsigned)n;
		} else if ((r = lagvisor_sched_knob(l, k, v, err, errlen)) != -ENOENT) {
			continue;          /* applied, or r says why not */
		} else {
			snprintf(err, errlen, "-lagvisor %s=%s: unknown setting or bad value "
				 "(sched=host|eevdf, irqchip=kernel|user, strict-io=on|off, native=auto|off, "
				 "seccomp=on|off, verbose=N, machine=kvm|standin, or a lagvisor run scheduler "
				 "option: host-cpus, weight, nice, slice, latency, idle, sched-feature, "
				 "sched-domain, trace)", k, v);
			r = -EINVAL;
		}
	}
	qemu_opts_free(&o);
	return r;
}

/*
 * Every option libvirt 9.0 was seen to pass, and common ones users add.
 * fn NULL: accepted and ignored (lagvisor has nothing to do for it).
 */
static const struct qemu_option qemu_options[] = {
	{ "m", true, opt_m },
	{ "smp", true, opt_smp },
	{ "kernel", true, opt_kernel },
	{ "initrd", true, opt_initrd },
	{ "append", true, opt_append },
	{ "name", true, opt_name },
	{ "uuid", true, opt_uuid },
	{ "S", false, opt_flag_s },
	{ "no-shutdown", false, opt_no_shutdown },
	{ "no-reboot", false, opt_no_reboot },
	{ "daemonize", false, opt_daemonize },
	{ "pidfile", true, opt_pidfile },
	{ "chardev", true, qemu_opt_chardev },
	{ "mon", true, qemu_opt_mon },
	{ "qmp", true, qemu_opt_qmp },
	{ "serial", true, qemu_opt_serial },
	{ "device", true, qemu_opt_device },
	{ "add-fd", true, qemu_opt_add_fd },
	{ "machine", true, opt_machine },
	{ "M", true, opt_machine },
	{ "nographic", false, opt_nographic },
	{ "lagvisor", true, opt_lagvisor },
	{ "object", true, NULL }, { "accel", true, NULL }, { "cpu", true, NULL },
	{ "overcommit", true, NULL }, { "display", true, NULL },
	{ "no-user-config", false, NULL }, { "nodefaults", false, NULL },
	{ "rtc", true, NULL }, { "boot", true, NULL }, { "audiodev", true, NULL },
	{ "sandbox", true, NULL }, { "msg", true, NULL }, { "global", true, NULL },
	{ "enable-kvm", false, NULL },
	{ "no-acpi", false, NULL }, { "no-hpet", false, NULL }, { "vga", true, NULL },
	{ "usb", false, NULL }, { "parallel", true, NULL }, { "monitor", true, NULL },
	{ "vnc", true, NULL }, { "spice", true, NULL }, { "netdev", true, NULL },
	{ "net", true, NULL }, { "drive", true, NULL }, { "blockdev", true, NULL },
	{ "bios", true, NULL }, { "smbios", true, NULL }, { "numa", true, NULL },
	{ "mem-prealloc", false, NULL }, { "mem-path", true, NULL },
	{ "realtime", true, NULL }, { "k", true, NULL }, { "trace", true, NULL },
	{ "D", true, NULL }, { "d", true, NULL }, { "L", true, NULL },
	{ "set", true, NULL }, { "fw_cfg", true, NULL }, { "runas", true, NULL },
	{ "chroot", true, NULL }, { "incoming", true, NULL }, { "snapshot", false, NULL },
	{ "nic", true, NULL }, { "iothread", true, NULL }, { "sdl", false, NULL },
	{ "fsdev", true, NULL }, { "virtfs", true, NULL },
};

static const struct qemu_option *find_option(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(qemu_options); i++)
		if (!strcmp(qemu_options[i].name, name))
			return &qemu_options[i];
	return NULL;
}

/* "-opt" and "--opt" are the same option in QEMU. */
static const char *option_name(const char *arg)
{
	if (arg[0] != '-' || !arg[1])
		return NULL;
	return arg[1] == '-' ? arg + 2 : arg + 1;
}

bool qemu_cmdline_is_probe(int argc, char *const argv[])
{
	for (int i = 1; i + 1 < argc; i++) {
		const char *name = option_name(argv[i]);
		struct qemu_launch l = { 0 };
		char err[8];

		if (!name || (strcmp(name, "machine") && strcmp(name, "M")))
			continue;
		opt_machine(&l, argv[i + 1], err, sizeof(err));
		if (l.probe)
			return true;
	}
	return false;
}

static void launch_init(struct qemu_launch *l)
{
	memset(l, 0, sizeof(*l));
	config_init(&l->cfg);
	/* As `lagvisor run`: lagvisor's scheduler on lagvisor's irqchip;
	 * -lagvisor sched=host is the baseline (KVM's irqchip, host threads). */
	l->cfg.sched = SCHED_MODE_EEVDF;
	l->cfg.irqchip = IRQCHIP_USER;
	/* The QEMU front wires the console itself (pty, file, socket). */
	l->cfg.serial = SERIAL_NONE;
	l->cfg.mem_opt = "-m";
}

/* After parsing: point the config at the parsed strings, check refs. */
static int launch_finish(struct qemu_launch *l, char *err, size_t errlen)
{
	const struct qemu_chardev *c;

	l->cfg.kernel_path = l->kernel;
	l->cfg.initrd_path = l->initrd;
	l->cfg.cmdline = l->append ? l->append : "";
	l->cfg.mem_arg = l->mem;
	if (l->monitor && !qemu_launch_chardev(l, l->monitor)) {
		snprintf(err, errlen, "-mon: no chardev with id '%s'", l->monitor);
		return -EINVAL;
	}
	if (l->serial && !(c = qemu_launch_chardev(l, l->serial))) {
		snprintf(err, errlen, "serial port: no chardev with id '%s'", l->serial);
		return -EINVAL;
	}
	if (l->monitor) {
		c = qemu_launch_chardev(l, l->monitor);
		if (c->kind != QEMU_CHR_SOCKET || !c->server) {
			snprintf(err, errlen, "-mon: chardev '%s' must be a listening socket "
				 "(socket,server=on)", l->monitor);
			return -EINVAL;
		}
	}
	return 0;
}

static int parse(int argc, char *const argv[], const char *env_opts,
		 struct qemu_launch *l, char *err, size_t errlen)
{
	int r;

	launch_init(l);
	/* The environment first, so that -lagvisor settings win. */
	if (env_opts && *env_opts) {
		r = opt_lagvisor(l, env_opts, err, errlen);
		if (r)
			return r;
	}
	for (int i = 1; i < argc; i++) {
		const char *name = option_name(argv[i]);
		const struct qemu_option *opt = name ? find_option(name) : NULL;
		const char *arg = NULL;

		if (!name) {
			log_warn("ignoring argument '%s' (disk images are not supported)",
				 argv[i]);
			l->nr_unknown++;
			continue;
		}
		if (!opt) {
			/* Unknown: guess that a following non-option word is its value. */
			if (i + 1 < argc && argv[i + 1][0] != '-')
				arg = argv[++i];
			log_warn("ignoring unknown option %s%s%s", argv[i - (arg != NULL)],
				 arg ? " " : "", arg ? arg : "");
			l->nr_unknown++;
			continue;
		}
		if (opt->has_arg) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "-%s: missing value", opt->name);
				return -EINVAL;
			}
			arg = argv[++i];
		}
		if (!opt->fn) {
			log_debug("ignoring -%s%s%s", opt->name, arg ? " " : "", arg ? arg : "");
			l->nr_ignored++;
			continue;
		}
		r = opt->fn(l, arg ? arg : "", err, errlen);
		if (r)
			return r;
	}
	return launch_finish(l, err, errlen);
}

int qemu_cmdline_parse(int argc, char *const argv[], const char *env_opts,
		       struct qemu_launch *l, char *err, size_t errlen)
{
	int r = parse(argc, argv, env_opts, l, err, errlen);

	/* Messages quote arguments, which may hold a newline. */
	if (r && errlen)
		log_one_line(err);
	return r;
}

void qemu_launch_free(struct qemu_launch *l)
{
	for (unsigned i = 0; i < l->nr_chardevs; i++) {
		free(l->chardevs[i].id);
		free(l->chardevs[i].backend);
		free(l->chardevs[i].path);
	}
	for (unsigned i = 0; i < l->nr_devices; i++) {
		free(l->devices[i].id);
		free(l->devices[i].driver);
	}
	free(l->pidfile);
	free(l->name);
	free(l->uuid);
	free(l->kernel);
	free(l->initrd);
	free(l->append);
	free(l->mem);
	free(l->monitor);
	free(l->serial);
	for (unsigned i = 0; i < l->nr_knob_strs; i++)
		free(l->knob_strs[i]);
	memset(l, 0, sizeof(*l));
}
