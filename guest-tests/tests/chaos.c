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
 *
 * This file runs the chaos and checks the outcome; the operations are in
 * tests/chaos/ (chaos.h says which file holds which).
 */
#include "chaos/chaos.h"
#include "options.h"
#include "pvm.h"
#include "serial.h"

#define VEC_TIMER       0x41    /* the after-chaos check's timer */
#define VEC_CHECK       0x42    /* the after-chaos check's IPI */
#define STORM_IRQS      256     /* interrupts in one window: mask everything */
#define STOP_WAIT_MS    3000

static const char *const op_names[NR_OPS] = { "pio", "mmio", "msr", "ipi", "timer", "irq" };

static uint64_t duration_ms = 3000, seed, op_mask = (1u << NR_OPS) - 1, halt_nudge_ok;
static const struct guest_opt opts[] = {
	{ "duration_ms", &duration_ms, 1, 3600000, "how long the chaos lasts, ms" },
	{ "seed", &seed, 0, UINT64_MAX, "random seed (0: from the TSC)" },
	{ "ops", &op_mask, 1, (1u << NR_OPS) - 1, "bit mask of pio mmio msr ipi timer irq" },
	{ "halt_nudge_ok", &halt_nudge_ok, 0, 1,
	  "1: a worker whose halt under its one-shot outlives the stop may be woken by an NMI" },
};

struct chaos_cpu chaos_cpus[MAX_CPUS];
uint8_t chaos_scratch[MAX_CPUS][4096] __attribute__((aligned(4096)));
unsigned chaos_ncpus, chaos_victim = ~0u;
uint64_t chaos_ram_top;
uint32_t chaos_ioapic_lock;
static volatile bool stop;

