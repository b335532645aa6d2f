/* A vCPU's interrupts with --irqchip user (see vcpu_irq.h). */
#include "vmm/x86/vcpu_irq.h"

#include "common/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "vmm/vcpu.h"
#include "vmm/vm.h"
#include "vmm/x86/irqchip.h"
#include "vmm/x86/irqchip_user.h"

/* The vCPU whose thread this is (NULL in other threads). */
static __thread struct vcpu *vcpu_self;

int vcpu_irq_create(struct vcpu *v, char *err, size_t errlen)
{
	/* x2APIC MSRs come out as INVAL exits (irqchip_user.c); without
	 * x2APIC in CPUID, EXTD in IA32_APIC_BASE is reserved. */
	const struct lapic_config cfg = { .no_x2apic = v->vm->cfg->no_x2apic };
	struct vcpu_irq *q = &v->irq;
	int r;

	q->deadline_ns = LAPIC_NO_DEADLINE;
	q->host_timer_ns = LAPIC_NO_DEADLINE;
	q->wait_sipi = v->index != 0;
	q->steal.schedstat_fd = -1;
	halt_poll_init(&q->poll, v->vm->cfg->halt_poll_ns);
	r = lapic_init(&q->lapic, &v->vm->irqchip.bus, v->index, &cfg);
	if (r) {
		snprintf(err, errlen, "vCPU %u: local APIC: %s", v->index, strerror(-r));
		return r;
	}
	q->lapic_ok = true;
	return 0;
}

void vcpu_irq_destroy(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;

	if (q->lapic_ok)
		log_debug("vCPU %u: %" PRIu64 " interrupts, %" PRIu64 " NMIs injected, %" PRIu64
			  " kicks; %" PRIu64 " halts, %" PRIu64 " of them ended while polling; %" PRIu64
			  " EOIs through PV EOI", v->index, q->nr_injected, q->nr_nmi, q->nr_kicks,
			  q->nr_halts, q->poll.nr_ok, q->pv_eoi.nr_eois);

	if (q->host_timer_ok)
		timer_delete(q->host_timer);
	q->host_timer_ok = false;
	steal_time_destroy(&q->steal);
	if (q->lapic_ok)
		lapic_destroy(&q->lapic);
	q->lapic_ok = false;
}

/* IA32_APIC_BASE bits at and above the guest's MAXPHYADDR (CPUID
 * 0x80000008 EAX[7:0], set by x86_vcpu_init) #GP, as on hardware. */
static void guest_phys_bits_to_lapic(struct vcpu *v)
{
	struct {
		struct kvm_cpuid2 hdr;
		struct kvm_cpuid_entry2 e[256];
	} c;

	memset(&c, 0, sizeof(c));
	c.hdr.nent = 256;
	if (ioctl(v->fd, KVM_GET_CPUID2, &c) < 0) {
		log_once(LOG_WARN, "vCPU %u: KVM_GET_CPUID2: %s (APIC base reserved bits "
			 "from bit 52)", v->index, strerror(errno));
		return;
	}
	for (unsigned i = 0; i < c.hdr.nent; i++)
		if (c.e[i].function == 0x80000008 &&
		    lapic_set_phys_addr_bits(&v->irq.lapic, c.e[i].eax & 0xff) == 0)
			return;
}

