/* Between seccomp.c (compiler, handler) and seccomp_rules.c (the lists). */
#ifndef LAGVISOR_VMM_SECCOMP_INTERNAL_H
#define LAGVISOR_VMM_SECCOMP_INTERNAL_H

#include <stdint.h>

#include "vmm/seccomp.h"

/*
 * What a rule checks of the arguments before it allows the call. Each
 * looks only at an argument's low 32 bits: every argument checked is one
 * the kernel truncates to 32 bits itself (an int or unsigned int in the
 * syscall's signature: ioctl's cmd, openat's flags, tgkill's and kill's
 * signal, prctl's option, clone's flags by lower_32_bits), or whose
 * checked bit (mmap's and mprotect's PROT_EXEC) is in the low word.
 */
enum seccomp_check {
	SC_ALLOW,          /* any arguments */
	SC_ENOSYS,         /* refused with ENOSYS, not trapped (clone3) */
	SC_IOCTL_VCPU,     /* cmd in seccomp_vcpu_ioctls */
	SC_IOCTL_KVM,      /* any KVM ioctl (type KVMIO) or a terminal one */
	SC_OPEN_RO,        /* openat without write access, O_CREAT, O_TRUNC, O_TMPFILE */
	SC_CLONE_THREAD,   /* clone with CLONE_THREAD: a thread, never a process */
	SC_NO_EXEC,        /* mmap/mprotect without PROT_EXEC */
	SC_SIGNAL,         /* tgkill with the kick signal, SIGSYS or SIGABRT */
	SC_KILL_PROBE,     /* kill(pid, 0): a liveness probe, no signal */
	SC_PRCTL,          /* prctl options in seccomp_prctls */
};

struct seccomp_rule {
	int nr;                 /* x86-64 syscall number */
	const char *name;
	uint8_t check;          /* enum seccomp_check */
	uint32_t roles;         /* 1 << enum seccomp_role */
	const char *why;
};

extern const struct seccomp_rule seccomp_rules[];
extern const unsigned seccomp_nr_rules;
/* Rules only sanitizer builds add (first match per role wins). */
extern const struct seccomp_rule seccomp_sanitizer_rules[];
extern const unsigned seccomp_nr_sanitizer_rules;

extern const uint32_t seccomp_vcpu_ioctls[];
extern const unsigned seccomp_nr_vcpu_ioctls;
extern const uint32_t seccomp_tty_ioctls[];
extern const unsigned seccomp_nr_tty_ioctls;
extern const uint32_t seccomp_signals[];
extern const unsigned seccomp_nr_signals;
extern const uint32_t seccomp_prctls[];
extern const unsigned seccomp_nr_prctls;

/* More names for the SIGSYS line (the rules name their own). */
struct seccomp_name {
	int nr;
	const char *name;
};
extern const struct seccomp_name seccomp_forbidden_names[];
extern const unsigned seccomp_nr_forbidden_names;

#endif
