/* TSC rate discovery and delays (see timing.h). */
#include "timing.h"

#include "processor.h"

#define TSC_HZ_GUESS 3000000000ull

static uint64_t hz;
static bool known;

static void probe(void)
{
	struct cpuid_regs r;

	if (cpuid(1).c & CPUID_1_ECX_HYPERVISOR) {
		r = cpuid(0x40000000);
		if (r.a >= 0x40000010 && r.a < 0x40000100) {
			r = cpuid(0x40000010);
			if (r.a) {
				hz = (uint64_t)r.a * 1000;   /* EAX: TSC kHz */
				goto done;
			}
		}
	}
	r = cpuid(0);
	if (r.a >= 0x15) {
		r = cpuid(0x15);   /* TSC = crystal (ECX Hz) * EBX / EAX */
		if (r.a && r.b && r.c) {
			hz = (uint64_t)r.c * r.b / r.a;
			goto done;
		}
		r = cpuid(0x16);   /* base frequency, MHz */
		if (r.a) {
			hz = (uint64_t)r.a * 1000000;
			goto done;
		}
	}
	hz = TSC_HZ_GUESS;
	return;
done:
	known = true;
}

uint64_t tsc_hz(void)
{
	if (!hz)
		probe();
	return hz;
}

bool tsc_hz_known(void)
{
	tsc_hz();
	return known;
}

void delay_us(uint64_t us)
{
	uint64_t end = rdtsc() + us * (tsc_hz() / 1000000);

	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
}

uint64_t tsc_deadline_ms(uint64_t ms)
{
	return rdtsc() + ms * (tsc_hz() / 1000);
}
