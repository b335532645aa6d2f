/*
 * Polled 8250/16550 UART at COM1 (0x3f8): no interrupts, no FIFO tricks.
 * Every register touched here is one a VMM's 8250 model must claim, so the
 * console works under --strict-io.
 */
#include "serial.h"

#include "processor.h"

#define COM1       0x3f8
#define UART_THR   0      /* transmit holding (write) */
#define UART_IER   1
#define UART_LCR   3
#define UART_MCR   4
#define UART_LSR   5
#define LSR_THRE   0x20

/*
 * Bounded wait for THRE: a VMM whose UART never reports "empty" must cost
 * us characters, not a hang (the runner's timeout would hide the reason).
 */
#define THRE_SPINS 100000

void serial_init(void)
{
	outb(COM1 + UART_IER, 0x00);
	outb(COM1 + UART_LCR, 0x03);   /* 8N1, DLAB off */
	outb(COM1 + UART_MCR, 0x03);   /* DTR, RTS */
}

static void serial_putc_raw(char c)
{
	for (unsigned i = 0; i < THRE_SPINS; i++)
		if (inb(COM1 + UART_LSR) & LSR_THRE)
			break;
	outb(COM1 + UART_THR, (uint8_t)c);
}

void serial_write(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		/* The console may be a raw-mode terminal: send CR LF. */
		if (s[i] == '\n')
			serial_putc_raw('\r');
		serial_putc_raw(s[i]);
	}
}
