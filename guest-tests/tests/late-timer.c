/*
 * late-timer: lt.rounds=N (4000) LAPIC timers of random length between
 * lt.min_us (20) and lt.max_us (2000), cycling through four ways of
 * waiting: one-shot or TSC-deadline, halted (safe_halt until it fired) or
 * spinning with interrupts on (as lapic-timer does: the vCPU then never
 * exits by itself, only the VMM's timer can get it out of the guest).
 * Every interrupt is timed against its deadline in TSC cycles (one-shot:
 * the write of the initial count plus the count at the calibrated rate),
 * and one later than lt.late_max_ms (50) fails, named by its round, way
 * and length. Where the VMM offers KVM steal time, lateness that steal
 * explains (the vCPU runnable but waiting: for a pCPU of the domain, or in
 * the host's run queue) is counted apart, and the bound is on the rest
 * ("unexplained": the vCPU asleep past its own deadline); the raw lateness
 * then only has to stay under lt.lost_ms (10000).
 * Issue 17 item 6: lapic-timer-eevdf once saw a 16.8 ms
 * one-shot fire 1.27 s late; vmm/tests/kvm/timer_kvm.py runs this beside a
 * spinning VM in one --sched-domain.
 *
 *   late-timer: WAY [less-steal] late_p50_ns=... late_p99_ns=... late_max_ns=... samples=...
 */
#include "guest.h"
#include "kvm_para.h"
#include "options.h"

#define VEC_TIMER   0x40
#define MAX_ROUNDS  20000
#define NR_WAYS     4

static uint64_t rounds = 4000, min_us = 20, max_us = 2000, late_max_ms = 50, lost_ms = 10000;
static const struct guest_opt opts[] = {
	{ "rounds", &rounds, 1, MAX_ROUNDS, "timers" },
	{ "min_us", &min_us, 1, 1000000, "shortest timer, us" },
	{ "max_us", &max_us, 1, 1000000, "longest timer, us" },
	{ "late_max_ms", &late_max_ms, 1, 100000, "lateness that fails, ms" },
	{ "lost_ms", &lost_ms, 1, 1000000, "with steal time: raw lateness that fails, ms" },
};

static const char *const way_names[NR_WAYS] = {
	"one-shot-halt", "tsc-deadline-halt", "one-shot-spin", "tsc-deadline-spin",
};

static volatile uint64_t fired_tsc;
static volatile uint32_t fired;
static uint64_t late[NR_WAYS][MAX_ROUNDS / NR_WAYS + 1];
static unsigned nlate[NR_WAYS];

static void timer_handler(struct trap_frame *f)
{
	(void)f;
	fired_tsc = rdtsc();
	fired++;
}

static volatile struct kvm_steal_time st __attribute__((aligned(64)));
static bool has_steal;

