#include "vmm/guest_mem.h"

#include <errno.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

int guest_mem_map(struct guest_mem *mem)
{
	if (mem->nr > GUEST_MEM_MAX_SLOTS)
		return -EINVAL;
	for (unsigned i = 0; i < mem->nr; i++) {
		struct guest_mem_slot *s = &mem->slots[i];
		void *p;

		if (s->size == 0 || s->size % 4096 || s->gpa % 4096 || s->hva) {
			guest_mem_unmap(mem);
			return -EINVAL;
		}
		p = mmap(NULL, s->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			int e = errno;

			guest_mem_unmap(mem);
			return -e;
		}
		s->hva = p;
	}
	return 0;
}

void guest_mem_unmap(struct guest_mem *mem)
{
	for (unsigned i = 0; i < mem->nr && i < GUEST_MEM_MAX_SLOTS; i++) {
		struct guest_mem_slot *s = &mem->slots[i];

		if (s->hva)
			munmap(s->hva, s->size);
		s->hva = NULL;
	}
}

int guest_mem_register(const struct guest_mem *mem, int vm_fd)
{
	for (unsigned i = 0; i < mem->nr; i++) {
		const struct guest_mem_slot *s = &mem->slots[i];
		struct kvm_userspace_memory_region region = {
			.slot = i,
			.flags = 0,
			.guest_phys_addr = s->gpa,
			.memory_size = s->size,
			.userspace_addr = (uint64_t)(uintptr_t)s->hva,
		};

		if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region))
			return -errno;
	}
	return 0;
}
