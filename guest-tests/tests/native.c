/*
 * native: how this guest's instructions run. Prints the execution mode
 * (pvm.c) and the cost of one dec/jnz loop iteration, which tells a vCPU
 * that runs natively (about 1 ns) from one in an instruction emulator
 * (thousands of ns). With native=yes on the command line a slow loop is a
 * failure: the VMM said the vCPU would run natively and it did not.
 */
#include "guest.h"
#include "pvm.h"

static uint64_t loop_cycles(uint64_t n)
{
	uint64_t t0 = rdtsc();

	asm volatile("1: dec %0; jnz 1b" : "+r"(n));
	return rdtsc() - t0;
}

int main(int argc, char **argv)
{
	uint64_t hz = tsc_hz_measured(NULL), n = 1000, best = ~0ull, ps;
	unsigned want_native = 0;

	(void)argc;
	(void)argv;
	cmdline_uint("native", &want_native);
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
	if (want_native)
		report(ps < 100000, "native: loop under 100 ns per iteration (%lu ps)", ps);
	else
		report(ps > 0, "loop measured");
	return report_summary();
}