static uint64_t steal_ns(void)
{
	return has_steal ? kvm_steal_read(&st) : 0;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

/* Arm one timer `cycles` TSC cycles ahead; returns its deadline (TSC). */
static uint64_t arm(unsigned way, uint64_t cycles, uint64_t cyc_per_tick16)
{
	uint64_t ticks = (cycles << 16) / cyc_per_tick16, t0;

	if (way & 1) {
		t0 = rdtsc() + cycles;
		wrmsr(MSR_IA32_TSC_DEADLINE, t0);
		return t0;
	}
	if (!ticks)
		ticks = 1;
	if (ticks > UINT32_MAX)
		ticks = UINT32_MAX;
	/* the count starts at the write: the TSC before it errs towards early */
	t0 = rdtsc();
	lapic_write(APIC_TMICT, (uint32_t)ticks);
	return t0 + ((ticks * cyc_per_tick16) >> 16);
}

int main(int argc, char **argv)
{
	uint64_t c16, hz, lost = 0, early = 0, worst = 0, worst_us = 0, worst_raw = 0, bound;
	unsigned worst_round = 0, worst_way = 0, ways = NR_WAYS;
	const char *src;

	(void)argc, (void)argv;
	if (guest_opts_parse("lt", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	if (max_us < min_us)
		max_us = min_us;
	irq_set_handler(VEC_TIMER, timer_handler);
	hz = tsc_hz_measured(&src);
	c16 = lapic_timer_calibrate();
	if (!report(c16 != 0, "LAPIC timer counts down (calibration)"))
		return report_summary();
	if (!(cpuid(1).c & CPUID_1_ECX_TSC_DEADLINE)) {
		report_skip("TSC-deadline mode: not in CPUID (one-shot only)");
		ways = NR_WAYS / 2;
	}
	report_info("TSC %lu kHz (%s), %lu.%03lu cycles per timer tick, %s", hz / 1000, src,
		    c16 >> 16, ((c16 & 0xffff) * 1000) >> 16, lapic_x2apic() ? "x2APIC" : "xAPIC");
	has_steal = cpuid(0x40000000).a >= 0x40000001 &&
		    (cpuid(0x40000001).a & (1u << KVM_FEATURE_STEAL_TIME));
	if (has_steal)
		wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&st | 1);
	bound = has_steal ? lost_ms : late_max_ms;
	report_info("steal time %s", has_steal ? "on: the bound is on lateness steal does not "
		    "explain" : "not offered: the bound is on raw lateness");
	lapic_write(APIC_TDCR, APIC_TDCR_DIV1);
	for (unsigned r = 0; r < rounds; r++) {
		unsigned way = ways == NR_WAYS ? r % NR_WAYS : (r % 2) * 2;
		uint64_t us = min_us + xorshift64(&rng) % (max_us - min_us + 1);
		uint64_t deadline, limit, l, s0 = steal_ns(), stolen;
		uint32_t before = fired;

		irq_disable();
		lapic_write(APIC_LVTT, VEC_TIMER | ((way & 1) ? APIC_LVT_TIMER_TSCDEADLINE : 0));
		deadline = arm(way, us * hz / 1000000, c16);
		limit = deadline + bound * hz / 1000 + hz;   /* +1 s: measure, then judge */
		if (way >= 2)
			irq_enable();
		while (fired == before && (int64_t)(rdtsc() - limit) < 0) {
			if (way < 2) {
				safe_halt();    /* may end for another reason: again */
				irq_disable();
			} else {
				cpu_relax();
			}
		}
		irq_disable();
		if (fired == before) {
			lost++;
			lapic_timer_stop();
			continue;
		}
		if ((int64_t)(fired_tsc - deadline) < 0) {
			/* a one-shot's deadline is as good as the calibration (~1 %) */
			if ((way & 1) || deadline - fired_tsc > us * hz / 8000000)
				early++;
			fired_tsc = deadline;
		}
		l = (fired_tsc - deadline) * 1000000000ull / hz;
		if (l > worst_raw)
			worst_raw = l;
		/* the area is updated at entries, up to 1 ms apart: slack below */
		stolen = steal_ns() - s0;
		l = l > stolen ? l - stolen : 0;
		late[way][nlate[way]++] = l;
		if (l > worst) {
			worst = l;
			worst_round = r;
			worst_way = way;
			worst_us = us;
		}
	}
	lapic_timer_stop();
	for (unsigned w = 0; w < ways; w++) {
		unsigned n = nlate[w];

		if (!n)
			continue;
		sort_u64(late[w], n);
		printf("late-timer: %s%s late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu samples=%u\n",
		       way_names[w], has_steal ? " less-steal" : "", late[w][n / 2],
		       late[w][n * 99 / 100], late[w][n - 1], n);
	}
	report(lost == 0, "%lu/%lu timers fired (within %lu ms + 1 s)", rounds - lost, rounds, bound);
	if (has_steal)
		report(worst_raw <= lost_ms * 1000000, "latest timer counting steal: %lu us (<= %lu ms)",
		       worst_raw / 1000, lost_ms);
	report(early == 0, "no timer interrupt before its deadline (%lu early; one-shot: by > 1/8)",
	       early);
	report(worst <= late_max_ms * 1000000, "latest timer%s: %lu us late (round %u, %s, %lu us "
	       "timer; <= %lu ms)", has_steal ? " less its steal" : "", worst / 1000, worst_round,
	       way_names[worst_way], worst_us, late_max_ms);
	if (has_steal)
		wrmsr(MSR_KVM_STEAL_TIME, 0);
	return report_summary();
}