static struct chaos_cpu *self(void)
{
	return &chaos_cpus[smp_id()];
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
	chaos_lapic_mask_all();
	chaos_apic_write(c, APIC_TPR, 0xf0);
	if (!__atomic_exchange_n(&chaos_ioapic_lock, 1, __ATOMIC_ACQUIRE)) {
		chaos_ioapic_mask_all();
		__atomic_store_n(&chaos_ioapic_lock, 0, __ATOMIC_RELEASE);
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

static void apic_dump(void);

/* Take what is pending: a short window with IF set, sometimes a halt
 * under a short one-shot (with the APIC put back so that it fires). */
static void op_irq(struct chaos_cpu *c)
{
	c->burst = 0;
	if (rnd_below(c, 8) == 0) {
		chaos_apic_write(c, APIC_SVR, APIC_SVR_ENABLE | 0xff);
		chaos_apic_write(c, APIC_TPR, 0);
		chaos_apic_write(c, APIC_TDCR, APIC_TDCR_DIV1);
		chaos_apic_write(c, APIC_LVTT, VEC_FIRST + 1);
		chaos_apic_write(c, APIC_TMICT, 1000 + rnd_below(c, 100000));
		c->halted = true;
		safe_halt();
		c->halted = false;
		if (c->nudged)
			apic_dump();
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
	case OP_PIO: chaos_op_pio(c); break;
	case OP_MMIO: chaos_op_mmio(c); break;
	case OP_MSR: chaos_op_msr(c); break;
	case OP_IPI: c->ops[OP_IPI]++; chaos_send_ipi(c); break;
	case OP_TIMER: chaos_op_timer(c); break;
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

	for (unsigned i = 0; i < chaos_ncpus; i++) {
		uint64_t t = chaos_cpus[i].total;

		if (i != chaos_victim && t == last[i]) {
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
	for (unsigned i = 1; i < chaos_ncpus; i++) {
		if (i == chaos_victim)
			continue;
		lapic_send_ipi(chaos_apic_id(i), VEC_CHECK);
		report(wait_count_ms(&chaos_cpus[i].check_irqs, 1, 2000),
		       "after the chaos cpu %u takes an IPI", i);
	}
}

int main(int argc, char **argv)
{
	uint64_t last[MAX_CPUS] = { 0 }, t0, quarter, sum[NR_OPS] = { 0 };
	uint8_t stuck[MAX_CPUS] = { 0 };     /* 1: did not stop, 2: ... halted in op_irq */
	uint64_t total = 0, gp = 0, irqs = 0, nmis = 0;
	unsigned stalled = 0, bad_quarter = 0;
	const char *src;

	(void)argc, (void)argv;
	if (guest_opts_parse("chaos", opts, sizeof(opts) / sizeof(opts[0])))
		return report_summary();
	for (unsigned i = 0; i < bootinfo()->nr_memmap; i++) {
		const struct boot_memmap_entry *e = &bootinfo()->memmap[i];

		if (e->type == BOOT_MEMMAP_RAM && e->addr + e->size > chaos_ram_top && e->addr < 1ull << 32)
			chaos_ram_top = e->addr + e->size;
	}
	tsc_hz_measured(&src);
	if (!seed)
		seed = rdtsc() | 1;
	chaos_ncpus = smp_init(5000);
	if (chaos_ncpus >= 3)
		chaos_victim = chaos_ncpus - 1;
	report_info("%u CPUs (victim %d), LAPIC in %s mode, %s, RAM top %lx, seed %lu, "
		    "%lu ms, TSC from %s", chaos_ncpus,
		    chaos_victim < chaos_ncpus ? (int)chaos_victim : -1,
		    lapic_x2apic() ? "x2APIC" : "xAPIC", pvm_mode(), chaos_ram_top, seed,
		    duration_ms, src);
	park_page_init();
	/* 0xff too: a random LVT or IPI vector there is a real interrupt, which
	 * the dispatcher does not EOI (irq_handler does), blocking every other */
	for (unsigned v = VEC_FIRST; v < 256; v++)
		irq_set_handler(v, irq_handler);
	for (unsigned v = 0; v < VEC_FIRST; v++)
		irq_set_handler(v, v == 2 ? nmi_handler : (trap_handler_fn)fatal_handler);
	for (unsigned i = 0; i < chaos_ncpus; i++)
		chaos_cpus[i].rng = seed * (2 * i + 1) ^ 0x9e3779b97f4a7c15ull;
	for (unsigned i = 1; i < chaos_ncpus; i++)
		on_cpu_async(i, worker, NULL);

	irq_disable();
	t0 = rdtsc();
	quarter = duration_ms * tsc_hz_measured(&src) / 4000;
	for (unsigned q = 1; q <= 4; q++) {
		while ((int64_t)(rdtsc() - (t0 + q * quarter)) < 0)
			for (unsigned i = 0; i < 64; i++)
				chaos_step(&chaos_cpus[0]);
		if (!all_advanced(last, &stalled) && !bad_quarter)
			bad_quarter = q;
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	chaos_settle(&chaos_cpus[0]);
	while (__atomic_exchange_n(&chaos_ioapic_lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
	chaos_ioapic_mask_all();
	serial_init();

	for (unsigned i = 1; i < chaos_ncpus; i++) {
		uint64_t end = tsc_deadline_ms(STOP_WAIT_MS);

		while (i != chaos_victim && !chaos_cpus[i].done && (int64_t)(rdtsc() - end) < 0)
			cpu_relax();
	}
	/* A worker that did not stop: note where it was, then wake it with an
	 * NMI (which no TPR, ISR or mask holds back) so that what it was
	 * stuck on shows (it dumps its LAPIC if the NMI ended op_irq's halt). */
	for (unsigned i = 1; i < chaos_ncpus; i++) {
		struct chaos_cpu *c = &chaos_cpus[i];
		uint64_t end;

		if (i == chaos_victim || c->done)
			continue;
		stuck[i] = c->halted ? 2 : 1;
		report_info("cpu %u did not stop within %u ms: %s; its last op %s, last MSR "
			    "written %x = %lx; seed %lu", i, STOP_WAIT_MS,
			    c->halted ? "halted under its armed one-shot timer" : "not halted",
			    op_names[c->last_op], c->last_msr, c->last_val, seed);
		c->nudged = true;
		lapic_send_ipi(chaos_apic_id(i), APIC_DM_NMI);
		end = tsc_deadline_ms(1000);
		while (!c->done && (int64_t)(rdtsc() - end) < 0)
			cpu_relax();
	}
	for (unsigned i = 0; i < chaos_ncpus; i++) {
		struct chaos_cpu *c = &chaos_cpus[i];

		printf("chaos: cpu %u: %lu ops (", i, c->total);
		for (unsigned k = 0; k < NR_OPS; k++) {
			printf("%s%s=%lu", k ? " " : "", op_names[k], c->ops[k]);
			sum[k] += c->ops[k];
		}
		printf("), msr_gp=%lu irqs=%lu nmis=%lu%s\n", c->msr_gp, c->irqs, c->nmis,
		       i == chaos_victim ? " (victim)" : "");
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
	for (unsigned i = 1; i < chaos_ncpus; i++)
		if (i != chaos_victim)
			report(chaos_cpus[i].done && (!stuck[i] || (stuck[i] == 2 && halt_nudge_ok)),
			       "cpu %u stopped when asked%s", i, !stuck[i] ? "" :
			       stuck[i] == 1 ? " (not halted: it stopped running)" :
			       halt_nudge_ok ? " (after an NMI ended its halt: allowed, chaos.halt_nudge_ok=1)"
					     : " (its timer did not end its halt; an NMI was needed)");
	check_irqchip();
	return report_summary();
}
