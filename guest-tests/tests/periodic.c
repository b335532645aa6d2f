/*
 * periodic: a sleeper. vCPU 0 halts on a LAPIC one-shot, wakes, runs a set
 * amount of CPU time, halts again; the sleepers of seeds 003 and 004
 * (scripts/bench-seeds puts it beside a hog VM on one host CPU).
 *
 * Command line (all optional):
 *   per.period_us=N   absolute period: wake at start + k*N (seed 003: an
 *                     idle-class vCPU on a 16 ms timer). A wake that comes
 *                     after later periods already began skips them
 *                     ("missed"); they are not run back to back.
 *   per.sleep_us=N    relative sleep after each run instead (seed 004: run
 *                     one slice, sleep one slice = 50 % of a CPU when alone)
 *   per.run_us=N      CPU time per wake, us (1). CPU time is wall time minus
 *                     the KVM steal time the VMM reports, so time spent
 *                     runnable in the VMM's queue does not count as running
 *                     and the vCPU uses run/(run+sleep) of a CPU alone
 *                     whatever its neighbours do. Without steal time in
 *                     CPUID it is wall time (said in the output).
 *   per.duration_ms=N measured time (5000); per.warmup_ms=N before it (500)
 *   tsc_khz=N         the TSC rate, if CPUID does not give it (timing.h)
 * Exactly one of period_us / sleep_us must be set.
 *
 * Output, one machine-readable line (integers, ns):
 *   periodic: runs=N missed=N wall_ns=N cpu_ns=N lat_p50_ns=N lat_p99_ns=N
 *   lat_max_ns=N steal=yes|no
 * runs: wakes in the measured window; cpu_ns: CPU time they ran; lat: how
 * late each wake was against the time the vCPU asked for (timer delivery
 * plus the wait for a host CPU: what a vCPU scheduler controls).
 * Checks are sanity only: options valid, the LAPIC timer counts, it ran.
 */
#include "guest.h"
#include "kvm_para.h"
#include "lathist.h"
#include "options.h"

#define VEC_PER_TIMER          0x62

static volatile struct kvm_steal_time st __attribute__((aligned(64)));
static bool have_steal;
static volatile uint32_t timer_fired;
static uint64_t ns_mult;          /* ns = ticks * ns_mult >> 32 */
static uint64_t hist[LATHIST_NR];

static uint64_t opt_period_us, opt_sleep_us, opt_run_us = 1, opt_duration_ms = 5000,
		opt_warmup_ms = 500;

static const struct guest_opt opts[] = {
	{ .key = "period_us", .val = &opt_period_us, .min = 0, .max = 10000000,
	  .help = "absolute wake period, us" },
	{ .key = "sleep_us", .val = &opt_sleep_us, .min = 0, .max = 10000000,
	  .help = "sleep after each run, us" },
	{ .key = "run_us", .val = &opt_run_us, .min = 0, .max = 10000000,
	  .help = "CPU time per wake, us" },
	{ .key = "duration_ms", .val = &opt_duration_ms, .min = 1, .max = 3600000,
	  .help = "measured time, ms" },
	{ .key = "warmup_ms", .val = &opt_warmup_ms, .min = 0, .max = 3600000,
	  .help = "unrecorded time first, ms" },
};

static void timer_handler(struct trap_frame *f)
{
	(void)f;
	timer_fired = 1;
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * ns_mult) >> 32);
}

static uint64_t steal_ns(void)
{
	return have_steal ? kvm_steal_read(&st) : 0;
}

/*
 * Spin until this vCPU has had `ns` of CPU since entry. The VMM adds to
 * steal when it puts the vCPU back on a CPU, so a stretch spent waiting
 * shows up in the first read after it. Returns the CPU time actually run.
 */
static uint64_t run_for(uint64_t ns)
{
	uint64_t t0 = rdtsc(), s0 = steal_ns(), x = 88172645463325252ull, cpu;

	for (;;) {
		uint64_t wall = ticks_to_ns(rdtsc() - t0), stolen = steal_ns() - s0;

		cpu = wall > stolen ? wall - stolen : 0;
		if (cpu >= ns)
			return cpu;
		for (unsigned i = 0; i < 64; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			asm volatile("" : "+r"(x));
		}
	}
}

