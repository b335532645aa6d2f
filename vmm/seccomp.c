/*
 * The per-thread sandbox (seccomp.h): the filter compiler, the SIGSYS
 * handler, the capability drop and the self-test hook. The lists are in
 * seccomp_rules.c.
 */
#include "vmm/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/seccomp_internal.h"

#define X32_SYSCALL_BIT 0x40000000u
#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1                   /* si_code of a seccomp SIGSYS */
#endif
#define ARG_LO(i) ((uint32_t)offsetof(struct seccomp_data, args[i]))   /* little endian */
/* openat flags that write or make a file. O_TMPFILE's own bit only: the
 * rest of it is O_DIRECTORY, which a read-only open may use. */
#define OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | 020000000)

static const char *const role_names[SECCOMP_NR_ROLES] = {
	[SECCOMP_ROLE_VCPU] = "vcpu", [SECCOMP_ROLE_IO] = "io", [SECCOMP_ROLE_MAIN] = "main",
	[SECCOMP_ROLE_QEMU_MAIN] = "qemu-main", [SECCOMP_ROLE_QMP] = "qmp",
};

static bool sc_enabled;
/* LAGVISOR_SECCOMP_AUDIT=1: what a filter refuses is allowed and logged
 * by the kernel (SECCOMP_RET_LOG: an audit record, dmesg), for deriving
 * the lists with strace -f (every thread's calls after its seccomp()). */
static bool sc_audit;
static uint64_t sc_keep_caps;
static enum seccomp_role sc_selftest_role;
static int sc_selftest_done;

const char *seccomp_role_name(enum seccomp_role role)
{
	return (unsigned)role < SECCOMP_NR_ROLES ? role_names[role] : NULL;
}

const char *seccomp_syscall_name(long nr)
{
	for (unsigned i = 0; i < seccomp_nr_rules; i++)
		if (seccomp_rules[i].nr == nr)
			return seccomp_rules[i].name;
	for (unsigned i = 0; i < seccomp_nr_forbidden_names; i++)
		if (seccomp_forbidden_names[i].nr == nr)
			return seccomp_forbidden_names[i].name;
	return NULL;
}

/* --- the compiler --- */

struct prog {
	struct sock_filter *ins;
	unsigned n, max;
	uint32_t trap;                  /* SECCOMP_RET_TRAP | role */
};

static void emit(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	if (p->n < p->max)
		p->ins[p->n] = (struct sock_filter){ code, jt, jf, k };
	p->n++;                         /* counted past max: -E2BIG at the end */
}

static void emit_ld(struct prog *p, uint32_t off)
{
	emit(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, off);
}

static void emit_ret(struct prog *p, uint32_t v)
{
	emit(p, BPF_RET | BPF_K, 0, 0, v);
}

/* The argument's low word is one of list[]: allow, else trap. */
static void emit_list(struct prog *p, uint32_t arg, const uint32_t *list, unsigned n)
{
	emit_ld(p, arg);
	for (unsigned i = 0; i < n; i++)
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(n - i), 0, list[i]);
	emit_ret(p, p->trap);
	emit_ret(p, SECCOMP_RET_ALLOW);
}

/* One bit test: allow when the bit is set (want_set) or clear. */
static void emit_bit(struct prog *p, uint32_t arg, uint32_t bits, bool want_set)
{
	emit_ld(p, arg);
	emit(p, BPF_JMP | BPF_JSET | BPF_K, want_set ? 1 : 0, want_set ? 0 : 1, bits);
	emit_ret(p, p->trap);
	emit_ret(p, SECCOMP_RET_ALLOW);
}

static void emit_body(struct prog *p, enum seccomp_check check)
{
	static const uint32_t zero[] = { 0 };

	switch (check) {
	case SC_ALLOW:
		emit_ret(p, SECCOMP_RET_ALLOW);
		break;
	case SC_ENOSYS:
		emit_ret(p, SECCOMP_RET_ERRNO | ENOSYS);
		break;
	case SC_IOCTL_VCPU:
		emit_list(p, ARG_LO(1), seccomp_vcpu_ioctls, seccomp_nr_vcpu_ioctls);
		break;
	case SC_IOCTL_KVM: {
		unsigned t = seccomp_nr_tty_ioctls;

		emit_ld(p, ARG_LO(1));
		for (unsigned i = 0; i < t; i++)
			emit(p, BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(t + 2 - i), 0,
			     seccomp_tty_ioctls[i]);
		/* _IOC: the type is bits 8..15 */
		emit(p, BPF_ALU | BPF_AND | BPF_K, 0, 0, 0xff00);
		emit(p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, (uint32_t)KVMIO << 8);
		emit_ret(p, p->trap);
		emit_ret(p, SECCOMP_RET_ALLOW);
		break;
	}
	case SC_OPEN_RO:
		emit_bit(p, ARG_LO(2), OPEN_WRITE_FLAGS, false);
		break;
	case SC_CLONE_THREAD:
		emit_bit(p, ARG_LO(0), CLONE_THREAD, true);
		break;
	case SC_NO_EXEC:
		emit_bit(p, ARG_LO(2), PROT_EXEC, false);
		break;
	case SC_SIGNAL:
		emit_list(p, ARG_LO(2), seccomp_signals, seccomp_nr_signals);
		break;
	case SC_KILL_PROBE:
		emit_list(p, ARG_LO(1), zero, 1);
		break;
	case SC_PRCTL:
		emit_list(p, ARG_LO(0), seccomp_prctls, seccomp_nr_prctls);
		break;
	}
}

