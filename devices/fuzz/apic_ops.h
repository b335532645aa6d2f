/* The input encoding of fuzz_apic.c, shared with the seed generator. */
#ifndef LAGVISOR_DEVICES_FUZZ_APIC_OPS_H
#define LAGVISOR_DEVICES_FUZZ_APIC_OPS_H

/* Header byte: bits 2:0 cpus - 1, then these flags; bits 7:4 MAXPHYADDR - 36. */
#define APIC_FZ_NO_X2APIC 0x08
#define APIC_FZ_PHYS_BITS 0x80

/* Each op: u8 op, u8 cpu, then its operands. */
enum apic_op {
	APIC_OP_X2_WRITE,       /* u8 reg (MSR 0x800 + reg), u64 value */
	APIC_OP_X2_READ,        /* u8 reg */
	APIC_OP_MSR,            /* u32 msr, u8 how (bit 0 write; bit 1: 0x1b if bit 2 else 0x6e0), u64 */
	APIC_OP_MMIO,           /* u8 how (bit 0 write, bit 1 IOAPIC page, bit 2 16-byte aligned,
				 * bits 7:5 len - 1), u16 offset, u64 data */
	APIC_OP_TIME,           /* u16 dt, u8 shift: now += dt << shift */
	APIC_OP_SET_TSC,        /* u64 new guest TSC */
	APIC_OP_PIN,            /* u8: pin = bits 4:0, level = bit 5 */
	APIC_OP_RUN,            /* u8: bit 0 the guest takes interrupts, bit 1 a PV EOI */
	APIC_OP_CR8,            /* u8 */
	APIC_OP_RESET,          /* u8: bit 0 system reset, else this LAPIC */
	APIC_OP_COUNT
};

#endif
