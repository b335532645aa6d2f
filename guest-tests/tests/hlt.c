/*
 * hlt: HLT sleeps until an interrupt and resumes after it.
 *  - Armed LAPIC timer, STI;HLT: HLT returns only once the timer interrupt
 *    was taken, and no earlier than the timer's interval (the vCPU really
 *    slept; it was not merely resumed at once).
 *  - An interrupt already pending (timer expired while IF=0) when HLT runs
 *    must end the HLT at once: a VMM that blocks the vCPU then would hang
 *    it forever (the runner's timeout reports that).
 */
#include "guest.h"

#define VEC_TIMER  0x40
#define TICKS      (1u << 22)   /* ~4 ms at 1 GHz */
#define ROUNDS     5
#define IRR_WAIT_MS 1000

static volatile uint32_t fired;

static void timer_handler(struct trap_frame *f)
{
	(void)f;
	fired = fired + 1;
}

static bool irr_has(unsigned vector)
{
	return lapic_read(APIC_IRR + (vector / 32) * 0x10) & (1u << (vector % 32));
}

int main(int argc, char **argv)
{
	uint64_t c16, expect, end, slept_min = ~0ull, slept_max = 0;
	unsigned woken_by_timer = 0;

	(void)argc, (void)argv;
	irq_set_handler(VEC_TIMER, timer_handler);
	c16 = lapic_timer_calibrate();
	if (!report(c16 != 0, "LAPIC timer counts down (calibration)"))
		return report_summary();
	expect = (TICKS * c16) >> 16;

	for (unsigned i = 0; i < ROUNDS; i++) {
		uint32_t before = fired;
		uint64_t t0, slept;

		irq_disable();
		t0 = rdtsc();
		lapic_timer_oneshot(VEC_TIMER, TICKS);
		safe_halt();
		irq_disable();
		slept = rdtsc() - t0;
		if (fired == before + 1)
			woken_by_timer++;
		if (slept < slept_min)
			slept_min = slept;
		if (slept > slept_max)
			slept_max = slept;
	}
	report(woken_by_timer == ROUNDS, "HLT returned after the timer interrupt "
	       "%u/%u times", woken_by_timer, ROUNDS);
	report(slept_min >= expect - expect / 8, "HLT slept at least the timer "
	       "interval (min %lu, max %lu, expected %lu TSC cycles)", slept_min,
	       slept_max, expect);

	/* Pending before HLT: let the timer expire with IF=0 first. */
	irq_disable();
	fired = 0;
	lapic_timer_oneshot(VEC_TIMER, TICKS / 16);
	while (lapic_read(APIC_TMCCT) != 0)
		cpu_relax();
	/* The count reads 0 a little before a VMM's timer event sets IRR. */
	end = tsc_deadline_ms(IRR_WAIT_MS);
	while (!irr_has(VEC_TIMER) && (int64_t)(rdtsc() - end) < 0)
		cpu_relax();
	report(irr_has(VEC_TIMER) && fired == 0,
	       "expired timer interrupt is pending in IRR while IF=0");
	printf("(if the guest stops here, HLT ignored a pending interrupt)\n");
	safe_halt();
	irq_disable();
	report(fired == 1, "HLT with an interrupt pending returned after taking it");
	lapic_timer_stop();
	return report_summary();
}
