/*
 * wakebench: a vCPU-level schbench. vCPU 0 is the message vCPU, vCPUs
 * 1..N-1 are workers. Each round (wb.rate rounds per second) the message
 * vCPU stamps the TSC into an idle worker's slot and sends it a fixed IPI;
 * the worker, halted in HLT, reads the TSC when it wakes, records
 * (wake - stamp) as its wakeup latency, does wb.work_us of calibrated
 * integer work, marks itself idle and halts again. Between rounds the
 * message vCPU halts too, on a LAPIC one-shot timer, so that it does not
 * hog a host core the workers may need. What it measures is what a
 * scheduler of vCPUs controls: how soon a halted vCPU that got an
 * interrupt runs again.
 *
 * Command line (all optional):
 *   wb.rate=N         rounds per second, each waking every idle worker (1000)
 *   wb.work_us=N      work per wakeup, microseconds (50)
 *   wb.duration_ms=N  measured time (2000)
 *   wb.warmup_ms=N    time before it, run but not recorded (200)
 *   no_pv_eoi         the guest library does not use PV EOI (lib/lapic.h)
 *   wb.tsc_deadline=0 arm the message vCPU's timer as a one-shot (three
 *                     LAPIC writes) even where CPUID offers TSC-deadline
 *                     mode (one write, what Linux uses): with an irqchip
 *                     in the VMM every write is an exit (1)
 *   tsc_khz=N         the TSC rate, if CPUID does not give it (timing.h)
 * A worker still busy when its round comes is skipped that round and
 * counted as "busy": wakeups are never queued, so none can be lost.
 *
 * Output, schbench style (latencies in integer microseconds):
 *   Wakeup Latencies percentiles (usec) runtime 2 (s) (3998 total samples)
 *   	  50.0th: 14
 *   	  75.0th: 17
 *   	  90.0th: 21
 *   	* 99.0th: 40
 *   	  99.9th: 95
 *   	  min=9, max=130
 *   average rps: 1999.00
 * then one machine-readable line, in nanoseconds:
 *   wakebench: samples=N p50_ns= p75_ns= p90_ns= p99_ns= p999_ns= min_ns=
 *   max_ns= rps_x100= busy= workers=
 * and the merged histogram, 16 non-empty buckets a line, as value:count
 * (a bucket's middle in ns, lib/lathist.h):
 *   wakebench-hist: 14336:3 14592:9 ...
 * The checks (report()) are sanity only: samples were recorded, every
 * IPI sent was seen by its worker, the counts agree. Latency is measured,
 * never judged here (scripts/ compare runs).
 */
#include "guest.h"
#include "lathist.h"
#include "options.h"

#define VEC_WB_WAKE   0x60
#define VEC_WB_TIMER  0x61
#define DRAIN_MS      5000     /* workers finish their last request */
#define CAL_ITERS     (1u << 16)
#define CAL_RUNS      5

struct worker {
	/* written by the message vCPU */
	volatile uint64_t stamp;   /* TSC when the current request was sent */
	volatile uint32_t seq;     /* requests sent (release after stamp) */
	uint32_t sent_rec;         /* ... with stamp in the measured window */
	uint32_t busy;             /* rounds skipped: still working */
	uint32_t apic_id;
	/* written by the worker */
	volatile uint32_t done;    /* requests finished; idle when == seq */
	volatile uint32_t woken;   /* wakeups seen (== seq after the drain) */
	uint64_t samples, min_ns, max_ns;
	uint64_t hist[LATHIST_NR];
} __attribute__((aligned(64)));

static struct worker workers[MAX_CPUS];
static uint64_t merged[LATHIST_NR];

static uint64_t opt_rate = 1000, opt_work_us = 50, opt_duration_ms = 2000,
		opt_warmup_ms = 200, opt_tsc_deadline = 1;
static bool use_deadline;