/* Every rule of the role, the sanitizer's first. A syscall the role has
 * twice in the main table is a table error. */
static int emit_rules(struct prog *p, uint32_t role_bit)
{
	int seen[160];
	unsigned nseen = 0, nsan = 0;

	for (unsigned pass = 0; pass < 2; pass++) {
		const struct seccomp_rule *t = pass ? seccomp_rules : seccomp_sanitizer_rules;
		unsigned n = pass ? seccomp_nr_rules : seccomp_nr_sanitizer_rules;

		for (unsigned i = 0; i < n; i++) {
			const struct seccomp_rule *r = &t[i];
			unsigned start, j;

			if (!(r->roles & role_bit))
				continue;
			for (j = 0; j < nseen && seen[j] != r->nr; j++)
				;
			if (j < nseen) {
				if (pass == 1 && j >= nsan)
					return -EINVAL;
				continue;       /* the sanitizer's rule stands */
			}
			if (nseen == ARRAY_SIZE(seen))
				return -E2BIG;
			seen[nseen++] = r->nr;
			start = p->n;
			emit(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, (uint32_t)r->nr);
			emit_body(p, r->check);
			if (p->n - start - 1 > 255)
				return -E2BIG;
			if (start < p->max)
				p->ins[start].jf = (uint8_t)(p->n - start - 1);
		}
		if (!pass)
			nsan = nseen;
	}
	return (int)nseen;
}

int seccomp_build(enum seccomp_role role, struct sock_filter *ins, unsigned max)
{
	struct prog p = { ins, 0, max, sc_audit ? SECCOMP_RET_LOG :
			  SECCOMP_RET_TRAP | (uint32_t)role };
	int r;

	if (role <= SECCOMP_ROLE_NONE || role >= SECCOMP_NR_ROLES)
		return -EINVAL;
	/* Another ABI's numbers mean other calls: trap them all. */
	emit_ld(&p, (uint32_t)offsetof(struct seccomp_data, arch));
	emit(&p, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, AUDIT_ARCH_X86_64);
	emit_ret(&p, p.trap);
	emit_ld(&p, (uint32_t)offsetof(struct seccomp_data, nr));
	emit(&p, BPF_JMP | BPF_JGE | BPF_K, 0, 1, X32_SYSCALL_BIT);
	emit_ret(&p, p.trap);
	r = emit_rules(&p, 1u << role);
	if (r < 0)
		return r;
	emit_ret(&p, p.trap);
	return p.n > max ? -E2BIG : (int)p.n;
}

unsigned seccomp_role_size(enum seccomp_role role)
{
	struct sock_filter ins[SECCOMP_MAX_INSNS];
	struct prog p = { ins, 0, SECCOMP_MAX_INSNS, 0 };
	int r;

	if (role <= SECCOMP_ROLE_NONE || role >= SECCOMP_NR_ROLES)
		return 0;
	r = emit_rules(&p, 1u << role);
	return r < 0 ? 0 : (unsigned)r;
}

/* --- the SIGSYS handler: write(2) and re-raise, nothing else --- */

static size_t put_str(char *buf, size_t n, size_t cap, const char *s)
{
	while (*s && n < cap)
		buf[n++] = *s++;
	return n;
}

static size_t put_uint(char *buf, size_t n, size_t cap, unsigned long v)
{
	char tmp[24];
	unsigned k = 0;

	do {
		tmp[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k && n < cap)
		buf[n++] = tmp[--k];
	return n;
}

static void seccomp_sigsys(int sig, siginfo_t *si, void *uctx)
{
	const char *role = seccomp_role_name((enum seccomp_role)si->si_errno);
	unsigned nr = (unsigned)si->si_syscall;
	const char *name = NULL, *why = NULL;
	char line[200];
	size_t n = 0, cap = sizeof(line) - 1;

	(void)uctx;
	if (si->si_code != SYS_SECCOMP)
		role = "?";
	if (si->si_arch != AUDIT_ARCH_X86_64)
		why = "32-bit ABI";
	else if (nr & X32_SYSCALL_BIT)
		why = "x32 ABI";
	else
		name = seccomp_syscall_name(nr);
	n = put_str(line, n, cap, "lagvisor: seccomp: thread ");
	n = put_str(line, n, cap, role ? role : "?");
	n = put_str(line, n, cap, " made forbidden syscall ");
	n = put_uint(line, n, cap, nr);
	n = put_str(line, n, cap, " (");
	n = put_str(line, n, cap, why ? why : name ? name : "unknown");
	n = put_str(line, n, cap, ")\n");
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nowhere else to say it */
	}
	/* SA_RESETHAND made the action the default (terminate, core) and
	 * SA_NODEFER left the signal unblocked: this kills the process. */
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
	syscall(SYS_exit_group, 128 + sig);
}

