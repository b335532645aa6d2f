/*
 * libFuzzer target: the APIC bus of --irqchip user, driven as
 * vmm/x86/vcpu_irq*.c and vmm/x86/irqchip_user.c drive it. Up to 8 LAPICs and the
 * IOAPIC on one bus (IOAPIC ID = nr_cpus, at 0xfec00000 on an MMIO bus);
 * the input is a program of guest MSR and MMIO accesses, TSC-deadline
 * writes, IOAPIC pin changes, the vCPU loop's side (INIT/SIPI/NMI/vector
 * acceptance, CR8) and time advancing, after which every timer whose host
 * deadline passed fires as the vCPU loop fires it.
 *
 * Beyond ASan/UBSan, the checks are what the vCPU loop relies on: a timer
 * fired at `now` never asks to be fired again at or before `now` (the
 * loop would spin), a pending vector is a real one (16..255) and is the
 * one acceptance returns, at most two NMIs are pending, x2APIC mode only
 * with the APIC enabled.
 *
 * Input: header (cpu count, flags, TSC rate, start time), then ops; see
 * enum op. devices/fuzz/seeds.c writes the seeds with the same encoding.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/fuzz_target.h"
#include "devices/bus.h"
#include "devices/ioapic.h"
#include "devices/lapic.h"
#include "devices/fuzz/apic_ops.h"

#define MAX_CPUS 8

struct machine {
	struct apic_bus bus;
	struct lapic l[MAX_CPUS];
	struct ioapic io;
	struct bus mmio;
	unsigned n;
	uint64_t now;                   /* host clock, ns */
	uint64_t tsc_khz;
	uint64_t tsc_at_zero;           /* guest TSC at host time 0 (the guest may write its TSC) */
	uint64_t armed[MAX_CPUS];       /* what arm_timer said last */
	unsigned kicks[MAX_CPUS];
};

static void m_kick(void *opaque, unsigned vcpu)
{
	struct machine *m = opaque;

	FZ_ASSERT(vcpu < m->n);
	m->kicks[vcpu]++;
}

static void m_arm(void *opaque, unsigned vcpu, uint64_t deadline_ns)
{
	struct machine *m = opaque;

	FZ_ASSERT(vcpu < m->n);
	m->armed[vcpu] = deadline_ns;
}

static uint64_t m_now(void *opaque)
{
	return ((struct machine *)opaque)->now;
}

static const struct apic_bus_ops m_ops = {
	.kick = m_kick, .arm_timer = m_arm, .now_ns = m_now,
};

static uint64_t guest_tsc(const struct machine *m)
{
	return m->tsc_at_zero + (uint64_t)((unsigned __int128)m->now * m->tsc_khz / 1000000u);
}

/* The vCPU loop's run_timer for every vCPU, then the checks on it. */
static void run_timers(struct machine *m)
{
	for (unsigned i = 0; i < m->n; i++) {
		uint64_t dl = m->armed[i];

		if (dl == LAPIC_NO_DEADLINE || m->now < dl)
			continue;
		lapic_timer_expire(&m->l[i], m->now);
		dl = m->armed[i];
		/* Fired at now: the next expiry is later, or none. */
		FZ_ASSERT(dl == LAPIC_NO_DEADLINE || dl > m->now);
	}
}

static void check_lapic(struct lapic *l)
{
	int v = lapic_pending_vector(l);

	FZ_ASSERT(v == -1 || (v >= 16 && v <= 255));
	FZ_ASSERT(l->nmi_pending <= 2);
	FZ_ASSERT(!lapic_x2apic_mode(l) || (lapic_apic_base(l) & APIC_BASE_EN));
	FZ_ASSERT(lapic_cr8_read(l) <= 15);
}

/* What vcpu_irq_exit_msr does with a RDMSR/WRMSR exit. */
static void msr_access(struct machine *m, struct lapic *l, uint32_t msr, bool write, uint64_t val)
{
	if (msr == MSR_IA32_TSC_DEADLINE) {
		if (write)
			FZ_ASSERT(lapic_tsc_deadline_write(l, val, guest_tsc(m), m->tsc_khz,
							   m->now) == 0);
		else
			(void)lapic_tsc_deadline_read(l);
		return;
	}
	if (write) {
		int r = lapic_msr_write(l, msr, val, m->now);

		FZ_ASSERT(r == 0 || r == -EINVAL || r == -ENOENT);
	} else {
		uint64_t v = 0;
		int r = lapic_msr_read(l, msr, &v, m->now);

		FZ_ASSERT(r == 0 || r == -EINVAL || r == -ENOENT);
		/* x2APIC registers are 32 bits wide except ICR */
		FZ_ASSERT(r || msr == MSR_IA32_APIC_BASE || msr == 0x830 || v <= UINT32_MAX);
	}
}

/* What vcpu_exit_mmio does: the vCPU's own LAPIC page if it decodes the
 * address, else the MMIO bus (the IOAPIC; nothing else answers). */
static void mmio_access(struct machine *m, struct lapic *l, uint64_t gpa, bool write,
			uint8_t *data, unsigned len)
{
	if (lapic_mmio_claims(l, gpa)) {
		if (write)
			lapic_mmio_write(l, gpa & (LAPIC_MMIO_SIZE - 1), data, len, m->now);
		else
			lapic_mmio_read(l, gpa & (LAPIC_MMIO_SIZE - 1), data, len, m->now);
		return;
	}
	if ((write ? bus_write(&m->mmio, gpa, data, len)
		   : bus_read(&m->mmio, gpa, data, len)) == -ENOENT && !write)
		memset(data, 0xff, len);
}

