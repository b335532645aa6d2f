/*
 * IDT and interrupt dispatch. Exceptions without a handler print the vector,
 * RIP and error code and end the guest with GUEST_EXIT_ABORT, unless the
 * faulting instruction is in .extable (rdmsr_safe/wrmsr_safe in
 * processor.h), which resumes at its fixup; so do
 * interrupts on vectors nobody registered. Interrupt handlers (vectors >= 32)
 * are acknowledged (LAPIC EOI) by the dispatcher after they return;
 * the spurious vector is dropped without EOI, as the SDM says.
 */
#ifndef GUEST_TRAPS_H
#define GUEST_TRAPS_H

#include <stdint.h>

/* Saved state, in the order lib/entry.S pushes it (lowest address first). */
struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss;
};

typedef void (*trap_handler_fn)(struct trap_frame *f);

/* Build the IDT once (boot CPU), then load it on every CPU. */
void idt_init(void);
void idt_load(void);

/* Install (or with NULL remove) the handler of `vector`, for all CPUs. */
void irq_set_handler(unsigned vector, trap_handler_fn fn);

#endif
