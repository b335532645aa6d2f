/*
 * tsc-deadline: tsc.rounds=N (default 1000) TSC-deadline timer interrupts
 * of random length between tsc.min_us (10) and tsc.max_us (10000), each
 * waited for in HLT. None may arrive before its deadline (the handler's
 * rdtsc is compared with the value written to IA32_TSC_DEADLINE); the
 * lateness is printed as p50/p99/max in ns,
 *   tsc-deadline: late_p50_ns=... late_p99_ns=... late_max_ns=...
 * and only absurd lateness (over tsc.late_max_ms, default 1000: the
 * nested-emulation hosts are slow) fails.
 */
#include "guest.h"
#include "options.h"

#define VEC_TIMER 0x40
#define MAX_ROUNDS 10000

static uint64_t rounds = 1000, min_us = 10, max_us = 10000, late_max_ms = 1000;
static const struct guest_opt opts[] = {
	{ "rounds", &rounds, 1, MAX_ROUNDS, "deadlines" },
	{ "min_us", &min_us, 1, 1000000, "shortest interval, us" },
	{ "max_us", &max_us, 1, 1000000, "longest interval, us" },
	{ "late_max_ms", &late_max_ms, 1, 100000, "lateness that fails, ms" },
};

static volatile uint64_t fired_tsc;
static volatile uint32_t fired;
static uint64_t late[MAX_ROUNDS];

static void timer_handler(struct trap_frame *f)
{
	(void)f;
	fired_tsc = rdtsc();
	fired++;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

int main(int argc, char **argv)
{
	const char *src;
	uint64_t hz, early = 0, lost = 0, worst_early = 0;
	unsigned n = 0;

	(void)argc, (void)argv;
	if (guest_opts_parse("tsc", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	if (!(cpuid(1).c & CPUID_1_ECX_TSC_DEADLINE)) {
		report_skip("TSC-deadline mode: not in CPUID");
		return report_summary();
	}
	if (max_us < min_us)
		max_us = min_us;
	irq_set_handler(VEC_TIMER, timer_handler);
	hz = tsc_hz_measured(&src);
	report_info("TSC %lu kHz (%s)", hz / 1000, src);
	lapic_write(APIC_LVTT, APIC_LVT_TIMER_TSCDEADLINE | VEC_TIMER);
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t us = min_us + xorshift64(&rng) % (max_us - min_us + 1);
		uint64_t deadline, limit;
		uint32_t before = fired;

		irq_disable();
		deadline = rdtsc() + us * hz / 1000000;
		limit = deadline + late_max_ms * hz / 1000;
		wrmsr(MSR_IA32_TSC_DEADLINE, deadline);
		/* A halt may end for another reason: halt again until it fired. */
		while (fired == before && (int64_t)(rdtsc() - limit) < 0) {
			safe_halt();
			irq_disable();
		}
		if (fired == before) {
			lost++;
			wrmsr(MSR_IA32_TSC_DEADLINE, 0);
			continue;
		}
		if ((int64_t)(fired_tsc - deadline) < 0) {
			early++;
			if (deadline - fired_tsc > worst_early)
				worst_early = deadline - fired_tsc;
			continue;
		}
		late[n++] = (fired_tsc - deadline) * 1000000000ull / hz;
	}
	irq_enable();
	lapic_timer_stop();
	report(lost == 0, "%lu/%lu TSC deadlines fired within %lu ms", rounds - lost,
	       rounds, late_max_ms);
	report(early == 0, "no interrupt before its deadline (%lu early, worst by %lu "
	       "TSC cycles)", early, worst_early);
	if (n) {
		sort_u64(late, n);
		report_info("lateness over %u deadlines of %lu-%lu us: p50 %lu ns, "
			    "p99 %lu ns, max %lu ns", n, min_us, max_us, late[n / 2],
			    late[n * 99 / 100], late[n - 1]);
		printf("tsc-deadline: late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu "
		       "samples=%u\n", late[n / 2], late[n * 99 / 100], late[n - 1], n);
	}
	return report_summary();
}
