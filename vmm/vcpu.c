#include "vmm/vcpu.h"

#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"
#include "vmm/exit_report.h"
#include "vmm/seccomp.h"
#include "vmm/vm.h"
#include "vmm/x86/vcpu_exit.h"

static void kick_handler(int sig)
{
	(void)sig;
}

int vcpu_install_kick_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = kick_handler;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the point of the signal is the EINTR. */
	return sigaction(VCPU_KICK_SIGNAL, &sa, NULL) ? -errno : 0;
}

int vcpu_create(struct vcpu *v, struct vm *vm, unsigned index,
		char *err, size_t errlen)
{
	void *p;

	memset(v, 0, sizeof(*v));
	v->vm = vm;
	v->index = index;
	/* Not fd 0 until the thread opens it: QMP's query-stats may look. */
	v->kstats.fd = -1;
	v->fd = ioctl(vm->fd, KVM_CREATE_VCPU, (unsigned long)index);
	if (v->fd < 0) {
		int e = errno;

		snprintf(err, errlen, "KVM_CREATE_VCPU %u: %s", index, strerror(e));
		v->fd = -1;
		return -e;
	}
	p = mmap(NULL, vm->kvm.vcpu_mmap_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		 v->fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;

		snprintf(err, errlen, "mmap of vCPU %u's kvm_run: %s", index, strerror(e));
		close(v->fd);
		v->fd = -1;
		return -e;
	}
	v->run = p;
	v->run_bytes = vm->kvm.vcpu_mmap_bytes;
	v->user_irqchip = vm->cfg->irqchip == IRQCHIP_USER;
	return v->user_irqchip ? vcpu_irq_create(v, err, errlen) : 0;
}

void vcpu_destroy(struct vcpu *v)
{
	if (v->user_irqchip)
		vcpu_irq_destroy(v);
	if (v->run)
		munmap(v->run, v->run_bytes);
	if (v->fd >= 0)
		close(v->fd);
	v->run = NULL;
	v->fd = -1;
}

