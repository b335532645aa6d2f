/*
 * The seccomp filters (vmm/seccomp.h): each role's program is well formed
 * and decides as its table says (run here by a small BPF interpreter over
 * made-up syscalls: arch, x32, argument checks), lagvisor-qemu's main list
 * holds every call of the threads that inherit it, and in a child process
 * the real kernel filter kills a forbidden call with the one-line message,
 * while with filters off the same call runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/test_check.h"
#include "vmm/seccomp.h"
#include "vmm/seccomp_internal.h"

static struct sock_filter progs[SECCOMP_NR_ROLES][SECCOMP_MAX_INSNS];
static int lens[SECCOMP_NR_ROLES];

/* The classic BPF subset seccomp.c emits; anything else fails the test. */
static uint32_t bpf_run(const struct sock_filter *p, int len, const struct seccomp_data *d)
{
	uint32_t a = 0;

	for (int pc = 0; pc < len; pc++) {
		const struct sock_filter *i = &p[pc];

		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			CHECK(i->k + 4 <= sizeof(*d) && i->k % 4 == 0);
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			a &= i->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += a == i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			pc += a >= i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (a & i->k) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			CHECK(!"unexpected BPF instruction");
			return 0;
		}
	}
	CHECK(!"ran off the end");
	return 0;
}

static uint32_t decide(enum seccomp_role role, int nr, uint64_t a0, uint64_t a1, uint64_t a2)
{
	struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64,
				  .args = { a0, a1, a2 } };

	return bpf_run(progs[role], lens[role], &d);
}

#define TRAP(role) (SECCOMP_RET_TRAP | (role))
#define ALLOW SECCOMP_RET_ALLOW

static void test_build(void)
{
	for (int r = 1; r < SECCOMP_NR_ROLES; r++) {
		lens[r] = seccomp_build(r, progs[r], SECCOMP_MAX_INSNS);
		CHECK(lens[r] > 0);
		CHECK(seccomp_role_size(r) > 10);
		CHECK(seccomp_role_name(r) != NULL);
		/* Every jump lands inside the program. */
		for (int pc = 0; pc < lens[r]; pc++)
			if (BPF_CLASS(progs[r][pc].code) == BPF_JMP)
				CHECK(pc + 1 + progs[r][pc].jt < lens[r] &&
				      pc + 1 + progs[r][pc].jf < lens[r]);
		printf("role %s: %u syscalls, %d instructions\n", seccomp_role_name(r),
		       seccomp_role_size(r), lens[r]);
	}
	CHECK_EQ(seccomp_build(SECCOMP_ROLE_NONE, progs[0], SECCOMP_MAX_INSNS), -EINVAL);
	CHECK_EQ(seccomp_build(SECCOMP_ROLE_VCPU, progs[0], 10), -E2BIG);
}

static void test_decisions(void)
{
	struct seccomp_data d = { .nr = __NR_read, .arch = AUDIT_ARCH_I386 };
	bool san = seccomp_nr_sanitizer_rules > 0;

	/* Another ABI, and x32 numbers, are refused whatever the call. */
	CHECK_EQ(bpf_run(progs[SECCOMP_ROLE_VCPU], lens[SECCOMP_ROLE_VCPU], &d),
		 TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_read, 0, 0, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, 0x40000000 | __NR_read, 0, 0, 0),
		 TRAP(SECCOMP_ROLE_VCPU));
	/* Never a socket, an exec or a process, in any role (LSan's tracer
	 * at exit aside, in sanitizer builds). */
	for (int r = 1; r < SECCOMP_NR_ROLES; r++) {
		bool lsan = san && (r == SECCOMP_ROLE_MAIN || r == SECCOMP_ROLE_QEMU_MAIN);

		CHECK_EQ(decide(r, __NR_socket, AF_INET, SOCK_STREAM, 0), TRAP(r));
		CHECK_EQ(decide(r, __NR_execve, 0, 0, 0), TRAP(r));
		CHECK_EQ(decide(r, __NR_fork, 0, 0, 0), TRAP(r));
		CHECK_EQ(decide(r, __NR_clone, SIGCHLD, 0, 0) == ALLOW, lsan);
		CHECK_EQ(decide(r, __NR_ptrace, 0, 0, 0) == ALLOW, lsan);
		CHECK_EQ(decide(r, __NR_mmap, 0, 4096, PROT_READ | PROT_EXEC), TRAP(r));
		CHECK_EQ(decide(r, __NR_mprotect, 0, 4096, PROT_EXEC), TRAP(r));
		CHECK_EQ(decide(r, __NR_mmap, 0, 4096, PROT_READ | PROT_WRITE), ALLOW);
		CHECK_EQ(decide(r, __NR_tgkill, 1, 2, SIGUSR1), ALLOW);
		CHECK_EQ(decide(r, __NR_tgkill, 1, 2, SIGKILL), TRAP(r));
		CHECK_EQ(decide(r, __NR_exit_group, 0, 0, 0), ALLOW);
	}
	/* vCPU ioctls: its own list only. */
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_ioctl, 5, KVM_RUN, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_ioctl, 5, 0xffffffff00000000ull | KVM_RUN, 0),
		 ALLOW);            /* the kernel truncates cmd to 32 bits too */
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_ioctl, 5, KVM_CREATE_VCPU, 0),
		 TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_ioctl, 0, TCSETS, 0), TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_ioctl, 0, TIOCSTI, 0), TRAP(SECCOMP_ROLE_VCPU));
	/* Others: KVM's and the terminal's, nothing else. */
	CHECK_EQ(decide(SECCOMP_ROLE_QMP, __NR_ioctl, 5, KVM_SET_REGS, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_MAIN, __NR_ioctl, 0, TCSETS, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_MAIN, __NR_ioctl, 0, TIOCSTI, 0), TRAP(SECCOMP_ROLE_MAIN));
	/* Opens: read-only where a thread only probes /proc. */
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_openat, AT_FDCWD, 0, O_RDONLY | O_CLOEXEC), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_openat, AT_FDCWD, 0, O_WRONLY), TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_openat, AT_FDCWD, 0, O_RDONLY | O_CREAT),
		 TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_IO, __NR_openat, AT_FDCWD, 0, O_TMPFILE | O_RDWR),
		 TRAP(SECCOMP_ROLE_IO));
	CHECK_EQ(decide(SECCOMP_ROLE_QEMU_MAIN, __NR_openat, AT_FDCWD, 0, O_RDWR | O_CREAT), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_open, 0, O_RDONLY, 0),
		 san ? ALLOW : TRAP(SECCOMP_ROLE_VCPU));
	/* Threads, not processes; clone3 falls back. */
	CHECK_EQ(decide(SECCOMP_ROLE_QEMU_MAIN, __NR_clone, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND,
			0, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_QEMU_MAIN, __NR_clone3, 0, 0, 0), SECCOMP_RET_ERRNO | ENOSYS);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_clone, CLONE_VM | CLONE_THREAD, 0, 0),
		 TRAP(SECCOMP_ROLE_VCPU));
	/* kill only probes. */
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_kill, 1234, 0, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_VCPU, __NR_kill, 1234, SIGTERM, 0), TRAP(SECCOMP_ROLE_VCPU));
	CHECK_EQ(decide(SECCOMP_ROLE_QEMU_MAIN, __NR_prctl, PR_SET_NAME, 0, 0), ALLOW);
	CHECK_EQ(decide(SECCOMP_ROLE_QEMU_MAIN, __NR_prctl, PR_SET_DUMPABLE, 0, 0) == ALLOW,
		 seccomp_nr_sanitizer_rules > 0);
}

