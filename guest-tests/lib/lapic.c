/* Local APIC access, xAPIC or x2APIC (see lapic.h). */
#include "lapic.h"

#include "layout.h"
#include "processor.h"
#include "smp.h"
#include "timing.h"

#define APIC_BASE_BSP     (1ull << 8)
#define APIC_BASE_EXTD    (1ull << 10)   /* x2APIC mode */
#define APIC_BASE_EN      (1ull << 11)
#define APIC_BASE_ADDR    0xfffff000ull
#define X2APIC_MSR(reg)   (0x800 + ((reg) >> 4))

/* Bounded: a VMM that never clears the ICR busy bit must not hang us. */
#define ICR_BUSY_SPINS    1000000

#define MSR_KVM_PV_EOI_EN 0x4b564d04
#define KVM_CPUID_SIGNATURE 0x40000000
#define KVM_FEATURE_PV_EOI  6

/* Written by the boot CPU before any AP starts, read-only afterwards. */
static bool use_x2apic, use_pv_eoi;
static uint64_t xapic_base = 0xfee00000;
/* PV EOI: per CPU, bit 0 set by the hypervisor while an EOI may be made
 * by clearing it (a cache line each: only its own CPU touches it). */
static volatile uint8_t pv_eoi_flag[MAX_CPUS][64] __attribute__((aligned(64)));

/* KVM's signature (or a VMM that speaks its paravirt MSRs) with PV EOI. */
static bool pv_eoi_offered(void)
{
	struct cpuid_regs r;

	if (!(cpuid(1).c & CPUID_1_ECX_HYPERVISOR))
		return false;
	r = cpuid(KVM_CPUID_SIGNATURE);
	if (r.b != 0x4b4d564b || r.c != 0x564b4d56 || r.d != 0x4d)
		return false;   /* "KVMKVMKVM\0\0\0" */
	return cpuid(0x40000001).a & (1u << KVM_FEATURE_PV_EOI);
}

void lapic_pv_eoi_init(bool allow)
{
	use_pv_eoi = allow && pv_eoi_offered();
}

bool lapic_pv_eoi(void)
{
	return use_pv_eoi;
}

void lapic_init(bool allow_x2apic)
{
	uint64_t base = rdmsr(MSR_IA32_APIC_BASE);

	use_x2apic = allow_x2apic && (cpuid(1).c & CPUID_1_ECX_X2APIC);
	if (base & APIC_BASE_ADDR)
		xapic_base = base & APIC_BASE_ADDR;
}

void lapic_cpu_init(void)
{
	uint64_t base = rdmsr(MSR_IA32_APIC_BASE);

	if (use_x2apic && !(base & APIC_BASE_EXTD)) {
		/* xAPIC -> x2APIC is the one legal transition with EN kept set. */
		base |= APIC_BASE_EN;
		wrmsr(MSR_IA32_APIC_BASE, base);
		wrmsr(MSR_IA32_APIC_BASE, base | APIC_BASE_EXTD);
	} else if (!(base & APIC_BASE_EN)) {
		wrmsr(MSR_IA32_APIC_BASE, base | APIC_BASE_EN);
	}
	/*
	 * Firmware (SeaBIOS) leaves LINT0 in ExtINT mode with the 8259 PIC
	 * sending its timer as vector 8, which would look like a double fault.
	 * Masking LINT0/1 cuts the PIC off without touching its ports (which a
	 * --strict-io VMM need not model). Mask first, then write SVR and TPR:
	 * a PIC interrupt requested before the mask is dropped by those writes
	 * (QEMU re-evaluates its interrupt line on them) instead of surfacing
	 * at the first STI with no vector behind it.
	 */
	lapic_write(APIC_LVT0, APIC_LVT_MASKED);
	lapic_write(APIC_LVT1, APIC_LVT_MASKED);
	lapic_write(APIC_LVTT, APIC_LVT_MASKED);
	lapic_write(APIC_LVTERR, APIC_LVT_MASKED);
	lapic_write(APIC_SVR, APIC_SVR_ENABLE | 0xff);
	lapic_write(APIC_TPR, 0);
	if (use_pv_eoi) {
		pv_eoi_flag[smp_id()][0] = 0;
		/* identity-mapped: the address is the guest-physical one */
		wrmsr(MSR_KVM_PV_EOI_EN, (uint64_t)(uintptr_t)pv_eoi_flag[smp_id()] | 1);
	}
}

bool lapic_x2apic(void)
{
	return use_x2apic;
}

