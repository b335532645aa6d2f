/* Register values for the boot vCPU's entry (see regs.h). */
#include <string.h>

#include "vmm/x86/boot.h"
#include "vmm/x86/regs.h"

struct kvm_segment x86_segment_from_desc(uint64_t desc, uint16_t selector)
{
	uint32_t limit = (uint32_t)((desc & 0xffff) | ((desc >> 32) & 0xf0000));
	uint8_t access = (uint8_t)(desc >> 40), flags = (uint8_t)((desc >> 52) & 0xf);
	struct kvm_segment seg = {
		.base = ((desc >> 16) & 0xffffff) | ((desc >> 32) & 0xff000000),
		.selector = selector,
		.type = access & 0xf,
		.s = (access >> 4) & 1,
		.dpl = (access >> 5) & 3,
		.present = (access >> 7) & 1,
		.avl = flags & 1,
		.l = (flags >> 1) & 1,
		.db = (flags >> 2) & 1,
		.g = (flags >> 3) & 1,
	};

	/* With G set the 20-bit limit counts 4 KiB pages. */
	seg.limit = seg.g ? (limit << 12) | 0xfff : limit;
	return seg;
}

void x86_boot_sregs(struct kvm_sregs *s, enum x86_entry_mode mode)
{
	bool long_mode = mode == X86_ENTRY_LINUX64;
	uint64_t gdt[X86_GDT_ENTRIES];
	struct kvm_segment data;

	x86_gdt_build(gdt, long_mode);
	s->cs = x86_segment_from_desc(gdt[X86_SEL_CS / 8], X86_SEL_CS);
	data = x86_segment_from_desc(gdt[X86_SEL_DS / 8], X86_SEL_DS);
	s->ds = s->es = s->fs = s->gs = s->ss = data;
	s->tr = x86_segment_from_desc(gdt[X86_SEL_TSS / 8], X86_SEL_TSS);
	s->gdt.base = X86_GDT_GPA;
	s->gdt.limit = sizeof(gdt) - 1;
	s->idt.base = 0;
	s->idt.limit = 0;

	if (long_mode) {
		s->cr0 = X86_CR0_PE | X86_CR0_ET | X86_CR0_PG;
		s->cr3 = X86_PML4_GPA;
		s->cr4 = X86_CR4_PAE;
		s->efer = X86_EFER_LME | X86_EFER_LMA;
	} else {
		s->cr0 = X86_CR0_PE | X86_CR0_ET;
		s->cr3 = 0;
		s->cr4 = 0;
		s->efer = 0;
	}
}

void x86_boot_regs(struct kvm_regs *r, const struct x86_boot_info *boot)
{
	memset(r, 0, sizeof(*r));
	r->rflags = X86_RFLAGS_FIXED;
	r->rip = boot->entry_gpa;
	r->rsp = X86_BOOT_STACK_GPA;
	r->rbp = X86_BOOT_STACK_GPA;
	if (boot->mode == X86_ENTRY_LINUX64)
		r->rsi = boot->param_gpa;
	else {
		r->rbx = boot->param_gpa;
		r->rax = boot->entry_eax;
	}
}

void x86_sipi_regs(struct kvm_sregs *s, struct kvm_regs *r, uint8_t vector)
{
	s->cs.selector = (uint16_t)(vector << 8);
	s->cs.base = (uint64_t)vector << 12;
	r->rip = 0;
}
