/* TSC rate discovery and delays (see timing.h). */
#include "timing.h"

#include "bootinfo.h"
#include "lapic.h"
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

/* 1 GHz (one tick per ns) in 16.16 TSC cycles per tick -> Hz. */
static uint64_t hz_from_lapic(uint64_t cyc_per_tick16)
{
	return (cyc_per_tick16 * 1000000000ull) >> 16;
}

uint64_t tsc_hz_measured(const char **source)
{
	static uint64_t m_hz;
	static const char *m_src;
	unsigned khz;
	uint64_t c16;

	if (m_hz)
		goto out;
	if (cmdline_uint("tsc_khz", &khz) && khz) {
		m_hz = (uint64_t)khz * 1000;
		m_src = "tsc_khz= on the command line";
	} else if (tsc_hz_known()) {
		m_hz = tsc_hz();
		m_src = "CPUID";
	} else if ((c16 = lapic_timer_calibrate()) != 0) {
		m_hz = hz_from_lapic(c16);
		m_src = "LAPIC timer (assumed 1 GHz)";
	} else {
		m_hz = tsc_hz();
		m_src = "a 3 GHz guess (no CPUID rate, LAPIC timer does not count)";
	}
out:
	if (source)
		*source = m_src;
	return m_hz;
}

bool wait_count_ms(const volatile uint32_t *p, uint32_t want, uint64_t ms)
{
	uint64_t end = tsc_deadline_ms(ms);

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) < want)
		if ((int64_t)(rdtsc() - end) > 0)
			return false;
	return true;
}
