/*
 * native: how this guest's instructions run. Prints the execution mode
 * (pvm.c) and the cost of one dec/jnz loop iteration, which tells a vCPU
 * that runs natively (about 1 ns) from one in an instruction emulator
 * (thousands of ns). In native mode a slow loop is a failure: the VMM said
 * the vCPU would run natively and it did not.
 *
 * Then what the VMM's exits cost this guest, median of COST_ROUNDS each:
 * a LAPIC register read (an MSR or MMIO exit: to userspace with lagvisor's
 * irqchip, kept in the kernel with KVM's), a UART status read (port I/O to
 * the VMM), a self-IPI until its handler runs. One "NATIVE-COSTS:" line.
 */
#include "guest.h"
#include "pvm.h"

#define COST_ROUNDS 1000
#define VEC_SELF    0x60
#define UART_LSR    (0x3f8 + 5)

static uint64_t samples[COST_ROUNDS];
static volatile uint32_t self_hits;

static void self_handler(struct trap_frame *f)
{
	(void)f;
	self_hits = self_hits + 1;
}

static uint64_t median_ns(uint64_t hz)
{
	for (unsigned i = 1; i < COST_ROUNDS; i++)
		for (unsigned j = i; j && samples[j - 1] > samples[j]; j--) {
			uint64_t t = samples[j];

			samples[j] = samples[j - 1];
			samples[j - 1] = t;
		}
	return samples[COST_ROUNDS / 2] * 1000000 / (hz / 1000);
}

static void exit_costs(uint64_t hz)
{
	uint64_t lapic, pio, ipi;
	uint32_t me = lapic_id();

	for (unsigned i = 0; i < COST_ROUNDS; i++) {
		uint64_t t0 = rdtsc();

		(void)lapic_read(APIC_LVR);
		samples[i] = rdtsc() - t0;
	}
	lapic = median_ns(hz);
	for (unsigned i = 0; i < COST_ROUNDS; i++) {
		uint64_t t0 = rdtsc();

		(void)inb(UART_LSR);
		samples[i] = rdtsc() - t0;
	}
	pio = median_ns(hz);
	irq_set_handler(VEC_SELF, self_handler);
	irq_enable();
	for (unsigned i = 0; i < COST_ROUNDS; i++) {
		uint32_t want = self_hits + 1;
		uint64_t t0 = rdtsc();

		lapic_send_ipi(me, APIC_DM_FIXED | VEC_SELF);
		while (self_hits != want)
			cpu_relax();
		samples[i] = rdtsc() - t0;
	}
	irq_disable();
	ipi = median_ns(hz);
	printf("NATIVE-COSTS: lapic_read_ns=%lu pio_ns=%lu self_ipi_ns=%lu\n", lapic, pio, ipi);
	report(self_hits == COST_ROUNDS, "%u self-IPIs taken", COST_ROUNDS);
}

static uint64_t loop_cycles(uint64_t n)
{
	uint64_t t0 = rdtsc();

	asm volatile("1: dec %0; jnz 1b" : "+r"(n));
	return rdtsc() - t0;
}

int main(int argc, char **argv)
{
	uint64_t hz = tsc_hz_measured(NULL), n = 1000, best = ~0ull, ps;

	(void)argc;
	(void)argv;
	/* Grow the loop until one run takes >= 10 ms, so the TSC reads and the
	 * occasional exit are noise. */
	while (n < (1ull << 34)) {
		uint64_t c = loop_cycles(n);

		if (c * 100 >= hz)
			break;
		n *= 4;
	}
	for (int i = 0; i < 3; i++) {
		uint64_t c = loop_cycles(n);

		if (c < best)
			best = c;
	}
	/* ps per iteration = cycles * 1e12 / hz / n, in steps that stay in 64 bits */
	ps = best * 1000000 / (hz / 1000000) / n;
	printf("NATIVE: mode=%s loop_ps_per_iter=%lu iters=%lu\n", pvm_mode(), ps, n);
	report_info("execution mode: %s", pvm_mode());
	report_info("dec/jnz loop: %lu.%03lu ns per iteration (%lu iterations)",
		    ps / 1000, ps % 1000, n);
	if (pvm_native)
		report(ps < 100000, "native: loop under 100 ns per iteration (%lu ps)", ps);
	else
		report(ps > 0, "loop measured (ordinary mode)");
	exit_costs(hz);
	return report_summary();
}
