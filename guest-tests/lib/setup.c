/*
 * First C code on every CPU (called from lib/entry.S on its own stack).
 * The boot CPU copies out what the VMM left in low memory, sets up console,
 * IDT and LAPIC, and runs the test's main(); its return value becomes the
 * debug-exit code. APs go to smp_ap_main().
 */
#include "bootinfo.h"
#include "exit.h"
#include "lapic.h"
#include "pvm.h"
#include "smp.h"
#include "serial.h"
#include "string.h"
#include "timing.h"
#include "traps.h"

int main(int argc, char **argv);
_Noreturn void cpu_entry(unsigned index);

_Noreturn void cpu_entry(unsigned index)
{
	struct cpu *c = cpu_struct(index);
	char **argv;
	int argc;

	memset(c, 0, sizeof(*c));
	c->index = index;
	if (index != 0)
		smp_ap_main(c);

	serial_init();
	bootinfo_init();
	smp_early_init();
	idt_init();
	idt_load();
	lapic_init(!cmdline_has("xapic"));
	lapic_pv_eoi_init(!cmdline_has("no_pv_eoi"));
	lapic_cpu_init();
	c->apic_id = lapic_id();
	pvm_cpu_init(c->apic_id);
	tsc_hz();
	argc = bootinfo_args(&argv);
	exit(main(argc, argv));
}
