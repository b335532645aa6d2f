/*
 * chaos: MSRs. Reads and writes of the x2APIC range (through
 * chaos_apic_write's rules), a list of architectural, AMD, KVM and
 * Hyper-V MSRs, and any index at all; a #GP is counted and resumed
 * (wrmsr_safe). Kept out: MSRs that move this guest's own time base,
 * paging or VIF page, and guest-physical addresses in its own RAM where
 * the hypervisor would write.
 */
#include "chaos.h"

static const uint32_t msrs[] = {
	0x1b, 0x3a, 0x48, 0x49, 0x79, 0x8b, 0x10a, 0x10b, 0x140, 0x174, 0x175, 0x176,
	0x179, 0x17a, 0x186, 0x1a0, 0x1d9, 0x200, 0x277, 0x2ff, 0x38f, 0x400, 0x401,
	0x6e0, 0x6e1, 0xda0, 0xc0000082, 0xc0000084, 0xc0000100,
	0xc0000101, 0xc0000102, 0xc0000103, 0xc0010015, 0xc0010117, 0x10, 0x3b,
	0x11, 0x12, 0x4b564d00, 0x4b564d01, 0x4b564d03, 0x4b564d04, 0x4b564d05,
	0x40000000, 0x40000001, 0x40000020, 0x40000021, 0x40000073,
};

/* MSRs whose value is a guest-physical page the hypervisor writes to. */
static bool msr_takes_gpa(uint32_t msr)
{
	return msr == 0x11 || msr == 0x12 || msr == 0x4b564d04 ||   /* PV EOI's flag */
	       (msr >= 0x40000000 && msr < 0x50000000);
}

static uint32_t rnd_msr(struct chaos_cpu *c)
{
	switch (rnd_below(c, 8)) {
	case 0: case 1: case 2:
		return 0x800 + rnd_below(c, 0x100);
	case 3: case 4: case 5:
		return msrs[rnd_below(c, sizeof(msrs) / sizeof(msrs[0]))];
	case 6:
		return rnd_below(c, 2) ? rnd_below(c, 0x2000) : 0xc0000000 + rnd_below(c, 0x2000);
	default:
		return (uint32_t)rnd(c);
	}
}

static bool msr_forbidden(uint32_t msr)
{
	/* EFER; STAR, where a PVM backend takes the kernel's CS and SS from
	 * (seen: a random STAR made every iretq #GP); async PF (a #PF we did
	 * not ask for); the VIF page */
	if (msr == 0xc0000080 || msr == 0xc0000081 || msr == 0x4b564d02 ||
	    msr == 0x4b564d06 || msr == 0x4b564d07 || msr == 0x4b564d10)
		return true;
	if (msr >= 0x40000000 && msr < 0x50000000) {
		for (unsigned i = 0; i < sizeof(msrs) / sizeof(msrs[0]); i++)
			if (msrs[i] == msr)
				return false;
		return true;    /* Hyper-V's reset, crash and APIC MSRs among them */
	}
	return (msr == 0x10 || msr == 0x3b) && smp_id() == 0;    /* the clock we stop by */
}

void chaos_op_msr(struct chaos_cpu *c)
{
	uint32_t msr = rnd_msr(c);
	uint64_t v = rnd_value(c);

	c->ops[OP_MSR]++;
	if (rnd_below(c, 3) == 0) {
		if (rdmsr_safe(msr, &v))
			c->msr_gp++;
		return;
	}
	if (msr_forbidden(msr))
		return;
	if (msr >= 0x800 && msr <= 0x8ff) {
		chaos_apic_write(c, (msr - 0x800) << 4, (uint32_t)v);
		return;
	}
	if (msr == MSR_IA32_APIC_BASE) {
		/* reserved and base bits only: the mode (EN, EXTD) stays */
		uint64_t base = 0;

		rdmsr_safe(msr, &base);
		v = base ^ (1ull << (rnd_below(c, 2) ? rnd_below(c, 10) : 12 + rnd_below(c, 52)));
		if ((v ^ base) & (3ull << 10))
			return;
		if (!lapic_x2apic() && ((v ^ base) & ~0xfffull))
			return;     /* moving the xAPIC page would lose our EOIs */
	} else if (msr_takes_gpa(msr)) {
		v = (v & 0xfff) | (rnd_below(c, 2) ? (uint64_t)chaos_scratch[smp_id()]
				   : (chaos_ram_top + (rnd(c) & 0xffffffff000ull)));
	}
	c->last_msr = msr;
	c->last_val = v;
	if (wrmsr_safe(msr, v))
		c->msr_gp++;
}
