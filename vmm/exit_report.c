#include "vmm/exit_report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "common/compiler.h"

const char *exit_reason_name(uint32_t reason)
{
	static const char *const names[] = {
		[KVM_EXIT_UNKNOWN] = "UNKNOWN",
		[KVM_EXIT_EXCEPTION] = "EXCEPTION",
		[KVM_EXIT_IO] = "IO",
		[KVM_EXIT_HYPERCALL] = "HYPERCALL",
		[KVM_EXIT_DEBUG] = "DEBUG",
		[KVM_EXIT_HLT] = "HLT",
		[KVM_EXIT_MMIO] = "MMIO",
		[KVM_EXIT_IRQ_WINDOW_OPEN] = "IRQ_WINDOW_OPEN",
		[KVM_EXIT_SHUTDOWN] = "SHUTDOWN",
		[KVM_EXIT_FAIL_ENTRY] = "FAIL_ENTRY",
		[KVM_EXIT_INTR] = "INTR",
		[KVM_EXIT_SET_TPR] = "SET_TPR",
		[KVM_EXIT_TPR_ACCESS] = "TPR_ACCESS",
		[KVM_EXIT_NMI] = "NMI",
		[KVM_EXIT_INTERNAL_ERROR] = "INTERNAL_ERROR",
		[KVM_EXIT_SYSTEM_EVENT] = "SYSTEM_EVENT",
		[KVM_EXIT_IOAPIC_EOI] = "IOAPIC_EOI",
		[KVM_EXIT_HYPERV] = "HYPERV",
		[KVM_EXIT_X86_RDMSR] = "X86_RDMSR",
		[KVM_EXIT_X86_WRMSR] = "X86_WRMSR",
		[KVM_EXIT_DIRTY_RING_FULL] = "DIRTY_RING_FULL",
		[KVM_EXIT_AP_RESET_HOLD] = "AP_RESET_HOLD",
		[KVM_EXIT_X86_BUS_LOCK] = "X86_BUS_LOCK",
		[KVM_EXIT_XEN] = "XEN",
		[KVM_EXIT_NOTIFY] = "NOTIFY",
	};

	return reason < ARRAY_SIZE(names) ? names[reason] : NULL;
}

unsigned exit_emulation_bytes(const struct kvm_run *run,
			      uint8_t out[X86_MAX_INSN_BYTES])
{
	unsigned n;

	/* ndata counts the 64-bit words after suberror/ndata: flags, then
	 * insn_size + insn_bytes[15] (two words). Older kernels report
	 * ndata 0 for this suberror and the words are stale. */
	if (run->emulation_failure.suberror != KVM_INTERNAL_ERROR_EMULATION ||
	    run->emulation_failure.ndata < 3 ||
	    !(run->emulation_failure.flags &
	      KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES))
		return 0;
	n = run->emulation_failure.insn_size;
	if (n > X86_MAX_INSN_BYTES)
		n = X86_MAX_INSN_BYTES;
	for (unsigned i = 0; i < n; i++)
		out[i] = run->emulation_failure.insn_bytes[i];
	return n;
}

static const char *suberror_name(uint32_t suberror)
{
	switch (suberror) {
	case KVM_INTERNAL_ERROR_EMULATION:
		return "instruction emulation failed";
	case KVM_INTERNAL_ERROR_SIMUL_EX:
		return "exception while delivering an exception";
	case KVM_INTERNAL_ERROR_DELIVERY_EV:
		return "unexpected VM exit while delivering an event";
	case KVM_INTERNAL_ERROR_UNEXPECTED_EXIT_REASON:
		return "unexpected VM exit reason";
	default:
		return "unknown suberror";
	}
}

/* Append with snprintf semantics, never past the end of buf. */
static size_t append(char *buf, size_t len, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t append(char *buf, size_t len, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (pos >= len)
		return pos;
	va_start(ap, fmt);
	n = vsnprintf(buf + pos, len - pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return pos;
	return pos + (size_t)n < len ? pos + (size_t)n : len;
}

void exit_format_internal(char *buf, size_t len, unsigned vcpu,
			  const struct kvm_run *run, uint64_t rip,
			  const uint8_t *insn, unsigned insn_len)
{
	uint32_t sub = run->internal.suberror;
	size_t pos = 0;

	if (!len)
		return;
	buf[0] = '\0';
	if (sub == KVM_INTERNAL_ERROR_EMULATION) {
		pos = append(buf, len, pos, "vCPU %u: KVM could not emulate the "
			     "instruction at RIP 0x%" PRIx64 " (bytes:", vcpu, rip);
		if (!insn_len)
			pos = append(buf, len, pos, " unknown");
		for (unsigned i = 0; i < insn_len; i++)
			pos = append(buf, len, pos, " %02x", insn[i]);
		append(buf, len, pos, "): this host's KVM cannot emulate this "
		       "instruction (it cannot run unmodified guests, e.g. a PVM "
		       "backend)");
		return;
	}
	pos = append(buf, len, pos, "vCPU %u: KVM internal error at RIP 0x%" PRIx64
		     ": suberror %u (%s)", vcpu, rip, sub, suberror_name(sub));
	if (run->internal.ndata) {
		unsigned n = MIN(run->internal.ndata, (unsigned)ARRAY_SIZE(run->internal.data));

		pos = append(buf, len, pos, ", data");
		for (unsigned i = 0; i < n; i++)
			pos = append(buf, len, pos, " 0x%llx",
				     (unsigned long long)run->internal.data[i]);
	}
}
