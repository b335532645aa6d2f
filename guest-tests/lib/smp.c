/* AP bring-up and cross-CPU calls (see smp.h). */
#include "smp.h"

#include "atomic.h"
#include "bootinfo.h"
#include "exit.h"
#include "lapic.h"
#include "layout.h"
#include "printf.h"
#include "pvm.h"
#include "string.h"
#include "timing.h"
#include "traps.h"

/* A posted on_cpu() that is not done in this long is a broken machine. */
#define ON_CPU_TIMEOUT_MS 20000

extern char stacks[];
extern const char ap_trampoline_start[], ap_trampoline_end[];

static struct mp_info mp;
static volatile uint32_t online = 1;

struct cpu *cpu_struct(unsigned index)
{
	return (struct cpu *)(stacks + (uint64_t)index * STACK_SIZE);
}

unsigned smp_id(void)
{
	uint64_t rsp;

	asm volatile("mov %%rsp, %0" : "=r"(rsp));
	return ((struct cpu *)(rsp & ~(uint64_t)(STACK_SIZE - 1)))->index;
}

unsigned nr_cpus(void)
{
	return atomic_read(&online);
}

void smp_early_init(void)
{
	mptable_parse(&mp);
}

const struct mp_info *smp_mp_info(void)
{
	return &mp;
}

unsigned smp_expected_cpus(void)
{
	unsigned n;

	if (mp.found && mp.nr_cpus)
		return mp.nr_cpus;
	if (cmdline_uint("cpus", &n) && n >= 1)
		return n > MAX_CPUS ? MAX_CPUS : n;
	return 1;
}

static void wake_handler(struct trap_frame *f)
{
	(void)f;
}

static uint32_t expected_apic_id(unsigned i)
{
	return mp.found ? mp.apic_ids[i] : i;
}

unsigned smp_init(unsigned timeout_ms)
{
	unsigned want = smp_expected_cpus();
	uint32_t self = lapic_id();
	uint32_t sipi = APIC_DM_STARTUP | (AP_TRAMPOLINE_PA >> 12);
	uint64_t end;

	irq_set_handler(VEC_WAKE, wake_handler);
	if (want <= 1 || nr_cpus() > 1)
		return nr_cpus();
	memcpy((void *)AP_TRAMPOLINE_PA, ap_trampoline_start,
	       (size_t)(ap_trampoline_end - ap_trampoline_start));

	/*
	 * INIT puts each AP into wait-for-SIPI (firmware may have parked it
	 * in a HLT loop); the second SIPI is the MP spec's retry and must be
	 * ignored by an AP the first one already started.
	 */
	for (unsigned i = 0; i < want; i++)
		if (expected_apic_id(i) != self)
			lapic_send_ipi(expected_apic_id(i), APIC_DM_INIT | APIC_INT_ASSERT);
	delay_us(10000);
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned i = 0; i < want; i++)
			if (expected_apic_id(i) != self)
				lapic_send_ipi(expected_apic_id(i), sipi);
		delay_us(200);
	}

	end = tsc_deadline_ms(timeout_ms);
	while (nr_cpus() < want && (int64_t)(rdtsc() - end) < 0)
		cpu_relax();
	return nr_cpus();
}

_Noreturn void smp_ap_main(struct cpu *c)
{
	idt_load();
	lapic_cpu_init();
	c->apic_id = lapic_id();
	pvm_cpu_init(c->apic_id);
	atomic_inc(&online);
	for (;;) {
		void (*fn)(void *);

		irq_disable();
		if (atomic_read(&c->req) == c->done) {
			safe_halt();   /* woken by VEC_WAKE (or a test's IPI) */
			continue;
		}
		fn = c->fn;
		irq_enable();
		fn(c->arg);
		irq_disable();
		atomic_set(&c->done, c->req);
	}
}

void on_cpu_wait(unsigned cpu)
{
	struct cpu *c = cpu_struct(cpu);
	uint64_t end = tsc_deadline_ms(ON_CPU_TIMEOUT_MS);

	while (atomic_read(&c->done) != atomic_read(&c->req)) {
		if ((int64_t)(rdtsc() - end) >= 0) {
			printf("smp: cpu %u did not finish its on_cpu() call\n", cpu);
			guest_exit(GUEST_EXIT_ABORT);
		}
		cpu_relax();
	}
}

void on_cpu_async(unsigned cpu, void (*fn)(void *), void *arg)
{
	struct cpu *c = cpu_struct(cpu);

	if (cpu >= nr_cpus()) {
		printf("smp: on_cpu(%u): only %u CPUs online\n", cpu, nr_cpus());
		guest_exit(GUEST_EXIT_ABORT);
	}
	if (cpu == smp_id()) {
		fn(arg);
		return;
	}
	on_cpu_wait(cpu);
	c->fn = fn;
	c->arg = arg;
	atomic_set(&c->req, c->req + 1);
	lapic_send_ipi(c->apic_id, APIC_DM_FIXED | VEC_WAKE);
}

void on_cpu(unsigned cpu, void (*fn)(void *), void *arg)
{
	on_cpu_async(cpu, fn, arg);
	on_cpu_wait(cpu);
}