static const struct guest_opt opts[] = {
	{ .key = "rate", .val = &opt_rate, .min = 1, .max = 1000000,
	  .help = "rounds per second" },
	{ .key = "work_us", .val = &opt_work_us, .min = 0, .max = 1000000,
	  .help = "work per wakeup, us" },
	{ .key = "duration_ms", .val = &opt_duration_ms, .min = 1, .max = 3600000,
	  .help = "measured time, ms" },
	{ .key = "warmup_ms", .val = &opt_warmup_ms, .min = 0, .max = 3600000,
	  .help = "unrecorded time first, ms" },
	{ .key = "tsc_deadline", .val = &opt_tsc_deadline, .min = 0, .max = 1,
	  .help = "1: the message vCPU's timer in TSC-deadline mode where CPUID has it" },
};

/* Set before the workers start, read-only afterwards. */
static uint64_t rec_start;         /* TSC: stamps from here on are recorded */
static uint64_t work_iters;        /* calibrated loop count for work_us */
static uint64_t ns_mult;           /* ns = ticks * ns_mult >> 32 */
static volatile uint32_t stop;
static volatile uint32_t timer_fired;

static void wake_handler(struct trap_frame *f)
{
	(void)f;
}

static void timer_handler(struct trap_frame *f)
{
	(void)f;
	timer_fired = 1;
}

/*
 * The work: a xorshift step per iteration, integer only, with a data
 * dependency the compiler cannot drop (the asm makes x opaque).
 */
static uint64_t spin_work(uint64_t iters)
{
	uint64_t x = 88172645463325252ull;

	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		asm volatile("" : "+r"(x));
	}
	return x;
}

/*
 * Iterations per work_us: the fastest of a few timed runs, since a run
 * that was interrupted or descheduled only ever looks slower. A fixed
 * count (not "spin until the TSC says so") keeps the work constant when
 * the vCPU loses its host core midway, as schbench's fixed work does.
 */
static uint64_t calibrate_work(uint64_t hz)
{
	uint64_t best = ~0ull;

	for (unsigned r = 0; r < CAL_RUNS; r++) {
		uint64_t t0 = rdtsc();

		spin_work(CAL_ITERS);
		t0 = rdtsc() - t0;
		if (t0 < best)
			best = t0;
	}
	if (!best)
		best = 1;
	/* iters = work_us * hz / 1e6 ticks, at CAL_ITERS per `best` ticks */
	return opt_work_us * (hz / 1000000) * CAL_ITERS / best;
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * ns_mult) >> 32);
}

static void record(struct worker *w, uint64_t ticks)
{
	uint64_t ns = ticks_to_ns(ticks);

	w->hist[lathist_index(ns)]++;
	if (!w->samples || ns < w->min_ns)
		w->min_ns = ns;
	if (ns > w->max_ns)
		w->max_ns = ns;
	w->samples++;
}

/* Runs on each worker vCPU (on_cpu_async) until `stop`. */
static void worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		uint32_t seq;
		uint64_t woke, stamp;

		irq_disable();
		while ((seq = atomic_read(&w->seq)) == w->done && !atomic_read(&stop)) {
			safe_halt();
			irq_disable();
		}
		woke = rdtsc();
		irq_enable();
		if (seq == w->done)
			return;   /* stop */
		stamp = w->stamp;   /* after the acquire of seq: this request's */
		atomic_set(&w->woken, w->woken + 1);
		if ((int64_t)(stamp - rec_start) >= 0)
			record(w, woke - stamp);
		spin_work(work_iters);
		atomic_set(&w->done, seq);
	}
}

/*
 * Halt until the TSC reaches `deadline`, woken by a LAPIC one-shot. The
 * timer's rate is known only to ~1 % (cyc_per_tick16), so an early
 * interrupt re-arms for the rest; a late one is just a late round. Spins
 * when the timer does not count (c16 == 0) or for the last few ticks.
 */
static void sleep_until(uint64_t deadline, uint64_t c16)
{
	for (;;) {
		uint64_t now = rdtsc(), ticks;

		if ((int64_t)(now - deadline) >= 0)
			return;
		if (use_deadline) {
			/* exact: it fires at the TSC value itself (LVTT set once) */
			irq_disable();
			timer_fired = 0;
			wrmsr(MSR_IA32_TSC_DEADLINE, deadline);
			while (!timer_fired) {
				safe_halt();
				irq_disable();
			}
			irq_enable();
			continue;
		}
		ticks = c16 ? ((deadline - now) << 16) / c16 : 0;
		if (ticks < 64) {
			cpu_relax();
			continue;
		}
		irq_disable();
		timer_fired = 0;
		lapic_timer_oneshot(VEC_WB_TIMER, ticks > 0xffffffffu ? 0xffffffffu : (uint32_t)ticks);
		while (!timer_fired) {
			safe_halt();
			irq_disable();
		}
		irq_enable();
	}
}

