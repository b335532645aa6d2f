/*
 * smp: every vCPU the machine describes starts (INIT-SIPI-SIPI) and checks
 * in exactly once, with a distinct APIC ID that the MP table lists; then
 * all CPUs hammer one counter under a spinlock and another with atomic
 * adds, and no increment is lost. "cpus=N" on the command line is what the
 * runner asked the VMM for; the MP table must agree.
 */
#include "guest.h"

#define SMP_TIMEOUT_MS 10000
#define ITERATIONS     2000

static struct spinlock lock;
static volatile uint64_t locked_count;
static volatile uint32_t atomic_count;
static volatile uint32_t checked_in;
static volatile uint32_t seen_apic_id[MAX_CPUS];

static void check_in(void *arg)
{
	(void)arg;
	atomic_set(&seen_apic_id[smp_id()], lapic_id() + 1);
	atomic_inc(&checked_in);
}

static void hammer(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < ITERATIONS; i++) {
		spin_lock(&lock);
		locked_count = locked_count + 1;   /* non-atomic on purpose */
		spin_unlock(&lock);
		atomic_inc(&atomic_count);
	}
}

int main(int argc, char **argv)
{
	const struct mp_info *mp = smp_mp_info();
	unsigned want = smp_expected_cpus(), asked, n;
	bool unique = true, listed = true;

	(void)argc, (void)argv;
	if (report(mp->found, "MP table found%s%s", mp->found ? "" : ": ",
		   mp->found ? "" : mp->error))
		report_info("MP table at %x: %u CPUs, BSP APIC ID %u, IOAPIC at %x",
			    mp->floating_pa, mp->nr_cpus, mp->apic_ids[mp->bsp],
			    mp->ioapic_pa);
	if (cmdline_uint("cpus", &asked))
		report(asked == want, "machine describes %u CPUs, runner asked for %u",
		       want, asked);
	if (mp->found)
		report(mp->apic_ids[mp->bsp] == lapic_id(),
		       "MP table BSP APIC ID %u is the boot CPU's (%u)",
		       mp->apic_ids[mp->bsp], lapic_id());

	n = smp_init(SMP_TIMEOUT_MS);
	report(n == want, "%u of %u CPUs online", n, want);
	/* A VMM that wrongly restarts an AP on the second SIPI shows up here. */
	delay_us(20000);
	report(nr_cpus() == n, "no CPU started twice (%u online after 20 ms)", nr_cpus());

	for (unsigned i = 0; i < n; i++)
		on_cpu(i, check_in, 0);
	report(atomic_read(&checked_in) == n, "%u CPUs ran on_cpu() and checked in",
	       atomic_read(&checked_in));
	for (unsigned i = 0; i < n; i++) {
		uint32_t id = seen_apic_id[i] - 1;
		bool in_mp = !mp->found;

		for (unsigned j = 0; j < i; j++)
			if (seen_apic_id[j] == seen_apic_id[i])
				unique = false;
		for (unsigned j = 0; mp->found && j < mp->nr_cpus; j++)
			if (mp->apic_ids[j] == id)
				in_mp = true;
		listed = listed && in_mp && seen_apic_id[i] != 0;
		report_info("cpu %u: APIC ID %u", i, id);
	}
	report(unique, "APIC IDs are distinct");
	report(listed, "every APIC ID is one the MP table lists");

	for (unsigned i = 1; i < n; i++)
		on_cpu_async(i, hammer, 0);
	hammer(0);
	for (unsigned i = 1; i < n; i++)
		on_cpu_wait(i);
	report(locked_count == (uint64_t)n * ITERATIONS,
	       "spinlock: %lu of %u increments", locked_count, n * ITERATIONS);
	report(atomic_read(&atomic_count) == n * ITERATIONS,
	       "atomics: %u of %u increments", atomic_read(&atomic_count),
	       n * ITERATIONS);
	return report_summary();
}
