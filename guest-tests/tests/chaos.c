/*
 * chaos: a hostile guest. For chaos.duration_ms (3000) every vCPU writes
 * random values of random sizes to random I/O ports, to the LAPIC and
 * IOAPIC pages and the rest of the MMIO hole, to random MSRs (the x2APIC
 * range 0x800-0x8ff among them, a #GP resumed through .extable), sends
 * random IPIs (fixed, lowest priority, NMI, INIT, SIPI, to itself, to
 * others, to IDs nobody has) and reprograms its LAPIC timer wildly
 * (one-shot, periodic, TSC-deadline, tiny and huge counts). The VMM must
 * survive all of it; what the guest checks is only that it kept running:
 * every vCPU but the victim advanced in every quarter of the run, stopped
 * when asked, and its interrupt controller still works afterwards.
 *
 * The last vCPU (of 3 or more) is the victim: the only target of INIT, it
 * then waits for a SIPI, which starts it in real mode in a HLT loop
 * (PARK_PA). What the guest avoids is only what would end or corrupt
 * itself, not the VMM: the debug-exit and reset ports (0xf4, 0x64,
 * 0xcf9), vectors below 32 (an external interrupt there would be read as
 * an exception with a wrong frame), SMI/ExtINT and INIT anywhere but at
 * the victim, MSRs that move its own time base, paging or VIF page (TSC on
 * vCPU 0, EFER, STAR, async PF, the PVM VIF MSR), and guest-physical addresses
 * in its own RAM in MSRs that make the hypervisor write there (those get
 * a scratch page, or an address past RAM).
 *
 *   chaos: ops=N pio=.. mmio=.. msr=.. msr_gp=.. ipi=.. timer=.. irqs=.. nmis=..
 */
#include "guest.h"
#include "options.h"
#include "pvm.h"
#include "serial.h"

#define VEC_FIRST       0x20
#define VEC_TIMER       0x41    /* the after-chaos check's timer */
#define VEC_CHECK       0x42    /* the after-chaos check's IPI */
#define PARK_PA         0x9000  /* below the image, above the AP trampoline */
#define STORM_IRQS      256     /* interrupts in one window: mask everything */
#define STOP_WAIT_MS    3000
#define IOAPIC_PA       0xfec00000ull
#define MMIO_HOLE_END   0x100000000ull
/* KVM's own pages for real mode on VMX (vmm/x86/vm_init.c): not the VMM's to defend */
#define KVM_PAGES_PA    0xfffbc000ull
#define KVM_PAGES_END   0xfffc0000ull

enum { OP_PIO, OP_MMIO, OP_MSR, OP_IPI, OP_TIMER, OP_IRQ, NR_OPS };
static const char *const op_names[NR_OPS] = { "pio", "mmio", "msr", "ipi", "timer", "irq" };

struct chaos_cpu {
	uint64_t rng;
	uint64_t ops[NR_OPS];
	uint64_t msr_gp, irqs, nmis;
	volatile uint64_t total;
	volatile uint32_t burst;
	volatile uint32_t check_irqs;
	volatile bool done;
	/* the last write, printed if the guest dies of an exception */
	uint32_t last_op, last_msr;
	uint64_t last_val;
};

static uint64_t duration_ms = 3000, seed, op_mask = (1u << NR_OPS) - 1;
static const struct guest_opt opts[] = {
	{ "duration_ms", &duration_ms, 1, 3600000, "how long the chaos lasts, ms" },
	{ "seed", &seed, 0, UINT64_MAX, "random seed (0: from the TSC)" },
	{ "ops", &op_mask, 1, (1u << NR_OPS) - 1, "bit mask of pio mmio msr ipi timer irq" },
};

static struct chaos_cpu cc[MAX_CPUS];
static uint8_t scratch[MAX_CPUS][4096] __attribute__((aligned(4096)));
static volatile bool stop;
static unsigned ncpus, victim = ~0u;
static uint64_t ram_top;
static uint32_t ioapic_lock;

static uint64_t rnd(struct chaos_cpu *c)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

static uint32_t rnd_below(struct chaos_cpu *c, uint32_t n)
{
	return (uint32_t)(rnd(c) % n);
}