/* --- capabilities --- */

/* Drop every capability but `keep` from this thread's sets; the bounding
 * set too where the thread may (CAP_SETPCAP), so nothing comes back. */
static int caps_drop(uint64_t keep)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	for (unsigned c = 0; c < 64; c++) {
		if (keep & (1ull << c) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;       /* kept, gone already, or past the last one */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EPERM)
			return -errno;
	}
	if (syscall(SYS_capget, &hdr, d))
		return -errno;
	for (unsigned i = 0; i < _LINUX_CAPABILITY_U32S_3; i++) {
		uint32_t k = (uint32_t)(keep >> (32 * i));

		d[i].effective &= k;
		d[i].permitted &= k;
		d[i].inheritable = 0;
	}
	return syscall(SYS_capset, &hdr, d) ? -errno : 0;
}

uint64_t seccomp_caps_for_domain(uid_t owner, bool reopen)
{
	if (owner == geteuid())
		return 0;
	return (1ull << CAP_KILL) | (1ull << CAP_FOWNER) |
	       (reopen ? 1ull << CAP_DAC_OVERRIDE : 0);
}

/* --- configuration, install, self-test --- */

int seccomp_configure(bool enabled, uint64_t keep_caps)
{
	const char *t;
	struct sigaction sa;

	sc_enabled = enabled;
	sc_keep_caps = keep_caps;
	sc_selftest_role = SECCOMP_ROLE_NONE;
	t = getenv("LAGVISOR_SECCOMP_AUDIT");
	sc_audit = t && !strcmp(t, "1");
	t = getenv(SECCOMP_SELFTEST_ENV);
	for (unsigned r = 1; t && *t && r < SECCOMP_NR_ROLES; r++)
		if (!strcmp(t, role_names[r]) || (r == SECCOMP_ROLE_VCPU && !strcmp(t, "1")))
			sc_selftest_role = (enum seccomp_role)r;
	if (!enabled) {
		log_info("seccomp: off (--no-seccomp): no syscall filters, capabilities kept");
		return 0;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = seccomp_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL))
		return -errno;
	if (sc_audit)
		log_warn("seccomp: audit mode (LAGVISOR_SECCOMP_AUDIT=1): refused syscalls "
			 "are allowed and logged by the kernel");
	log_info("seccomp: on: per-thread syscall allow-lists (vcpu %u, io %u, main %u, "
		 "qemu-main %u, qmp %u syscalls), capabilities dropped%s",
		 seccomp_role_size(SECCOMP_ROLE_VCPU), seccomp_role_size(SECCOMP_ROLE_IO),
		 seccomp_role_size(SECCOMP_ROLE_MAIN), seccomp_role_size(SECCOMP_ROLE_QEMU_MAIN),
		 seccomp_role_size(SECCOMP_ROLE_QMP),
		 keep_caps ? " but those another user's shared domain needs (CAP_KILL, "
		 "CAP_FOWNER, on a rebuild CAP_DAC_OVERRIDE)" : "");
	return 0;
}

static int seccomp_install(enum seccomp_role role)
{
	struct sock_filter ins[SECCOMP_MAX_INSNS];
	struct sock_fprog prog;
	int n = seccomp_build(role, ins, SECCOMP_MAX_INSNS);

	if (n < 0)
		return n;
	prog.len = (unsigned short)n;
	prog.filter = ins;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) &&
	    (errno != ENOSYS || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)))
		return -errno;
	log_debug("seccomp: thread %s: %u syscalls allowed, %d BPF instructions",
		  role_names[role], seccomp_role_size(role), n);
	return 0;
}

/* The hook's forbidden call: a socket, which no role ever opens. */
static void seccomp_selftest(enum seccomp_role role)
{
	long fd;

	if (role == SECCOMP_ROLE_NONE || role != sc_selftest_role ||
	    __atomic_exchange_n(&sc_selftest_done, 1, __ATOMIC_ACQ_REL))
		return;
	log_warn("seccomp self-test (%s): thread %s calls socket(2)", SECCOMP_SELFTEST_ENV,
		 role_names[role]);
	fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	if (fd >= 0)
		close((int)fd);
	log_warn("seccomp self-test: socket(2) %s: thread %s has no filter",
		 fd >= 0 ? "succeeded" : "failed", role_names[role]);
}

int seccomp_thread_enter(enum seccomp_role role)
{
	int r = 0;

	if (sc_enabled && role != SECCOMP_ROLE_NONE) {
		r = caps_drop(sc_keep_caps);
		if (!r)
			r = seccomp_install(role);
	}
	seccomp_selftest(role);
	return r;
}
