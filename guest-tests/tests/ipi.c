/*
 * ipi: fixed IPIs between every ordered pair of vCPUs are all delivered,
 * one at a time (ping-pong, so no two can merge in IRR). A receiver is
 * either halted in its idle loop (the wake-from-HLT path) or spinning with
 * IF=1 in on_cpu_wait (the kick-a-running-vCPU path). Then the broadcast
 * shorthand (all but self) and a self-IPI.
 */
#include "guest.h"

#define VEC_IPI     0x50
#define VEC_BCAST   0x51
#define VEC_SELF    0x52
#define ROUNDS      20
#define WAIT_MS     5000

static volatile uint32_t got_ipi[MAX_CPUS], got_bcast[MAX_CPUS], got_self;
static volatile uint32_t delivered[MAX_CPUS][MAX_CPUS];
static volatile uint64_t rtt_cycles[MAX_CPUS][MAX_CPUS];

static void ipi_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&got_ipi[smp_id()]);
}

static void bcast_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&got_bcast[smp_id()]);
}

static void self_handler(struct trap_frame *f)
{
	(void)f;
	atomic_inc(&got_self);
}

static bool wait_count(volatile uint32_t *p, uint32_t want)
{
	return wait_count_ms(p, want, WAIT_MS);
}

/* Runs on the sender: ROUNDS IPIs to *(unsigned *)arg, each acknowledged. */
static void ping(void *arg)
{
	unsigned src = smp_id(), dst = *(unsigned *)arg;
	uint32_t apic = cpu_struct(dst)->apic_id;
	uint64_t t0 = rdtsc();

	for (unsigned r = 0; r < ROUNDS; r++) {
		uint32_t before = atomic_read(&got_ipi[dst]);

		lapic_send_ipi(apic, APIC_DM_FIXED | VEC_IPI);
		if (!wait_count(&got_ipi[dst], before + 1))
			break;
		delivered[src][dst]++;
	}
	rtt_cycles[src][dst] = (rdtsc() - t0) / ROUNDS;
}

int main(int argc, char **argv)
{
	static unsigned targets[MAX_CPUS];
	unsigned n;
	bool ok;

	(void)argc, (void)argv;
	irq_set_handler(VEC_IPI, ipi_handler);
	irq_set_handler(VEC_BCAST, bcast_handler);
	irq_set_handler(VEC_SELF, self_handler);
	n = smp_init(10000);
	if (!report(n >= 2 && n == smp_expected_cpus(), "%u of %u CPUs online",
		    n, smp_expected_cpus()))
		return report_summary();
	irq_enable();

	for (unsigned src = 0; src < n; src++) {
		for (unsigned dst = 0; dst < n; dst++) {
			if (src == dst)
				continue;
			targets[src] = dst;
			on_cpu(src, ping, &targets[src]);
			report(delivered[src][dst] == ROUNDS,
			       "cpu %u -> cpu %u: %u/%u IPIs delivered (%lu TSC cycles "
			       "per round trip)", src, dst, delivered[src][dst],
			       ROUNDS, rtt_cycles[src][dst]);
		}
	}

	ok = true;
	for (unsigned r = 0; r < ROUNDS && ok; r++) {
		lapic_send_ipi(0, APIC_DM_FIXED | APIC_DEST_ALLBUT | VEC_BCAST);
		for (unsigned c = 1; c < n; c++)
			ok = ok && wait_count(&got_bcast[c], r + 1);
	}
	for (unsigned c = 0; c < n; c++)
		report_info("cpu %u: %u broadcast IPIs", c, got_bcast[c]);
	report(ok && got_bcast[0] == 0, "all-but-self broadcast: %u rounds reached "
	       "every other CPU and not the sender", ROUNDS);

	lapic_send_ipi(0, APIC_DM_FIXED | APIC_DEST_SELF | VEC_SELF);
	report(wait_count(&got_self, 1) && got_ipi[0] + got_bcast[0] <= ROUNDS * (n - 1),
	       "self-IPI delivered");
	return report_summary();
}
