/*
 * The allow-lists: one row per syscall, the roles that may make it, what
 * the arguments must be (seccomp_internal.h) and why it is needed. The
 * rows were derived from the code and checked against `strace -f` of the
 * guest, libvirt and member-death suites with the filters on: a row
 * whose role never makes the call does not belong here.
 *
 * Rows are compiled in this order, so the calls of a running VM (ioctl,
 * futex, the kick and the timers) come first: each syscall a vCPU makes
 * walks the program from the top.
 *
 * Roles: V vcpu, I io, M main (lagvisor run), Q qemu-main, P qmp.
 */
#include <linux/kvm.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common/compiler.h"
#include "vmm/seccomp_internal.h"
#include "vmm/vcpu.h"

#define V (1u << SECCOMP_ROLE_VCPU)
#define I (1u << SECCOMP_ROLE_IO)
#define M (1u << SECCOMP_ROLE_MAIN)
#define Q (1u << SECCOMP_ROLE_QEMU_MAIN)
#define P (1u << SECCOMP_ROLE_QMP)
#define ALL (V | I | M | Q | P)

#define R(sys, check, roles, why) { __NR_##sys, #sys, check, roles, why }

const struct seccomp_rule seccomp_rules[] = {
	/* The running VM. */
	R(ioctl, SC_IOCTL_VCPU, V, "KVM_RUN and the vCPU state the exit handlers read and set "
	  "(registers, MSRs, interrupt and NMI injection, INIT/SIPI), KVM_IRQ_LINE"),
	R(ioctl, SC_IOCTL_KVM, I | M | Q | P, "KVM: IRQ lines raised by the console (I), the VM "
	  "built (Q), reset in place and its statistics file opened for query-stats (P); the "
	  "terminal's mode (console raw mode and restore)"),
	R(futex, SC_ALLOW, ALL, "mutexes and condition variables; the scheduler's grant "
	  "words and the user irqchip's halt waits"),
	R(rt_sigtimedwait, SC_ALLOW, V | Q, "consume a kick that came while it was blocked"),
	R(tgkill, SC_SIGNAL, ALL, "kick a vCPU thread (also another member's, in a shared "
	  "domain), the SIGSYS re-raise, abort()"),
	R(getpid, SC_ALLOW, ALL, "tgkill's first argument"),
	R(gettid, SC_ALLOW, ALL, "the SIGSYS re-raise, thread ids for the scheduler"),
	R(timer_settime, SC_ALLOW, V | I | Q | P, "the LAPIC timer's host timer and the "
	  "scheduler's slice timer, re-armed from the vCPU and when a wake hands on a pCPU"),
	R(timer_gettime, SC_ALLOW, V | Q, "the host timer's state"),
	R(sched_setaffinity, SC_ALLOW, V | M | Q, "a vCPU thread moves to the host CPU sched/ "
	  "gave it; a stopping VM's vCPU threads get back the CPUs lagvisor started with (M, Q)"),
	R(sched_getaffinity, SC_ALLOW, V | Q, "an affinity set from outside (libvirt's vcpupin); "
	  "a new thread's start and the domain's host CPUs (Q)"),
	R(sched_getscheduler, SC_ALLOW, V | Q, "a policy set from outside (libvirt's vcpusched idle)"),
	R(sched_yield, SC_ALLOW, ALL, "spin waits (halt polling, the domain's locks)"),
	R(clock_gettime, SC_ALLOW, ALL, "time (the vDSO's fallback)"),
	R(gettimeofday, SC_ALLOW, ALL, "time (the vDSO's fallback)"),
	R(clock_nanosleep, SC_ALLOW, ALL, "short sleeps (usleep) in waits for other threads"),
	R(nanosleep, SC_ALLOW, ALL, "short sleeps"),
	R(getcpu, SC_ALLOW, V | Q, "sched_getcpu's fallback"),
	R(rt_sigreturn, SC_ALLOW, ALL, "return from the kick signal's handler"),
	R(rt_sigprocmask, SC_ALLOW, ALL, "pthread_sigmask around waits, abort()"),
	R(restart_syscall, SC_ALLOW, ALL, "a sleep interrupted by a signal resumes"),
	R(read, SC_ALLOW, ALL, "console input, eventfd and signalfd, QMP, /proc/PID/stat"),
	R(write, SC_ALLOW, ALL, "the log (stderr), console output, eventfd wakes, the trace"),
	R(writev, SC_ALLOW, ALL, "stdio's writes"),
	R(pread64, SC_ALLOW, V | Q | P, "KVM's binary statistics (lagvisor stat, -v), kernel files"),
	R(epoll_wait, SC_ALLOW, I | Q | P, "the I/O threads' loop"),
	R(epoll_pwait, SC_ALLOW, I | Q | P, "the I/O threads' loop (glibc's epoll_wait)"),
	R(epoll_ctl, SC_ALLOW, I | Q | P, "watch and unwatch fds (QMP client, console output room)"),
	/* Memory: malloc, thread stacks, guest RAM. Never executable. */
	R(mmap, SC_NO_EXEC, ALL, "malloc's arenas and large blocks; guest RAM and thread stacks (Q)"),
	R(mprotect, SC_NO_EXEC, ALL, "malloc's arenas grow; thread stack guards (Q)"),
	R(munmap, SC_ALLOW, ALL, "free; guest RAM and the domain's mapping at teardown (M, Q)"),
	R(madvise, SC_ALLOW, ALL, "free and thread exit return memory; reset zeroes guest RAM (P)"),
	R(mremap, SC_ALLOW, ALL, "realloc of large blocks"),
	R(brk, SC_ALLOW, ALL, "malloc's main arena"),
	/* Files: the shared domain's liveness probe and teardown, the VM's
	 * files for a (re)build. */
	R(openat, SC_OPEN_RO, V | I | M | P, "/proc/PID/stat: is a domain member alive (the "
	  "reaper runs in vCPU threads, leave in main); kernel and initrd on a reset (P)"),
	R(openat, SC_ALLOW, Q, "a rebuild opens /dev/kvm, the kernel and creates the "
	  "domain file (O_CREAT|O_EXCL) and the trace file"),
	R(close, SC_ALLOW, ALL, "fds of probes, QMP clients, a torn-down VM"),
	R(access, SC_ALLOW, V | M | Q, "is /proc there (a member's liveness)"),
	R(faccessat, SC_ALLOW, V | M | Q, "the same, glibc's other path"),
	R(kill, SC_KILL_PROBE, V | M | Q, "kill(pid, 0): a member's liveness without /proc"),
	R(flock, SC_ALLOW, V | I | M | Q, "the domain file's lock: reaping dead members, leaving"),
	R(fstat, SC_ALLOW, ALL, "stdio; the domain file at leave; kernel files"),
	R(newfstatat, SC_ALLOW, ALL, "stat: does the domain's path still name its file"),
	R(lseek, SC_ALLOW, M | Q | P, "stdio and the kernel loader"),
	R(unlink, SC_ALLOW, M | Q, "the last member out removes the domain file"),
	R(ftruncate, SC_ALLOW, Q, "a new domain file gets its size"),
	R(fchmod, SC_ALLOW, Q, "a new domain file is 0600"),
	R(fcntl, SC_ALLOW, Q | P, "fd flags (O_NONBLOCK, FD_CLOEXEC)"),
	/* The QMP socket (accepted by the I/O thread) and the event fds. */
	R(accept4, SC_ALLOW, Q | P, "a QMP client connects (the socket listens already)"),
	R(recvfrom, SC_ALLOW, Q | P, "QMP requests"),
	R(sendto, SC_ALLOW, Q | P, "QMP replies and events"),
	R(getrandom, SC_ALLOW, Q | P, "json-c seeds its hash tables (the first QMP objects)"),
	R(dup3, SC_ALLOW, Q | P, "an accepted QMP socket takes the wake fd's place"),
	R(eventfd2, SC_ALLOW, Q | P, "a rebuilt VM's I/O thread and irqchip wake fds; the idle "
	  "eventfd that holds the QMP client's fd number when a client leaves (P)"),
	R(epoll_create1, SC_ALLOW, Q, "a rebuilt VM's I/O thread"),
	R(signalfd4, SC_ALLOW, Q, "a rebuilt VM's I/O thread reads SIGINT/SIGTERM/SIGHUP"),
	R(timer_create, SC_ALLOW, Q, "a rebuilt VM's vCPU threads' host and slice timers"),
	R(timer_delete, SC_ALLOW, V | M | Q, "a vCPU's timers at its exit and teardown"),
	/* Threads: only lagvisor-qemu's main thread starts any after setup. */
	R(clone, SC_CLONE_THREAD, Q, "threads of a rebuilt VM (never a process)"),
	R(clone3, SC_ENOSYS, Q, "glibc tries it first; ENOSYS makes it use clone"),
	R(set_robust_list, SC_ALLOW, Q, "a new thread's start (glibc)"),
	R(rseq, SC_ALLOW, Q, "a new thread's start (glibc)"),
	R(prlimit64, SC_ALLOW, Q, "a new thread's stack size"),
	R(prctl, SC_PRCTL, Q, "a new thread names itself, sets its timer slack and sandboxes "
	  "itself (no_new_privs, bounding set, ambient set)"),
	R(capget, SC_ALLOW, Q, "a new thread drops its capabilities"),
	R(capset, SC_ALLOW, Q, "a new thread drops its capabilities (never gains any)"),
	R(seccomp, SC_ALLOW, Q, "a new thread adds its role's filter (only narrows)"),
	R(rt_sigaction, SC_ALLOW, Q, "a rebuilt VM's kick handler and SIGPIPE"),
	R(sysinfo, SC_ALLOW, Q, "the host's RAM at a rebuild"),
	R(uname, SC_ALLOW, Q, "glibc"),
	R(getuid, SC_ALLOW, Q, "the domain file's owner check"),
	R(geteuid, SC_ALLOW, Q, "the domain file's owner check"),
	/* Threads end. */
	R(exit, SC_ALLOW, ALL, "a thread ends"),
	R(exit_group, SC_ALLOW, ALL, "the process ends (main), the SIGSYS handler's fallback"),
};
const unsigned seccomp_nr_rules = ARRAY_SIZE(seccomp_rules);

