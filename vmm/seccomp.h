/*
 * The sandbox lagvisor puts itself in once a VM is set up: per thread, a
 * seccomp allow-list of the system calls that thread's role still makes,
 * and no capabilities. A guest that took over a vCPU thread (a device
 * model bug) gets that thread's few syscalls, not those of a root process.
 *
 * Roles (enum seccomp_role) and where each is installed:
 *   vcpu       a vCPU thread, after its setup (vm_vcpu_ready said go)
 *   io         lagvisor's I/O thread (console, signals), as it starts
 *   main       lagvisor run's main thread, once every vCPU runs
 *   qemu-main  lagvisor-qemu's main thread, after the monitor listens:
 *              it still builds (and on a reset, rebuilds) the VM, so its
 *              list is the widest; every thread it starts inherits it and
 *              adds its own (the intersection applies)
 *   qmp        lagvisor-qemu's QMP I/O thread (also resets in place)
 * What each role may call, and why, is the table in seccomp_rules.c;
 * every other syscall, a 32-bit (int 0x80) or an x32 one, is refused with
 * SECCOMP_RET_TRAP: the SIGSYS handler writes one line
 *   lagvisor: seccomp: thread vcpu made forbidden syscall 41 (socket)
 * to stderr (write(2) only, async-signal-safe) and re-raises SIGSYS with
 * its default action, so the process dies by SIGSYS (a core where
 * enabled) and whoever watches it sees the signal. TRAP, not
 * KILL_PROCESS, because the kernel's kill leaves no line in lagvisor's
 * log (only an audit record few read); the handler cannot be bypassed to
 * run the call: a trapped syscall never runs, whatever the handler does.
 * clone3 is answered ENOSYS (its flags are in memory that BPF cannot
 * read), so glibc falls back to clone, whose flags are checked.
 *
 * --no-seccomp (lagvisor-qemu: -lagvisor seccomp=off) turns all of it
 * off; -v logs the decision. LAGVISOR_SECCOMP_SELFTEST=ROLE makes the
 * first thread of that role try socket(2) right after its filter is in:
 * the process must die with the line above (tests/seccomp.sh), or live
 * on with --no-seccomp.
 */
#ifndef LAGVISOR_VMM_SECCOMP_H
#define LAGVISOR_VMM_SECCOMP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum seccomp_role {
	SECCOMP_ROLE_NONE,          /* no filter (unit tests, --no-seccomp) */
	SECCOMP_ROLE_VCPU,
	SECCOMP_ROLE_IO,
	SECCOMP_ROLE_MAIN,
	SECCOMP_ROLE_QEMU_MAIN,
	SECCOMP_ROLE_QMP,
	SECCOMP_NR_ROLES
};

/* Environment variable of the self-test hook (a role name, or "1" = vcpu). */
#define SECCOMP_SELFTEST_ENV "LAGVISOR_SECCOMP_SELFTEST"

/* The longest program one role compiles to (tests check the real ones). */
#define SECCOMP_MAX_INSNS 512

struct sock_filter;

/*
 * Once, in the main thread before any thread starts: filters on or off
 * (off: seccomp_thread_enter only runs the self-test hook), capabilities
 * to keep (a mask of 1 << CAP_x, see seccomp_caps_for_domain), and the
 * SIGSYS handler. Logs the decision at info level. Returns 0 or -errno.
 */
int seccomp_configure(bool enabled, uint64_t keep_caps);

/*
 * In the calling thread, once its setup is done: drop its capabilities
 * (but the kept ones), set no_new_privs and install the role's filter,
 * then run the self-test hook if it names the role. With filters off (or
 * role NONE) only the hook runs. Returns 0 or -errno (the thread runs on
 * unfiltered: the caller decides whether that is fatal).
 */
int seccomp_thread_enter(enum seccomp_role role);

/* The role's name as logs print it ("vcpu", "qemu-main"); NULL if none. */
const char *seccomp_role_name(enum seccomp_role role);

/* A syscall's name from the table, NULL if not known. Async-signal-safe. */
const char *seccomp_syscall_name(long nr);

/*
 * Compile the role's filter into prog (at most `max` instructions).
 * Returns the instruction count or -errno (-E2BIG: too long, -EINVAL: a
 * table error such as a syscall listed twice for the role). Pure.
 */
int seccomp_build(enum seccomp_role role, struct sock_filter *prog, unsigned max);

/* How many syscalls the role's list allows (for -v and the tests). */
unsigned seccomp_role_size(enum seccomp_role role);

/*
 * Capabilities a member of a shared scheduling domain must keep when the
 * domain file belongs to `owner` and that is not this process's effective
 * user: CAP_KILL (kicking the other members' vCPU threads with tgkill),
 * CAP_FOWNER (the last member out unlinks the file from the sticky
 * /dev/shm) and, for a process that opens the file again later
 * (`reopen`: lagvisor-qemu's rebuild after a reset), CAP_DAC_OVERRIDE.
 * None when the owner is this user.
 */
uint64_t seccomp_caps_for_domain(uid_t owner, bool reopen);

#endif