/* Mostly small numbers, sometimes anything: counts, offsets, deadlines. */
static uint64_t rnd_value(struct chaos_cpu *c)
{
	switch (rnd_below(c, 6)) {
	case 0: return 0;
	case 1: return rnd_below(c, 16);
	case 2: return rnd_below(c, 100000);
	case 3: return ~0ull;
	case 4: return (uint32_t)rnd(c);
	default: return rnd(c);
	}
}

static struct chaos_cpu *self(void)
{
	return &cc[smp_id()];
}

static uint8_t rnd_vector(struct chaos_cpu *c)
{
	return (uint8_t)(VEC_FIRST + rnd_below(c, 256 - VEC_FIRST));
}

/* An interrupt source's entry (LVT, IOAPIC pin): never a vector below 32,
 * never SMI, INIT or ExtINT (a PIC vector); the rest as it came. */
static uint32_t safe_entry(uint32_t v)
{
	unsigned mode = (v >> 8) & 7;

	if ((v & 0xff) < VEC_FIRST)
		v |= VEC_FIRST;
	if (mode == 2 || mode == 5 || mode == 7)
		v &= ~(7u << 8);
	return v;
}

static uint32_t apic_id_of(unsigned cpu)
{
	return cpu_struct(cpu)->apic_id;
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
	default: return apic_id_of(rnd_below(c, ncpus));
	}
}

/* A random IPI; INIT only at the victim (physical, or itself by shorthand). */
static void send_ipi(struct chaos_cpu *c)
{
	uint32_t shorthand = (uint32_t)rnd_below(c, 4) << 18;
	uint32_t extra = (uint32_t)rnd(c) & ((1u << 11) | (1u << 14) | (1u << 15));
	bool am_victim = smp_id() == victim;

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
		if (victim < ncpus)
			icr_write(apic_id_of(victim), APIC_DM_INIT | APIC_INT_ASSERT);
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
			icr_write(apic_id_of(smp_id()), APIC_DM_NMI);
		break;
	}
}

