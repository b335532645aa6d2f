#include "vmm/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/halt_poll.h"
#include "vmm/sched/sched_opts.h"

int cli_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		/* Stop before v*10 can wrap: anything past UINT_MAX is out of
		 * range whatever digits follow. */
		if (v > UINT_MAX)
			return -ERANGE;
	}
	if (v < min || v > max)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *bytes)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	default:
		return -EINVAL;
	}
	if (*p && p[1])
		return -EINVAL;
	if (v == 0 || v > (UINT64_MAX >> shift))
		return -EINVAL;
	*bytes = v << shift;
	return 0;
}

enum cli_opt {
	OPT_KERNEL, OPT_INITRD, OPT_CMDLINE, OPT_CPUS, OPT_MEMORY, OPT_SCHED,
	OPT_SERIAL, OPT_STRICT_IO, OPT_NO_X2APIC,
	OPT_NATIVE, OPT_HALT_POLL, OPT_QEMU_TESTDEV, OPT_NO_SECCOMP, OPT_VERBOSE, OPT_HELP,
	OPT_SCHED_KNOB,       /* handed to sched_opts_apply by name */
	OPT_IRQCHIP,
};

struct cli_option {
	const char *name;     /* long name without "--" */
	char short_name;      /* 0: none */
	bool has_value;
	enum cli_opt id;
};

static const struct cli_option run_options[] = {
	{ "kernel", 0, true, OPT_KERNEL },
	{ "initrd", 0, true, OPT_INITRD },
	{ "cmdline", 0, true, OPT_CMDLINE },
	{ "cpus", 0, true, OPT_CPUS },
	{ "memory", 0, true, OPT_MEMORY },
	{ "sched", 0, true, OPT_SCHED },
	{ "irqchip", 0, true, OPT_IRQCHIP },
	{ "serial", 0, true, OPT_SERIAL },
	{ "strict-io", 0, false, OPT_STRICT_IO },
	{ "no-x2apic", 0, false, OPT_NO_X2APIC },
	{ "native", 0, true, OPT_NATIVE },
	{ "halt-poll", 0, true, OPT_HALT_POLL },
	{ "qemu-testdev", 0, false, OPT_QEMU_TESTDEV },
	{ "no-seccomp", 0, false, OPT_NO_SECCOMP },
	{ "verbose", 'v', false, OPT_VERBOSE },
	{ "help", 'h', false, OPT_HELP },
	{ "host-cpus", 0, true, OPT_SCHED_KNOB },
	{ "weight", 0, true, OPT_SCHED_KNOB },
	{ "nice", 0, true, OPT_SCHED_KNOB },
	{ "slice", 0, true, OPT_SCHED_KNOB },
	{ "latency", 0, true, OPT_SCHED_KNOB },
	{ "idle", 0, false, OPT_SCHED_KNOB },
	{ "sched-feature", 0, true, OPT_SCHED_KNOB },
	{ "sched-domain", 0, true, OPT_SCHED_KNOB },
	{ "trace", 0, true, OPT_SCHED_KNOB },
	{ "name", 0, true, OPT_SCHED_KNOB },
};

static const struct cli_option *find_long(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(run_options); i++)
		if (strlen(run_options[i].name) == len &&
		    !strncmp(run_options[i].name, name, len))
			return &run_options[i];
	return NULL;
}

static const struct cli_option *find_short(char c)
{
	for (size_t i = 0; i < ARRAY_SIZE(run_options); i++)
		if (run_options[i].short_name == c)
			return &run_options[i];
	return NULL;
}

static int parse_serial(const char *v, struct vm_config *cfg, char *err,
			size_t errlen)
{
	if (!strcmp(v, "stdio")) {
		cfg->serial = SERIAL_STDIO;
	} else if (!strcmp(v, "none")) {
		cfg->serial = SERIAL_NONE;
	} else if (!strncmp(v, "file:", 5)) {
		if (!v[5]) {
			snprintf(err, errlen, "--serial file: needs a path (file:PATH)");
			return -EINVAL;
		}
		cfg->serial = SERIAL_FILE;
		cfg->serial_path = v + 5;
	} else {
		snprintf(err, errlen,
			 "--serial '%s': expected stdio, file:PATH or none", v);
		return -EINVAL;
	}
	return 0;
}

