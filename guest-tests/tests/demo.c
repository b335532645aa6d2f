/*
 * demo: the guest scripts/demo boots. Each of two vCPUs prints a short
 * greeting as one block, then the boot CPU reports and exits.
 */
#include "guest.h"

static volatile uint32_t greeted;

static void hypervisor_name(char name[13])
{
	struct cpuid_regs r = cpuid(0x40000000);

	name[0] = '\0';
	if (!(cpuid(1).c & CPUID_1_ECX_HYPERVISOR))
		return;
	memcpy(name, &r.b, 4);
	memcpy(name + 4, &r.c, 4);
	memcpy(name + 8, &r.d, 4);
	name[12] = '\0';
}

static void greet(void *arg)
{
	unsigned cpu = smp_id(), n = nr_cpus();
	char hv[13];
	unsigned long flags;

	(void)arg;
	hypervisor_name(hv);
	flags = console_lock();
	printf_locked("\n");
	printf_locked("  +-- vCPU %u of %u says hello ----------------------\n", cpu, n);
	printf_locked("  | I am vCPU %u, APIC ID %u (%s).\n", cpu, lapic_id(),
		      lapic_x2apic() ? "x2APIC" : "xAPIC");
	printf_locked("  | No OS here: a 32-bit PVH entry stub took me to long\n");
	printf_locked("  | mode and straight into C, without FPU or SSE.\n");
	printf_locked("  | Hypervisor signature: \"%s\".\n", hv[0] ? hv : "none");
	printf_locked("  | My TSC reads %lu.\n", rdtsc());
	printf_locked("  +--------------------------------------------------\n");
	console_unlock(flags);
	atomic_inc(&greeted);
}

int main(int argc, char **argv)
{
	unsigned n;

	(void)argc, (void)argv;
	printf("lagvisor demo guest: starting the other vCPUs...\n");
	n = smp_init(10000);
	for (unsigned i = 0; i < n; i++)
		on_cpu(i, greet, 0);
	printf("\n");
	report(n == smp_expected_cpus() && greeted == n,
	       "%u vCPUs online, %u said hello", n, greeted);
	return report_summary();
}