/* One LAPIC register by its xAPIC offset, in the mode the guest runs. */
static void apic_reg_write(struct chaos_cpu *c, unsigned reg, uint32_t v)
{
	reg &= 0x3f0;
	if (reg == APIC_ICR) {
		send_ipi(c);
		return;
	}
	if (reg == APIC_ID && !lapic_x2apic())
		return;         /* an xAPIC ID is writable: IPIs would find the wrong CPU */
	if ((reg >= APIC_LVTT && reg <= APIC_LVTERR) || reg == APIC_SVR || reg == 0x3f0)
		v = safe_entry(v);
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

static void lapic_mask_all(void)
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

static void ioapic_mask_all(void)
{
	for (unsigned pin = 0; pin < 24; pin++) {
		mmio_write32(IOAPIC_PA, 0x10 + 2 * pin);
		mmio_write32(IOAPIC_PA + 0x10, 1u << 16);
	}
}

/* Every interrupt vector >= 32. A level-triggered source that keeps
 * asserting (a UART IRQ, a 1-tick periodic timer) would keep this vCPU in
 * its handlers for good: after STORM_IRQS in one window mask every source. */
static void irq_handler(struct trap_frame *f)
{
	struct chaos_cpu *c = self();

	if (f->vector == VEC_CHECK || f->vector == VEC_TIMER)
		c->check_irqs++;
	if (f->vector == VEC_SPURIOUS)
		lapic_eoi();    /* the dispatcher EOIs every vector but this one */
	c->irqs++;
	if (++c->burst != STORM_IRQS)
		return;
	lapic_mask_all();
	apic_reg_write(c, APIC_TPR, 0xf0);
	if (!__atomic_exchange_n(&ioapic_lock, 1, __ATOMIC_ACQUIRE)) {
		ioapic_mask_all();
		__atomic_store_n(&ioapic_lock, 0, __ATOMIC_RELEASE);
	}
}

_Noreturn static void fatal_handler(struct trap_frame *f)
{
	struct chaos_cpu *c = self();

	printf_emergency("\nEXCEPTION: vector %lu on cpu %u at rip=%lx error=%lx; its last "
			 "op: %s, last MSR written %x = %lx\n", f->vector, smp_id(), f->rip,
			 f->error, op_names[c->last_op], c->last_msr, c->last_val);
	guest_exit(GUEST_EXIT_ABORT);
}

static void nmi_handler(struct trap_frame *f)
{
	(void)f;
	self()->nmis++;
}

static bool port_ends_guest(uint16_t port)
{
	return port == GUEST_EXIT_PORT || port == 0x64 || port == 0xcf9;
}

static const uint16_t ports[] = {
	0x20, 0x21, 0xa0, 0xa1, 0x40, 0x41, 0x42, 0x43, 0x60, 0x61, 0x70, 0x71, 0x80,
	0x92, 0x3f8, 0x2f8, 0x3e8, 0x2e8, 0xcf8, 0xcfc, 0x4d0, 0x510, 0xe0, 0x2000,
	0x3c0, 0x1ce, 0xb000, 0x5658, 0xcd8,
};

static void op_pio(struct chaos_cpu *c)
{
	uint16_t port = rnd_below(c, 2) ? (uint16_t)rnd(c)
		: (uint16_t)(ports[rnd_below(c, sizeof(ports) / sizeof(ports[0]))] + rnd_below(c, 8));
	uint32_t v = (uint32_t)rnd_value(c);
	unsigned kind = rnd_below(c, 8);
	uint64_t n = 1 + rnd_below(c, 16);
	void *buf = scratch[smp_id()];

	if (kind >= 4 && port_ends_guest(port))
		return;
	switch (kind) {
	case 0: inb(port); break;
	case 1: inw(port); break;
	case 2: inl(port); break;
	case 3:
		asm volatile("cld; rep insb" : "+D"(buf), "+c"(n) : "d"(port) : "memory");
		break;
	case 4: outb(port, (uint8_t)v); break;
	case 5: outw(port, (uint16_t)v); break;
	case 6: outl(port, v); break;
	default:
		asm volatile("cld; rep outsb" : "+S"(buf), "+c"(n) : "d"(port) : "memory");
		break;
	}
	c->ops[OP_PIO]++;
}

static void mmio_access(uint64_t pa, unsigned size, uint64_t v, bool write)
{
	switch (size | (write ? 0x10 : 0)) {
	case 0x01: (void)*(volatile uint8_t *)pa; break;
	case 0x02: (void)*(volatile uint16_t *)pa; break;
	case 0x04: (void)*(volatile uint32_t *)pa; break;
	case 0x08: (void)*(volatile uint64_t *)pa; break;
	case 0x11: *(volatile uint8_t *)pa = (uint8_t)v; break;
	case 0x12: *(volatile uint16_t *)pa = (uint16_t)v; break;
	case 0x14: *(volatile uint32_t *)pa = (uint32_t)v; break;
	default: *(volatile uint64_t *)pa = v; break;
	}
}

/* The IOAPIC under a lock: its select/window pair is shared, and another
 * vCPU's select between ours would let an unsanitised value into a pin. */
static void op_ioapic(struct chaos_cpu *c)
{
	unsigned reg = rnd_below(c, 0x40);
	uint32_t v = (uint32_t)rnd_value(c);

	if (smp_id() == victim)
		return;         /* an INIT while holding the lock would keep it */
	while (__atomic_exchange_n(&ioapic_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	if (rnd_below(c, 4) == 0) {
		/* anything else in the page: EOI register, unaligned, odd sizes */
		unsigned off = 0x20 + rnd_below(c, 0xfe0 - 8);

		mmio_access(IOAPIC_PA + off, 1u << rnd_below(c, 4), v, rnd_below(c, 2));
	} else {
		mmio_write32(IOAPIC_PA, reg);
		if (rnd_below(c, 3) == 0)
			(void)mmio_read32(IOAPIC_PA + 0x10);
		else
			mmio_write32(IOAPIC_PA + 0x10, reg >= 0x10 && !(reg & 1) ? safe_entry(v) : v);
	}
	__atomic_store_n(&ioapic_lock, 0, __ATOMIC_RELEASE);
}

/* The xAPIC page: 4-byte aligned accesses go through apic_reg_write's
 * rules; odd ones only where no register could take them as a value. */
static void op_lapic_page(struct chaos_cpu *c)
{
	unsigned off = rnd_below(c, 4096 - 8), size = 1u << rnd_below(c, 4);
	bool write = rnd_below(c, 2);
	uint64_t v = rnd_value(c);
	bool risky = (off < 0x400 && ((off & 0x3f0) == APIC_ID || (off & 0x3f0) == APIC_SVR ||
				      (off >= APIC_ICR && off < 0x380)));

	if (write && size == 4 && !(off & 0xf) && off < 0x400)
		apic_reg_write(c, off, (uint32_t)v);
	else if (!write || !risky)
		mmio_access(lapic_base_pa() + off, size, v, write);
}

static void op_mmio(struct chaos_cpu *c)
{
	uint64_t pa;

	switch (rnd_below(c, 4)) {
	case 0:
		op_ioapic(c);
		break;
	case 1:
		op_lapic_page(c);
		break;
	default:
		pa = ram_top + rnd(c) % (MMIO_HOLE_END - 8 - ram_top);
		if ((pa & ~0xfffull) == IOAPIC_PA || (pa & ~0xfffull) == lapic_base_pa() ||
		    (pa >= KVM_PAGES_PA && pa < KVM_PAGES_END))
			return;
		mmio_access(pa, 1u << rnd_below(c, 4), rnd_value(c), rnd_below(c, 2));
		break;
	}
	c->ops[OP_MMIO]++;
}

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
	return msr == 0x11 || msr == 0x12 || (msr >= 0x40000000 && msr < 0x50000000);
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

static void op_msr(struct chaos_cpu *c)
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
		apic_reg_write(c, (msr - 0x800) << 4, (uint32_t)v);
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
		v = (v & 0xfff) | (rnd_below(c, 2) ? (uint64_t)scratch[smp_id()]
				   : (ram_top + (rnd(c) & 0xffffffff000ull)));
	}
	c->last_msr = msr;
	c->last_val = v;
	if (wrmsr_safe(msr, v))
		c->msr_gp++;
}

static void op_timer(struct chaos_cpu *c)
{
	uint64_t v = rnd_value(c);

	switch (rnd_below(c, 6)) {
	case 0:
		v = (v & ~(3ull << 17)) | ((uint64_t)rnd_below(c, 4) << 17);
		apic_reg_write(c, APIC_LVTT, (uint32_t)v & ~(rnd_below(c, 2) ? APIC_LVT_MASKED : 0));
		break;
	case 1:
		apic_reg_write(c, APIC_TDCR, (uint32_t)v);
		break;
	case 2: case 3:
		apic_reg_write(c, APIC_TMICT, (uint32_t)v);
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

/* Take what is pending: a short window with IF set, sometimes a halt
 * under a short one-shot (with the APIC put back so that it fires). */
static void op_irq(struct chaos_cpu *c)
{
	c->burst = 0;
	if (rnd_below(c, 8) == 0) {
		apic_reg_write(c, APIC_SVR, APIC_SVR_ENABLE | 0xff);
		apic_reg_write(c, APIC_TPR, 0);
		apic_reg_write(c, APIC_TDCR, APIC_TDCR_DIV1);
		apic_reg_write(c, APIC_LVTT, VEC_FIRST + 1);
		apic_reg_write(c, APIC_TMICT, 1000 + rnd_below(c, 100000));
		safe_halt();
	} else {
		irq_enable();
		for (unsigned i = rnd_below(c, 64); i; i--)
			cpu_relax();
	}
	irq_disable();
	c->ops[OP_IRQ]++;
}

static void chaos_step(struct chaos_cpu *c)
{
	static const uint8_t kinds[16] = { OP_PIO, OP_PIO, OP_PIO, OP_PIO, OP_MMIO, OP_MMIO,
		OP_MMIO, OP_MSR, OP_MSR, OP_MSR, OP_IPI, OP_IPI, OP_TIMER, OP_TIMER, OP_IRQ, OP_IRQ };
	unsigned k = kinds[rnd_below(c, 16)];

	if (!(op_mask & (1u << k)))
		return;
	c->last_op = k;
	switch (k) {
	case OP_PIO: op_pio(c); break;
	case OP_MMIO: op_mmio(c); break;
	case OP_MSR: op_msr(c); break;
	case OP_IPI: c->ops[OP_IPI]++; send_ipi(c); break;
	case OP_TIMER: op_timer(c); break;
	default: op_irq(c); break;
	}
	c->total++;
}

/* Quiet this CPU's interrupt sources again and wait, interruptible. */
static void chaos_settle(struct chaos_cpu *c)
{
	irq_disable();
	lapic_cpu_init();
	wrmsr_safe(MSR_IA32_TSC_DEADLINE, 0);
	lapic_write(APIC_TMICT, 0);
	for (unsigned i = 0; i < 256; i++)
		lapic_eoi();    /* whatever is still in service (ISR) */
	c->burst = 0;
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
}

static void worker(void *arg)
{
	struct chaos_cpu *c = self();

	(void)arg;
	irq_disable();
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		chaos_step(c);
	chaos_settle(c);
	for (;;)
		safe_halt();
}

/* Real mode, for a victim a SIPI starts: cli; 1: hlt; jmp 1b; and an iret
 * that every vector of an IVT at 0 points at (an NMI wakes that HLT). */
static void park_page_init(void)
{
	static const uint8_t code[] = { 0xfa, 0xf4, 0xeb, 0xfd, 0xcf };
	uint32_t ivt = ((PARK_PA >> 4) << 16) | 4;

	memcpy((void *)PARK_PA, code, sizeof(code));
	/* address 0 through asm: C may treat a store there as a null deref */
	for (uint64_t i = 0; i < 256; i++)
		asm volatile("movl %0, (%1)" : : "r"(ivt), "r"(i * 4) : "memory");
}

static bool all_advanced(uint64_t *last, unsigned *stalled)
{
	bool ok = true;

	for (unsigned i = 0; i < ncpus; i++) {
		uint64_t t = cc[i].total;

		if (i != victim && t == last[i]) {
			*stalled = i;
			ok = false;
		}
		last[i] = t;
	}
	return ok;
}

static void apic_dump(void)
{
	printf("chaos: cpu %u: LVTT %x TMICT %x TMCCT %x TDCR %x SVR %x TPR %x PPR %x IRR/ISR:",
	       smp_id(), lapic_read(APIC_LVTT), lapic_read(APIC_TMICT), lapic_read(APIC_TMCCT),
	       lapic_read(APIC_TDCR), lapic_read(APIC_SVR), lapic_read(APIC_TPR), lapic_read(0xa0));
	for (unsigned i = 0; i < 8; i++)
		printf(" %x/%x", lapic_read(APIC_IRR + 0x10 * i), lapic_read(APIC_ISR + 0x10 * i));
	printf(" IF %d\n", irqs_enabled());
}

/* After the chaos: a timer interrupt here, an IPI to every worker. */
static void check_irqchip(void)
{
	struct chaos_cpu *c = self();
	uint64_t end;

	lapic_timer_oneshot(VEC_TIMER, 1u << 16);
	irq_enable();
	end = tsc_deadline_ms(2000);
	while (!c->check_irqs && (int64_t)(rdtsc() - end) < 0)
		cpu_relax();
	irq_disable();
	if (!report(c->check_irqs > 0, "after the chaos the LAPIC timer still interrupts"))
		apic_dump();
	for (unsigned i = 1; i < ncpus; i++) {
		if (i == victim)
			continue;
		lapic_send_ipi(apic_id_of(i), VEC_CHECK);
		report(wait_count_ms(&cc[i].check_irqs, 1, 2000),
		       "after the chaos cpu %u takes an IPI", i);
	}
}

int main(int argc, char **argv)
{
	uint64_t last[MAX_CPUS] = { 0 }, t0, quarter, sum[NR_OPS] = { 0 };
	uint64_t total = 0, gp = 0, irqs = 0, nmis = 0;
	unsigned stalled = 0, bad_quarter = 0;
	const char *src;

	(void)argc, (void)argv;
	if (guest_opts_parse("chaos", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	for (unsigned i = 0; i < bootinfo()->nr_memmap; i++) {
		const struct boot_memmap_entry *e = &bootinfo()->memmap[i];

		if (e->type == BOOT_MEMMAP_RAM && e->addr + e->size > ram_top && e->addr < 1ull << 32)
			ram_top = e->addr + e->size;
	}
	tsc_hz_measured(&src);
	if (!seed)
		seed = rdtsc() | 1;
	ncpus = smp_init(5000);
	if (ncpus >= 3)
		victim = ncpus - 1;
	report_info("%u CPUs (victim %d), LAPIC in %s mode, %s, RAM top %lx, seed %lu, "
		    "%lu ms, TSC from %s", ncpus, victim < ncpus ? (int)victim : -1,
		    lapic_x2apic() ? "x2APIC" : "xAPIC", pvm_mode(), ram_top, seed,
		    duration_ms, src);
	park_page_init();
	/* 0xff too: a random LVT or IPI vector there is a real interrupt, which
	 * the dispatcher does not EOI (irq_handler does), blocking every other */
	for (unsigned v = VEC_FIRST; v < 256; v++)
		irq_set_handler(v, irq_handler);
	for (unsigned v = 0; v < VEC_FIRST; v++)
		irq_set_handler(v, v == 2 ? nmi_handler : (trap_handler_fn)fatal_handler);
	for (unsigned i = 0; i < ncpus; i++)
		cc[i].rng = seed * (2 * i + 1) ^ 0x9e3779b97f4a7c15ull;
	for (unsigned i = 1; i < ncpus; i++)
		on_cpu_async(i, worker, NULL);

	irq_disable();
	t0 = rdtsc();
	quarter = duration_ms * tsc_hz_measured(&src) / 4000;
	for (unsigned q = 1; q <= 4; q++) {
		while ((int64_t)(rdtsc() - (t0 + q * quarter)) < 0)
			for (unsigned i = 0; i < 64; i++)
				chaos_step(&cc[0]);
		if (!all_advanced(last, &stalled) && !bad_quarter)
			bad_quarter = q;
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	chaos_settle(&cc[0]);
	while (__atomic_exchange_n(&ioapic_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	ioapic_mask_all();
	serial_init();

	for (unsigned i = 1; i < ncpus; i++) {
		uint64_t end = tsc_deadline_ms(STOP_WAIT_MS);

		while (i != victim && !cc[i].done && (int64_t)(rdtsc() - end) < 0)
			cpu_relax();
	}
	for (unsigned i = 0; i < ncpus; i++) {
		struct chaos_cpu *c = &cc[i];

		printf("chaos: cpu %u: %lu ops (", i, c->total);
		for (unsigned k = 0; k < NR_OPS; k++) {
			printf("%s%s=%lu", k ? " " : "", op_names[k], c->ops[k]);
			sum[k] += c->ops[k];
		}
		printf("), msr_gp=%lu irqs=%lu nmis=%lu%s\n", c->msr_gp, c->irqs, c->nmis,
		       i == victim ? " (victim)" : "");
		total += c->total;
		gp += c->msr_gp;
		irqs += c->irqs;
		nmis += c->nmis;
	}
	printf("chaos: ops=%lu", total);
	for (unsigned k = 0; k < NR_OPS; k++)
		printf(" %s=%lu", op_names[k], sum[k]);
	printf(" msr_gp=%lu irqs=%lu nmis=%lu\n", gp, irqs, nmis);
	report(total > 0, "%lu chaos operations in %lu ms", total, duration_ms);
	report(!bad_quarter, "every vCPU but the victim advanced in every quarter of the run%s",
	       bad_quarter ? " (one did not)" : "");
	if (bad_quarter)
		report_info("cpu %u did not advance in quarter %u", stalled, bad_quarter);
	for (unsigned i = 1; i < ncpus; i++)
		if (i != victim)
			report(cc[i].done, "cpu %u stopped when asked", i);
	check_irqchip();
	return report_summary();
}
