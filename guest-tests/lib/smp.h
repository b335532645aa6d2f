/*
 * CPUs: the boot CPU is index 0; smp_init() starts the APs the MP table
 * lists (INIT-SIPI-SIPI through the real-mode trampoline) and they get
 * indexes 1.. in the order they arrive. An idle AP sleeps in HLT; on_cpu()
 * hands it a function and wakes it with an IPI (VEC_WAKE).
 */
#ifndef GUEST_SMP_H
#define GUEST_SMP_H

#include <stdbool.h>
#include <stdint.h>

#include "mptable.h"

/* Per-CPU state at the bottom of each CPU's stack (see layout.h). */
struct cpu {
	uint32_t index;
	uint32_t apic_id;
	void (*volatile fn)(void *);
	void *volatile arg;
	volatile uint32_t req;    /* on_cpu requests posted */
	volatile uint32_t done;   /* ... and completed */
	volatile uint8_t *vif;    /* native mode: this CPU's VIF page (pvm.c) */
};

unsigned smp_id(void);
struct cpu *cpu_struct(unsigned index);
/* CPUs online (1 before smp_init). */
unsigned nr_cpus(void);

/* Boot CPU, early: read the MP table before low memory is reused. */
void smp_early_init(void);
const struct mp_info *smp_mp_info(void);
/*
 * CPUs the machine says it has: the MP table's count, else cpus=N from
 * the command line, else 1.
 */
unsigned smp_expected_cpus(void);

/*
 * Start every AP and wait (up to timeout_ms) for all to check in.
 * Returns the number of CPUs online, boot CPU included.
 */
unsigned smp_init(unsigned timeout_ms);

/* Run fn(arg) on `cpu` (directly when it is the caller); wait for it. */
void on_cpu(unsigned cpu, void (*fn)(void *), void *arg);
/* Post fn(arg) to `cpu` and return; on_cpu_wait() waits for completion. */
void on_cpu_async(unsigned cpu, void (*fn)(void *), void *arg);
void on_cpu_wait(unsigned cpu);

/* AP side: entered from cpu_entry() with the struct cpu filled. */
_Noreturn void smp_ap_main(struct cpu *c);

#endif
