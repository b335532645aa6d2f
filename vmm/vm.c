#include "vmm/vm.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "vmm/seccomp.h"
#include "vmm/vcpu.h"

/* How long vm_run waits for a vCPU thread to leave KVM_RUN after the stop,
 * re-kicking it every VM_KICK_PERIOD_MS (a kick can only be missed if the
 * thread was outside KVM_RUN, blocked elsewhere, e.g. on a full stdout). */
#define VM_JOIN_TIMEOUT_MS 5000
#define VM_KICK_PERIOD_MS  50
/* How long vm_pause waits for the vCPUs to park (re-kicking likewise). */
#define VM_PAUSE_TIMEOUT_MS 5000

int vm_init(struct vm *vm, const struct vm_config *cfg)
{
	int r;

	memset(vm, 0, sizeof(*vm));
	vm->cfg = cfg;
	vm->kvm.fd = -1;
	vm->fd = -1;
	bus_init(&vm->pio, "pio");
	bus_init(&vm->mmio, "mmio");
	r = io_policy_init(&vm->io, cfg->strict_io);
	if (r)
		return r;
	r = mutex_init(&vm->lock);
	if (!r) {
		r = -pthread_cond_init(&vm->cond, NULL);
		if (r)
			mutex_destroy(&vm->lock);
	}
	if (r)
		io_policy_destroy(&vm->io);
	return r;
}

int vm_map_memory(struct vm *vm, char *err, size_t errlen)
{
	char size[32];
	int r;

	vm->mem.nr = x86_mem_layout(vm->cfg->mem_bytes, vm->mem.slots,
				    GUEST_MEM_MAX_SLOTS);
	config_format_size(vm->cfg->mem_bytes, size, sizeof(size));
	if (vm->mem.nr == 0 || vm->mem.nr > GUEST_MEM_MAX_SLOTS) {
		snprintf(err, errlen, "--memory %s: no guest memory layout for this size",
			 size);
		vm->mem.nr = 0;
		return -EINVAL;
	}
	r = guest_mem_map(&vm->mem);
	if (r) {
		snprintf(err, errlen, "cannot map %s of guest RAM: %s", size, strerror(-r));
		vm->mem.nr = 0;
	}
	return r;
}

int vm_load_kernel(struct vm *vm, char *err, size_t errlen)
{
	return x86_load_kernel(&vm->mem, vm->cfg, &vm->boot, err, errlen);
}

void vm_irq_set_kvm(void *opaque, unsigned gsi, int level)
{
	struct vm *vm = opaque;
	struct kvm_irq_level irq = { .irq = gsi, .level = level ? 1 : 0 };

	if (ioctl(vm->fd, KVM_IRQ_LINE, &irq))
		log_once(LOG_WARN, "KVM_IRQ_LINE gsi %u: %s", gsi, strerror(errno));
}

static void vm_on_signal(void *opaque, int signo)
{
	log_warn("terminating on signal %d (%s)", signo, strsignal(signo));
	vm_stop(opaque, 128 + signo);
}