/*
 * ASan and LSan at run time: allocator maps with its own calls, and at
 * exit LeakSanitizer stops the world from a tracer task (clone without
 * CLONE_THREAD, ptrace), reads /proc/self/maps and waits for it. Only in
 * sanitizer builds, which are for finding bugs, not for running guests.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SAN_BUILD 1
#endif
#endif

const struct seccomp_rule seccomp_sanitizer_rules[] = {
#ifdef SAN_BUILD
	R(clone, SC_ALLOW, M | Q, "LSan's tracer at exit"),
	R(ptrace, SC_ALLOW, M | Q, "LSan's tracer at exit"),
	R(wait4, SC_ALLOW, M | Q, "LSan waits for its tracer"),
	R(prctl, SC_ALLOW, ALL, "LSan's PR_SET_PTRACER, PR_SET_DUMPABLE"),
	R(openat, SC_OPEN_RO, V | I | M | P, "/proc/self/maps for reports and LSan (qemu-main "
	  "opens anything already)"),
	R(open, SC_ALLOW, ALL, "the sanitizer runtime's own raw open (/proc/self/maps, task)"),
	R(getdents, SC_ALLOW, ALL, "LSan lists /proc/self/task (raw getdents)"),
	R(readlink, SC_ALLOW, ALL, "the binary's path for reports"),
	R(sigaltstack, SC_ALLOW, ALL, "ASan's alternate signal stack"),
	R(rt_sigaction, SC_ALLOW, ALL, "ASan's handlers"),
	R(sched_getaffinity, SC_ALLOW, ALL, "the sanitizer runtime"),
	R(getppid, SC_ALLOW, ALL, "the sanitizer runtime"),
	R(getdents64, SC_ALLOW, ALL, "LSan lists /proc/self/task"),
#endif
	{ -1, NULL, SC_ALLOW, 0, NULL },
};
const unsigned seccomp_nr_sanitizer_rules = ARRAY_SIZE(seccomp_sanitizer_rules) - 1;

/* What a vCPU thread asks KVM once the VM runs (vcpu.c, vcpu_irq*.c,
 * x86/vcpu_init.c for INIT/SIPI, vm.c's KVM_IRQ_LINE from its devices). */
