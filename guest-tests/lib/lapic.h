/*
 * Local APIC access in either mode: x2APIC through MSRs 0x800-0x8ff when
 * CPUID offers it (unless the command line says "xapic"), else xAPIC MMIO
 * at the base IA32_APIC_BASE names (0xfee00000 by default). Registers are
 * named by their xAPIC offset in both modes; in x2APIC mode offset r is
 * MSR 0x800 + (r >> 4).
 */
#ifndef GUEST_LAPIC_H
#define GUEST_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#define APIC_ID         0x020
#define APIC_LVR        0x030
#define APIC_TPR        0x080
#define APIC_EOI        0x0b0
#define APIC_SVR        0x0f0
#define APIC_ISR        0x100
#define APIC_IRR        0x200
#define APIC_ESR        0x280
#define APIC_ICR        0x300
#define APIC_ICR2       0x310
#define APIC_LVTT       0x320
#define APIC_LVT0       0x350
#define APIC_LVT1       0x360
#define APIC_LVTERR     0x370
#define APIC_TMICT      0x380
#define APIC_TMCCT      0x390
#define APIC_TDCR       0x3e0

#define APIC_SVR_ENABLE        0x100
#define APIC_LVT_MASKED        (1u << 16)
#define APIC_LVT_TIMER_ONESHOT   (0u << 17)
#define APIC_LVT_TIMER_PERIODIC  (1u << 17)
#define APIC_LVT_TIMER_TSCDEADLINE (2u << 17)
#define APIC_TDCR_DIV1         0xb

/* ICR low word */
#define APIC_DM_FIXED          0x000
#define APIC_DM_NMI            0x400
#define APIC_DM_INIT           0x500
#define APIC_DM_STARTUP        0x600
#define APIC_ICR_BUSY          (1u << 12)
#define APIC_INT_ASSERT        (1u << 14)
#define APIC_DEST_SELF         (1u << 18)
#define APIC_DEST_ALL          (2u << 18)
#define APIC_DEST_ALLBUT       (3u << 18)

/* Boot CPU: pick the mode for all CPUs. Then lapic_cpu_init() on each. */
void lapic_init(bool allow_x2apic);
/* Enable this CPU's APIC in the chosen mode, TPR 0, all LVTs masked. */
void lapic_cpu_init(void);
/*
 * Boot CPU, before the first lapic_cpu_init: use PV EOI (KVM's
 * MSR_KVM_PV_EOI_EN, which lagvisor's own LAPIC speaks too) where CPUID
 * offers it and `allow` (command line: no_pv_eoi turns it off). Then
 * lapic_cpu_init registers each CPU's flag and lapic_eoi ends an
 * interrupt by clearing it when the hypervisor set it: no exit.
 */
void lapic_pv_eoi_init(bool allow);
bool lapic_pv_eoi(void);

bool lapic_x2apic(void);
uint64_t lapic_base_pa(void);   /* xAPIC MMIO base */

uint32_t lapic_read(unsigned reg);
void lapic_write(unsigned reg, uint32_t val);
uint32_t lapic_id(void);
void lapic_eoi(void);

/*
 * Send an IPI: `icr` is the ICR low word (vector | delivery mode | level |
 * shorthand). `dest` is the destination APIC ID (ignored with a shorthand).
 * Returns 0, or -1 if an xAPIC ICR stayed busy (delivery never completed).
 */
int lapic_send_ipi(uint32_t dest, uint32_t icr);

#endif

/*
 * LAPIC timer (divide by 1). Its rate is not architecturally known, so
 * lapic_timer_calibrate() measures it against the TSC by polling the
 * current-count register: returns TSC cycles per 2^16 timer ticks (16.16
 * fixed point of cycles per tick), or 0 if the count never moved.
 */
uint64_t lapic_timer_calibrate(void);
void lapic_timer_oneshot(uint8_t vector, uint32_t ticks);
void lapic_timer_periodic(uint8_t vector, uint32_t ticks);
void lapic_timer_stop(void);