void vcpu_kick(struct vcpu *v)
{
	if (v->run)
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (v->user_irqchip)
		vcpu_irq_notify(v);     /* wakes it from a HLT wait too */
	if (v->started && !v->joined)
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

/*
 * The mask KVM uses while the guest runs: this thread's mask (every signal
 * the I/O thread handles stays blocked) minus the kick signal. KVM wants
 * the kernel's sigset size (8 bytes on x86-64), which is the first word of
 * glibc's larger sigset_t, in the same bit order.
 */
static int vcpu_set_signal_mask(struct vcpu *v)
{
	struct {
		struct kvm_signal_mask hdr;
		uint8_t set[8];
	} m;
	sigset_t cur;
	int r;

	r = pthread_sigmask(SIG_BLOCK, NULL, &cur);
	if (r)
		return -r;
	sigdelset(&cur, VCPU_KICK_SIGNAL);
	m.hdr.len = sizeof(m.set);
	memcpy(m.set, &cur, sizeof(m.set));
	return ioctl(v->fd, KVM_SET_SIGNAL_MASK, &m) ? -errno : 0;
}

/* A kick that arrived while the signal was blocked stays pending and would
 * make every later KVM_RUN return EINTR: consume it. */
static void vcpu_eat_kick(void)
{
	static const struct timespec zero;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
}

static uint64_t vcpu_rip(struct vcpu *v)
{
	struct kvm_regs regs;

	return ioctl(v->fd, KVM_GET_REGS, &regs) ? 0 : regs.rip;
}

/* Stop the VM with a runtime error: the message was logged already. */
static int vcpu_fail(struct vcpu *v)
{
	vm_stop(v->vm, 1);
	return VCPU_STOP;
}

static int vcpu_strict_io_stop(struct vcpu *v, enum io_space space, uint64_t addr,
			       unsigned len, bool is_write)
{
	char what[96];

	io_access_describe(what, sizeof(what), space, addr, len, is_write);
	log_error("vCPU %u: unhandled %s at RIP 0x%" PRIx64 " (--strict-io): "
		  "stopping the VM", v->index, what, vcpu_rip(v));
	return vcpu_fail(v);
}

static int vcpu_exit_io(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	uint8_t *data = (uint8_t *)run + run->io.data_offset;
	bool is_write = run->io.direction == KVM_EXIT_IO_OUT;
	uint64_t bytes = (uint64_t)run->io.count * run->io.size;

	/* count > 1 is a string instruction (rep ins/outs): `count` elements
	 * of `size` bytes, back to back, all for the same port. */
	if (run->io.size == 0 || run->io.size > 4 || run->io.data_offset > v->run_bytes ||
	    bytes > v->run_bytes - run->io.data_offset) {
		log_error("vCPU %u: malformed KVM_EXIT_IO (port 0x%x size %u count %u)",
			  v->index, run->io.port, run->io.size, run->io.count);
		return vcpu_fail(v);
	}
	for (uint32_t i = 0; i < run->io.count; i++) {
		if (io_dispatch(&v->vm->io, &v->vm->pio, IO_SPACE_PIO, run->io.port,
				data + (size_t)i * run->io.size, run->io.size, is_write))
			return vcpu_strict_io_stop(v, IO_SPACE_PIO, run->io.port,
						   run->io.size, is_write);
	}
	return VCPU_CONTINUE;
}

static int vcpu_exit_mmio(struct vcpu *v)
{
	struct kvm_run *run = v->run;

	if (run->mmio.len == 0 || run->mmio.len > sizeof(run->mmio.data)) {
		log_error("vCPU %u: malformed KVM_EXIT_MMIO (len %u)", v->index,
			  run->mmio.len);
		return vcpu_fail(v);
	}
	if (v->user_irqchip && vcpu_irq_exit_mmio(v))
		return VCPU_CONTINUE;
	if (io_dispatch(&v->vm->io, &v->vm->mmio, IO_SPACE_MMIO, run->mmio.phys_addr,
			run->mmio.data, run->mmio.len, run->mmio.is_write))
		return vcpu_strict_io_stop(v, IO_SPACE_MMIO, run->mmio.phys_addr,
					   run->mmio.len, run->mmio.is_write);
	return VCPU_CONTINUE;
}

static int vcpu_exit_internal(struct vcpu *v)
{
	uint8_t insn[X86_MAX_INSN_BYTES];
	unsigned n = 0;
	uint64_t rip = vcpu_rip(v);
	char msg[512];

	if (v->run->internal.suberror == KVM_INTERNAL_ERROR_EMULATION) {
		n = exit_emulation_bytes(v->run, insn);
		if (!n)
			n = x86_vcpu_read_insn(v, rip, insn);
	}
	exit_format_internal(msg, sizeof(msg), v->index, v->run, rip, insn, n);
	log_error("%s", msg);
	return vcpu_fail(v);
}

static int vcpu_exit_system_event(struct vcpu *v)
{
	switch (v->run->system_event.type) {
	case KVM_SYSTEM_EVENT_SHUTDOWN:
		log_info("guest powered off");
		vm_stop(v->vm, 0);
		return VCPU_STOP;
	case KVM_SYSTEM_EVENT_RESET:
		return vm_guest_reset(v->vm) ? VCPU_CONTINUE : VCPU_STOP;
	case KVM_SYSTEM_EVENT_CRASH:
		log_error("vCPU %u: guest reported a crash (KVM_SYSTEM_EVENT_CRASH)",
			  v->index);
		return vcpu_fail(v);
	default:
		log_error("vCPU %u: unexpected KVM system event %u", v->index,
			  v->run->system_event.type);
		return vcpu_fail(v);
	}
}

/* One switch on the exit reason; each case hands off in a few lines.
 * The reasons that are not generic go to the arch hook. */
static int vcpu_handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	const char *name;
	int r;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		return vcpu_exit_io(v);
	case KVM_EXIT_MMIO:
		return vcpu_exit_mmio(v);
	case KVM_EXIT_INTR:
		return VCPU_CONTINUE;          /* kicked: the loop checks for stop */
	case KVM_EXIT_SHUTDOWN:
		log_error("vCPU %u: guest triple fault (KVM_EXIT_SHUTDOWN) at RIP 0x%"
			  PRIx64 ": stopping the VM", v->index, vcpu_rip(v));
		return vcpu_fail(v);
	case KVM_EXIT_SYSTEM_EVENT:
		return vcpu_exit_system_event(v);
	case KVM_EXIT_INTERNAL_ERROR:
		return vcpu_exit_internal(v);
	case KVM_EXIT_FAIL_ENTRY:
		log_error("vCPU %u: KVM could not enter the guest: hardware entry "
			  "failure reason 0x%llx on host CPU %u", v->index,
			  (unsigned long long)run->fail_entry.hardware_entry_failure_reason,
			  run->fail_entry.cpu);
		return vcpu_fail(v);
	case KVM_EXIT_DEBUG:
		log_error("vCPU %u: unexpected debug exit at RIP 0x%" PRIx64
			  " (no debugger is attached)", v->index, vcpu_rip(v));
		return vcpu_fail(v);
	case KVM_EXIT_UNKNOWN:
		log_error("vCPU %u: KVM exit with unknown hardware reason 0x%llx at RIP 0x%"
			  PRIx64, v->index,
			  (unsigned long long)run->hw.hardware_exit_reason, vcpu_rip(v));
		return vcpu_fail(v);
	default:
		r = x86_vcpu_handle_exit(v);    /* the arch hook */
		if (r != X86_EXIT_UNHANDLED)
			return r;
		name = exit_reason_name(run->exit_reason);
		log_error("vCPU %u: unhandled KVM exit %u (%s) at RIP 0x%" PRIx64,
			  v->index, run->exit_reason, name ? name : "unknown", vcpu_rip(v));
		return vcpu_fail(v);
	}
}