/* Apply one option with its value (NULL for flags). Returns 0, 1 for
 * --help, or -EINVAL with err filled. */
static int apply_option(const struct cli_option *o, const char *v,
			struct vm_config *cfg, char *err, size_t errlen)
{
	int r;

	switch (o->id) {
	case OPT_KERNEL:
		cfg->kernel_path = v;
		break;
	case OPT_INITRD:
		cfg->initrd_path = v;
		break;
	case OPT_CMDLINE:
		cfg->cmdline = v;
		break;
	case OPT_CPUS:
		r = cli_parse_uint(v, 0, UINT_MAX, &cfg->nr_cpus);
		if (r) {
			snprintf(err, errlen, "--cpus '%s': not a number of vCPUs", v);
			return -EINVAL;
		}
		break;
	case OPT_MEMORY:
		if (cli_parse_size(v, &cfg->mem_bytes)) {
			snprintf(err, errlen,
				 "--memory '%s': not a size (a positive number of bytes, "
				 "optionally with K, M or G, e.g. 512M)", v);
			return -EINVAL;
		}
		cfg->mem_arg = v;
		break;
	case OPT_SCHED:
		/* Each scheduler has its irqchip, unless --irqchip says. */
		cfg->sched_set = true;
		if (!strcmp(v, "host")) {
			cfg->sched = SCHED_MODE_HOST;
			if (!cfg->irqchip_set)
				cfg->irqchip = IRQCHIP_KERNEL;
		} else if (!strcmp(v, "eevdf")) {
			cfg->sched = SCHED_MODE_EEVDF;
			if (!cfg->irqchip_set)
				cfg->irqchip = IRQCHIP_USER;
		} else {
			snprintf(err, errlen, "--sched '%s': unknown scheduler "
				 "(expected host or eevdf)", v);
			return -EINVAL;
		}
		break;
	case OPT_SERIAL:
		return parse_serial(v, cfg, err, errlen);
	case OPT_STRICT_IO:
		cfg->strict_io = true;
		break;
	case OPT_NO_X2APIC:
		cfg->no_x2apic = true;
		break;
	case OPT_NATIVE:
		if (strcmp(v, "auto") && strcmp(v, "off")) {
			snprintf(err, errlen, "--native '%s': expected auto or off", v);
			return -EINVAL;
		}
		cfg->no_native = !strcmp(v, "off");
		break;
	case OPT_HALT_POLL:
		if (!strcmp(v, "0")) {
			cfg->halt_poll_ns = 0;
		} else if (sched_opts_parse_duration(v, &cfg->halt_poll_ns) ||
			   cfg->halt_poll_ns > HALT_POLL_LIMIT_NS) {
			snprintf(err, errlen, "--halt-poll '%s': not a duration up to 10ms "
				 "(e.g. 200us; 0 turns polling off)", v);
			return -EINVAL;
		}
		break;
	case OPT_QEMU_TESTDEV:
		cfg->qemu_testdev = true;
		break;
	case OPT_NO_SECCOMP:
		cfg->no_seccomp = true;
		break;
	case OPT_VERBOSE:
		cfg->verbose++;
		break;
	case OPT_HELP:
		return 1;
	case OPT_IRQCHIP:
		if (!strcmp(v, "kernel")) {
			cfg->irqchip = IRQCHIP_KERNEL;
			/* KVM's irqchip hides HLT: the default scheduler
			 * cannot run with it, the host's can. */
			if (!cfg->sched_set)
				cfg->sched = SCHED_MODE_HOST;
		} else if (!strcmp(v, "user")) {
			cfg->irqchip = IRQCHIP_USER;
		} else {
			snprintf(err, errlen, "--irqchip '%s': expected kernel or user", v);
			return -EINVAL;
		}
		cfg->irqchip_set = true;
		break;
	case OPT_SCHED_KNOB:
		r = sched_opts_apply(&cfg->sched_opts, o->name, v, err, errlen);
		return r ? -EINVAL : 0;
	}
	return 0;
}