int vcpu_irq_thread_init(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	struct sigevent sev;
	int r;

	vcpu_self = v;
	__atomic_store_n(&q->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	/* Timer deadlines are the guest's; the default 50 us slack is not. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = VCPU_KICK_SIGNAL;
	sev._sigev_un._tid = q->tid;     /* sigev_notify_thread_id */
	if (timer_create(CLOCK_MONOTONIC, &sev, &q->host_timer)) {
		r = -errno;
		log_error("vCPU %u: timer_create: %s", v->index, strerror(-r));
		return r;
	}
	q->host_timer_ok = true;
	r = ioctl(v->fd, KVM_GET_TSC_KHZ, 0);
	if (r <= 0) {
		r = r < 0 ? -errno : -ENOTSUP;
		log_error("vCPU %u: KVM_GET_TSC_KHZ: %s (the TSC-deadline timer needs "
			  "the guest TSC rate)", v->index, strerror(-r));
		return r;
	}
	q->tsc_khz = (uint64_t)r;
	if (v->vm->boot.native)
		q->vif = guest_mem_ptr(&v->vm->mem, x86_native_vif_gpa(&v->vm->boot, v->index), 2);
	guest_phys_bits_to_lapic(v);
	/* KVM's state right after creation is the architectural reset state:
	 * a later INIT goes back to it. */
	r = kvm_ioctl(v->fd, KVM_GET_SREGS, &q->reset_sregs, "vCPU %u: KVM_GET_SREGS", v->index);
	if (!r)
		r = kvm_ioctl(v->fd, KVM_GET_REGS, &q->reset_regs, "vCPU %u: KVM_GET_REGS", v->index);
	steal_time_init(&q->steal);
	return r;
}

static void futex_wake_all(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* Sleep while *word == val, until the absolute CLOCK_MONOTONIC deadline. */
static void futex_wait_until(uint32_t *word, uint32_t val, uint64_t deadline_ns)
{
	struct timespec ts, *tp = NULL;

	if (deadline_ns != LAPIC_NO_DEADLINE) {
		ts = clock_ns_to_timespec(deadline_ns);
		tp = &ts;
	}
	syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, val, tp, NULL,
		FUTEX_BITSET_MATCH_ANY);
}

void vcpu_irq_notify(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	pid_t tid;

	__atomic_add_fetch(&q->gen, 1, __ATOMIC_SEQ_CST);
	if (v == vcpu_self)
		return;         /* it looks again before it enters */
	if (v->sched_on && __atomic_load_n(&q->mode, __ATOMIC_SEQ_CST) != VCPU_IN_RUN) {
		/* halted (blocked in the scheduler) or between exits: the
		 * wake is remembered by its token either way */
		sched_bind_vcpu_wake(&v->vm->sched.bind, &v->sb, NULL);
		return;
	}
	switch (__atomic_load_n(&q->mode, __ATOMIC_SEQ_CST)) {
	case VCPU_IN_RUN:
		__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		/* tgkill on the tid, not pthread_kill: the thread may be
		 * leaving and joined meanwhile; a stale tid gets ESRCH. */
		tid = __atomic_load_n(&q->tid, __ATOMIC_ACQUIRE);
		if (tid)
			syscall(SYS_tgkill, getpid(), tid, VCPU_KICK_SIGNAL);
		__atomic_add_fetch(&q->nr_kicks, 1, __ATOMIC_RELAXED);
		break;
	case VCPU_HALTED:
		futex_wake_all(&q->gen);
		break;
	default:
		break;
	}
}

void vcpu_irq_set_deadline(struct vcpu *v, uint64_t deadline_ns)
{
	__atomic_store_n(&v->irq.deadline_ns, deadline_ns, __ATOMIC_SEQ_CST);
	vcpu_irq_notify(v);
}

static void set_mode(struct vcpu *v, enum vcpu_mode m)
{
	__atomic_store_n(&v->irq.mode, (int)m, __ATOMIC_SEQ_CST);
}

/* Fire the LAPIC timer if its deadline passed. Returns the deadline now. */
static uint64_t run_timer(struct vcpu *v, uint64_t now)
{
	struct vcpu_irq *q = &v->irq;
	uint64_t dl = __atomic_load_n(&q->deadline_ns, __ATOMIC_SEQ_CST);

	if (dl != LAPIC_NO_DEADLINE && now >= dl) {
		lapic_timer_expire(&q->lapic, now);
		dl = __atomic_load_n(&q->deadline_ns, __ATOMIC_SEQ_CST);
	}
	return dl;
}

/* What wakes a sleeping vCPU. A HLT with IF = 0 ends only for what the
 * CPU does not mask (NMI, INIT, SIPI); in wait-for-SIPI only INIT/SIPI. */
enum wake_on { WAKE_ANY, WAKE_UNMASKABLE, WAKE_STARTUP };

static bool has_wake_event(struct lapic *l, enum wake_on on)
{
	bool r;

	if (on == WAKE_ANY)
		return lapic_has_event(l);
	/* The fields are the LAPIC's own; read under its lock as lapic.c does. */
	mutex_lock(&l->lock);
	r = l->init_pending || l->sipi_pending ||
	    (on == WAKE_UNMASKABLE && l->nmi_pending);
	mutex_unlock(&l->lock);
	return r;
}

static bool vcpu_has_unmaskable(struct vcpu *v)
{
	return has_wake_event(&v->irq.lapic, WAKE_UNMASKABLE);
}

/*
 * A vCPU in HLT with IF = 0, or waiting for its SIPI, moves again only for
 * an NMI, INIT or SIPI, which only another vCPU sends (or an IOAPIC pin in
 * NMI mode, which nothing here uses). When every vCPU is there and none is
 * pending, the guest has stopped itself for good: that is how Linux powers
 * off (and halts) without ACPI, every CPU ending in cli; hlt. End the VM
 * as a power-off, as the user asked for, instead of idling forever.
 */
static void stuck_enter(struct vcpu *v)
{
	struct vm *vm = v->vm;

	if (__atomic_add_fetch(&vm->nr_stuck, 1, __ATOMIC_SEQ_CST) != vm->nr_vcpus)
		return;
	for (unsigned i = 0; i < vm->nr_vcpus; i++)
		if (vcpu_has_unmaskable(&vm->vcpus[i]))
			return;
	log_info("every vCPU halted with interrupts off: the guest stopped itself "
		 "(a power-off without ACPI); ending the VM");
	vm_stop(vm, 0);
}

static void stuck_leave(struct vcpu *v)
{
	__atomic_sub_fetch(&v->vm->nr_stuck, 1, __ATOMIC_SEQ_CST);
}

void vcpu_irq_reset(struct vcpu *v)
{
	lapic_reset(&v->irq.lapic);
	/* Release: the thread's acquire in take_reset sees the LAPIC and the
	 * registers vm_reset gave KVM (those through KVM's vCPU mutex too). */
	__atomic_store_n(&v->irq.reset_pending, true, __ATOMIC_RELEASE);
	vcpu_irq_notify(v);
}

static bool reset_seen(struct vcpu *v)
{
	return __atomic_load_n(&v->irq.reset_pending, __ATOMIC_ACQUIRE);
}

/* The thread's half of vcpu_irq_reset. */
static void take_reset(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;

	if (!__atomic_exchange_n(&q->reset_pending, false, __ATOMIC_ACQ_REL))
		return;
	q->wait_sipi = v->index != 0;
	/* The old guest's area; the new one registers its own (RAM is clear). */
	steal_time_msr_write(&q->steal, &v->vm->mem, 0);
	pv_eoi_reset(&q->pv_eoi);
	/* What the last exit said no longer holds for the reset CPU (IF = 0). */
	v->run->if_flag = 0;
	v->run->ready_for_interrupt_injection = 0;
	v->run->request_interrupt_window = 0;
	log_debug("vCPU %u: system reset", v->index);
}

static bool vcpu_sleep_sched(struct vcpu *v, enum wake_on on);
static bool vcpu_sleep_any(struct vcpu *v, enum wake_on on);

/* Sleep (no CPU) until `on` happens or the VM stops (false). */
static bool vcpu_sleep(struct vcpu *v, enum wake_on on)
{
	bool r;

	if (on == WAKE_ANY)
		return v->sched_on ? vcpu_sleep_sched(v, on) : vcpu_sleep_any(v, on);
	stuck_enter(v);
	r = v->sched_on ? vcpu_sleep_sched(v, on) : vcpu_sleep_any(v, on);
	stuck_leave(v);
	return r;
}

/* --sched eevdf: the same, as a block in the scheduler (dequeue with lag,
 * hand the pCPU on) with the LAPIC deadline as the wait's end. */
static bool vcpu_sleep_sched(struct vcpu *v, enum wake_on on)
{
	struct vcpu_irq *q = &v->irq;

	for (;;) {
		/* token first, then the look: a notify in between is seen */
		uint32_t tok = sched_bind_vcpu_prepare_block(&v->sb);
		uint64_t dl;

		set_mode(v, VCPU_OUTSIDE);
		if (vm_stopping(v->vm))
			return false;
		/* vm_pause counts this vCPU only once it parks; the pause's
		 * kick woke it from the block. */
		if (vm_pause_requested(v->vm)) {
			vcpu_pause_park(v);
			continue;
		}
		/* The CPU this sleep was for is gone: start over in before_run. */
		if (reset_seen(v))
			return true;
		dl = run_timer(v, clock_now_ns());
		if (has_wake_event(&q->lapic, on))
			return true;
		if (sched_bind_vcpu_block(&v->sb, tok, dl) < 0)
			return false;
	}
}

/* vcpu_sleep without a scheduler: a futex wait on the notify generation. */
static bool vcpu_sleep_any(struct vcpu *v, enum wake_on on)
{
	struct vcpu_irq *q = &v->irq;

	for (;;) {
		uint32_t gen;
		uint64_t dl;

		set_mode(v, VCPU_HALTED);
		gen = __atomic_load_n(&q->gen, __ATOMIC_SEQ_CST);
		if (vm_stopping(v->vm))
			break;
		/* A halted vCPU is paused too: vm_pause waits until every vCPU
		 * parks, and its kick bumped gen to get us here. */
		if (vm_pause_requested(v->vm)) {
			set_mode(v, VCPU_OUTSIDE);
			vcpu_pause_park(v);
			continue;
		}
		if (reset_seen(v)) {
			set_mode(v, VCPU_OUTSIDE);
			return true;
		}
		dl = run_timer(v, clock_now_ns());
		if (has_wake_event(&q->lapic, on)) {
			set_mode(v, VCPU_OUTSIDE);
			return true;
		}
		/* The timer fired (and re-armed) or the deadline moved: look again. */
		if (__atomic_load_n(&q->gen, __ATOMIC_SEQ_CST) != gen)
			continue;
		futex_wait_until(&q->gen, gen, dl);
	}
	set_mode(v, VCPU_OUTSIDE);
	return false;
}

/* Back to the power-up state and wait for a SIPI, taking INITs on the way. */
static int wait_for_sipi(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	uint8_t vector;

	for (;;) {
		if (!vcpu_sleep(v, WAKE_STARTUP))
			return VCPU_STOP;
		if (reset_seen(v))
			return VCPU_CONTINUE;   /* before_run takes it, looks again */
		lapic_take_init(&q->lapic);
		if (lapic_take_sipi(&q->lapic, &vector))
			break;
	}
	if (q->entered &&
	    (kvm_ioctl(v->fd, KVM_SET_SREGS, &q->reset_sregs, "vCPU %u: KVM_SET_SREGS", v->index) ||
	     kvm_ioctl(v->fd, KVM_SET_REGS, &q->reset_regs, "vCPU %u: KVM_SET_REGS", v->index)))
		return VCPU_STOP;
	if (x86_vcpu_sipi(v->fd, vector))
		return VCPU_STOP;
	log_debug("vCPU %u: started at 0x%x by SIPI", v->index, (unsigned)vector << 12);
	q->wait_sipi = false;
	v->run->request_interrupt_window = 0;
	return VCPU_CONTINUE;
}

static void arm_host_timer(struct vcpu *v, uint64_t dl)
{
	struct vcpu_irq *q = &v->irq;
	struct itimerspec its;

	if (dl == q->host_timer_ns || !q->host_timer_ok)
		return;
	memset(&its, 0, sizeof(its));
	if (dl != LAPIC_NO_DEADLINE)
		its.it_value = clock_ns_to_timespec(dl);
	if (timer_settime(q->host_timer, TIMER_ABSTIME, &its, NULL))
		log_once(LOG_WARN, "vCPU %u: timer_settime: %s", v->index, strerror(errno));
	else
		q->host_timer_ns = dl;
}

/* Whether KVM holds an NMI that it delivers on the next entry
 * (x86/irqchip.h). Asks KVM only while an NMI it was given may not have
 * been delivered yet. */
static bool nmi_due(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	struct kvm_vcpu_events ev;

	if (!q->nmi_in_kvm)
		return false;
	if (ioctl(v->fd, KVM_GET_VCPU_EVENTS, &ev) < 0) {
		log_once(LOG_WARN, "vCPU %u: KVM_GET_VCPU_EVENTS: %s (an interrupt "
			 "may overtake an NMI)", v->index, strerror(errno));
		q->nmi_in_kvm = false;
		return false;
	}
	q->nmi_in_kvm = x86_nmi_in_kvm(&ev);
	return x86_nmi_due(&ev);
}

int vcpu_irq_before_run(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	struct lapic *l = &q->lapic;
	struct kvm_run *run = v->run;
	uint64_t now, dl;
	int vec;

	for (;;) {
		/* Published before looking: see vcpu_irq.h. */
		set_mode(v, VCPU_IN_RUN);
		take_reset(v);
		if (lapic_take_init(l)) {
			log_debug("vCPU %u: INIT", v->index);
			pv_eoi_reset(&q->pv_eoi);
			q->wait_sipi = true;
		}
		if (!q->wait_sipi)
			break;
		if (wait_for_sipi(v) == VCPU_STOP)
			return VCPU_STOP;
	}
	now = clock_now_ns();
	dl = run_timer(v, now);
	/* Up to two NMIs can be pending (one to handle, one latched): hand
	 * both to KVM, which keeps the same two. */
	while (lapic_take_nmi(l)) {
		if (ioctl(v->fd, KVM_NMI) < 0) {
			log_once(LOG_WARN, "vCPU %u: KVM_NMI: %s", v->index, strerror(errno));
		} else {
			q->nr_nmi++;
			q->nmi_in_kvm = true;
		}
	}
	/* KVM_INTERRUPT injects unconditionally on the next entry: only when
	 * the last exit said the guest can take one (IF set, no interrupt
	 * shadow, none queued) and no NMI must go first. Otherwise KVM exits
	 * when it can. */
	if (x86_irq_allowed(run, q->vif) && !nmi_due(v)) {
		vec = lapic_accept(l);
		if (vec >= 0) {
			struct kvm_interrupt irq = { .irq = (uint32_t)vec };

			if (ioctl(v->fd, KVM_INTERRUPT, &irq) < 0)
				log_once(LOG_ERROR, "vCPU %u: KVM_INTERRUPT vector %d: %s "
					 "(interrupt lost)", v->index, vec, strerror(errno));
			else
				q->nr_injected++;
		}
	}
	run->request_interrupt_window = lapic_pending_vector(l) >= 0;
	q->cr8 = lapic_cr8_read(l);
	run->cr8 = q->cr8;
	arm_host_timer(v, dl);
	steal_time_update(&q->steal, now, false, false);
	if (q->pv_eoi.flag)     /* the LAPIC's lock only for a guest that uses it */
		pv_eoi_arm(&q->pv_eoi, lapic_eoi_deferrable(l));
	q->entered = true;
	return VCPU_CONTINUE;
}

void vcpu_irq_after_run(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;

	set_mode(v, VCPU_OUTSIDE);
	/* Before anything reads the LAPIC: an EOI the guest made through
	 * its PV EOI flag while in there. */
	if (pv_eoi_disarm(&q->pv_eoi))
		lapic_eoi(&q->lapic);
	/* A 64-bit guest may change CR8 (= TPR[7:4]) without an exit. */
	if (v->run->cr8 != q->cr8 && v->run->cr8 <= 15)
		lapic_cr8_write(&q->lapic, (uint8_t)v->run->cr8);
}

static bool pcpu_wanted(void *arg)
{
	return sched_bind_vcpu_pcpu_wanted(arg);
}

/* Spin for a wakeup within the poll window (halt_poll.h), no longer than
 * until the LAPIC deadline, and under eevdf only while no other vCPU wants
 * this pCPU. True: an interrupt is pending now. A notify that is not an
 * interrupt (pause, stop, reset) ends the poll too: vcpu_sleep takes it. */
static bool halt_poll(struct vcpu *v, uint64_t start_ns)
{
	struct vcpu_irq *q = &v->irq;
	uint64_t end = start_ns + q->poll.window_ns;
	uint64_t dl = __atomic_load_n(&q->deadline_ns, __ATOMIC_SEQ_CST);
	uint32_t gen;

	if (!q->poll.window_ns || (v->sched_on && sched_bind_vcpu_pcpu_wanted(&v->sb)))
		return false;
	gen = __atomic_load_n(&q->gen, __ATOMIC_SEQ_CST);
	if (dl < end)
		end = dl;
	if (!has_wake_event(&q->lapic, WAKE_ANY) &&
	    !halt_poll_spin(&q->gen, gen, end, v->sched_on ? pcpu_wanted : NULL, &v->sb))
		return false;
	return has_wake_event(&q->lapic, WAKE_ANY);
}

int vcpu_irq_exit_hlt(struct vcpu *v)
{
	struct vcpu_irq *q = &v->irq;
	uint64_t start;
	bool polled;

	q->nr_halts++;
	/* An NMI ends HLT. KVM can hold one it did not deliver before the
	 * guest reached this HLT (seen with a PVM host: NMI sent while the
	 * previous one's handler ran, KVM let the IRET pass without taking
	 * the pending one); the LAPIC no longer shows it, so sleeping here
	 * would keep it until some other event. Enter again: KVM delivers
	 * it, and the NMI's IRET returns after the HLT as on hardware. */
	if (nmi_due(v))
		return VCPU_CONTINUE;
	/* A HLT with IF = 0 waits for an NMI/INIT/SIPI, which nothing
	 * hurries: no poll (KVM polls only for what it can inject). */
	if (!x86_irq_flag(v->run, q->vif))
		return vcpu_sleep(v, WAKE_UNMASKABLE) ? VCPU_CONTINUE : VCPU_STOP;
	start = clock_now_ns();
	polled = halt_poll(v, start);
	if (!polled && !vcpu_sleep(v, WAKE_ANY))
		return VCPU_STOP;
	halt_poll_update(&q->poll, clock_now_ns() - start, polled);
	return VCPU_CONTINUE;
}
