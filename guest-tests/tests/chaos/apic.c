/*
 * chaos: the local APIC as a target. Register writes in the mode the guest
 * runs (x2APIC MSRs or the xAPIC page), random IPIs, the timer
 * reprogrammed wildly. Every interrupt source entry written goes through
 * chaos_safe_entry: what would corrupt the guest is kept out, not what
 * would trouble the VMM.
 */
#include "chaos.h"

static uint8_t rnd_vector(struct chaos_cpu *c)
{
	return (uint8_t)(VEC_FIRST + rnd_below(c, 256 - VEC_FIRST));
}

/* An interrupt source's entry (LVT, IOAPIC pin): never a vector below 32,
 * never SMI, INIT or ExtINT (a PIC vector); the rest as it came. */
uint32_t chaos_safe_entry(uint32_t v)
{
	unsigned mode = (v >> 8) & 7;

	if ((v & 0xff) < VEC_FIRST)
		v |= VEC_FIRST;
	if (mode == 2 || mode == 5 || mode == 7)
		v &= ~(7u << 8);
	return v;
}

static void icr_write(uint32_t dest, uint32_t lo)
{
	if (lapic_x2apic()) {
		wrmsr_safe(0x830, ((uint64_t)dest << 32) | lo);
	} else {
		mmio_write32(lapic_base_pa() + APIC_ICR2, dest << 24);
		mmio_write32(lapic_base_pa() + APIC_ICR, lo);
	}
}

static uint32_t rnd_dest(struct chaos_cpu *c)
{
	switch (rnd_below(c, 8)) {
	case 0: return lapic_x2apic() ? 0xffffffffu : 0xff;
	case 1: return rnd_below(c, 256);
	case 2: return (uint32_t)rnd(c);
	default: return chaos_apic_id(rnd_below(c, chaos_ncpus));
	}
}

/* A random IPI; INIT only at the victim (physical, or itself by shorthand). */
void chaos_send_ipi(struct chaos_cpu *c)
{
	uint32_t shorthand = (uint32_t)rnd_below(c, 4) << 18;
	uint32_t extra = (uint32_t)rnd(c) & ((1u << 11) | (1u << 14) | (1u << 15));
	bool am_victim = smp_id() == chaos_victim;

	switch (rnd_below(c, 16)) {
	case 0: case 1: case 2: case 3: case 4:
		icr_write(rnd_dest(c), rnd_vector(c) | extra | shorthand);
		break;
	case 5: case 6:
		icr_write(rnd_dest(c), 0x100 | rnd_vector(c) | extra | shorthand);
		break;
	case 7: case 8:
		icr_write(rnd_dest(c), APIC_DM_NMI | extra | shorthand);
		break;
	case 9:
		if (chaos_victim < chaos_ncpus)
			icr_write(chaos_apic_id(chaos_victim), APIC_DM_INIT | APIC_INT_ASSERT);
		break;
	case 10:
		/* INIT level de-assert: no CPU may reset for it */
		icr_write(rnd_dest(c), APIC_DM_INIT | (1u << 15) | (shorthand & APIC_DEST_ALLBUT));
		break;
	case 11: case 12:
		/* running CPUs ignore it; a waiting victim parks */
		icr_write(rnd_dest(c), APIC_DM_STARTUP | (PARK_PA >> 12) | (shorthand & APIC_DEST_ALLBUT));
		break;
	case 13:
		if (lapic_x2apic())
			wrmsr_safe(0x83f, rnd_vector(c));
		else
			icr_write(0, rnd_vector(c) | APIC_DEST_SELF);
		break;
	case 14:
		/* reserved bits set, shorthand with a destination */
		icr_write(rnd_dest(c), (((uint32_t)rnd(c) & 0xfff30000u) | rnd_vector(c) | shorthand) &
			  ~(7u << 8));
		break;
	default:
		if (am_victim)
			icr_write(0, APIC_DM_INIT | APIC_INT_ASSERT | APIC_DEST_SELF);
		else
			icr_write(chaos_apic_id(smp_id()), APIC_DM_NMI);
		break;
	}
}

/* One LAPIC register by its xAPIC offset, in the mode the guest runs. */
void chaos_apic_write(struct chaos_cpu *c, unsigned reg, uint32_t v)
{
	reg &= 0x3f0;
	if (reg == APIC_ICR) {
		chaos_send_ipi(c);
		return;
	}
	if (reg == APIC_ID && !lapic_x2apic())
		return;         /* an xAPIC ID is writable: IPIs would find the wrong CPU */
	if ((reg >= APIC_LVTT && reg <= APIC_LVTERR) || reg == APIC_SVR || reg == 0x3f0)
		v = chaos_safe_entry(v);
	if (lapic_x2apic()) {
		if (wrmsr_safe(0x800 + (reg >> 4), v))
			c->msr_gp++;
	} else {
		mmio_write32(lapic_base_pa() + reg, v);
	}
}

static uint32_t apic_reg_read(unsigned reg)
{
	uint64_t v = 0;

	if (!lapic_x2apic())
		return mmio_read32(lapic_base_pa() + (reg & 0x3f0));
	rdmsr_safe(0x800 + ((reg & 0x3f0) >> 4), &v);
	return (uint32_t)v;
}

void chaos_lapic_mask_all(void)
{
	static const unsigned lvts[] = { APIC_LVTT, 0x330, 0x340, APIC_LVT0, APIC_LVT1, APIC_LVTERR };

	for (unsigned i = 0; i < sizeof(lvts) / sizeof(lvts[0]); i++)
		if (lapic_x2apic())
			wrmsr_safe(0x800 + (lvts[i] >> 4), APIC_LVT_MASKED);
		else
			mmio_write32(lapic_base_pa() + lvts[i], APIC_LVT_MASKED);
	if (lapic_x2apic())
		wrmsr_safe(0x838, 0);
	else
		mmio_write32(lapic_base_pa() + APIC_TMICT, 0);
}

void chaos_op_timer(struct chaos_cpu *c)
{
	uint64_t v = rnd_value(c);

	switch (rnd_below(c, 6)) {
	case 0:
		v = (v & ~(3ull << 17)) | ((uint64_t)rnd_below(c, 4) << 17);
		chaos_apic_write(c, APIC_LVTT, (uint32_t)v & ~(rnd_below(c, 2) ? APIC_LVT_MASKED : 0));
		break;
	case 1:
		chaos_apic_write(c, APIC_TDCR, (uint32_t)v);
		break;
	case 2: case 3:
		chaos_apic_write(c, APIC_TMICT, (uint32_t)v);
		break;
	case 4:
		if (rnd_below(c, 2))
			v = rdtsc() + (uint64_t)((int64_t)rnd_below(c, 2000000) - 1000000);
		if (wrmsr_safe(MSR_IA32_TSC_DEADLINE, v))
			c->msr_gp++;
		break;
	default:
		(void)apic_reg_read(APIC_TMCCT);
		break;
	}
	c->ops[OP_TIMER]++;
}
