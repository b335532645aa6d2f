/*
 * PV EOI with --irqchip user: KVM's MSR_KVM_PV_EOI_EN protocol, kept by
 * lagvisor because the LAPIC is ours (KVM never sees the MSR: it is
 * filtered). The guest registers a byte of its memory; while bit 0 of
 * that byte is set, the guest may end the interrupt in service by
 * clearing the bit instead of writing the EOI register, which with our
 * LAPIC is an exit to userspace (~1-2 us on VMX, ~55 us of CPU more on a PVM
 * host). A Linux guest uses it when CPUID 0x40000001 has KVM_FEATURE_PV_EOI.
 *
 * KVM's rule for when the bit may be set (and so ours): only while the
 * vCPU is in the guest, and only when an EOI would have no effect beyond
 * clearing the highest ISR bit: nothing is requested (an EOI must then
 * come to us, which delivers the next) and the interrupt in service is
 * edge-triggered (a level one's EOI goes on to the IOAPIC). Set before
 * every entry where that holds (pv_eoi_arm), taken back after every exit
 * (pv_eoi_disarm): if the guest cleared it, the EOI happened, and the
 * caller performs it on the LAPIC before anything else looks at it.
 *
 * One vCPU thread owns each struct; the byte belongs to the guest (it
 * may write anything there: only bit 0 is read, the rest is left alone).
 */
#ifndef LAGVISOR_VMM_X86_PV_EOI_H
#define LAGVISOR_VMM_X86_PV_EOI_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/guest_mem.h"

#define MSR_KVM_PV_EOI_EN 0x4b564d04u

struct pv_eoi {
	uint64_t msr;        /* what the guest wrote (reads back) */
	uint8_t *flag;       /* the registered byte in guest RAM, or NULL */
	bool armed;          /* bit 0 set for the current entry */
	uint64_t nr_eois;    /* EOIs the guest made through the flag */
};

/*
 * Guest WRMSR: bit 0 enables, the rest is the byte's guest-physical
 * address, 4-byte aligned (KVM's rule; bit 1 set is a #GP). An address
 * outside RAM is a #GP as well (KVM's cache init fails there). A write
 * while armed cannot happen (an exit disarms first). Returns 0 or -EINVAL.
 */
int pv_eoi_msr_write(struct pv_eoi *p, const struct guest_mem *mem, uint64_t val);
uint64_t pv_eoi_msr_read(const struct pv_eoi *p);

/* INIT and system reset: off, as KVM's LAPIC reset leaves it. */
void pv_eoi_reset(struct pv_eoi *p);

/* Before an entry: set the bit if the LAPIC says an EOI may be deferred
 * (lapic_eoi_deferrable) and the guest registered a byte. */
void pv_eoi_arm(struct pv_eoi *p, bool deferrable);

/* After an exit: clear the bit; true if the guest had cleared it, i.e.
 * made an EOI the caller must now perform (lapic_eoi). */
bool pv_eoi_disarm(struct pv_eoi *p);

#endif