const uint32_t seccomp_vcpu_ioctls[] = {
	KVM_RUN, KVM_GET_REGS, KVM_SET_REGS, KVM_GET_SREGS, KVM_SET_SREGS,
	KVM_GET_FPU, KVM_SET_FPU, KVM_GET_MSRS, KVM_SET_MSRS, KVM_GET_LAPIC,
	KVM_SET_LAPIC, KVM_GET_MP_STATE, KVM_SET_MP_STATE, KVM_GET_VCPU_EVENTS,
	KVM_SET_VCPU_EVENTS, KVM_GET_XCRS, KVM_SET_XCRS, KVM_TRANSLATE,
	KVM_INTERRUPT, KVM_NMI, KVM_IRQ_LINE, KVM_SET_SIGNAL_MASK,
};
const unsigned seccomp_nr_vcpu_ioctls = ARRAY_SIZE(seccomp_vcpu_ioctls);

/* The console's raw mode and restore (tcgetattr/tcsetattr), isatty. */
const uint32_t seccomp_tty_ioctls[] = { TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ };
const unsigned seccomp_nr_tty_ioctls = ARRAY_SIZE(seccomp_tty_ioctls);

/* tgkill's signals: the kick (also between members of a shared domain,
 * which all use VCPU_KICK_SIGNAL), the SIGSYS re-raise, abort(). */
