/*
 * halt-window: the enable-then-halt window, hit on purpose, many times.
 *
 * vCPU 0 loops: interrupts off, announce "waiting for wakeup k", then
 * safe_halt() until the IPI handler has counted k. vCPU 1 spins on the
 * announcement and sends the IPI at once, so the IPI lands anywhere from
 * before vCPU 0's enable to deep inside its HLT: on hardware STI's shadow
 * covers the HLT; in native mode on a PVM backend the guest runtime closes
 * the window itself (lib/pvm.c). A wakeup lost in the window leaves vCPU 0
 * halted with nobody to wake it: vCPU 1 notices (no progress for
 * LOST_MS) and fails the test with the round it was lost in.
 *
 * hw.native_rounds=N when the vCPUs run natively (default 1000000: a
 * round costs ~40 us with KVM's irqchip there), else hw.rounds=N (default
 * 5000: in an emulator or nested KVM a round costs 100x more).
 *
 * Then the window made certain: a self-IPI sent with interrupts off is
 * pending when safe_halt() enables them, PENDING_ROUNDS times; each
 * safe_halt() must end at once: a HLT that slept on the consumed wakeup is
 * ended by a ~200 ms safety timer, and the test counts it. Natively this
 * runs twice: with the runtime's RIP fixup, and without it, to record what
 * the backend itself does with an interrupt delivered just before HLT.
 */
#include "guest.h"
#include "options.h"
#include "pvm.h"

#define VEC_WAKE_K  0x50
#define VEC_SAFETY  0x51
#define LOST_MS     2000
#define PENDING_ROUNDS 1000
#define SAFETY_TICKS (200u << 20)   /* ~200 ms at the usual 1 GHz timer: far above
                                     * a nested or emulated round trip */

static uint64_t rounds, emulated_rounds = 5000, native_rounds = 1000000;
static const struct guest_opt opts[] = {
	{ "rounds", &emulated_rounds, 1, 100000000, "wakeups when not native" },
	{ "native_rounds", &native_rounds, 1, 100000000, "wakeups when native" },
};

static volatile uint64_t announced, woken;
static volatile uint32_t lost;
static volatile uint64_t lost_round;

static volatile uint32_t safety_fired;

static void wake_handler(struct trap_frame *f)
{
	(void)f;
	woken = woken + 1;
}

static void safety_handler(struct trap_frame *f)
{
	(void)f;
	safety_fired = safety_fired + 1;
}

/* PENDING_ROUNDS halts with the wakeup already pending; how many slept. */
static unsigned pending_rounds(uint32_t me)
{
	unsigned slept = 0;

	for (unsigned i = 0; i < PENDING_ROUNDS; i++) {
		uint64_t before = woken;
		uint32_t fired = safety_fired;

		irq_disable();
		lapic_send_ipi(me, APIC_DM_FIXED | VEC_WAKE_K);
		lapic_timer_oneshot(VEC_SAFETY, SAFETY_TICKS);
		safe_halt();
		irq_disable();
		/* The wakeup was taken; a HLT that slept after it is ended by
		 * the safety timer (or, never, hangs the test: the timeout). */
		if (woken == before || safety_fired != fired)
			slept++;
		lapic_timer_stop();
		irq_enable();           /* a safety interrupt that fired at the stop lands here */
	}
	irq_disable();
	return slept;
}

/* vCPU 1: wake vCPU 0 as soon as it says it waits. */
static void sender(void *arg)
{
	uint32_t target = *(uint32_t *)arg;

	for (uint64_t k = 1; k <= rounds && !lost; k++) {
		uint64_t end;

		while (announced != k)
			cpu_relax();
		lapic_send_ipi(target, APIC_DM_FIXED | VEC_WAKE_K);
		end = tsc_deadline_ms(LOST_MS);
		while (woken < k) {
			if ((int64_t)(rdtsc() - end) > 0) {
				lost_round = k;
				lost = 1;
				/* a fresh IPI ends the halt, so vCPU 0 can report */
				lapic_send_ipi(target, APIC_DM_FIXED | VEC_WAKE_K);
				break;
			}
			cpu_relax();
		}
	}
}

int main(int argc, char **argv)
{
	uint32_t me;
	uint64_t t0, cycles, k, hits;
	unsigned slept;

	(void)argc, (void)argv;
	if (guest_opts_parse("hw", opts, 2))
		return report_summary();
	rounds = pvm_native ? native_rounds : emulated_rounds;
	if (smp_init(5000) < 2) {
		report(false, "2 vCPUs online");
		return report_summary();
	}
	report_info("execution mode: %s, %lu rounds", pvm_mode(), rounds);
	irq_set_handler(VEC_WAKE_K, wake_handler);
	me = lapic_id();
	on_cpu_async(1, sender, &me);
	t0 = rdtsc();
	for (k = 1; k <= rounds && !lost; k++) {
		irq_disable();
		announced = k;
		while (woken < k && !lost)
			safe_halt();   /* lost: vCPU 1 gave up, an IPI still ends this */
		irq_enable();
	}
	cycles = rdtsc() - t0;
	irq_disable();
	if (lost)
		report(false, "no lost wakeup: wakeup %lu never arrived (%lu of %lu taken)",
		       lost_round, woken, rounds);
	else
		report(woken == rounds, "no lost wakeup in %lu halts (%lu taken)", rounds, woken);
	report_info("%lu ns per wakeup round; interrupts inside the window: %lu",
		    cycles * 1000 / (tsc_hz() / 1000000) / rounds, pvm_halt_window_hits);

	irq_set_handler(VEC_SAFETY, safety_handler);
	hits = pvm_halt_window_hits;
	slept = pending_rounds(me);
	report(slept == 0, "safe_halt with its wakeup pending returned at once, %u of %u times "
	       "(fixup hits %lu)", PENDING_ROUNDS - slept, PENDING_ROUNDS, pvm_halt_window_hits - hits);
	if (pvm_native) {
		pvm_halt_fixup = false;
		slept = pending_rounds(me);
		pvm_halt_fixup = true;
		report_info("without the RIP fixup: %lu interrupts returned into the window, "
			    "%u of %u HLTs after them slept (the backend %s the window itself)",
			    pvm_halt_window_kept, slept, PENDING_ROUNDS,
			    slept ? "does not close" : "closes");
	}
	return report_summary();
}
