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
/* Wait until *p >= want (an interrupt handler's counter); false when `ms`
 * passed first. */
bool wait_count_ms(const volatile uint32_t *p, uint32_t want, uint64_t ms);

/*
 * The TSC rate for measurements that print microseconds (wakebench, hog),
 * best source first:
 *   1. tsc_khz=N on the command line (the user knows better);
 *   2. CPUID (leaf 0x40000010, 0x15 or 0x16, as tsc_hz());
 *   3. the LAPIC timer measured against the TSC (lapic_timer_calibrate()),
 *      taking the timer to count at 1 GHz with divide-by-1, the rate of
 *      KVM's, QEMU's and lagvisor's emulated APIC timers (the SDM leaves the
 *      bus clock open, so this is a convention, not architecture); error
 *      about 1 % from polling the current count;
 *   4. the 3 GHz guess.
 * *source names the one used (static string). Boot CPU, LAPIC timer idle;
 * the first call measures, later calls return the cached value.
 */
uint64_t tsc_hz_measured(const char **source);

#endif