/* lagvisor-qemu's threads run under qemu-main's filter and their own:
 * every call theirs allow, qemu-main's must too (else the line would
 * name the wrong role), with arguments at least as wide. */
static void test_qemu_main_covers(void)
{
	static const int inherit[] = { SECCOMP_ROLE_VCPU, SECCOMP_ROLE_IO, SECCOMP_ROLE_QMP };

	for (unsigned k = 0; k < sizeof(inherit) / sizeof(inherit[0]); k++) {
		for (unsigned i = 0; i < seccomp_nr_rules; i++) {
			const struct seccomp_rule *r = &seccomp_rules[i];
			bool covered = false;

			if (!(r->roles & (1u << inherit[k])))
				continue;
			for (unsigned j = 0; j < seccomp_nr_rules; j++) {
				const struct seccomp_rule *q = &seccomp_rules[j];

				if (q->nr == r->nr && (q->roles & (1u << SECCOMP_ROLE_QEMU_MAIN)))
					covered = q->check == r->check || q->check == SC_ALLOW ||
						  (q->check == SC_IOCTL_KVM && r->check == SC_IOCTL_VCPU);
			}
			if (!covered)
				fprintf(stderr, "%s (%s) not in qemu-main's list\n", r->name,
					seccomp_role_name(inherit[k]));
			CHECK(covered);
			CHECK(r->why && r->why[0]);
		}
	}
	CHECK(!strcmp(seccomp_syscall_name(__NR_socket), "socket"));
	CHECK(!strcmp(seccomp_syscall_name(__NR_ioctl), "ioctl"));
	CHECK(seccomp_syscall_name(100000) == NULL);
}

/* In a child: configure, enter the vCPU role, call socket(2). */
static void child(bool enabled, int errfd)
{
	long fd;

	dup2(errfd, STDERR_FILENO);
	if (seccomp_configure(enabled, 0) || seccomp_thread_enter(SECCOMP_ROLE_VCPU))
		_exit(3);
	fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	_exit(fd >= 0 ? 0 : 4);
}

static void run_child(bool enabled, int *status, char *out, size_t len)
{
	int p[2];
	pid_t pid;
	ssize_t n, got = 0;

	CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(enabled, p[1]);
	}
	close(p[1]);
	while ((n = read(p[0], out + got, len - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = '\0';
	close(p[0]);
	CHECK(waitpid(pid, status, 0) == pid);
}

static void test_kernel(void)
{
	char out[1024];
	int st;

	run_child(true, &st, out, sizeof(out));
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS);
	CHECK_MSG(out, "lagvisor: seccomp: thread vcpu made forbidden syscall 41 (socket)\n");
	run_child(false, &st, out, sizeof(out));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	test_build();
	test_decisions();
	test_qemu_main_covers();
	test_kernel();
	return check_report("test_seccomp");
}