uint64_t lapic_base_pa(void)
{
	return xapic_base;
}

uint32_t lapic_read(unsigned reg)
{
	if (use_x2apic)
		return (uint32_t)rdmsr(X2APIC_MSR(reg));
	return mmio_read32(xapic_base + reg);
}

void lapic_write(unsigned reg, uint32_t val)
{
	if (use_x2apic)
		wrmsr(X2APIC_MSR(reg), val);
	else
		mmio_write32(xapic_base + reg, val);
}

uint32_t lapic_id(void)
{
	uint32_t id = lapic_read(APIC_ID);

	return use_x2apic ? id : id >> 24;
}

void lapic_eoi(void)
{
	/* Set: the EOI may be this store; Linux's kvm_guest_apic_eoi_write. */
	if (use_pv_eoi && (__atomic_fetch_and(&pv_eoi_flag[smp_id()][0], (uint8_t)~1,
					      __ATOMIC_ACQ_REL) & 1))
		return;
	lapic_write(APIC_EOI, 0);
}

int lapic_send_ipi(uint32_t dest, uint32_t icr)
{
	if (use_x2apic) {
		/* One 64-bit MSR write: destination in the high half, no busy bit. */
		wrmsr(X2APIC_MSR(APIC_ICR), ((uint64_t)dest << 32) | icr);
		return 0;
	}
	mmio_write32(xapic_base + APIC_ICR2, dest << 24);
	mmio_write32(xapic_base + APIC_ICR, icr);
	for (unsigned i = 0; i < ICR_BUSY_SPINS; i++)
		if (!(mmio_read32(xapic_base + APIC_ICR) & APIC_ICR_BUSY))
			return 0;
	return -1;
}

/*
 * 2^22 ticks is ~4 ms at the 1 GHz KVM and QEMU use: long enough that the
 * latency of one current-count read (a VM exit, ~10 us on an emulating
 * host) is a < 1% error.
 */
#define CAL_TICKS      (1u << 22)
#define CAL_TIMEOUT_MS 2000

/*
 * One current-count read and the TSC around it. The read is a VM exit, and
 * a VMM that schedules vCPUs may run another vCPU before this one resumes
 * (lagvisor --sched eevdf on a busy host CPU): pairing the count with a
 * TSC taken on one side only then misses that whole wait. The TSC on both
 * sides bounds when the count was read; the narrowest of a few reads is
 * the one to trust, its midpoint off by at most half its width.
 */
#define CAL_READS 5

static uint32_t count_at(uint64_t *t_mid)
{
	uint64_t best = ~0ull;
	uint32_t c = 0;

	for (unsigned i = 0; i < CAL_READS; i++) {
		uint64_t a = rdtsc();
		uint32_t v = lapic_read(APIC_TMCCT);
		uint64_t b = rdtsc();

		if (b - a < best) {
			best = b - a;
			c = v;
			*t_mid = a + (b - a) / 2;
		}
	}
	return c;
}

uint64_t lapic_timer_calibrate(void)
{
	uint64_t t0, t1, end = tsc_deadline_ms(CAL_TIMEOUT_MS);
	uint32_t c0, c1;

	lapic_write(APIC_TDCR, APIC_TDCR_DIV1);
	lapic_write(APIC_LVTT, APIC_LVT_MASKED);
	lapic_write(APIC_TMICT, 0xffffffff);
	c0 = count_at(&t0);
	do {
		c1 = count_at(&t1);
		if ((int64_t)(t1 - end) > 0) {
			lapic_timer_stop();
			return 0;
		}
	} while (c0 - c1 < CAL_TICKS || c1 > c0);
	lapic_timer_stop();
	return ((t1 - t0) << 16) / (c0 - c1);
}

void lapic_timer_oneshot(uint8_t vector, uint32_t ticks)
{
	lapic_write(APIC_TDCR, APIC_TDCR_DIV1);
	lapic_write(APIC_LVTT, APIC_LVT_TIMER_ONESHOT | vector);
	lapic_write(APIC_TMICT, ticks);
}

void lapic_timer_periodic(uint8_t vector, uint32_t ticks)
{
	lapic_write(APIC_TDCR, APIC_TDCR_DIV1);
	lapic_write(APIC_LVTT, APIC_LVT_TIMER_PERIODIC | vector);
	lapic_write(APIC_TMICT, ticks);
}

void lapic_timer_stop(void)
{
	lapic_write(APIC_TMICT, 0);
	lapic_write(APIC_LVTT, APIC_LVT_MASKED);
}