const uint32_t seccomp_signals[] = { VCPU_KICK_SIGNAL, SIGSYS, SIGABRT };
const unsigned seccomp_nr_signals = ARRAY_SIZE(seccomp_signals);

const uint32_t seccomp_prctls[] = {
	PR_SET_NAME, PR_GET_NAME, PR_SET_TIMERSLACK, PR_SET_NO_NEW_PRIVS,
	PR_CAPBSET_DROP, PR_CAPBSET_READ, PR_CAP_AMBIENT,
};
const unsigned seccomp_nr_prctls = ARRAY_SIZE(seccomp_prctls);

#define N(sys) { __NR_##sys, #sys }

const struct seccomp_name seccomp_forbidden_names[] = {
	N(open), N(creat), N(socket), N(connect), N(bind), N(listen), N(socketpair),
	N(sendmsg), N(recvmsg), N(execve), N(execveat), N(fork), N(vfork), N(ptrace),
	N(mount), N(umount2), N(pivot_root), N(chroot), N(setns), N(unshare),
	N(init_module), N(finit_module), N(delete_module), N(kexec_load), N(reboot),
	N(setuid), N(setgid), N(setresuid), N(setresgid), N(setgroups), N(chmod),
	N(chown), N(fchown), N(rename), N(renameat2), N(mkdir), N(rmdir), N(unlinkat),
	N(symlink), N(link), N(bpf), N(perf_event_open), N(userfaultfd), N(io_uring_setup),
	N(process_vm_readv), N(process_vm_writev), N(memfd_create), N(pidfd_open),
	N(pidfd_send_signal), N(rt_sigqueueinfo), N(rt_tgsigqueueinfo), N(tkill),
	N(wait4), N(waitid), N(pipe), N(pipe2), N(dup), N(dup2), N(getdents64),
	N(readlink), N(prctl), N(seccomp), N(rt_sigaction), N(sigaltstack), N(clone),
	N(clone3), N(kcmp), N(mincore), N(mlock), N(setpriority), N(sched_setattr),
	N(sched_setscheduler), N(personality), N(modify_ldt), N(arch_prctl), N(iopl),
	N(ioperm), N(keyctl), N(add_key), N(request_key), N(statx),
	N(truncate), N(fsync), N(fdatasync), N(sync), N(shutdown), N(getsockopt),
	N(setsockopt), N(getsockname), N(getpeername), N(sendfile), N(splice), N(tee),
	N(faccessat2), N(epoll_pwait2), N(futex_waitv), N(poll), N(ppoll), N(select),
	N(pselect6), N(alarm), N(setitimer), N(getitimer), N(timerfd_create),
	N(inotify_init1), N(fanotify_init), N(name_to_handle_at), N(open_by_handle_at),
	N(getrusage), N(times), N(getppid), N(getuid), N(geteuid), N(sysinfo),
	N(uname), N(sched_getaffinity), N(set_robust_list), N(rseq), N(prlimit64),
	N(capget), N(capset), N(timer_create), N(eventfd2), N(epoll_create1),
	N(signalfd4), N(ftruncate), N(fchmod), N(unlink), N(fcntl), N(accept4),
	N(accept), N(recvfrom), N(sendto), N(dup3), N(lseek), N(access), N(faccessat),
};
const unsigned seccomp_nr_forbidden_names = ARRAY_SIZE(seccomp_forbidden_names);