/* One round: every idle worker gets a stamped request and an IPI. */
static void send_round(unsigned n)
{
	for (unsigned i = 1; i < n; i++) {
		struct worker *w = &workers[i];
		uint64_t stamp;

		if (atomic_read(&w->done) != w->seq) {
			w->busy++;
			continue;
		}
		stamp = rdtsc();
		w->stamp = stamp;
		atomic_set(&w->seq, w->seq + 1);
		if ((int64_t)(stamp - rec_start) >= 0)
			w->sent_rec++;
		lapic_send_ipi(w->apic_id, APIC_DM_FIXED | VEC_WB_WAKE);
	}
}

/* Wait for every worker to finish its last request; false on timeout. */
static bool drain(unsigned n)
{
	uint64_t end = tsc_deadline_ms(DRAIN_MS);

	for (unsigned i = 1; i < n; i++)
		while (atomic_read(&workers[i].done) != workers[i].seq)
			if ((int64_t)(rdtsc() - end) > 0)
				return false;
	return true;
}

static void print_results(unsigned n, uint64_t duration_ticks)
{
	static const unsigned pct[] = { 500, 750, 900, 990, 999 };
	uint64_t total = 0, min = ~0ull, max = 0, done = 0, busy = 0, p[5];
	uint64_t dur_us = ticks_to_ns(duration_ticks) / 1000, rps_x100;
	unsigned long flags;
	unsigned nhist = 0;

	for (unsigned i = 1; i < n; i++) {
		struct worker *w = &workers[i];

		for (unsigned b = 0; b < LATHIST_NR; b++)
			merged[b] += w->hist[b];
		if (w->samples && w->min_ns < min)
			min = w->min_ns;
		if (w->max_ns > max)
			max = w->max_ns;
		total += w->samples;
		done += w->sent_rec;
		busy += w->busy;
	}
	if (!total)
		min = 0;
	for (unsigned k = 0; k < 5; k++)
		p[k] = lathist_percentile(merged, total, pct[k], min, max);
	/* every recorded request was also completed (drained) */
	rps_x100 = dur_us ? done * 100000000ull / dur_us : 0;

	flags = console_lock();
	printf_locked("Wakeup Latencies percentiles (usec) runtime %lu (s) (%lu total samples)\n",
		      (opt_duration_ms + 500) / 1000, total);
	for (unsigned k = 0; k < 5; k++)
		printf_locked("\t%s%2u.%uth: %lu\n", pct[k] == 990 ? "* " : "  ",
			      pct[k] / 10, pct[k] % 10, (p[k] + 500) / 1000);
	printf_locked("\t  min=%lu, max=%lu\n", (min + 500) / 1000, (max + 500) / 1000);
	printf_locked("average rps: %lu.%02lu\n", rps_x100 / 100, rps_x100 % 100);
	printf_locked("wakebench: samples=%lu p50_ns=%lu p75_ns=%lu p90_ns=%lu p99_ns=%lu "
		      "p999_ns=%lu min_ns=%lu max_ns=%lu rps_x100=%lu busy=%lu workers=%u\n",
		      total, p[0], p[1], p[2], p[3], p[4], min, max, rps_x100, busy, n - 1);
	/* The merged histogram itself, so that scripts/ can pool runs. */
	for (unsigned b = 0; b < LATHIST_NR; b++) {
		if (!merged[b])
			continue;
		printf_locked("%s %lu:%lu", nhist % 16 ? "" : "wakebench-hist:",
			      lathist_value(b), merged[b]);
		if (++nhist % 16 == 0)
			printf_locked("\n");
	}
	if (nhist % 16)
		printf_locked("\n");
	console_unlock(flags);
}

