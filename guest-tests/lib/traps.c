/* IDT setup and the C half of interrupt dispatch (see traps.h). */
#include "traps.h"

#include "exit.h"
#include "lapic.h"
#include "layout.h"
#include "printf.h"
#include "processor.h"
#include "pvm.h"
#include "smp.h"

struct idt_gate {
	uint16_t offset_lo;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;   /* 0x8e: present, DPL 0, 64-bit interrupt gate */
	uint16_t offset_mid;
	uint32_t offset_hi;
	uint32_t reserved;
} __attribute__((packed));

struct idt_desc {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define ISR_STUB_STRIDE 16   /* .balign 16 in lib/entry.S */

extern const char isr_stubs[];

static struct idt_gate idt[256] __attribute__((aligned(16)));
static trap_handler_fn handlers[256];

static const char *const exception_names[32] = {
	"#DE divide error", "#DB debug", "NMI", "#BP breakpoint",
	"#OF overflow", "#BR bound", "#UD invalid opcode", "#NM no FPU",
	"#DF double fault", "coprocessor overrun", "#TS invalid TSS",
	"#NP not present", "#SS stack fault", "#GP general protection",
	"#PF page fault", "reserved 15", "#MF x87", "#AC alignment",
	"#MC machine check", "#XM SIMD", "#VE virtualization",
	"#CP control protection", [28] = "#HV", [29] = "#VC", [30] = "#SX",
};

void idt_init(void)
{
	for (unsigned v = 0; v < 256; v++) {
		uint64_t addr = (uint64_t)(isr_stubs + v * ISR_STUB_STRIDE);

		idt[v] = (struct idt_gate){
			.offset_lo = (uint16_t)addr,
			.selector = SEL_CODE64,
			.type_attr = 0x8e,
			.offset_mid = (uint16_t)(addr >> 16),
			.offset_hi = (uint32_t)(addr >> 32),
		};
	}
}

void idt_load(void)
{
	struct idt_desc d = { .limit = sizeof(idt) - 1, .base = (uint64_t)idt };

	asm volatile("lidt %0" : : "m"(d));
}

void irq_set_handler(unsigned vector, trap_handler_fn fn)
{
	if (vector < 256)
		__atomic_store_n(&handlers[vector], fn, __ATOMIC_RELEASE);
}

_Noreturn static void trap_fatal(struct trap_frame *f)
{
	unsigned v = (unsigned)f->vector;
	const char *name = v < 32 && exception_names[v] ? exception_names[v] :
			   "unexpected interrupt";

	printf_emergency("\nEXCEPTION: vector %u (%s) on cpu %u at rip=%lx "
			 "error=%lx rsp=%lx rflags=%lx",
			 v, name, smp_id(), f->rip, f->error, f->rsp, f->rflags);
	if (v == 14)
		printf_emergency(" cr2=%lx", read_cr2());
	printf_emergency("\n");
	guest_exit(GUEST_EXIT_ABORT);
}

/* (faulting instruction, where to resume) pairs: EXTABLE_ENTRY in processor.h. */
struct extable_entry {
	uint64_t insn, fixup;
};

extern const struct extable_entry __extable_start[], __extable_end[];

static bool extable_fixup(struct trap_frame *f)
{
	for (const struct extable_entry *e = __extable_start; e < __extable_end; e++)
		if (e->insn == f->rip) {
			f->rip = e->fixup;
			return true;
		}
	return false;
}

void trap_dispatch(struct trap_frame *f);

extern const char pvm_halt_begin[], pvm_halt_end[];

void trap_dispatch(struct trap_frame *f)
{
	unsigned v = (unsigned)f->vector;

	/* Native mode's enable-then-halt window (pvm.c): skip the HLT. */
	if (v >= 32 && f->rip >= (uint64_t)pvm_halt_begin && f->rip < (uint64_t)pvm_halt_end) {
		if (pvm_halt_fixup) {
			f->rip = (uint64_t)pvm_halt_end;
			__atomic_add_fetch(&pvm_halt_window_hits, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&pvm_halt_window_kept, 1, __ATOMIC_RELAXED);
		}
	}
	if (v < 32 && extable_fixup(f))
		return;
	trap_handler_fn fn = __atomic_load_n(&handlers[v & 0xff], __ATOMIC_ACQUIRE);

	if (v == VEC_SPURIOUS && !fn)
		return;
	if (!fn)
		trap_fatal(f);
	fn(f);
	if (v >= 32 && v != VEC_SPURIOUS)
		lapic_eoi();
}
