/*
 * Guest physical memory: up to a few mmap'd slots, each a run of guest
 * physical addresses backed by host memory. x86 splits RAM around the
 * 32-bit PCI/APIC hole, so a large guest has two slots.
 */
#ifndef LAGVISOR_VMM_GUEST_MEM_H
#define LAGVISOR_VMM_GUEST_MEM_H

#include <stddef.h>
#include <stdint.h>

#define GUEST_MEM_MAX_SLOTS 4

struct guest_mem_slot {
	uint64_t gpa;
	uint64_t size;
	uint8_t *hva;
};

struct guest_mem {
	unsigned nr;
	struct guest_mem_slot slots[GUEST_MEM_MAX_SLOTS];
};

/*
 * Host pointer for [gpa, gpa+len) if the whole range lies inside one slot,
 * else NULL. Every write into the guest goes through this, so a kernel image
 * or boot structure that would not fit is refused instead of overrunning.
 */
static inline void *guest_mem_ptr(const struct guest_mem *mem, uint64_t gpa,
				  uint64_t len)
{
	for (unsigned i = 0; i < mem->nr; i++) {
		const struct guest_mem_slot *s = &mem->slots[i];

		if (gpa >= s->gpa && len <= s->size && gpa - s->gpa <= s->size - len)
			return s->hva + (gpa - s->gpa);
	}
	return NULL;
}

#endif
