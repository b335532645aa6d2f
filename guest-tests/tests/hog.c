/*
 * hog: the noisy neighbour. Every vCPU spins on integer work and counts
 * loops (one loop = HOG_STEPS xorshift steps, ~1 us natively, a few
 * hundred us under an emulating KVM); it never halts, so a vCPU scheduler
 * sees it as always runnable.
 *
 * Command line (all optional):
 *   hog.duration_ms=N  stop after N ms (2000); 0 = never: then only the VMM
 *                      ending (a signal, QEMU's Ctrl-A x) stops it
 *   hog.report_ms=N    every N ms print a progress line (0 = none, default;
 *                      with duration 0 it defaults to 1000)
 *   hog.reset_ms=N     after N ms ask for a system reset through port 0xcf9
 *                      (as Linux's reboot=pci) instead of ending; every boot
 *                      does it again, so a VMM that resets in place shows
 *                      one "hog: reset" line per boot (0 = never, default)
 *   tsc_khz=N          the TSC rate, if CPUID does not give it (timing.h)
 *
 * Output: progress lines
 *   hog: t=1000 ms total=123456 loops (123456 loops/s) cpu0=61000 cpu1=...
 * and at the end
 *   hog: vCPU 0: N loops (R loops/s)   ... one per vCPU
 *   hog: total: N loops in T ms (R loops/s)
 * The loop rate of a vCPU is its share of a host core times the core's
 * speed; comparing runs (or vCPUs) gives the CPU share a scheduler gave.
 * Checks: every vCPU came online and made progress (a vCPU starved for the
 * whole run would show 0 loops).
 */
#include "guest.h"
#include "options.h"

#define HOG_STEPS  64

struct hog_cpu {
	volatile uint64_t loops;
	volatile uint64_t sink;
} __attribute__((aligned(64)));

static struct hog_cpu hogs[MAX_CPUS];
static volatile uint32_t stop;
static volatile uint32_t running;

static uint64_t opt_duration_ms = 2000, opt_report_ms = ~0ull, opt_reset_ms;

static const struct guest_opt opts[] = {
	{ .key = "duration_ms", .val = &opt_duration_ms, .min = 0, .max = 86400000,
	  .help = "run time, ms; 0 = forever" },
	{ .key = "report_ms", .val = &opt_report_ms, .min = 0, .max = 86400000,
	  .help = "progress interval, ms; 0 = none" },
	{ .key = "reset_ms", .val = &opt_reset_ms, .min = 0, .max = 86400000,
	  .help = "system reset after this many ms; 0 = never" },
};

static uint64_t steps(uint64_t x)
{
	for (unsigned i = 0; i < HOG_STEPS; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		asm volatile("" : "+r"(x));
	}
	return x;
}

/* The per-vCPU loop; only the count is shared, on its own cache line. */
static void hog_main(void *arg)
{
	struct hog_cpu *h = arg;
	uint64_t x = 0x9e3779b97f4a7c15ull + (uint64_t)smp_id(), n = 0;

	atomic_inc(&running);
	while (!atomic_read(&stop)) {
		x = steps(x);
		__atomic_store_n(&h->loops, ++n, __ATOMIC_RELAXED);
	}
	h->sink = x;
}

static uint64_t total_loops(unsigned n)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < n; i++)
		t += __atomic_load_n(&hogs[i].loops, __ATOMIC_RELAXED);
	return t;
}

static void progress(unsigned n, uint64_t t_ms, uint64_t *last, uint64_t dt_ms)
{
	uint64_t now = total_loops(n);
	unsigned long flags = console_lock();

	printf_locked("hog: t=%lu ms total=%lu loops (%lu loops/s)", t_ms, now,
		      dt_ms ? (now - *last) * 1000 / dt_ms : 0);
	for (unsigned i = 0; i < n; i++)
		printf_locked(" cpu%u=%lu", i, __atomic_load_n(&hogs[i].loops, __ATOMIC_RELAXED));
	printf_locked("\n");
	console_unlock(flags);
	*last = now;
}

/*
 * The boot CPU's share of the work: the same loop, plus a look at the
 * clock every loop (rdtsc is cheap next to HOG_STEPS steps) for progress
 * lines and the end. Returns the elapsed TSC ticks.
 */
static uint64_t hog_boot_cpu(unsigned n, uint64_t hz)
{
	struct hog_cpu *h = &hogs[0];
	uint64_t x = 0x9e3779b97f4a7c15ull, loops = 0, last_total = 0;
	uint64_t t0 = rdtsc(), tick = hz / 1000, report_ticks = opt_report_ms * tick;
	uint64_t end = t0 + opt_duration_ms * tick, next_report = t0 + report_ticks;
	uint64_t last_ms = 0;

	for (;;) {
		uint64_t now;

		x = steps(x);
		__atomic_store_n(&h->loops, ++loops, __ATOMIC_RELAXED);
		now = rdtsc();
		if (opt_report_ms && (int64_t)(now - next_report) >= 0) {
			uint64_t ms = (now - t0) / tick;

			progress(n, ms, &last_total, ms - last_ms);
			last_ms = ms;
			next_report += report_ticks;
		}
		if (opt_reset_ms && (now - t0) / tick >= opt_reset_ms) {
			printf("hog: reset after %lu ms\n", (now - t0) / tick);
			/* 0xcf9: SYS_RST | RST_CPU, a full (hard) reset */
			outb(0xcf9, 0x06);
			for (;;)        /* not hlt: cli; hlt on every vCPU is a power-off */
				asm volatile("pause");
		}
		if (opt_duration_ms && (int64_t)(now - end) >= 0) {
			atomic_set(&stop, 1);
			h->sink = x;
			return now - t0;
		}
	}
}

int main(int argc, char **argv)
{
	const char *src;
	uint64_t hz, ticks, ms, total = 0;
	unsigned n, idle = 0;

	(void)argc, (void)argv;
	if (!report(guest_opts_parse("hog", opts, sizeof(opts) / sizeof(opts[0])) == 0,
		    "command-line options valid"))
		return report_summary();
	if (opt_report_ms == ~0ull)
		opt_report_ms = opt_duration_ms ? 0 : 1000;
	n = smp_init(10000);
	if (!report(n == smp_expected_cpus(), "%u of %u vCPUs online", n,
		    smp_expected_cpus()))
		return report_summary();
	hz = tsc_hz_measured(&src);
	report_info("hog: %u vCPUs, %lu ms%s, TSC %lu kHz from %s", n, opt_duration_ms,
		    opt_duration_ms ? "" : " (forever)", hz / 1000, src);

	atomic_inc(&running);
	for (unsigned i = 1; i < n; i++)
		on_cpu_async(i, hog_main, &hogs[i]);
	ticks = hog_boot_cpu(n, hz);
	for (unsigned i = 1; i < n; i++)
		on_cpu_wait(i);
	ms = ticks / (hz / 1000);
	if (!ms)
		ms = 1;

	for (unsigned i = 0; i < n; i++) {
		uint64_t l = hogs[i].loops;

		printf("hog: vCPU %u: %lu loops (%lu loops/s)\n", i, l, l * 1000 / ms);
		total += l;
		if (!l)
			idle++;
	}
	printf("hog: total: %lu loops in %lu ms (%lu loops/s)\n", total, ms, total * 1000 / ms);
	report(atomic_read(&running) == n, "%u of %u vCPUs ran the hog loop",
	       atomic_read(&running), n);
	report(idle == 0, "every vCPU made progress (%u with 0 loops)", idle);
	return report_summary();
}