/* KVM's exit and instruction-emulation counts: a pread of its stats file
 * each. False when KVM has no such counters. */
static bool vcpu_kvm_counts(const struct vcpu *v, uint64_t *exits, uint64_t *emul)
{
	return kvm_stats_read(&v->kstats, KVM_STAT_EXITS, exits) &&
	       kvm_stats_read(&v->kstats, KVM_STAT_INSN_EMULATION, emul);
}

/* lagvisor stat's KVM columns. */
static void vcpu_publish_kvm(struct vcpu *v)
{
	uint64_t exits, emul;

	if (vcpu_kvm_counts(v, &exits, &emul))
		sched_bind_vcpu_publish_kvm(&v->sb, exits, emul);
}

/* sched_bind's parked hook, on the vCPU's own thread: publish `preempted`
 * (still runnable: 1; halted: 0) before the thread sleeps, so a guest
 * reading it from another vCPU sees it for the whole wait. */
static void vcpu_sched_parked(void *opaque, bool preempted)
{
	struct vcpu *v = opaque;

	steal_time_update(&v->irq.steal, clock_now_ns(), preempted, true);
	vcpu_publish_kvm(v);
}

static uint64_t vcpu_sched_queued_ns(const void *arg)
{
	return sched_bind_vcpu_wait_ns(arg);
}

void vcpu_sched_kick(void *opaque)
{
	struct vcpu *v = opaque;
	pid_t tid = __atomic_load_n(&v->irq.tid, __ATOMIC_ACQUIRE);

	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (tid)
		syscall(SYS_tgkill, getpid(), tid, VCPU_KICK_SIGNAL);
}

void vcpu_pause_park(struct vcpu *v)
{
	if (!v->sched_on) {
		vm_vcpu_park(v->vm);
		return;
	}
	vm_vcpu_count_parked(v->vm, 1);
	for (;;) {
		/* token before the look: vm_resume clears the flag, then wakes */
		uint32_t tok = sched_bind_vcpu_prepare_block(&v->sb);

		if (!vm_pause_requested(v->vm) || vm_stopping(v->vm))
			break;
		if (sched_bind_vcpu_block(&v->sb, tok, 0) < 0)
			break;          /* stopping: the loop's next check ends it */
	}
	vm_vcpu_count_parked(v->vm, -1);
}

static void vcpu_loop(struct vcpu *v)
{
	while (!vm_stopping(v->vm)) {
		if (vm_pause_requested(v->vm)) {
			vcpu_pause_park(v);
			/* The kick that made us leave KVM_RUN set immediate_exit;
			 * a stop that comes now is seen at the loop's check or
			 * sets it again. */
			__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
			continue;
		}
		int r;

		if (v->user_irqchip && vcpu_irq_before_run(v) == VCPU_STOP)
			return;
		r = ioctl(v->fd, KVM_RUN, 0);
		if (v->user_irqchip)
			vcpu_irq_after_run(v);
		if (r < 0) {
			int e = errno;

			if (e == EINTR || e == EAGAIN) {
				/* Kicked: a stop (checked above) or an interrupt
				 * (injected by the next before_run). The loop
				 * owns immediate_exit from here. */
				__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
				vcpu_eat_kick();
				if (v->sched_on && sched_bind_vcpu_check(&v->sb) < 0)
					return;
				continue;
			}
			log_error("vCPU %u: KVM_RUN: %s", v->index, strerror(e));
			vcpu_fail(v);
			return;
		}
		if (vcpu_handle_exit(v) == VCPU_STOP)
			return;
		/* A vCPU that never parks still shows up in lagvisor stat. */
		if (v->sched_on && !(++v->nr_exits_seen & 4095))
			vcpu_publish_kvm(v);
		if (v->sched_on && sched_bind_vcpu_check(&v->sb) < 0)
			return;
	}
}

/*
 * -v: how the vCPU ran. KVM's own counters say what the guest's mode
 * claims cannot: a vCPU that ran natively has few instruction emulations
 * per exit (the traps of privileged instructions), one in the emulator
 * has thousands.
 */
