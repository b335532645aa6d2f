/* The input encoding of fuzz_bus.c, shared with the seed generator. */
#ifndef LAGVISOR_DEVICES_FUZZ_BUS_OPS_H
#define LAGVISOR_DEVICES_FUZZ_BUS_OPS_H

/* Input: u32 RTC clock / 16, then ops: u8 op and its operands. */
enum bus_op {
	/* u8 how (bit 0 write, bits 2:1 size 1/2/4/4, bits 4:3 count - 1,
	 * bit 5 any port), u8 near (bits 3:0 device, 7:4 port offset), u64
	 * data, and with bit 5 a u16 port */
	BUS_OP_PIO,
	/* u8 how (bit 0 write, bits 3:1 len - 1, bit 4 any address), then
	 * u64 address with bit 4 else u16 IOAPIC offset, u64 data */
	BUS_OP_MMIO,
	BUS_OP_CLOCK,           /* s32: the host clock moves */
	BUS_OP_REGISTER,        /* u64 base, u64 len, u8 (bit 0 len < 64K, bit 1 base < 64K) */
	BUS_OP_UNREGISTER,      /* u8 i (bit 7: u64 base follows, else range i) */
	BUS_OP_LOOKUP,          /* u8 i, u64 d: around range i's end, or d (bit 7) */
	BUS_OP_COUNT
};

#endif
