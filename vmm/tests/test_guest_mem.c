/* Guest RAM mapping and guest_mem_ptr bounds, without KVM. */
#include <errno.h>
#include <stdint.h>

#include "vmm/guest_mem.h"
#include "common/test_check.h"

int main(void)
{
	struct guest_mem mem = { .nr = 2 };
	uint8_t *p;

	mem.slots[0] = (struct guest_mem_slot){ .gpa = 0, .size = 1 << 20 };
	/* A large sparse slot: MAP_NORESERVE costs nothing until touched. */
	mem.slots[1] = (struct guest_mem_slot){ .gpa = 1ull << 32, .size = 1ull << 30 };
	CHECK(guest_mem_map(&mem) == 0);
	CHECK(mem.slots[0].hva && mem.slots[1].hva);
	p = guest_mem_ptr(&mem, 0x1000, 16);
	CHECK(p == mem.slots[0].hva + 0x1000);
	p[0] = 0xab;
	CHECK(guest_mem_ptr(&mem, (1 << 20) - 4, 4) != NULL);
	CHECK(guest_mem_ptr(&mem, (1 << 20) - 4, 5) == NULL);   /* crosses the end */
	CHECK(guest_mem_ptr(&mem, 1 << 20, 1) == NULL);          /* in the hole */
	CHECK(guest_mem_ptr(&mem, (1ull << 32) + 5, 1) == mem.slots[1].hva + 5);
	CHECK(guest_mem_ptr(&mem, UINT64_MAX, 2) == NULL);       /* wraps */
	guest_mem_unmap(&mem);
	CHECK(!mem.slots[0].hva && !mem.slots[1].hva);
	guest_mem_unmap(&mem);                                    /* idempotent */

	/* Unaligned or empty slots are refused, nothing stays mapped. */
	mem.slots[1].size = 100;
	CHECK(guest_mem_map(&mem) == -EINVAL);
	CHECK(!mem.slots[0].hva && !mem.slots[1].hva);
	mem.slots[1].size = 0;
	CHECK(guest_mem_map(&mem) == -EINVAL);
	mem.nr = GUEST_MEM_MAX_SLOTS + 1;
	CHECK(guest_mem_map(&mem) == -EINVAL);
	return check_report("test_guest_mem");
}