/*
 * Halt until the TSC reaches `deadline` (LAPIC one-shot; c16 = TSC cycles
 * per 2^16 timer ticks). The timer rate is known to ~1 %, so an early
 * interrupt re-arms for the rest and the last few ticks are spun.
 */
static void sleep_until(uint64_t deadline, uint64_t c16)
{
	for (;;) {
		uint64_t now = rdtsc(), ticks;

		if ((int64_t)(now - deadline) >= 0)
			return;
		ticks = ((deadline - now) << 16) / c16;
		if (ticks < 64) {
			cpu_relax();
			continue;
		}
		irq_disable();
		timer_fired = 0;
		lapic_timer_oneshot(VEC_PER_TIMER, ticks > 0xffffffffu ? 0xffffffffu : (uint32_t)ticks);
		while (!timer_fired) {
			safe_halt();
			irq_disable();
		}
		irq_enable();
	}
}

int main(int argc, char **argv)
{
	const char *src;
	uint64_t hz, c16, start, rec, end, next, step, deadline;
	uint64_t runs = 0, missed = 0, cpu = 0, samples = 0, min = ~0ull, max = 0;
	uint64_t p50, p99;

	(void)argc, (void)argv;
	if (!report(guest_opts_parse("per", opts, sizeof(opts) / sizeof(opts[0])) == 0,
		    "command-line options valid"))
		return report_summary();
	if (!report(!opt_period_us != !opt_sleep_us,
		    "exactly one of per.period_us / per.sleep_us is set"))
		return report_summary();
	irq_set_handler(VEC_PER_TIMER, timer_handler);
	have_steal = cpuid(0x40000000).a >= 0x40000001 &&
		     (cpuid(0x40000001).a & (1u << KVM_FEATURE_STEAL_TIME));
	if (have_steal)
		wrmsr(MSR_KVM_STEAL_TIME, (uint64_t)(uintptr_t)&st | 1);
	hz = tsc_hz_measured(&src);
	c16 = lapic_timer_calibrate();
	ns_mult = (1000000000ull << 32) / hz;
	if (!report(c16 != 0, "the LAPIC timer counts"))
		return report_summary();
	report_info("TSC %lu kHz from %s; %s %lu us, run %lu us of %s; %lu ms measured",
		    hz / 1000, src, opt_period_us ? "period" : "sleep",
		    opt_period_us ? opt_period_us : opt_sleep_us, opt_run_us,
		    have_steal ? "CPU time (wall - steal)" : "wall time (no steal time)",
		    opt_duration_ms);
	irq_enable();

	step = (opt_period_us ? opt_period_us : opt_sleep_us) * (hz / 1000000);
	start = rdtsc();
	rec = start + opt_warmup_ms * (hz / 1000);
	end = rec + opt_duration_ms * (hz / 1000);
	next = start + step;
	for (;;) {
		uint64_t woke, lat, ran;

		deadline = next;
		sleep_until(deadline, c16);
		woke = rdtsc();
		if ((int64_t)(woke - end) >= 0)
			break;
		ran = run_for(opt_run_us * 1000);
		if ((int64_t)(woke - rec) >= 0) {
			lat = ticks_to_ns(woke - deadline);
			hist[lathist_index(lat)]++;
			if (lat < min)
				min = lat;
			if (lat > max)
				max = lat;
			samples++;
			runs++;
			cpu += ran;
		}
		if (opt_period_us) {
			next += step;
			/* periods that began while this one waited or ran */
			while ((int64_t)(rdtsc() - next) >= 0) {
				next += step;
				if ((int64_t)(next - rec) >= 0)
					missed++;
			}
		} else {
			next = rdtsc() + step;
		}
	}
	lapic_timer_stop();
	if (!samples)
		min = 0;
	p50 = lathist_percentile(hist, samples, 500, min, max);
	p99 = lathist_percentile(hist, samples, 990, min, max);
	printf("periodic: runs=%lu missed=%lu wall_ns=%lu cpu_ns=%lu lat_p50_ns=%lu "
	       "lat_p99_ns=%lu lat_max_ns=%lu steal=%s\n", runs, missed,
	       ticks_to_ns(end - rec), cpu, p50, p99, max, have_steal ? "yes" : "no");
	report(runs > 0, "woke and ran in the measured window (%lu times)", runs);
	return report_summary();
}
