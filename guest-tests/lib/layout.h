/*
 * Fixed facts of the test-guest image shared by the assembly entry stub and
 * the C library: per-CPU stacks, segment selectors, the AP trampoline page.
 */
#ifndef GUEST_LAYOUT_H
#define GUEST_LAYOUT_H

/*
 * Each CPU owns one STACK_SIZE-aligned stack; its struct cpu sits at the
 * lowest address of that stack, so "which CPU am I" is rsp rounded down,
 * with no MSR (GS base) or APIC read on the way.
 */
#define STACK_SHIFT   14
#define STACK_SIZE    (1 << STACK_SHIFT)
#define MAX_CPUS      32

/* GDT selectors (lib/entry.S). */
#define SEL_CODE64    0x08
#define SEL_DATA      0x10
#define SEL_CODE32    0x18

/*
 * Real-mode AP entry: a free RAM page below 1 MiB; the SIPI vector is its
 * page number. Everything that lives in low memory (PVH start info, command
 * line, MP table) is copied out before the trampoline is written there.
 */
#define AP_TRAMPOLINE_PA  0x8000

/* Vectors the library itself uses. */
#define VEC_WAKE      0xf0   /* on_cpu(): wake an AP out of HLT */
#define VEC_SPURIOUS  0xff

#endif