static void vcpu_report_mode(struct vcpu *v)
{
	uint64_t exits = 0, emul = 0;
	const struct x86_boot_info *b = &v->vm->boot;

	if (vcpu_kvm_counts(v, &exits, &emul))
		log_info("vCPU %u: %s; KVM: %" PRIu64 " exits, %" PRIu64 " instruction emulations",
			 v->index, b->native ? "native mode (VIF page registered)" : "ordinary mode",
			 exits, emul);
	else
		log_info("vCPU %u: %s; KVM has no exit/emulation counters", v->index,
			 b->native ? "native mode (VIF page registered)" : "ordinary mode");
	kvm_stats_close(&v->kstats);
}

/*
 * KVM starts a per-VM worker thread at the VM's first KVM_RUN (x86:
 * kvm-nx-lpage-recovery), and it gets the CPUs of the thread that made the
 * call. Under --sched eevdf that thread is pinned to one host CPU by its
 * first run, and the VM's teardown waits for the worker to end
 * (vhost_task_stop), which on that CPU competes with whatever thread holds
 * it then: another VM's, and the host scheduler left it waiting 40 s once
 * (a wakebench VM beside a hog VM in one domain on host CPU 0). So each
 * vCPU thread makes that first call during its setup, before any pinning,
 * with immediate_exit set: KVM returns EINTR without entering the guest,
 * and the worker has the process's CPUs.
 */
static void vcpu_first_run(struct vcpu *v)
{
	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (ioctl(v->fd, KVM_RUN, 0) == 0 || (errno != EINTR && errno != EAGAIN))
		log_debug("vCPU %u: the first KVM_RUN, with immediate_exit: %s", v->index,
			  strerror(errno));
	__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;
	char name[16];
	int r;

	snprintf(name, sizeof(name), "vcpu%u", v->index);
	pthread_setname_np(pthread_self(), name);
	vm_vcpu_set_tid(vm, v, gettid());
	r = vcpu_set_signal_mask(v);
	if (r)
		log_error("vCPU %u: KVM_SET_SIGNAL_MASK: %s", v->index, strerror(-r));
	if (kvm_stats_open(&v->kstats, v->fd))
		log_debug("vCPU %u: no KVM statistics (KVM_GET_STATS_FD)", v->index);
	if (!r) {
		r = x86_vcpu_init(vm->kvm.fd, v->fd, v->index, vm->nr_vcpus, &vm->boot);
		if (!r && v->sched_on)
			vcpu_first_run(v);
		if (!r && v->user_irqchip)
			r = vcpu_irq_thread_init(v);
		if (!r && v->sched_on) {
			r = sched_bind_vcpu_thread_init(&v->sb);
			v->irq.steal.queued_ns = vcpu_sched_queued_ns;
			v->irq.steal.queued_arg = &v->sb;
			v->sb.parked = vcpu_sched_parked;
		}
		if (r)
			log_error("vCPU %u: setup failed: %s", v->index, strerror(-r));
	}
	/* Set up: from here the thread needs only what its loop calls. */
	if (!r && (r = seccomp_thread_enter(SECCOMP_ROLE_VCPU)))
		log_error("vCPU %u: seccomp sandbox: %s (--no-seccomp runs without)", v->index,
			  strerror(-r));
	/* Every vCPU is set up before any runs: the boot vCPU's INIT/SIPI
	 * to an AP that does not exist yet would be lost. */
	if (vm_vcpu_ready(vm, r == 0)) {
		if (!v->sched_on) {
			vcpu_loop(v);
		} else {
			/* The boot vCPU starts runnable; an AP waits for the
			 * wake of its INIT/SIPI, so that its first enqueue is
			 * its start. Waiting there it is outside the guest: it
			 * counts as parked for vm_pause and the power-on
			 * snapshot (vm_reset), which would wait for it else. */
			bool ap = v->index != 0;

			if (!ap)
				sched_bind_vcpu_wake(&vm->sched.bind, &v->sb, NULL);
			else
				vm_vcpu_count_parked(vm, 1);
			r = sched_bind_vcpu_wait(&v->sb);
			if (ap)
				vm_vcpu_count_parked(vm, -1);
			if (r == 0)
				vcpu_loop(v);
		}
	}
	if (v->sched_on)
		sched_bind_vcpu_exit(&v->sb);
	vcpu_report_mode(v);
	return NULL;
}

int vcpu_start(struct vcpu *v)
{
	int r = pthread_create(&v->thread, NULL, vcpu_thread, v);

	if (r)
		return -r;
	v->started = true;
	return 0;
}
