/*
 * ipi-storm: every vCPU pings every other vCPU ROUNDS times with fixed
 * IPIs while they all do the same (ipi.storm_rounds=N, default 2500: with
 * 4 vCPUs 30000 pings and as many pongs). Vectors are per sender (PING(s),
 * PONG(s)) and a sender keeps at most one ping per peer in flight, so no
 * two interrupts can merge in IRR: the counts must match exactly. A lost
 * IPI leaves a ping unanswered (the guest times out and fails), a duplicate
 * shows up as an unexpected pong or a count above ROUNDS. Senders halt
 * when all their pings are in flight, so both the kick of a running vCPU
 * and the wakeup of a halted one are exercised.
 *
 * Then the round trip vCPU 0 -> vCPU 1 -> vCPU 0 (vCPU 1 halted between
 * rounds), ipi.rtt_rounds=N (default 10000): median and p99 in ns, and
 * "ipi-storm: rtt_p50_ns=... rtt_p99_ns=..." for scripts.
 */
#include "guest.h"
#include "options.h"

#define PING(s)     (0x40 + (s))
#define PONG(s)     (0x80 + (s))
#define VEC_RTT_PING 0xc0
#define VEC_RTT_PONG 0xc1
#define STORM_TIMEOUT_MS 120000
#define RTT_WAIT_MS  5000
#define MAX_RTT      20000

static uint64_t storm_rounds = 2500, rtt_rounds = 10000;
static const struct guest_opt opts[] = {
	{ "storm_rounds", &storm_rounds, 1, 1000000, "pings per ordered vCPU pair" },
	{ "rtt_rounds", &rtt_rounds, 10, MAX_RTT, "round trips measured" },
};

static volatile uint32_t pings[MAX_CPUS][MAX_CPUS];   /* [receiver][sender] */
static volatile uint32_t pongs[MAX_CPUS][MAX_CPUS];   /* [sender][answerer] */
static volatile uint32_t inflight[MAX_CPUS][MAX_CPUS];
static volatile uint32_t dups[MAX_CPUS];
static volatile uint32_t finished;
static volatile uint32_t rtt_pongs;
static uint64_t rtt[MAX_RTT];
static unsigned ncpu;

/* xAPIC ICR writes are two stores: never interleave a handler's send. */
static void send(unsigned to, uint32_t icr)
{
	uint64_t fl = irq_save();

	lapic_send_ipi(cpu_struct(to)->apic_id, icr);
	irq_restore(fl);
}

static void ping_handler(struct trap_frame *f)
{
	unsigned from = (unsigned)f->vector - PING(0), me = smp_id();

	pings[me][from]++;
	send(from, APIC_DM_FIXED | PONG(me));
}

static void pong_handler(struct trap_frame *f)
{
	unsigned from = (unsigned)f->vector - PONG(0), me = smp_id();

	if (!inflight[me][from])
		dups[me]++;
	inflight[me][from] = 0;
	pongs[me][from]++;
}

static void storm(void *arg)
{
	unsigned me = smp_id();
	uint32_t sent[MAX_CPUS] = { 0 };
	uint64_t end = tsc_deadline_ms(STORM_TIMEOUT_MS);

	(void)arg;
	for (;;) {
		bool busy = false, sent_any = false;

		irq_disable();
		for (unsigned t = 0; t < ncpu; t++) {
			if (t == me || (sent[t] == storm_rounds && !inflight[me][t]))
				continue;
			busy = true;
			if (inflight[me][t])
				continue;
			inflight[me][t] = 1;
			sent[t]++;
			lapic_send_ipi(cpu_struct(t)->apic_id, APIC_DM_FIXED | PING(me));
			sent_any = true;
		}
		if (!busy || (int64_t)(rdtsc() - end) > 0)
			break;
		if (sent_any)
			irq_enable();
		else
			safe_halt();    /* every ping in flight: sleep until a pong */
	}
	irq_enable();
	atomic_inc(&finished);
}

