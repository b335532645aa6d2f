/* Messages for the exits that stop a VM, from fabricated kvm_run pages. */
#include <linux/kvm.h>
#include <string.h>

#include "vmm/exit_report.h"
#include "common/test_check.h"

int main(void)
{
	static struct kvm_run run;
	uint8_t insn[X86_MAX_INSN_BYTES];
	char msg[512];

	CHECK(!strcmp(exit_reason_name(KVM_EXIT_IO), "IO"));
	CHECK(!strcmp(exit_reason_name(KVM_EXIT_INTERNAL_ERROR), "INTERNAL_ERROR"));
	CHECK(exit_reason_name(12345) == NULL);

	/* Emulation failure with bytes (fxsave (%rax): 0f ae 00). */
	run.exit_reason = KVM_EXIT_INTERNAL_ERROR;
	run.emulation_failure.suberror = KVM_INTERNAL_ERROR_EMULATION;
	run.emulation_failure.ndata = 3;
	run.emulation_failure.flags = KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES;
	run.emulation_failure.insn_size = 3;
	memcpy(run.emulation_failure.insn_bytes, "\x0f\xae\x00", 3);
	CHECK(exit_emulation_bytes(&run, insn) == 3);
	CHECK(insn[0] == 0x0f && insn[1] == 0xae && insn[2] == 0x00);
	exit_format_internal(msg, sizeof(msg), 1, &run, 0xffffffff81000123ull, insn, 3);
	CHECK_MSG(msg, "vCPU 1: KVM could not emulate the instruction at RIP "
		  "0xffffffff81000123 (bytes: 0f ae 00)");
	CHECK_MSG(msg, "this host's KVM cannot emulate this instruction "
		  "(it cannot run unmodified guests, e.g. a PVM backend)");
	CHECK(!strchr(msg, '\n'));

	/* Flag clear, or ndata too small (older kernels): no bytes from KVM. */
	run.emulation_failure.flags = 0;
	CHECK(exit_emulation_bytes(&run, insn) == 0);
	run.emulation_failure.flags = KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES;
	run.emulation_failure.ndata = 0;
	CHECK(exit_emulation_bytes(&run, insn) == 0);
	/* A bogus size is clamped to 15. */
	run.emulation_failure.ndata = 3;
	run.emulation_failure.insn_size = 200;
	CHECK(exit_emulation_bytes(&run, insn) == X86_MAX_INSN_BYTES);
	exit_format_internal(msg, sizeof(msg), 0, &run, 0x1000, insn, 0);
	CHECK_MSG(msg, "(bytes: unknown)");

	/* Other suberrors: named, with their data words. */
	memset(&run, 0, sizeof(run));
	run.internal.suberror = KVM_INTERNAL_ERROR_DELIVERY_EV;
	run.internal.ndata = 2;
	run.internal.data[0] = 0x80000b0e;
	run.internal.data[1] = 0x31;
	exit_format_internal(msg, sizeof(msg), 2, &run, 0x7c00, NULL, 0);
	CHECK_MSG(msg, "vCPU 2: KVM internal error at RIP 0x7c00: suberror 3 "
		  "(unexpected VM exit while delivering an event), data 0x80000b0e 0x31");
	run.internal.suberror = 99;
	run.internal.ndata = 1000;      /* clamped to the 16 words there are */
	exit_format_internal(msg, sizeof(msg), 0, &run, 0, NULL, 0);
	CHECK_MSG(msg, "suberror 99 (unknown suberror)");

	/* A tiny buffer is filled and terminated, never overrun. */
	memset(msg, 'Z', sizeof(msg));
	exit_format_internal(msg, 10, 0, &run, 0, NULL, 0);
	CHECK(strlen(msg) == 9 && msg[10] == 'Z');
	return check_report("test_exit_report");
}
