/*
 * Guest RAM slots. The range [X86_MMIO_HOLE_START, 4 GiB) is left for the
 * IOAPIC, the local APIC and KVM's own pages (TSS, identity map), so RAM
 * fills the space below the hole first and continues at 4 GiB.
 */
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"

uint64_t x86_low_ram_end(uint64_t mem_bytes)
{
	return mem_bytes < X86_MMIO_HOLE_START ? mem_bytes : X86_MMIO_HOLE_START;
}

unsigned x86_mem_layout(uint64_t mem_bytes, struct guest_mem_slot *slots,
			unsigned max_slots)
{
	uint64_t low = x86_low_ram_end(mem_bytes);
	unsigned need = mem_bytes > low ? 2 : 1;

	if (mem_bytes < VM_MIN_MEM_BYTES || mem_bytes % VM_MEM_ALIGN_BYTES ||
	    need > max_slots)
		return 0;
	slots[0] = (struct guest_mem_slot){ .gpa = 0, .size = low, .hva = NULL };
	if (need == 2)
		slots[1] = (struct guest_mem_slot){
			.gpa = X86_4G, .size = mem_bytes - low, .hva = NULL };
	return need;
}
