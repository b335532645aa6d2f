/*
 * The QEMU command line libvirt generates, turned into a lagvisor launch:
 * a struct vm_config for the VM plus what the QEMU front itself acts on
 * (monitor socket, chardevs, fd sets, -S, -no-shutdown, pidfile...).
 * Options the contract (vmm/qemu/README.md §1) does not need acted on are
 * accepted and ignored; options lagvisor does not know are logged and
 * ignored, never fatal. Only bad values of options lagvisor acts on
 * (-m, -smp, -chardev...) fail. Pure apart from logging.
 *
 * lagvisor's own settings come from `-lagvisor key=value,...` (what a
 * domain's <qemu:commandline> appends) or the LAGVISOR_QEMU_OPTS
 * environment variable (<qemu:env>), same syntax; the option wins:
 *   sched=host|eevdf  irqchip=kernel|user  strict-io=on|off  native=auto|off  verbose=N
 *   machine=kvm|standin (standin: no VM, for tests; see standin.h)
 * and the scheduler options of `lagvisor run` by their long names:
 *   host-cpus=0-3  weight=N  nice=N  slice=3ms  idle=on  sched-feature=A,,B
 *   sched-domain=NAME  trace=FILE
 * (a ',' inside a value is written ',,', as everywhere in QEMU options).
 */
#ifndef LAGVISOR_VMM_QEMU_CMDLINE_H
#define LAGVISOR_VMM_QEMU_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "vmm/config.h"

#define QEMU_MAX_CHARDEVS 8
#define QEMU_MAX_FDS 8
#define QEMU_MAX_DEVICES 16
#define QEMU_MAX_KNOB_STRS 16

enum qemu_chr_kind {
	QEMU_CHR_SOCKET, QEMU_CHR_PTY, QEMU_CHR_FILE, QEMU_CHR_NULL,
	QEMU_CHR_STDIO, QEMU_CHR_OTHER,
};

struct qemu_chardev {
	char *id;
	enum qemu_chr_kind kind;
	char *backend;             /* as written: "socket", "pty", ... */
	int fd;                    /* socket fd=N (already listening), else -1 */
	char *path;                /* socket/file path; may be /dev/fdset/N */
	bool server;               /* socket server=on */
	bool append;               /* file append=on */
};

/* -add-fd set=N,fd=M,opaque=...: fd M (inherited) belongs to set N. */
struct qemu_fdset_fd {
	unsigned set;
	int fd;
};

/* A -device with an id: what qom-list /machine/peripheral reports. */
struct qemu_device {
	char *id;
	char *driver;
};

struct qemu_launch {
	struct vm_config cfg;      /* strings point into this struct's own copies */
	bool probe;                /* -machine none: a capability probe */
	bool start_paused;         /* -S */
	bool no_shutdown;          /* -no-shutdown */
	bool no_reboot;            /* -no-reboot: a guest reset ends the guest */
	bool daemonize;            /* -daemonize */
	bool standin;              /* -lagvisor machine=standin (see standin.h) */
	unsigned max_cpus;         /* -smp maxcpus (0: none): the vCPUs above
	                            * cfg.nr_cpus are listed as pluggable, as QEMU
	                            * does, so that plugging one fails by name */
	char *pidfile;             /* -pidfile, NULL: none */
	char *name;                /* -name guest=NAME */
	char *uuid;                /* -uuid */
	char *kernel, *initrd, *append;
	char *mem;                 /* -m size as written, NULL: none */
	char *monitor;             /* chardev id of the QMP monitor, NULL: none */
	char *serial;              /* chardev id of the first serial port */
	unsigned nr_chardevs, nr_fds, nr_devices;
	unsigned nr_ignored;       /* options accepted but not acted on */
	unsigned nr_unknown;       /* options lagvisor does not know */
	struct qemu_chardev chardevs[QEMU_MAX_CHARDEVS];
	struct qemu_fdset_fd fds[QEMU_MAX_FDS];
	struct qemu_device devices[QEMU_MAX_DEVICES];
	unsigned nr_knob_strs;     /* strings cfg.sched_opts points into */
	char *knob_strs[QEMU_MAX_KNOB_STRS];
};

/*
 * Does argv ask for `-machine none` (libvirt's capability probe)? Checked
 * before anything else so that a probe never depends on lagvisor's parser.
 */
bool qemu_cmdline_is_probe(int argc, char *const argv[]);

/*
 * Parse argv (argv[0] is the program) and `env_opts` (LAGVISOR_QEMU_OPTS,
 * may be NULL) into `l` (initialised here; qemu_launch_free it even on
 * failure). Returns 0, or -errno with one line naming the problem in err.
 */
int qemu_cmdline_parse(int argc, char *const argv[], const char *env_opts,
		       struct qemu_launch *l, char *err, size_t errlen);

const struct qemu_chardev *qemu_launch_chardev(const struct qemu_launch *l,
					       const char *id);

/*
 * The fd a path names: "/dev/fdset/N" is the first fd added to set N
 * (-add-fd). Returns the fd, -ENOENT for an empty set, -EINVAL for a path
 * that is not an fd set.
 */
int qemu_launch_fdset_fd(const struct qemu_launch *l, const char *path);

/* QEMU's -m syntax: a number of MiB, or a number with suffix K/M/G/T (or B). */
int qemu_parse_mem(const char *s, uint64_t *bytes);

void qemu_launch_free(struct qemu_launch *l);

#endif
