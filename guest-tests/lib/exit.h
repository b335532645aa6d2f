/*
 * How a test guest ends: one write to the debug-exit port.
 *
 * The port is QEMU isa-debug-exit compatible: writing value v makes the VMM
 * exit with status (v << 1) | 1. Passing is a distinctive value, never 0:
 * v = 0 gives status 1, which is also what a VMM returns for its own errors,
 * so a plain "exit 1" can never be mistaken for a pass.
 *
 *   GUEST_EXIT_PASS  0x2a -> VMM exit status 85  (every report passed)
 *   GUEST_EXIT_FAIL  0x0d -> VMM exit status 27  (a report failed)
 *   GUEST_EXIT_ABORT 0x0e -> VMM exit status 29  (unexpected exception or
 *                                                 interrupt, bad boot state)
 *
 * guest-tests/run-guest reads these three defines from this file.
 */
#ifndef GUEST_EXIT_H
#define GUEST_EXIT_H

#define GUEST_EXIT_PORT   0xf4
#define GUEST_EXIT_PASS   0x2a
#define GUEST_EXIT_FAIL   0x0d
#define GUEST_EXIT_ABORT  0x0e
#define GUEST_EXIT_STATUS(v)  ((((v) << 1) | 1) & 0xff)

#ifndef __ASSEMBLER__
/* Write `value` to the debug-exit port; if the VMM lets us continue, park. */
_Noreturn void guest_exit(unsigned value);

/* 0 -> GUEST_EXIT_PASS, anything else -> GUEST_EXIT_FAIL. */
_Noreturn void exit(int code);
#endif

#endif
