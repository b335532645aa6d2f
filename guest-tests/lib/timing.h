/*
 * Coarse time from the TSC. The TSC rate comes from CPUID when the VMM or
 * CPU states it (hypervisor leaf 0x40000010, leaf 0x15, leaf 0x16); else
 * it is assumed to be 3 GHz. Only for timeouts and human-readable numbers:
 * tests that measure time calibrate against the LAPIC timer themselves.
 */
#ifndef GUEST_TIMING_H
#define GUEST_TIMING_H

#include <stdbool.h>
#include <stdint.h>

uint64_t tsc_hz(void);
bool tsc_hz_known(void);    /* false: tsc_hz() is the 3 GHz guess */
void delay_us(uint64_t us);
/* The TSC value `ms` milliseconds from now. */
uint64_t tsc_deadline_ms(uint64_t ms);

#endif
