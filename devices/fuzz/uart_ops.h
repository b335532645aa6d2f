/* The input encoding of fuzz_uart.c, shared with the seed generator. */
#ifndef LAGVISOR_DEVICES_FUZZ_UART_OPS_H
#define LAGVISOR_DEVICES_FUZZ_UART_OPS_H

/* Each op: u8 op, then its operands. */
enum uart_op {
	UART_OP_IO,             /* u8 how (bit 0 write, bits 2:1 size 1/2/4/1), u8 port - 0x3f8, u32 value */
	UART_OP_INPUT,          /* u16 n, n bytes of host input */
	UART_OP_INPUT_FILL,     /* u8 first byte, u16 n: n counting bytes at once */
	UART_OP_READ_ALL,       /* the guest reads until LSR.DR is clear */
	UART_OP_RESET,          /* system reset */
	UART_OP_COUNT
};

#endif
