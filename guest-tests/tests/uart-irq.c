/*
 * uart-irq: the COM1 interrupt (ISA IRQ 4) reaches the CPU through the
 * IOAPIC: redirection entry 4 (as the MP table says) programmed with a
 * vector, edge-triggered, to this CPU; OUT2 on (the PC's gate of the
 * UART's INTR pin), IER = THRE. Enabling the THRE interrupt with THR empty
 * raises it at once; each byte written then raises it again once it has
 * been sent (the handler acknowledges by reading IIR). Exactly ROUNDS + 1
 * interrupts, none after the last; with the entry masked, none at all.
 * Nothing is printed while counting (printing writes THR too).
 */
#include "guest.h"

#define COM1        0x3f8
#define UART_THR    0
#define UART_IER    1
#define UART_IIR    2
#define UART_MCR    4
#define UART_LSR    5
#define IER_THRE    0x02
#define MCR_OUT2    0x08
#define IOAPIC_BASE 0xfec00000ull
#define IOREGSEL    0x00
#define IOWIN       0x10
#define UART_PIN    4
#define VEC_UART    0x70
#define ROUNDS      64
#define WAIT_MS     2000
#define REDIR_MASKED (1u << 16)

static volatile uint32_t uart_irqs, not_thre;

static void uart_handler(struct trap_frame *f)
{
	uint8_t iir = inb(COM1 + UART_IIR);

	(void)f;
	if ((iir & 0x0f) != 0x02)
		not_thre++;
	uart_irqs++;
}

static void ioapic_write(uint8_t reg, uint32_t val)
{
	mmio_write32(IOAPIC_BASE + IOREGSEL, reg);
	mmio_write32(IOAPIC_BASE + IOWIN, val);
}

static uint32_t ioapic_read(uint8_t reg)
{
	mmio_write32(IOAPIC_BASE + IOREGSEL, reg);
	return mmio_read32(IOAPIC_BASE + IOWIN);
}

static bool wait_irqs(uint32_t n)
{
	uint64_t end = tsc_deadline_ms(WAIT_MS);

	while (uart_irqs < n && (int64_t)(rdtsc() - end) < 0)
		cpu_relax();
	return uart_irqs >= n;
}

static void spin_ms(unsigned ms)
{
	uint64_t end = tsc_deadline_ms(ms);

	while ((int64_t)(rdtsc() - end) < 0)
		cpu_relax();
}

int main(int argc, char **argv)
{
	uint8_t mcr = inb(COM1 + UART_MCR);
	uint32_t ver = ioapic_read(0x01), got_edge, got_masked;
	unsigned sent = 0;

	(void)argc, (void)argv;
	report(((ver >> 16) & 0xff) >= 23, "IOAPIC version 0x%x: %u redirection entries",
	       ver, ((ver >> 16) & 0xff) + 1);
	irq_set_handler(VEC_UART, uart_handler);
	/* Edge, active high, fixed, physical destination = this CPU. */
	ioapic_write(0x11 + 2 * UART_PIN, lapic_id() << 24);
	ioapic_write(0x10 + 2 * UART_PIN, VEC_UART);
	irq_enable();

	outb(COM1 + UART_MCR, mcr | MCR_OUT2);
	outb(COM1 + UART_IER, IER_THRE);
	wait_irqs(1);
	for (; sent < ROUNDS; sent++) {
		while (!(inb(COM1 + UART_LSR) & 0x20))
			cpu_relax();
		outb(COM1 + UART_THR, '.');
		if (!wait_irqs(sent + 2))
			break;
	}
	spin_ms(20);
	got_edge = uart_irqs;

	/* Masked entry: the line still toggles, nothing arrives. */
	ioapic_write(0x10 + 2 * UART_PIN, REDIR_MASKED | VEC_UART);
	uart_irqs = 0;
	for (unsigned i = 0; i < 8; i++) {
		outb(COM1 + UART_THR, '.');
		(void)inb(COM1 + UART_IIR);
	}
	spin_ms(20);
	got_masked = uart_irqs;
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_MCR, mcr);
	printf("\n");
	report(got_edge == ROUNDS + 1, "UART THRE through IOAPIC pin %u: %u interrupts "
	       "for %u bytes (expected %u)", UART_PIN, got_edge, sent, ROUNDS + 1);
	report(not_thre == 0, "every interrupt was THRE (IIR)");
	report(got_masked == 0, "masked redirection entry: %u interrupts", got_masked);
	return report_summary();
}
