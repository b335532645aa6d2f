/*
 * 16550A-compatible 8250 UART (the PC's COM1 at 0x3f8, IRQ 4).
 *
 * Transmit is instantaneous: a byte written to THR goes to the `out` callback
 * (or, in loopback mode, into the receive FIFO) before the write returns, so
 * THR/TSR are always empty again and LSR.THRE/TEMT read 1. Receive has two
 * stages: a host-side input buffer (UART_INPUT_SIZE bytes) filled by
 * uart_input() from the console/I-O thread, and the guest-visible receive
 * FIFO (16 bytes, 1 with FIFOs disabled) refilled from it as the guest reads.
 * Only the FIFO is what the chip has: loopback bytes land there directly and
 * overflow it (LSR.OE), which is how Linux's size_fifo() counts 16 bytes.
 *
 * Interrupts follow the 16550A: IIR reports the highest-priority pending
 * source (line status > received data / character timeout > THR empty >
 * modem status). The character timeout fires at once (nothing here keeps
 * time): data below the FIFO trigger level reports IIR 0xcc, at or above it
 * 0xc4. As on a PC, the line to the interrupt controller is gated by MCR.OUT2
 * and is dead in loopback mode (the OUT2 pin is forced inactive there).
 *
 * Locking: one mutex per UART serialises vCPU threads (bus handlers) and the
 * I/O thread (uart_input). The irq callback and the out callback are called
 * WITH THAT MUTEX HELD: they must not call back into this UART, and must not
 * block for long (out may write to a terminal; a slow terminal stalls the
 * vCPU writing THR, which is the back-pressure a real serial line gives).
 * Lock order: uart -> whatever irq->set takes.
 */
#ifndef LAGVISOR_DEVICES_UART_H
#define LAGVISOR_DEVICES_UART_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"
#include "devices/device.h"

#define UART_NR_PORTS 8
#define UART_FIFO_SIZE 16       /* the 16550A's receive FIFO */
#define UART_INPUT_SIZE 4096    /* host-side buffer in front of it */

struct uart {
	struct mutex lock;

	/* Registers (see the 16550A data sheet for bit meanings). */
	uint8_t ier;            /* low 4 bits only: 16550A reads bits 4-7 as 0 */
	uint8_t lcr;
	uint8_t mcr;            /* low 5 bits only */
	uint8_t lsr;            /* OE/PE/FE/BI/DR; THRE|TEMT are ORed in */
	uint8_t msr_delta;      /* MSR bits 0-3, cleared by reading MSR */
	uint8_t scr;
	uint8_t fcr;            /* last FCR value: bit 0 enable, 7:6 trigger */
	uint16_t divisor;       /* DLL | DLM << 8; kept, not used for timing */
	bool thr_ipending;      /* THR-empty interrupt armed, not yet acked */
	uint8_t last_rx;        /* RBR read when the FIFO is empty */
	int irq_level;          /* what we last told the irq line */

	/* Receive FIFO (guest-visible) as a ring. */
	uint8_t fifo[UART_FIFO_SIZE];
	unsigned fifo_head, fifo_count;

	/* Host input buffer as a ring. */
	uint8_t in[UART_INPUT_SIZE];
	size_t in_head, in_count;
	bool in_full_seen;      /* uart_input had to refuse bytes */

	const struct irq_line *irq;
	void (*out)(void *opaque, const uint8_t *buf, size_t len);
	void *out_opaque;
	void (*room)(void *opaque);     /* see uart_set_room_cb */
	void *room_opaque;
};

/*
 * Reset state, store the callbacks. `irq` (may be NULL: no interrupts) is
 * kept by pointer and must outlive the UART; `out` may be NULL (output is
 * dropped). Returns 0 or -errno (mutex init).
 */
int uart_init(struct uart *u, const struct irq_line *irq,
	      void (*out)(void *opaque, const uint8_t *buf, size_t len),
	      void *out_opaque);

/* Register the 8 ports [base, base+8) on `pio`. Returns bus_register's code. */
int uart_attach(struct uart *u, struct bus *pio, uint16_t base);

void uart_destroy(struct uart *u);

/* System reset: every register back to power-on, the interrupt lowered,
 * the receive FIFO emptied. Host input not yet taken stays buffered (it
 * was typed, and the next guest will read it). */
void uart_reset(struct uart *u);

/*
 * Host -> guest bytes (console input). Takes what fits in the input buffer
 * and returns how many bytes that was; the caller keeps the rest and retries
 * after the room callback fires. Raises the receive interrupt if enabled.
 * O(len).
 */
size_t uart_input(struct uart *u, const uint8_t *buf, size_t len);

/* Free space in the host input buffer right now. */
size_t uart_input_room(struct uart *u);

/*
 * Optional: `room(opaque)` is called (with the UART lock held, from the vCPU
 * thread reading RBR) when the input buffer regains space after uart_input
 * refused bytes, so the I/O thread can resume reading the console.
 */
void uart_set_room_cb(struct uart *u, void (*room)(void *opaque),
		      void *opaque);

/* Register-level access, the same as a guest access at base + offset (for
 * tests and for wiring a UART somewhere other than a bus). */
uint8_t uart_read_reg(struct uart *u, unsigned offset);
void uart_write_reg(struct uart *u, unsigned offset, uint8_t val);

#endif
