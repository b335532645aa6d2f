/*
 * Native execution on a PVM-style KVM backend (see pvm.c for the ABI).
 *
 * The VMM tells the guest on its command line:
 *   pvm.vif=GPA  the VMM registered a VIF page for each vCPU, the one of
 *                APIC ID n at GPA + n * 4096 (lagvisor);
 *   pvm          register our own page per CPU with the hypercall (any VMM
 *                on such a backend, e.g. QEMU -accel kvm).
 * Neither word: interrupts are the real IF (cli/sti), as on any x86.
 */
#ifndef GUEST_PVM_H
#define GUEST_PVM_H

#include <stdbool.h>
#include <stdint.h>

/* Each CPU, once its APIC ID is known and before it enables interrupts. */
void pvm_cpu_init(uint32_t apic_id);
/* "native (VIF page at ...)" or "ordinary", for the test's log. */
const char *pvm_mode(void);

/*
 * The enable-then-halt window (pvm.c): interrupts that arrived inside it
 * and had the HLT skipped (hits), or, with pvm_halt_fixup cleared (tests
 * only: to see what the backend does alone), were returned into it (kept).
 */
extern bool pvm_halt_fixup;
extern uint64_t pvm_halt_window_hits, pvm_halt_window_kept;

#endif
