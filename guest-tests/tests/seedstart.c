/*
 * seedstart: start every AP (INIT-SIPI-SIPI, guest-tests/lib/smp.c) and
 * power off. The vCPU under test of seeds 000/001: scripts/bench-seeds
 * starts this VM again and again beside a hog VM in the same scheduling
 * domain and reads, from lagvisor's --trace, how long each vCPU waited
 * between its first wakeup (the first enqueue: the boot vCPU at start, an
 * AP at the INIT that leaves it waiting for its SIPI) and its first run.
 * The guest itself only checks that all vCPUs came up; it prints how long
 * that took (TSC, from before the INIT to the last check-in), a coarse
 * cross-check of the trace: "seedstart: cpus=N up_ns=N".
 */
#include "guest.h"

int main(int argc, char **argv)
{
	unsigned want = smp_expected_cpus(), n;
	uint64_t t0, up;

	(void)argc, (void)argv;
	t0 = rdtsc();
	n = smp_init(20000);
	up = (rdtsc() - t0) * 1000000ull / (tsc_hz() / 1000);
	printf("seedstart: cpus=%u up_ns=%lu\n", n, up);
	report(n == want, "%u of %u vCPUs online", n, want);
	return report_summary();
}