static void rtt_ping_handler(struct trap_frame *f)
{
	(void)f;
	send(0, APIC_DM_FIXED | VEC_RTT_PONG);
}

static void rtt_pong_handler(struct trap_frame *f)
{
	(void)f;
	rtt_pongs++;
}

static void measure_rtt(void)
{
	const char *src;
	uint64_t hz = tsc_hz_measured(&src);
	unsigned n = 0;

	irq_enable();
	for (unsigned r = 0; r < rtt_rounds; r++) {
		uint32_t before = rtt_pongs;
		uint64_t t0 = rdtsc(), end = tsc_deadline_ms(RTT_WAIT_MS);

		send(1, APIC_DM_FIXED | VEC_RTT_PING);
		while (rtt_pongs == before && (int64_t)(rdtsc() - end) < 0)
			cpu_relax();
		if (rtt_pongs == before)
			break;
		rtt[n++] = rdtsc() - t0;
	}
	if (!report(n == rtt_rounds, "IPI round trip vCPU 0 -> 1 -> 0: %u/%lu answered",
		    n, rtt_rounds))
		return;
	sort_u64(rtt, n);
	{
		uint64_t p50 = rtt[n / 2] * 1000000000ull / hz;
		uint64_t p99 = rtt[n * 99 / 100] * 1000000000ull / hz;
		uint64_t mx = rtt[n - 1] * 1000000000ull / hz;

		report_info("TSC %lu kHz (%s)", hz / 1000, src);
		report_info("IPI round trip: p50 %lu ns, p99 %lu ns, max %lu ns over %u",
			    p50, p99, mx, n);
		printf("ipi-storm: rtt_p50_ns=%lu rtt_p99_ns=%lu rtt_max_ns=%lu samples=%u\n",
		       p50, p99, mx, n);
	}
}

int main(int argc, char **argv)
{
	uint64_t total = 0;
	bool exact = true;

	(void)argc, (void)argv;
	if (guest_opts_parse("ipi", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	ncpu = smp_init(10000);
	if (!report(ncpu >= 2 && ncpu == smp_expected_cpus(), "%u of %u CPUs online",
		    ncpu, smp_expected_cpus()))
		return report_summary();
	for (unsigned s = 0; s < ncpu; s++) {
		irq_set_handler(PING(s), ping_handler);
		irq_set_handler(PONG(s), pong_handler);
	}
	irq_set_handler(VEC_RTT_PING, rtt_ping_handler);
	irq_set_handler(VEC_RTT_PONG, rtt_pong_handler);
	irq_enable();

	/* on_cpu_async's xAPIC ICR writes must not interleave with a ping
	 * handler's pong (peers that started already ping us). */
	irq_disable();
	for (unsigned c = 1; c < ncpu; c++)
		on_cpu_async(c, storm, NULL);
	irq_enable();
	storm(NULL);
	{
		uint64_t end = tsc_deadline_ms(STORM_TIMEOUT_MS);

		while (atomic_read(&finished) < ncpu && (int64_t)(rdtsc() - end) < 0)
			cpu_relax();
	}
	for (unsigned c = 1; c < ncpu; c++)
		on_cpu_wait(c);
	report(finished == ncpu, "every vCPU finished its pings (%u/%u)", finished, ncpu);
	for (unsigned r = 0; r < ncpu; r++)
		for (unsigned s = 0; s < ncpu; s++) {
			if (r == s)
				continue;
			total += pings[r][s] + pongs[s][r];
			if (pings[r][s] != storm_rounds || pongs[s][r] != storm_rounds) {
				exact = false;
				report_info("cpu %u -> cpu %u: %u pings, %u pongs", s, r,
					    pings[r][s], pongs[s][r]);
			}
		}
	for (unsigned c = 0; c < ncpu; c++)
		exact = exact && dups[c] == 0;
	report(exact, "IPI storm: %lu IPIs, every count exactly %lu, no duplicates",
	       total, storm_rounds);
	measure_rtt();
	return report_summary();
}