/* A cluster of short flags such as "-vv". Short options take no values. */
static int parse_short(const char *arg, struct vm_config *cfg, char *err,
		       size_t errlen)
{
	int help = 0;

	for (const char *p = arg + 1; *p; p++) {
		const struct cli_option *o = find_short(*p);
		int r;

		if (!o) {
			snprintf(err, errlen, "unknown option '-%c' (see lagvisor help run)", *p);
			return -EINVAL;
		}
		r = apply_option(o, NULL, cfg, err, errlen);
		if (r < 0)
			return r;
		help |= r;
	}
	return help;
}

static int parse_run(int argc, char *const argv[], struct vm_config *cfg,
		     char *err, size_t errlen)
{
	bool help = false;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *value = NULL, *eq;
		const struct cli_option *o;
		int r;

		if (arg[0] == '-' && arg[1] && arg[1] != '-') {
			r = parse_short(arg, cfg, err, errlen);
			if (r < 0)
				return r;
			help |= r;
			continue;
		}
		if (strncmp(arg, "--", 2) || !arg[2]) {
			snprintf(err, errlen, "unexpected argument '%s' (options start "
				 "with --, see lagvisor help run)", arg);
			return -EINVAL;
		}
		eq = strchr(arg + 2, '=');
		o = find_long(arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
		if (!o) {
			snprintf(err, errlen, "unknown option '%.*s' (see lagvisor help run)",
				 eq ? (int)(eq - arg) : (int)strlen(arg), arg);
			return -EINVAL;
		}
		if (o->has_value) {
			if (eq) {
				value = eq + 1;
			} else if (i + 1 < argc) {
				value = argv[++i];
			} else {
				snprintf(err, errlen, "--%s needs a value", o->name);
				return -EINVAL;
			}
		} else if (eq) {
			snprintf(err, errlen, "--%s takes no value", o->name);
			return -EINVAL;
		}
		r = apply_option(o, value, cfg, err, errlen);
		if (r < 0)
			return r;
		help |= r;
	}
	return help ? CLI_HELP_RUN : CLI_RUN;
}

static int parse_cmd(int argc, char *const argv[], struct vm_config *cfg,
		     char *err, size_t errlen)
{
	const char *cmd;

	config_init(cfg);
	if (argc < 2) {
		snprintf(err, errlen, "no command given (try lagvisor --help)");
		return -EINVAL;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "run"))
		return parse_run(argc - 2, argv + 2, cfg, err, errlen);
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		if (argc == 2)
			return CLI_VERSION;
	} else if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		if (argc == 2)
			return CLI_HELP;
	} else if (!strcmp(cmd, "help")) {
		if (argc == 2)
			return CLI_HELP;
		if (strcmp(argv[2], "run")) {
			snprintf(err, errlen, "help: unknown topic '%s' (topics: run)",
				 argv[2]);
			return -EINVAL;
		}
		if (argc == 3)
			return CLI_HELP_RUN;
		snprintf(err, errlen, "unexpected argument '%s' after help run", argv[3]);
		return -EINVAL;
	} else {
		snprintf(err, errlen, "unknown command '%s' (try lagvisor --help)", cmd);
		return -EINVAL;
	}
	snprintf(err, errlen, "unexpected argument '%s' after %s", argv[2], cmd);
	return -EINVAL;
}

int cli_parse(int argc, char *const argv[], struct vm_config *cfg,
	      char *err, size_t errlen)
{
	int r = parse_cmd(argc, argv, cfg, err, errlen);

	/* Messages quote arguments, which may hold a newline. */
	if (r < 0 && errlen)
		log_one_line(err);
	return r;
}

void cli_usage(FILE *f)
{
	fputs("Usage: lagvisor COMMAND [OPTIONS]\n"
	      "\n"
	      "A minimal KVM virtual machine monitor with its own vCPU scheduler.\n"
	      "\n"
	      "Commands:\n"
	      "  run           boot a guest kernel (see: lagvisor help run)\n"
	      "  help [run]    show this help, or the options of run\n"
	      "\n"
	      "  -h, --help    show this help\n"
	      "  -V, --version print the version\n", f);
}