/* vcpu_irq_before_run's LAPIC calls, with the guest's IF given. */
static void before_run(struct lapic *l, bool irq_allowed)
{
	uint8_t vector;
	int v;

	(void)lapic_take_init(l);
	(void)lapic_waiting_for_sipi(l);
	if (lapic_take_sipi(l, &vector))
		(void)vector;
	while (lapic_take_nmi(l))
		;
	FZ_ASSERT(!lapic_has_nmi(l));
	if (irq_allowed) {
		int want = lapic_pending_vector(l);

		v = lapic_accept(l);
		FZ_ASSERT(v == want);
	}
	(void)lapic_has_event(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct machine m;
	struct fz_in in = { data, size };
	uint8_t hdr = fz_u8(&in);
	struct lapic_config cfg = { .no_x2apic = hdr & APIC_FZ_NO_X2APIC };
	unsigned ops = 0;

	memset(&m, 0, sizeof(m));
	m.n = 1 + (hdr & 7);
	m.tsc_khz = 1 + fz_u32(&in) % (8u << 20);      /* up to ~8 GHz */
	m.now = fz_u32(&in) * 1000ull;
	m.tsc_at_zero = fz_u64(&in);
	apic_bus_init(&m.bus, &m_ops, &m);
	bus_init(&m.mmio, "mmio");
	for (unsigned i = 0; i < m.n; i++) {
		m.armed[i] = LAPIC_NO_DEADLINE;
		FZ_ASSERT(lapic_init(&m.l[i], &m.bus, i, &cfg) == 0);
	}
	FZ_ASSERT(ioapic_init(&m.io, &m.bus, (uint8_t)m.n) == 0);
	FZ_ASSERT(ioapic_attach(&m.io, &m.mmio, IOAPIC_DEFAULT_BASE) == 0);
	if (hdr & APIC_FZ_PHYS_BITS)
		for (unsigned i = 0; i < m.n; i++)
			(void)lapic_set_phys_addr_bits(&m.l[i], 36 + (hdr >> 4));

	while (!fz_done(&in) && ops++ < 4096) {
		uint8_t op = fz_u8(&in), cpu = fz_u8(&in) % m.n;
		struct lapic *l = &m.l[cpu];

		switch (op % APIC_OP_COUNT) {
		case APIC_OP_X2_WRITE:
		case APIC_OP_X2_READ: {
			uint32_t msr = MSR_X2APIC_FIRST + fz_u8(&in);
			uint64_t val = op % APIC_OP_COUNT == APIC_OP_X2_WRITE ? fz_u64(&in) : 0;

			msr_access(&m, l, msr, op % APIC_OP_COUNT == APIC_OP_X2_WRITE, val);
			break;
		}
		case APIC_OP_MSR: {
			/* any MSR number, as the exit handler sees it */
			uint32_t msr = fz_u32(&in);
			uint8_t how = fz_u8(&in);
			uint64_t val = fz_u64(&in);

			if (how & 2)
				msr = (how & 4) ? MSR_IA32_APIC_BASE : MSR_IA32_TSC_DEADLINE;
			msr_access(&m, l, msr, how & 1, val);
			break;
		}
		case APIC_OP_MMIO: {
			uint8_t how = fz_u8(&in);
			uint16_t off = fz_u16(&in);
			uint64_t val = fz_u64(&in);
			unsigned len = 1 + (how >> 5);          /* 1..8 */
			uint64_t base = (how & 2) ? IOAPIC_DEFAULT_BASE
						  : (lapic_apic_base(l) & ~0xfffull);
			uint8_t buf[8];

			device_data_put(buf, 8, val);
			if (how & 4)
				off &= ~0xfu;
			mmio_access(&m, l, base + (off & 0x1fff), how & 1, buf, len);
			break;
		}
		case APIC_OP_TIME: {
			uint16_t dt = fz_u16(&in);
			uint8_t shift = fz_u8(&in) % 40;

			m.now += (uint64_t)dt << shift;
			if (m.now > (1ull << 62))
				m.now = 1ull << 62;
			break;
		}
		case APIC_OP_SET_TSC:
			/* WRMSR IA32_TSC: the guest's TSC jumps (KVM's, not ours) */
			m.tsc_at_zero = fz_u64(&in) - (guest_tsc(&m) - m.tsc_at_zero);
			break;
		case APIC_OP_PIN: {
			uint8_t pin = fz_u8(&in);

			ioapic_set_irq(&m.io, pin % 32, (pin >> 5) & 1);
			break;
		}
		case APIC_OP_RUN: {
			uint8_t how = fz_u8(&in);

			before_run(l, how & 1);
			/* the guest ends its interrupt through PV EOI, which
			 * vcpu_irq_before_run offers only when deferrable */
			if ((how & 2) && lapic_eoi_deferrable(l))
				lapic_eoi(l);
			break;
		}
		case APIC_OP_CR8:
			/* vcpu_irq_after_run: only values <= 15 reach the LAPIC */
			lapic_cr8_write(l, fz_u8(&in) & 15);
			break;
		case APIC_OP_RESET: {
			uint8_t what = fz_u8(&in);

			if (what & 1) {
				/* a system reset (vm_reset.c): every LAPIC and the IOAPIC */
				for (unsigned i = 0; i < m.n; i++)
					lapic_reset(&m.l[i]);
				ioapic_reset(&m.io);
			} else {
				lapic_reset(l);
			}
			break;
		}
		default:
			break;
		}
		run_timers(&m);
		check_lapic(l);
	}
	for (unsigned i = 0; i < m.n; i++) {
		check_lapic(&m.l[i]);
		lapic_destroy(&m.l[i]);
	}
	ioapic_destroy(&m.io);
	return 0;
}
