#include "devices/uart.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"

/* Register offsets. DLAB (LCR bit 7) turns 0/1 into the divisor latch. */
enum {
	UART_RBR_THR = 0, UART_IER = 1, UART_IIR_FCR = 2, UART_LCR = 3,
	UART_MCR = 4, UART_LSR = 5, UART_MSR = 6, UART_SCR = 7,
};

#define IER_RDI 0x01            /* received data available */
#define IER_THRI 0x02           /* THR empty */
#define IER_RLSI 0x04           /* receiver line status */
#define IER_MSI 0x08            /* modem status */

#define IIR_NO_INT 0x01
#define IIR_MSI 0x00
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_RLSI 0x06
#define IIR_CTI 0x0c            /* character timeout */
#define IIR_FIFO_ON 0xc0        /* bits 7:6 = 11: "16550A, FIFOs work" */

#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define FCR_CLEAR_TX 0x04
#define FCR_KEEP 0xc9           /* enable, DMA mode, trigger level */

#define LCR_DLAB 0x80

#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10

#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_ERRORS 0x1e         /* OE, PE, FE, BI: cleared by reading LSR */
#define LSR_THRE 0x20
#define LSR_TEMT 0x40

#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80
#define MSR_TERI 0x04           /* RI went 1 -> 0 (trailing edge) */

static bool uart_fifo_on(const struct uart *u)
{
	return u->fcr & FCR_ENABLE;
}

/* Without FIFOs the receiver holds one byte (RBR). */
static unsigned uart_fifo_cap(const struct uart *u)
{
	return uart_fifo_on(u) ? UART_FIFO_SIZE : 1;
}

static unsigned uart_trigger_level(const struct uart *u)
{
	static const unsigned levels[4] = { 1, 4, 8, 14 };

	return levels[u->fcr >> 6];
}

static void uart_fifo_push_locked(struct uart *u, uint8_t b)
{
	MUTEX_ASSERT_HELD(&u->lock);
	if (u->fifo_count >= uart_fifo_cap(u)) {
		u->lsr |= LSR_OE;       /* the new byte is lost, as on the chip */
		return;
	}
	u->fifo[(u->fifo_head + u->fifo_count) % UART_FIFO_SIZE] = b;
	u->fifo_count++;
}

/* Move host input into the FIFO. In loopback the serial input is
 * disconnected from the receiver, so host bytes wait in the buffer. */
static void uart_refill_locked(struct uart *u)
{
	MUTEX_ASSERT_HELD(&u->lock);
	if (u->mcr & MCR_LOOP)
		return;
	while (u->fifo_count < uart_fifo_cap(u) && u->in_count) {
		uart_fifo_push_locked(u, u->in[u->in_head]);
		u->in_head = (u->in_head + 1) % UART_INPUT_SIZE;
		u->in_count--;
	}
}

/* MSR bits 7:4. In loopback the modem inputs are wired to the MCR outputs
 * (DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD); otherwise we are a cable with
 * the other end ready: carrier, DSR and CTS up, no ring. */