void cli_usage_run(FILE *f)
{
	fputs("Usage: lagvisor run --kernel PATH [OPTIONS]\n"
	      "\n"
	      "Boot a kernel (bzImage, PVH ELF or multiboot) in a new VM; the\n"
	      "console is the guest's first serial port (ttyS0).\n"
	      "\n"
	      "  --kernel PATH        kernel image (required)\n"
	      "  --initrd PATH        initial ramdisk\n"
	      "  --cmdline STR        kernel command line (default: empty)\n"
	      "  --cpus N             number of vCPUs, 1 to 254 (default 1)\n"
	      "  --memory SIZE        guest RAM, bytes or with K/M/G (default 256M)\n"
	      "  --sched eevdf|host   vCPU scheduling: eevdf (default) = lagvisor's\n"
	      "                       own, with the userspace irqchip; host = the\n"
	      "                       host kernel's, with KVM's in-kernel irqchip\n"
	      "  --name NAME          the VM's name, as lagvisor stat shows it\n"
	      "  --host-cpus LIST     host CPUs this VM's vCPUs may use, e.g. 0-3\n"
	      "                       (default: those this process may use); with\n"
	      "                       --sched-domain NAME, the domain's host CPUs\n"
	      "  --weight W           vCPU weight 1..1048576 (nice 0 = 1024)\n"
	      "  --nice N             -20..19, instead of --weight\n"
	      "  --slice DURATION     vCPU slice, e.g. 3ms, 750us (default 0.7ms x\n"
	      "                       (1 + log2 of the domain's CPUs, at most 8))\n"
	      "  --latency low|normal low: a latency-sensitive VM, its vCPUs get a\n"
	      "                       100us slice (unless --slice says otherwise)\n"
	      "  --idle               idle class: runs only when nothing else wants to\n"
	      "  --sched-feature LIST NAME,NO_NAME,... scheduler feature flags\n"
	      "  --sched-domain NAME  share run queues with the lagvisor VMs that\n"
	      "                       name the same domain (shared-memory file);\n"
	      "                       private: a scheduler of this VM's own;\n"
	      "                       default: every VM of this user on the host\n"
	      "                       shares one (default-UID), on all its CPUs\n"
	      "  --trace FILE         write scheduler events as Chrome trace JSON\n"
	      "  --irqchip kernel|user  interrupt controllers: KVM's (default with\n"
	      "                       --sched host) or lagvisor's (guest HLT and\n"
	      "                       interrupts reach lagvisor; default with eevdf)\n"
	      "  --halt-poll DURATION with --irqchip user, spin up to this long for\n"
	      "                       the wakeup of a halted vCPU before sleeping,\n"
	      "                       adaptively, as KVM's halt_poll_ns (default\n"
	      "                       200us; 0 = off)\n"
	      "  --no-x2apic          hide x2APIC from the guest's CPUID: its local\n"
	      "                       APICs stay in xAPIC (MMIO) mode\n"
	      "  --native auto|off    on a PVM-backend KVM, run a guest that declares\n"
	      "                       VIF pages natively (auto, default) or in KVM's\n"
	      "                       instruction emulator (off, for A/B runs;\n"
	      "                       default from $LAGVISOR_NATIVE)\n"
	      "  --serial MODE        stdio (default), file:PATH (output only), none\n"
	      "  --strict-io          stop the VM on any access to an unhandled I/O\n"
	      "                       port or MMIO address (default: log it once)\n"
	      "  --qemu-testdev       QEMU's test ports for kvm-unit-tests style images:\n"
	      "                       fw_cfg (0x510, CPU count and RAM size), pc-testdev\n"
	      "                       IRQ lines (0x2000 + n) and 0xe0-0xeb (default: off)\n"
	      "  --no-seccomp         run without the syscall filters and with the\n"
	      "                       capabilities it has (for debugging; default:\n"
	      "                       each thread sandboxed once set up)\n"
	      "  -v, --verbose        more messages (repeat for debug)\n"
	      "  -h, --help           show this help\n"
	      "\n"
	      "Console (--serial stdio on a terminal): Ctrl-A x quits,\n"
	      "Ctrl-A Ctrl-A sends Ctrl-A, Ctrl-A h shows this.\n"
	      "\n"
	      "Exit status: the guest's debug-exit value v as (v<<1)|1; 0 when the\n"
	      "guest powers off, requests a reset or the console quits; 1 on a\n"
	      "runtime error (no KVM, guest crash, emulation failure); 2 on bad\n"
	      "options; 128+N when stopped by signal N.\n", f);
}
