/*
 * steal-time: the KVM steal-time area (CPUID 0x40000001 EAX bit 5,
 * MSR_KVM_STEAL_TIME) is kept up to date by the VMM: after registering a
 * 64-byte aligned struct, `version` changes while the vCPU keeps exiting
 * (HLTs on a LAPIC one-shot here), is even whenever read consistently,
 * `steal` never goes backwards and `preempted` reads 0 while the vCPU runs.
 * Steal itself may stay 0 on an idle host; its value is printed.
 *
 * steal.contend_ms=N (needs 2 vCPUs, meant for both on one host CPU:
 * lagvisor --sched eevdf --host-cpus 0): vCPU 1 registers its own area
 * and spins for N ms while vCPU 0 spins too, sampling vCPU 1's area. Each
 * sample is taken while vCPU 0 runs, so vCPU 1 (runnable, never halting)
 * is waiting then: `preempted` must read 1 in (nearly) every sample, and
 * vCPU 1's `steal` must grow by a good part of the N ms (two equal vCPUs
 * on one CPU: each waits about half the time). Then vCPU 1 halts: its
 * `preempted` must read 0 (halted is not preempted).
 */
#include "guest.h"
#include "kvm_para.h"
#include "options.h"

#define VEC_TIMER  0x40
#define ROUNDS     200
#define TICKS      (1u << 20)      /* ~1 ms at 1 GHz */

static volatile struct kvm_steal_time st __attribute__((aligned(64)));
static volatile struct kvm_steal_time st1 __attribute__((aligned(64)));
static volatile uint32_t peer_state;   /* 1 registered and spinning, 2 done */
static uint64_t contend_ms;
static const struct guest_opt opts[] = {
	{ "contend_ms", &contend_ms, 0, 60000, "2 vCPUs contend for N ms (0: off)" },
};

static void timer_handler(struct trap_frame *f)
{
	(void)f;
}

/* One consistent read: retry while the VMM is in the middle of an update. */
static void snapshot_of(volatile struct kvm_steal_time *a, uint32_t *version,
			uint64_t *steal, uint8_t *preempted)
{
	uint32_t v;

	do {
		v = a->version;
		barrier();
		*steal = a->steal;
		*preempted = a->preempted;
		barrier();
	} while ((v & 1) || v != a->version);
	*version = v;
}

static void snapshot(uint32_t *version, uint64_t *steal, uint8_t *preempted)
{
	snapshot_of(&st, version, steal, preempted);
}

static void peer_spin(void *arg)
{
	uint64_t end = tsc_deadline_ms(contend_ms);

	(void)arg;
	wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&st1 | 1);
	atomic_set(&peer_state, 1);
	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
	atomic_set(&peer_state, 2);
}

static void contend(void)
{
	uint32_t v;
	uint64_t s0, s1, samples = 0, pre1 = 0, ms;
	uint8_t pre;
	uint64_t t0, wait_end;

	if (!report(smp_init(10000) >= 2, "2 vCPUs online for steal.contend_ms"))
		return;
	on_cpu_async(1, peer_spin, NULL);
	wait_end = tsc_deadline_ms(10000);
	while (atomic_read(&peer_state) == 0 && (int64_t)(rdtsc() - wait_end) < 0)
		cpu_relax();
	snapshot_of(&st1, &v, &s0, &pre);
	s1 = s0;
	t0 = rdtsc();
	while (atomic_read(&peer_state) == 1) {
		/* one sample per ~spin: vCPU 0 is running whenever it reads */
		for (unsigned i = 0; i < 2000; i++)
			cpu_relax();
		snapshot_of(&st1, &v, &s1, &pre);
		samples++;
		pre1 += pre != 0;
	}
	ms = (rdtsc() - t0) / (tsc_hz_measured(NULL) / 1000);
	on_cpu_wait(1);
	report_info("vCPU 1 over %lu ms: steal +%lu ns, preempted in %lu of %lu samples",
		    ms, s1 - s0, pre1, samples);
	report(samples >= 10 && pre1 * 10 >= samples * 9,
	       "a spinning peer reads preempted=1 while this vCPU runs (%lu/%lu)",
	       pre1, samples);
	report(s1 - s0 >= ms * 1000000 / 5,
	       "the peer's steal grew by >= 20%% of the %lu ms it contended (%lu ns)",
	       ms, s1 - s0);
	/* vCPU 1 is back in its idle HLT: blocked, not preempted */
	wait_end = tsc_deadline_ms(200);
	while ((int64_t)(rdtsc() - wait_end) < 0)
		cpu_relax();
	snapshot_of(&st1, &v, &s1, &pre);
	report(pre == 0, "a halted peer reads preempted=0");
}

int main(int argc, char **argv)
{
	uint32_t v0, v, versions = 0;
	uint64_t s0, s, backwards = 0;
	uint8_t pre, pre_seen = 0;

	(void)argc, (void)argv;
	if (guest_opts_parse("steal", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	if (cpuid(0x40000000).a < 0x40000001 ||
	    !(cpuid(0x40000001).a & (1u << KVM_FEATURE_STEAL_TIME))) {
		report_skip("no KVM steal time in CPUID 0x40000001");
		return report_summary();
	}
	report(true, "CPUID 0x40000001 offers steal time (EAX 0x%x)", cpuid(0x40000001).a);
	irq_set_handler(VEC_TIMER, timer_handler);
	wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&st | 1);
	report(rdmsr(MSR_KVM_STEAL_TIME) == ((uint64_t)(uintptr_t)&st | 1),
	       "MSR_KVM_STEAL_TIME reads back");
	snapshot(&v0, &s0, &pre);
	for (unsigned i = 0; i < ROUNDS; i++) {
		irq_disable();
		lapic_timer_oneshot(VEC_TIMER, TICKS);
		safe_halt();
		snapshot(&v, &s, &pre);
		if (v != v0)
			versions++;
		if (s < s0)
			backwards++;
		pre_seen |= pre;
		v0 = v;
		s0 = s;
	}
	irq_enable();
	report(versions > 0, "steal-time area updated (version changed %u times over "
	       "%u halts, now %u)", versions, ROUNDS, v);
	report(backwards == 0, "steal never went backwards (now %lu ns)", s);
	report(pre_seen == 0, "preempted reads 0 while running");
	wrmsr(MSR_KVM_STEAL_TIME, 0);
	if (contend_ms)
		contend();
	return report_summary();
}