static uint8_t uart_msr_status(const struct uart *u)
{
	uint8_t m = u->mcr;

	if (!(m & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	return (m & MCR_DTR ? MSR_DSR : 0) | (m & MCR_RTS ? MSR_CTS : 0) |
	       (m & MCR_OUT1 ? MSR_RI : 0) | (m & MCR_OUT2 ? MSR_DCD : 0);
}

static uint8_t uart_lsr(const struct uart *u)
{
	return u->lsr | (u->fifo_count ? LSR_DR : 0) | LSR_THRE | LSR_TEMT;
}

/* IIR by the 16550A's fixed priority: line status, receive, THRE, modem. */
static uint8_t uart_iir_locked(struct uart *u)
{
	uint8_t fifo = uart_fifo_on(u) ? IIR_FIFO_ON : 0;

	MUTEX_ASSERT_HELD(&u->lock);
	if ((u->ier & IER_RLSI) && (u->lsr & LSR_ERRORS))
		return fifo | IIR_RLSI;
	if ((u->ier & IER_RDI) && u->fifo_count) {
		if (uart_fifo_on(u) && u->fifo_count < uart_trigger_level(u))
			return fifo | IIR_CTI;
		return fifo | IIR_RDI;
	}
	if ((u->ier & IER_THRI) && u->thr_ipending)
		return fifo | IIR_THRI;
	if ((u->ier & IER_MSI) && u->msr_delta)
		return fifo | IIR_MSI;
	return fifo | IIR_NO_INT;
}

/* The PC gates the UART's INTR pin with OUT2 (MCR bit 3); in loopback the
 * OUT2 pin is forced inactive, so the line is dead there too. Only changes
 * are passed on, so a lower-then-raise around a THR write is a fresh edge
 * for an edge-triggered interrupt controller. */
static void uart_update_irq_locked(struct uart *u)
{
	int level = !(uart_iir_locked(u) & IIR_NO_INT) &&
		    (u->mcr & (MCR_OUT2 | MCR_LOOP)) == MCR_OUT2;

	MUTEX_ASSERT_HELD(&u->lock);
	if (level != u->irq_level) {
		u->irq_level = level;
		irq_line_set(u->irq, level);
	}
}

static void uart_reset_locked(struct uart *u)
{
	MUTEX_ASSERT_HELD(&u->lock);
	u->ier = 0;
	u->lcr = 0;
	u->mcr = 0;
	u->lsr = 0;
	u->msr_delta = 0;
	u->scr = 0;
	u->fcr = 0;
	u->divisor = 12;        /* 115200 / 12 = 9600 baud, the BIOS default */
	u->thr_ipending = false;
	u->last_rx = 0;
	u->fifo_head = u->fifo_count = 0;
	u->irq_level = 0;
}

int uart_init(struct uart *u, const struct irq_line *irq,
	      void (*out)(void *opaque, const uint8_t *buf, size_t len),
	      void *out_opaque)
{
	int err;

	memset(u, 0, sizeof(*u));
	err = mutex_init(&u->lock);
	if (err)
		return err;
	u->irq = irq;
	u->out = out;
	u->out_opaque = out_opaque;
	mutex_lock(&u->lock);
	uart_reset_locked(u);
	mutex_unlock(&u->lock);
	return 0;
}

void uart_reset(struct uart *u)
{
	mutex_lock(&u->lock);
	if (u->irq_level)
		irq_line_set(u->irq, 0);
	uart_reset_locked(u);
	mutex_unlock(&u->lock);
}

void uart_destroy(struct uart *u)
{
	mutex_destroy(&u->lock);
}

void uart_set_room_cb(struct uart *u, void (*room)(void *opaque),
		      void *opaque)
{
	mutex_lock(&u->lock);
	u->room = room;
	u->room_opaque = opaque;
	mutex_unlock(&u->lock);
}

static uint8_t uart_read_rbr_locked(struct uart *u)
{
	MUTEX_ASSERT_HELD(&u->lock);
	if (!u->fifo_count)
		return u->last_rx;      /* the chip re-reads the holding register */
	u->last_rx = u->fifo[u->fifo_head];
	u->fifo_head = (u->fifo_head + 1) % UART_FIFO_SIZE;
	u->fifo_count--;
	uart_refill_locked(u);
	if (u->in_full_seen && u->in_count < UART_INPUT_SIZE) {
		u->in_full_seen = false;
		if (u->room)
			u->room(u->room_opaque);
	}
	return u->last_rx;
}

static uint8_t uart_read_locked(struct uart *u, unsigned offset)
{
	uint8_t v;

	MUTEX_ASSERT_HELD(&u->lock);
	switch (offset) {
	case UART_RBR_THR:
		if (u->lcr & LCR_DLAB)
			return u->divisor & 0xff;
		return uart_read_rbr_locked(u);
	case UART_IER:
		if (u->lcr & LCR_DLAB)
			return u->divisor >> 8;
		return u->ier;
	case UART_IIR_FCR:
		/* Reading IIR while it reports THRE is the THRE acknowledge. */
		v = uart_iir_locked(u);
		if ((v & 0x0f) == IIR_THRI)
			u->thr_ipending = false;
		return v;
	case UART_LCR:
		return u->lcr;
	case UART_MCR:
		return u->mcr;
	case UART_LSR:
		v = uart_lsr(u);
		u->lsr &= ~LSR_ERRORS;
		return v;
	case UART_MSR:
		v = uart_msr_status(u) | u->msr_delta;
		u->msr_delta = 0;
		return v;
	case UART_SCR:
		return u->scr;
	}
	return 0xff;
}

static void uart_write_thr_locked(struct uart *u, uint8_t val)
{
	MUTEX_ASSERT_HELD(&u->lock);
	/* THR fills (THRE interrupt withdrawn), then empties at once: let the
	 * line drop before it rises again so edge-triggered pins see it. */
	u->thr_ipending = false;
	uart_update_irq_locked(u);
	if (u->mcr & MCR_LOOP)
		uart_fifo_push_locked(u, val);
	else if (u->out)
		u->out(u->out_opaque, &val, 1);
	u->thr_ipending = true;
}

static void uart_write_fcr_locked(struct uart *u, uint8_t val)
{
	MUTEX_ASSERT_HELD(&u->lock);
	/* FCR0 must be set for the other bits to take; changing FCR0 resets
	 * both FIFOs (16550A data sheet). */
	if ((val ^ u->fcr) & FCR_ENABLE)
		u->fifo_head = u->fifo_count = 0;
	if (!(val & FCR_ENABLE)) {
		u->fcr = 0;
	} else {
		if (val & FCR_CLEAR_RX)
			u->fifo_head = u->fifo_count = 0;
		/* FCR_CLEAR_TX: the transmitter is always empty. */
		u->fcr = val & FCR_KEEP;
	}
	uart_refill_locked(u);
}

static void uart_write_mcr_locked(struct uart *u, uint8_t val)
{
	uint8_t before = uart_msr_status(u), after, changed;

	MUTEX_ASSERT_HELD(&u->lock);
	u->mcr = val & 0x1f;
	after = uart_msr_status(u);
	changed = before ^ after;
	/* Delta bits 0,1,3 flag any change of CTS, DSR, DCD; bit 2 (TERI)
	 * only RI's trailing edge. Status bits sit 4 above their deltas. */
	u->msr_delta |= (changed >> 4) & 0x0b;
	if ((before & MSR_RI) && !(after & MSR_RI))
		u->msr_delta |= MSR_TERI;
	uart_refill_locked(u);  /* leaving loopback reconnects the input */
}

static void uart_write_locked(struct uart *u, unsigned offset, uint8_t val)
{
	uint8_t changed;

	MUTEX_ASSERT_HELD(&u->lock);
	switch (offset) {
	case UART_RBR_THR:
		if (u->lcr & LCR_DLAB)
			u->divisor = (u->divisor & 0xff00) | val;
		else
			uart_write_thr_locked(u, val);
		break;
	case UART_IER:
		if (u->lcr & LCR_DLAB) {
			u->divisor = (u->divisor & 0x00ff) | (uint16_t)val << 8;
			break;
		}
		changed = (u->ier ^ val) & 0x0f;
		u->ier = val & 0x0f;
		/* Enabling the THRE interrupt while THR is empty (always)
		 * raises it, even if it was acknowledged before: Linux's THRE
		 * re-assertion test at startup and Windows rely on it. */
		if (changed & IER_THRI)
			u->thr_ipending = u->ier & IER_THRI;
		break;
	case UART_IIR_FCR:
		uart_write_fcr_locked(u, val);
		break;
	case UART_LCR:
		u->lcr = val;
		break;
	case UART_MCR:
		uart_write_mcr_locked(u, val);
		break;
	case UART_LSR:
	case UART_MSR:
		/* Read-only on the 16550A (factory test only). */
		log_once(LOG_INFO, "uart: guest wrote read-only register %u",
			 offset);
		break;
	case UART_SCR:
		u->scr = val;
		break;
	}
}

uint8_t uart_read_reg(struct uart *u, unsigned offset)
{
	uint8_t v;

	mutex_lock(&u->lock);
	v = uart_read_locked(u, offset);
	uart_update_irq_locked(u);
	mutex_unlock(&u->lock);
	return v;
}

void uart_write_reg(struct uart *u, unsigned offset, uint8_t val)
{
	mutex_lock(&u->lock);
	uart_write_locked(u, offset, val);
	uart_update_irq_locked(u);
	mutex_unlock(&u->lock);
}

size_t uart_input(struct uart *u, const uint8_t *buf, size_t len)
{
	size_t n;

	mutex_lock(&u->lock);
	n = MIN(len, UART_INPUT_SIZE - u->in_count);
	for (size_t i = 0; i < n; i++)
		u->in[(u->in_head + u->in_count + i) % UART_INPUT_SIZE] = buf[i];
	u->in_count += n;
	if (n < len)
		u->in_full_seen = true;
	uart_refill_locked(u);
	uart_update_irq_locked(u);
	mutex_unlock(&u->lock);
	return n;
}

size_t uart_input_room(struct uart *u)
{
	size_t room;

	mutex_lock(&u->lock);
	room = UART_INPUT_SIZE - u->in_count;
	mutex_unlock(&u->lock);
	return room;
}

/* Bus glue: the 8250 is a byte device. A wider access is served at its
 * first byte (Linux never does one; a confused guest gets ones above). */
static void uart_bus_read(void *opaque, uint64_t offset, void *data,
			  unsigned len)
{
	memset(data, 0xff, len);
	if (len != 1)
		log_once(LOG_WARN, "uart: %u-byte read at offset %llu, "
			 "serving the first byte", len,
			 (unsigned long long)offset);
	if (offset < UART_NR_PORTS)
		*(uint8_t *)data = uart_read_reg(opaque, (unsigned)offset);
}

static void uart_bus_write(void *opaque, uint64_t offset, const void *data,
			   unsigned len)
{
	if (len != 1)
		log_once(LOG_WARN, "uart: %u-byte write at offset %llu, "
			 "using the first byte", len,
			 (unsigned long long)offset);
	if (offset < UART_NR_PORTS)
		uart_write_reg(opaque, (unsigned)offset,
			       *(const uint8_t *)data);
}

static const struct device_ops uart_ops = {
	.name = "uart",
	.read = uart_bus_read,
	.write = uart_bus_write,
};

int uart_attach(struct uart *u, struct bus *pio, uint16_t base)
{
	return bus_register(pio, base, UART_NR_PORTS, &uart_ops, u);
}
