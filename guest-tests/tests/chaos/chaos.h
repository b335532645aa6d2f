/*
 * The chaos guest's parts (tests/chaos.c is the guest: its run, its
 * interrupt handlers and its checks; this folder holds what it throws at
 * the VMM): apic.c the LAPIC registers, IPIs and timers, io.c ports and
 * MMIO (the IOAPIC among it), msr.c the MSRs. Shared here: the per-vCPU
 * state, the run's facts main() finds out, and the random numbers.
 */
#ifndef CHAOS_CHAOS_H
#define CHAOS_CHAOS_H

#include "guest.h"

#define VEC_FIRST       0x20
#define PARK_PA         0x9000  /* below the image, above the AP trampoline */
#define IOAPIC_PA       0xfec00000ull

enum { OP_PIO, OP_MMIO, OP_MSR, OP_IPI, OP_TIMER, OP_IRQ, NR_OPS };

struct chaos_cpu {
	uint64_t rng;
	uint64_t ops[NR_OPS];
	uint64_t msr_gp, irqs, nmis;
	volatile uint64_t total;
	volatile uint32_t burst;
	volatile uint32_t check_irqs;
	volatile bool done;
	volatile bool halted;      /* in op_irq's halt under its one-shot */
	volatile bool nudged;      /* woken by the stop's NMI nudge */
	/* the last write, printed if the guest dies of an exception */
	uint32_t last_op, last_msr;
	uint64_t last_val;
};

extern struct chaos_cpu chaos_cpus[MAX_CPUS];
/* per vCPU: rep ins/outs buffers, and the page MSRs that take a GPA get */
extern uint8_t chaos_scratch[MAX_CPUS][4096];
extern unsigned chaos_ncpus, chaos_victim;     /* victim: ~0u if none */
extern uint64_t chaos_ram_top;                 /* end of RAM below 4 GiB */
/* the IOAPIC's select/window pair is one per VM: held across a pair */
extern uint32_t chaos_ioapic_lock;

static inline uint64_t rnd(struct chaos_cpu *c)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return c->rng;
}

static inline uint32_t rnd_below(struct chaos_cpu *c, uint32_t n)
{
	return (uint32_t)(rnd(c) % n);
}

/* Mostly small numbers, sometimes anything: counts, offsets, deadlines. */
static inline uint64_t rnd_value(struct chaos_cpu *c)
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

static inline uint32_t chaos_apic_id(unsigned cpu)
{
	return cpu_struct(cpu)->apic_id;
}

/* apic.c */
uint32_t chaos_safe_entry(uint32_t v);
void chaos_send_ipi(struct chaos_cpu *c);
void chaos_apic_write(struct chaos_cpu *c, unsigned reg, uint32_t v);
void chaos_lapic_mask_all(void);
void chaos_op_timer(struct chaos_cpu *c);

/* io.c */
void chaos_op_pio(struct chaos_cpu *c);
void chaos_op_mmio(struct chaos_cpu *c);
void chaos_ioapic_mask_all(void);

/* msr.c */
void chaos_op_msr(struct chaos_cpu *c);

#endif
