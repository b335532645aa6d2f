/* Guest RAM slots and the e820 memory map, against hand-computed values. */
#include "vmm/x86/arch.h"
#include "vmm/x86/boot.h"
#include "common/test_check.h"

static void test_slots(void)
{
	struct guest_mem_slot s[GUEST_MEM_MAX_SLOTS];

	CHECK_EQ(x86_mem_layout(512ULL << 20, s, 4), 1);
	CHECK_EQ(s[0].gpa, 0);
	CHECK_EQ(s[0].size, 0x20000000);
	CHECK(s[0].hva == NULL);

	/* exactly 3 GiB still fits below the hole */
	CHECK_EQ(x86_mem_layout(3ULL << 30, s, 4), 1);
	CHECK_EQ(s[0].size, 0xc0000000);

	/* 5 GiB: 3 GiB below the hole, 2 GiB from 4 GiB */
	CHECK_EQ(x86_mem_layout(5ULL << 30, s, 4), 2);
	CHECK_EQ(s[0].gpa, 0);
	CHECK_EQ(s[0].size, 0xc0000000);
	CHECK_EQ(s[1].gpa, 0x100000000);
	CHECK_EQ(s[1].size, 0x80000000);

	CHECK_EQ(x86_mem_layout(5ULL << 30, s, 1), 0);       /* no room for slot 2 */
	CHECK_EQ(x86_mem_layout(1ULL << 20, s, 4), 0);       /* below the minimum */
	CHECK_EQ(x86_mem_layout((64ULL << 20) + 100, s, 4), 0);  /* not whole pages */
}

static void test_e820(void)
{
	struct x86_e820_entry e[X86_E820_MAX];

	CHECK_EQ(x86_e820_build(512ULL << 20, e, X86_E820_MAX), 3);
	CHECK_EQ(e[0].addr, 0);        CHECK_EQ(e[0].size, 0x9fc00);   CHECK_EQ(e[0].type, 1);
	CHECK_EQ(e[1].addr, 0x9fc00);  CHECK_EQ(e[1].size, 0x60400);   CHECK_EQ(e[1].type, 2);
	CHECK_EQ(e[2].addr, 0x100000); CHECK_EQ(e[2].size, 0x1ff00000); CHECK_EQ(e[2].type, 1);

	CHECK_EQ(x86_e820_build(4ULL << 30, e, X86_E820_MAX), 4);
	CHECK_EQ(e[2].addr, 0x100000); CHECK_EQ(e[2].size, 0xbff00000); CHECK_EQ(e[2].type, 1);
	CHECK_EQ(e[3].addr, 0x100000000); CHECK_EQ(e[3].size, 0x40000000); CHECK_EQ(e[3].type, 1);

	CHECK_EQ(x86_e820_build(4ULL << 30, e, 3), 0);
	CHECK_EQ(x86_e820_build(1ULL << 20, e, X86_E820_MAX), 0);
}

int main(void)
{
	test_slots();
	test_e820();
	return check_report("x86_test_layout");
}
