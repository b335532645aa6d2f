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
 * hw.rounds=N (default: 1000000 natively, where a round costs ~40 us;
 * 20000 otherwise, where a VM exit costs 100x more). Both vCPUs report.
 */
#include "guest.h"
#include "options.h"
#include "pvm.h"

#define VEC_WAKE_K  0x50
#define LOST_MS     2000

static uint64_t rounds;
static const struct guest_opt opts[] = {
	{ "rounds", &rounds, 1, 100000000, "wakeups of the halting vCPU" },
};

static volatile uint64_t announced, woken;
static volatile uint32_t lost;
static volatile uint64_t lost_round;

static void wake_handler(struct trap_frame *f)
{
	(void)f;
	woken = woken + 1;
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
	uint64_t t0, cycles, k;

	(void)argc, (void)argv;
	rounds = pvm_native ? 1000000 : 20000;
	if (guest_opts_parse("hw.", opts, 1))
		return report_summary();
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
	report_info("%lu ns per wakeup round", cycles * 1000 / (tsc_hz() / 1000000) / rounds);
	return report_summary();
}