int vm_create(struct vm *vm, char *err, size_t errlen)
{
	const struct vm_config *cfg = vm->cfg;
	sigset_t sigs;
	int r;

	r = kvm_create_vm(&vm->kvm, err, errlen);
	if (r < 0)
		return r;
	vm->fd = r;
	r = guest_mem_register(&vm->mem, vm->fd);
	if (r) {
		snprintf(err, errlen, "KVM_SET_USER_MEMORY_REGION: %s", strerror(-r));
		return r;
	}
	r = x86_native_setup(vm->kvm.fd, &vm->mem, cfg, &vm->boot, err, errlen);
	if (r)
		return r;
	log_info("native mode %s: %s", vm->boot.native ? "on" : "off", vm->boot.native_why);
	r = x86_vm_init(vm->fd, cfg);
	if (r) {
		snprintf(err, errlen, "setting up the VM (irqchip, PIT): %s", strerror(-r));
		return r;
	}
	if (cfg->irqchip == IRQCHIP_USER) {
		r = irqchip_user_init(vm, err, errlen);
		if (r)
			return r;
	}
	/* Before any thread exists, so that every thread inherits the mask. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	r = iothread_init(&vm->iothread, &sigs, vm_on_signal, vm);
	if (r) {
		snprintf(err, errlen, "I/O thread setup: %s", strerror(-r));
		return r;
	}
	vm->iothread.seccomp_role = SECCOMP_ROLE_IO;
	r = console_open(&vm->console, cfg, err, errlen);
	if (r)
		return r;
	r = vm_devices_init(vm, err, errlen);
	if (r)
		return r;
	vm->vcpus = calloc(cfg->nr_cpus, sizeof(*vm->vcpus));
	if (!vm->vcpus) {
		snprintf(err, errlen, "out of memory for %u vCPUs", cfg->nr_cpus);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->nr_cpus; i++) {
		r = vcpu_create(&vm->vcpus[i], vm, i, err, errlen);
		if (r)
			return r;
		vm->nr_vcpus++;
	}
	if (cfg->sched == SCHED_MODE_EEVDF) {
		r = sched_host_open(&vm->sched, &cfg->sched_opts, cfg->nr_cpus, VCPU_KICK_SIGNAL,
				    err, errlen);
		if (r)
			return r;
		vm->sched_on = true;
		for (unsigned i = 0; i < vm->nr_vcpus; i++) {
			r = sched_host_vcpu_add(&vm->sched, &vm->vcpus[i].sb, i, vcpu_sched_kick,
						&vm->vcpus[i]);
			if (r) {
				snprintf(err, errlen, "scheduler: vCPU %u: %s", i, strerror(-r));
				return r;
			}
			vm->vcpus[i].sched_on = true;
		}
	}
	return 0;
}

static void vm_stop_locked(struct vm *vm, int exit_code)
{
	MUTEX_ASSERT_HELD(&vm->lock);
	if (!vm->stopping) {
		vm->exit_code = exit_code;
		__atomic_store_n(&vm->stopping, true, __ATOMIC_RELEASE);
		if (vm->sched_on)
			sched_bind_stop(&vm->sched.bind);
	}
	pthread_cond_broadcast(&vm->cond);
}

void vm_stop(struct vm *vm, int exit_code)
{
	mutex_lock(&vm->lock);
	vm_stop_locked(vm, exit_code);
	mutex_unlock(&vm->lock);
}

bool vm_guest_reset(struct vm *vm)
{
	if (vm->guest_reset) {
		vm->guest_reset(vm->guest_reset_arg);
		return true;
	}
	log_warn("guest requested reset (reboot): lagvisor run does not reboot, the VM ends (exit status 0)");
	vm_stop(vm, 0);
	return false;
}

/* Lock-free: every vCPU asks on every exit, and only ever sees it flip once. */
bool vm_stopping(struct vm *vm)
{
	return __atomic_load_n(&vm->stopping, __ATOMIC_ACQUIRE);
}

bool vm_vcpu_ready(struct vm *vm, bool ok)
{
	bool go;

	mutex_lock(&vm->lock);
	if (!ok)
		vm_stop_locked(vm, 1);
	vm->nr_ready++;
	pthread_cond_broadcast(&vm->cond);
	while (!vm->go && !vm->stopping)
		mutex_cond_wait(&vm->lock, &vm->cond);
	go = !vm->stopping;
	mutex_unlock(&vm->lock);
	return go;
}

bool vm_pause_requested(struct vm *vm)
{
	return __atomic_load_n(&vm->paused, __ATOMIC_ACQUIRE);
}

void vm_vcpu_park(struct vm *vm)
{
	mutex_lock(&vm->lock);
	vm->nr_parked++;
	pthread_cond_broadcast(&vm->cond);
	while (vm->paused && !vm->stopping)
		mutex_cond_wait(&vm->lock, &vm->cond);
	vm->nr_parked--;
	mutex_unlock(&vm->lock);
}

void vm_vcpu_count_parked(struct vm *vm, int delta)
{
	mutex_lock(&vm->lock);
	vm->nr_parked += (unsigned)delta;
	pthread_cond_broadcast(&vm->cond);
	mutex_unlock(&vm->lock);
}

int vm_pause(struct vm *vm)
{
	long waited = 0;
	int r = 0;

	mutex_lock(&vm->lock);
	__atomic_store_n(&vm->paused, true, __ATOMIC_RELEASE);
	/* Before go, no vCPU has entered the guest: each parks on its way in. */
	while (vm->go && !vm->stopping && vm->nr_parked < vm->nr_ready) {
		struct timespec ts = clock_cond_deadline_ms(VM_KICK_PERIOD_MS);

		for (unsigned i = 0; i < vm->nr_vcpus; i++)
			vcpu_kick(&vm->vcpus[i]);
		if (mutex_cond_timedwait(&vm->lock, &vm->cond, &ts) == -ETIMEDOUT &&
		    (waited += VM_KICK_PERIOD_MS) >= VM_PAUSE_TIMEOUT_MS) {
			log_warn("pause: %u of %u vCPUs did not stop in %d ms",
				 vm->nr_ready - vm->nr_parked, vm->nr_ready,
				 VM_PAUSE_TIMEOUT_MS);
			r = -ETIMEDOUT;
			break;
		}
	}
	mutex_unlock(&vm->lock);
	return r;
}

void vm_resume(struct vm *vm)
{
	mutex_lock(&vm->lock);
	__atomic_store_n(&vm->paused, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&vm->cond);
	mutex_unlock(&vm->lock);
	/* vCPUs paused inside the scheduler (vcpu_pause_park) wait for a
	 * wake; the flag is clear first, so none blocks again. */
	for (unsigned i = 0; vm->sched_on && i < vm->nr_vcpus; i++)
		sched_bind_vcpu_wake(&vm->sched.bind, &vm->vcpus[i].sb, NULL);
}

void vm_vcpu_set_tid(struct vm *vm, struct vcpu *v, pid_t tid)
{
	mutex_lock(&vm->lock);
	v->tid = tid;
	pthread_cond_broadcast(&vm->cond);
	mutex_unlock(&vm->lock);
}

int vm_vcpu_tids(struct vm *vm, int *tids, unsigned n, int timeout_ms)
{
	struct timespec ts = clock_cond_deadline_ms(timeout_ms);
	int r = 0;

	if (n > vm->nr_vcpus)
		return -EINVAL;
	mutex_lock(&vm->lock);
	for (unsigned i = 0; i < n && !r; i++) {
		while (!vm->vcpus[i].tid && !r)
			if (mutex_cond_timedwait(&vm->lock, &vm->cond, &ts) == -ETIMEDOUT)
				r = -ETIMEDOUT;
		tids[i] = vm->vcpus[i].tid;
	}
	mutex_unlock(&vm->lock);
	return r;
}

/*
 * Under --sched eevdf a vCPU thread is pinned to the host CPU of the pCPU
 * sched/ last gave it, and when the VM stops, each must run once more to
 * leave. A thread that is not the holder then competes on that CPU with
 * whichever thread now holds it, another VM's in a shared domain, and the
 * host scheduler was seen to leave it waiting there for 11 s to over 2 min
 * (a wakebench VM beside a 4-vCPU hog VM, one domain on host CPU 0 of two:
 * its vcpu0 runnable, its run time not moving, the hog's holder running).
 * lagvisor waited 5 s for it, gave up, and the process could not end until
 * that thread had run. Widened to the CPUs lagvisor started with, a
 * stopping thread leaves on any of them.
 */
static void vm_unpin_vcpus(struct vm *vm)
{
	if (!vm->sched_on || !vm->start_cpus_ok)
		return;
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		pid_t tid = __atomic_load_n(&vm->vcpus[i].tid, __ATOMIC_ACQUIRE);

		if (vm->vcpus[i].started && tid &&
		    sched_setaffinity(tid, sizeof(vm->start_cpus), &vm->start_cpus))
			log_debug("vCPU %u: widening its host CPUs to leave: %s", i,
				  strerror(errno));
	}
}

