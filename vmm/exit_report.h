/*
 * One-line descriptions of the KVM exits that stop a VM, built from the
 * kvm_run fields alone so that they can be tested without KVM.
 */
#ifndef LAGVISOR_VMM_EXIT_REPORT_H
#define LAGVISOR_VMM_EXIT_REPORT_H

#include <linux/kvm.h>
#include <stddef.h>
#include <stdint.h>

/* The longest x86 instruction. */
#define X86_MAX_INSN_BYTES 15

/* "IO", "MMIO", "SHUTDOWN", ...; NULL for reasons lagvisor has no name for. */
const char *exit_reason_name(uint32_t reason);

/*
 * Instruction bytes KVM put into an emulation-failure exit (only when
 * ndata covers them and flags says they are valid): copies them to out and
 * returns how many, else 0 (the caller reads guest memory at RIP instead).
 */
unsigned exit_emulation_bytes(const struct kvm_run *run,
			      uint8_t out[X86_MAX_INSN_BYTES]);

/*
 * The message for KVM_EXIT_INTERNAL_ERROR on vCPU `vcpu` at `rip`. For an
 * emulation failure it names the instruction bytes (insn_len 0: unknown)
 * and says that this host's KVM cannot emulate them; other suberrors are
 * named with their data words.
 */
void exit_format_internal(char *buf, size_t len, unsigned vcpu,
			  const struct kvm_run *run, uint64_t rip,
			  const uint8_t *insn, unsigned insn_len);

#endif
