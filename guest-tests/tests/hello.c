/*
 * hello: the smallest guest. Proves the PVH boot path (entry note, start
 * info, command line, memory map), long mode, the console and the exit
 * port: if this fails, no other guest can pass.
 */
#include "guest.h"

extern char __image_end[];

int main(int argc, char **argv)
{
	const struct boot_info *bi = bootinfo();
	bool image_in_ram = false;
	uint64_t ram = 0, t0;

	printf("Hello from a lagvisor test guest (cpu %u, APIC ID %u, %s)\n",
	       smp_id(), lapic_id(), lapic_x2apic() ? "x2APIC" : "xAPIC");
	report(bi->valid, "PVH start info at %x has the right magic", bi->start_info_pa);
	report_info("command line: \"%s\" (%d args)", bi->cmdline, argc - 1);
	for (int i = 1; i < argc; i++)
		report_info("  argv[%d] = %s", i, argv[i]);

	if (bi->version >= 1 && bi->nr_memmap) {
		for (unsigned i = 0; i < bi->nr_memmap; i++) {
			const struct boot_memmap_entry *e = &bi->memmap[i];

			report_info("memmap %2u: %016lx-%016lx type %u", i, e->addr,
				    e->addr + e->size - 1, e->type);
			if (e->type == BOOT_MEMMAP_RAM) {
				ram += e->size;
				if (e->addr <= 0x100000 &&
				    e->addr + e->size >= (uint64_t)__image_end)
					image_in_ram = true;
			}
		}
		report(image_in_ram, "memory map has RAM under the image (1 MiB-%p)",
		       __image_end);
		report_info("RAM in memory map: %lu KiB", ram >> 10);
	} else {
		report_skip("no memory map (start info version %u)", bi->version);
	}
	t0 = rdtsc();
	delay_us(1000);
	report(rdtsc() > t0, "TSC advances (%lu cycles in a ~1 ms delay)", rdtsc() - t0);
	return report_summary();
}
