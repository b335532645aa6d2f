/*
 * The x86 instructions a test guest uses, as inline helpers: port and MMIO
 * access, MSRs, TSC, CPUID, interrupt flag, HLT. Nothing here touches the
 * FPU/SSE, and there are no hypercalls or int3 (see ARCHITECTURE.md §6:
 * the emulating KVM on our hosts cannot run them).
 */
#ifndef GUEST_PROCESSOR_H
#define GUEST_PROCESSOR_H

#include <stdbool.h>
#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outw(uint16_t port, uint16_t v)
{
	asm volatile("outw %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t v;

	asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t v;

	asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* MMIO: physical == virtual (identity map of the first 4 GiB). */
static inline uint32_t mmio_read32(uint64_t pa)
{
	return *(volatile uint32_t *)pa;
}

static inline void mmio_write32(uint64_t pa, uint32_t v)
{
	*(volatile uint32_t *)pa = v;
}

static inline uint8_t mmio_read8(uint64_t pa)
{
	return *(volatile uint8_t *)pa;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr" : : "c"(msr), "a"((uint32_t)v),
		     "d"((uint32_t)(v >> 32)) : "memory");
}

/*
 * MSR accesses that may #GP (an MSR the CPU lacks, a reserved bit): the
 * instruction's address goes into .extable with where to resume, and
 * trap_dispatch resumes there instead of aborting the guest. 0, or -1 when
 * the access faulted.
 */
#define EXTABLE_ENTRY(insn, fixup) \
	".pushsection .extable, \"a\"\n.balign 8\n.quad " #insn ", " #fixup "\n.popsection\n"

static inline int rdmsr_safe(uint32_t msr, uint64_t *val)
{
	uint32_t lo = 0, hi = 0;
	int err = 0;

	asm volatile("1: rdmsr\n"
		     "2:\n"
		     ".pushsection .text.fixup, \"ax\"\n"
		     "3: movl $-1, %2\n"
		     "jmp 2b\n"
		     ".popsection\n"
		     EXTABLE_ENTRY(1b, 3b)
		     : "+a"(lo), "+d"(hi), "+r"(err) : "c"(msr));
	*val = ((uint64_t)hi << 32) | lo;
	return err;
}

static inline int wrmsr_safe(uint32_t msr, uint64_t v)
{
	int err = 0;

	asm volatile("1: wrmsr\n"
		     "2:\n"
		     ".pushsection .text.fixup, \"ax\"\n"
		     "3: movl $-1, %0\n"
		     "jmp 2b\n"
		     ".popsection\n"
		     EXTABLE_ENTRY(1b, 3b)
		     : "+r"(err) : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
		     : "memory");
	return err;
}

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

struct cpuid_regs {
	uint32_t a, b, c, d;
};

static inline struct cpuid_regs cpuid_count(uint32_t leaf, uint32_t sub)
{
	struct cpuid_regs r;

	asm volatile("cpuid" : "=a"(r.a), "=b"(r.b), "=c"(r.c), "=d"(r.d)
		     : "a"(leaf), "c"(sub));
	return r;
}

static inline struct cpuid_regs cpuid(uint32_t leaf)
{
	return cpuid_count(leaf, 0);
}

/*
 * The interrupt flag: the real IF, or in native mode on a PVM backend the
 * virtual one in this CPU's VIF page (pvm.c), where a real cli/sti in the
 * guest's hardware ring 3 would not control delivery.
 */
extern bool pvm_native;
void pvm_irq_enable(void);
void pvm_irq_disable(void);
bool pvm_irqs_enabled(void);
void pvm_safe_halt(void);

static inline void irq_enable(void)
{
	if (pvm_native)
		pvm_irq_enable();
	else
		asm volatile("sti" : : : "memory");
}

static inline void irq_disable(void)
{
	if (pvm_native)
		pvm_irq_disable();
	else
		asm volatile("cli" : : : "memory");
}

static inline bool irqs_enabled(void)
{
	uint64_t flags;

	if (pvm_native)
		return pvm_irqs_enabled();
	asm volatile("pushfq; popq %0" : "=r"(flags));
	return flags & (1 << 9);
}

/* Save IF (as RFLAGS bit 9) and disable; restore with irq_restore(). */
static inline uint64_t irq_save(void)
{
	uint64_t flags = irqs_enabled() ? 1 << 9 : 0;

	irq_disable();
	return flags;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & (1 << 9))
		irq_enable();
}

/*
 * Enable interrupts and halt, without losing an interrupt that became
 * pending after the caller's last check. On hardware STI's one-instruction
 * interrupt shadow covers the HLT, so such an interrupt wakes the HLT
 * instead of being taken just before it; native mode has no shadow and
 * closes the window in pvm_safe_halt (see pvm.c).
 */
static inline void safe_halt(void)
{
	if (pvm_native)
		pvm_safe_halt();
	else
		asm volatile("sti; hlt" : : : "memory");
}

static inline void cpu_relax(void)
{
	asm volatile("pause" : : : "memory");
}

static inline void barrier(void)
{
	asm volatile("" : : : "memory");
}

static inline uint64_t read_cr2(void)
{
	uint64_t v;

	asm volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

/* In native mode HLT with interrupts off returns at once: then it spins. */
_Noreturn static inline void halt_forever(void)
{
	irq_disable();
	for (;;)
		asm volatile("hlt");
}

/* CPUID feature bits used by the library and tests. */
#define CPUID_1_ECX_X2APIC       (1u << 21)
#define CPUID_1_ECX_TSC_DEADLINE (1u << 24)
#define CPUID_1_ECX_HYPERVISOR   (1u << 31)

#define MSR_IA32_APIC_BASE    0x1b
#define MSR_IA32_TSC_DEADLINE 0x6e0

#endif