/* Kick every vCPU out of KVM_RUN and join it, re-kicking until it leaves. */
static void vm_join_vcpus(struct vm *vm)
{
	vm_unpin_vcpus(vm);
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_kick(&vm->vcpus[i]);
	for (unsigned i = 0; i < vm->nr_vcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		long waited = 0;

		while (v->started && !v->joined) {
			struct timespec ts = clock_cond_deadline_ms(VM_KICK_PERIOD_MS);
			int r = pthread_timedjoin_np(v->thread, NULL, &ts);

			if (r == 0) {
				v->joined = true;
			} else if (r != ETIMEDOUT || (waited += VM_KICK_PERIOD_MS) >=
				   VM_JOIN_TIMEOUT_MS) {
				log_warn("vCPU %u did not stop (%s); exiting without it", i,
					 r == ETIMEDOUT ? "timed out" : strerror(r));
				vm->leaked = true;
				break;
			} else {
				vcpu_kick(v);
			}
		}
	}
}

int vm_run(struct vm *vm)
{
	unsigned started = 0;
	sigset_t kick;
	int r;

	sigemptyset(&kick);
	sigaddset(&kick, VCPU_KICK_SIGNAL);
	r = pthread_sigmask(SIG_BLOCK, &kick, NULL);
	if (!r)
		r = -vcpu_install_kick_handler();
	if (r) {
		log_error("installing the vCPU kick signal: %s", strerror(r));
		return 1;
	}
	vm->start_cpus_ok = sched_getaffinity(0, sizeof(vm->start_cpus), &vm->start_cpus) == 0;
	/* A guest writing to a closed pipe must not kill us: EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	r = console_raw(&vm->console);
	if (r)
		log_warn("console: cannot enter raw mode: %s", strerror(-r));
	r = iothread_start(&vm->iothread);
	if (r) {
		log_error("starting the I/O thread: %s", strerror(-r));
		console_restore(&vm->console);
		return 1;
	}
	for (; started < vm->nr_vcpus; started++) {
		r = vcpu_start(&vm->vcpus[started]);
		if (r) {
			log_error("starting vCPU %u's thread: %s", started, strerror(-r));
			vm_stop(vm, 1);
			break;
		}
	}
	mutex_lock(&vm->lock);
	while (!vm->stopping && vm->nr_ready < started)
		mutex_cond_wait(&vm->lock, &vm->cond);
	if (!vm->stopping) {
		vm->go = true;
		pthread_cond_broadcast(&vm->cond);
	}
	mutex_unlock(&vm->lock);
	/* Every thread is set up: this one only waits, joins and tears down. */
	r = seccomp_thread_enter((enum seccomp_role)vm->seccomp_main);
	if (r) {
		log_error("main thread: seccomp sandbox: %s (--no-seccomp runs without)",
			  strerror(-r));
		vm_stop(vm, 1);
	}
	mutex_lock(&vm->lock);
	while (!vm->stopping)
		mutex_cond_wait(&vm->lock, &vm->cond);
	mutex_unlock(&vm->lock);

	vm_join_vcpus(vm);
	iothread_stop(&vm->iothread);
	console_restore(&vm->console);
	return vm->exit_code;
}

void vm_destroy(struct vm *vm)
{
	console_restore(&vm->console);
	if (vm->leaked)
		return;         /* a thread may still use everything below */
	if (vm->sched_on)
		sched_host_close(&vm->sched);
	vm->sched_on = false;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		vcpu_destroy(&vm->vcpus[i]);
	free(vm->vcpus);
	vm->vcpus = NULL;
	vm->nr_vcpus = 0;
	vm_devices_destroy(vm);
	irqchip_user_destroy(vm);
	console_close(&vm->console);
	iothread_destroy(&vm->iothread);
	if (vm->fd >= 0)
		close(vm->fd);
	vm->fd = -1;
	kvm_close(&vm->kvm);
	guest_mem_unmap(&vm->mem);
	io_policy_destroy(&vm->io);
	pthread_cond_destroy(&vm->cond);
	mutex_destroy(&vm->lock);
}
