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

/*
 * Map host memory for every slot whose gpa/size are filled in (hva NULL):
 * private anonymous, MAP_NORESERVE so that a large guest costs only the
 * pages it touches. Returns 0 or -errno (nothing stays mapped on failure).
 */
int guest_mem_map(struct guest_mem *mem);

/* Unmap every mapped slot; safe on a partly mapped or zeroed guest_mem. */
void guest_mem_unmap(struct guest_mem *mem);

/*
 * Hand every slot to KVM (KVM_SET_USER_MEMORY_REGION, slot = index).
 * Returns 0 or -errno.
 */
int guest_mem_register(const struct guest_mem *mem, int vm_fd);

#endif