int main(int argc, char **argv)
{
	const char *src;
	uint64_t hz, c16, period, t_end, next, start_tsc;
	uint64_t sent = 0, woken = 0, samples = 0, hist_sum = 0, sent_rec = 0;
	unsigned n, missed = 0;
	bool drained;

	(void)argc, (void)argv;
	if (!report(guest_opts_parse("wb", opts, sizeof(opts) / sizeof(opts[0])) == 0,
		    "command-line options valid"))
		return report_summary();
	irq_set_handler(VEC_WB_WAKE, wake_handler);
	irq_set_handler(VEC_WB_TIMER, timer_handler);
	n = smp_init(10000);
	if (!report(n >= 2 && n == smp_expected_cpus(),
		    "%u of %u vCPUs online (need a message vCPU and a worker)",
		    n, smp_expected_cpus()))
		return report_summary();

	hz = tsc_hz_measured(&src);
	c16 = lapic_timer_calibrate();
	ns_mult = (1000000000ull << 32) / hz;
	work_iters = calibrate_work(hz);
	period = hz / opt_rate;
	use_deadline = opt_tsc_deadline && (cpuid(1).c & CPUID_1_ECX_TSC_DEADLINE);
	if (use_deadline)
		lapic_write(APIC_LVTT, APIC_LVT_TIMER_TSCDEADLINE | VEC_WB_TIMER);
	report_info("TSC %lu kHz from %s; LAPIC timer %s%s", hz / 1000, src,
		    use_deadline ? "in TSC-deadline mode" : c16 ? "counts" : "does not count",
		    use_deadline || c16 ? " (message vCPU halts between rounds)"
					: " (message vCPU spins)");
	report_info("%u workers, %lu rounds/s, %lu us work (%lu loop iterations), "
		    "%lu ms measured after %lu ms warm-up", n - 1, opt_rate,
		    opt_work_us, work_iters, opt_duration_ms, opt_warmup_ms);
	if (opt_work_us * opt_rate >= 1000000)
		report_info("work per round >= the round period: workers will often be busy");

	start_tsc = rdtsc();
	rec_start = start_tsc + opt_warmup_ms * (hz / 1000);
	t_end = rec_start + opt_duration_ms * (hz / 1000);
	for (unsigned i = 1; i < n; i++) {
		workers[i].apic_id = cpu_struct(i)->apic_id;
		on_cpu_async(i, worker_main, &workers[i]);
	}
	irq_enable();

	/*
	 * Rounds on a fixed grid from start_tsc. A round that comes late is
	 * run at once; rounds missed entirely are dropped, not bunched up.
	 */
	for (next = start_tsc; (int64_t)(rdtsc() - t_end) < 0; ) {
		send_round(n);
		next += period;
		if ((int64_t)(rdtsc() - next) > (int64_t)period)
			next = rdtsc();
		sleep_until((int64_t)(next - t_end) < 0 ? next : t_end, c16);
	}
	drained = drain(n);
	atomic_set(&stop, 1);
	for (unsigned i = 1; i < n; i++) {
		lapic_send_ipi(workers[i].apic_id, APIC_DM_FIXED | VEC_WB_WAKE);
		on_cpu_wait(i);
	}

	print_results(n, t_end - rec_start);

	for (unsigned i = 1; i < n; i++) {
		struct worker *w = &workers[i];

		sent += w->seq;
		woken += w->woken;
		samples += w->samples;
		sent_rec += w->sent_rec;
		for (unsigned b = 0; b < LATHIST_NR; b++)
			hist_sum += w->hist[b];
		if (w->woken != w->seq || w->done != w->seq)
			missed++;
		report_info("worker %u: %u requests, %lu recorded, %u rounds busy",
			    i, w->seq, w->samples, w->busy);
	}
	report(drained, "every worker finished its last request within %u ms", DRAIN_MS);
	report(samples > 0, "%lu wakeup latencies recorded", samples);
	report(missed == 0 && woken == sent, "no missed wakeup: %lu IPIs sent, %lu seen "
	       "(%u workers disagree)", sent, woken, missed);
	report(samples == sent_rec && hist_sum == samples,
	       "counts exact: %lu requests in the window, %lu samples, %lu in the histogram",
	       sent_rec, samples, hist_sum);
	return report_summary();
}
