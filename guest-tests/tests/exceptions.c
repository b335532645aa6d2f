/*
 * exceptions: CPU exceptions reach the guest's IDT with the right vector,
 * error code and CR2, and a handler can resume after the faulting
 * instruction: #UD (ud2), #DE (divide by zero), #PF (read of 4 GiB, outside
 * the identity map), #GP (non-canonical address). On an emulating KVM host
 * every one of these is raised by the instruction emulator.
 * With "unhandled" on the command line it then executes ud2 with no handler
 * installed: the library must print the vector and RIP and end the guest
 * with GUEST_EXIT_ABORT (manifest: expect=abort).
 */
#include "guest.h"

#define UNMAPPED_VA   0x100000000ul      /* first byte past the 4 GiB map */
#define NONCANONICAL  0x8000000000000000ul

static volatile uint64_t resume_at;
static volatile uint32_t hits[32];
static volatile uint64_t error_code[32], fault_cr2, fault_rip;

static void resume_handler(struct trap_frame *f)
{
	unsigned v = (unsigned)f->vector;

	hits[v]++;
	error_code[v] = f->error;
	fault_rip = f->rip;
	if (v == 14)
		fault_cr2 = read_cr2();
	f->rip = resume_at;
}

static void install(void)
{
	irq_set_handler(0, resume_handler);
	irq_set_handler(6, resume_handler);
	irq_set_handler(13, resume_handler);
	irq_set_handler(14, resume_handler);
}

int main(int argc, char **argv)
{
	uint64_t v;

	(void)argc, (void)argv;
	install();

	asm volatile("lea 1f(%%rip), %%rax; mov %%rax, %0; ud2; 1:"
		     : "=m"(resume_at) : : "rax", "memory");
	report(hits[6] == 1, "#UD from ud2 delivered and resumed (%u)", hits[6]);

	asm volatile("lea 1f(%%rip), %%rax; mov %%rax, %0;"
		     "xor %%edx, %%edx; mov $1, %%eax; xor %%ecx, %%ecx; div %%ecx; 1:"
		     : "=m"(resume_at) : : "rax", "rcx", "rdx", "memory");
	report(hits[0] == 1, "#DE from div by zero delivered and resumed (%u)", hits[0]);

	asm volatile("lea 1f(%%rip), %%rax; mov %%rax, %0; mov (%1), %%rax; 1:"
		     : "=m"(resume_at) : "r"(UNMAPPED_VA) : "rax", "memory");
	report(hits[14] == 1 && fault_cr2 == UNMAPPED_VA && (error_code[14] & 3) == 0,
	       "#PF on a read of %lx: cr2=%lx error=%lx", UNMAPPED_VA, fault_cr2,
	       error_code[14]);

	asm volatile("lea 1f(%%rip), %%rax; mov %%rax, %0; mov (%2), %1; 1:"
		     : "=m"(resume_at), "=r"(v) : "r"(NONCANONICAL) : "rax", "memory");
	report(hits[13] == 1 && error_code[13] == 0,
	       "#GP on a non-canonical address, error code 0 (got %lx)", error_code[13]);

	if (cmdline_has("unhandled")) {
		irq_set_handler(6, 0);
		printf("executing ud2 with no #UD handler: expect EXCEPTION and abort\n");
		asm volatile("ud2");
		report(false, "survived an unhandled #UD");
	}
	return report_summary();
}
