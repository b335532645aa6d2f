/* 16550A UART: registers, interrupts (priority, OUT2 gating, edges),
 * FIFO, loopback, input buffering, and the register dance of Linux's 8250
 * probe, which must conclude "16550A". */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "devices/uart.h"
#include "common/test_check.h"

enum { RBR = 0, THR = 0, DLL = 0, IER = 1, DLM = 1, IIR = 2, FCR = 2,
       LCR = 3, MCR = 4, LSR = 5, MSR = 6, SCR = 7 };

struct irq_rec {
	int level;
	int rises;
	unsigned gsi;
};

static void irq_set(void *opaque, unsigned gsi, int level)
{
	struct irq_rec *r = opaque;

	r->gsi = gsi;
	if (level && !r->level)
		r->rises++;
	r->level = level;
}

struct out_rec {
	uint8_t buf[256];
	size_t len;
};

static void out_cb(void *opaque, const uint8_t *buf, size_t len)
{
	struct out_rec *o = opaque;

	for (size_t i = 0; i < len && o->len < sizeof(o->buf); i++)
		o->buf[o->len++] = buf[i];
}

struct fixture {
	struct uart u;
	struct irq_rec irq;
	struct irq_line line;
	struct out_rec out;
};

static void fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->line = (struct irq_line){ .set = irq_set, .opaque = &f->irq,
				     .gsi = 4 };
	CHECK_EQ(uart_init(&f->u, &f->line, out_cb, &f->out), 0);
}

static uint8_t rd(struct fixture *f, unsigned off)
{
	return uart_read_reg(&f->u, off);
}

static void wr(struct fixture *f, unsigned off, uint8_t v)
{
	uart_write_reg(&f->u, off, v);
}

static void test_reset_scratch_dlab(void)
{
	struct fixture f;

	fx_init(&f);
	CHECK_EQ(rd(&f, IER), 0);
	CHECK_EQ(rd(&f, IIR), 0x01);
	CHECK_EQ(rd(&f, LCR), 0);
	CHECK_EQ(rd(&f, MCR), 0);
	CHECK_EQ(rd(&f, LSR), 0x60);            /* THRE | TEMT */
	CHECK_EQ(rd(&f, MSR), 0xb0);            /* DCD | DSR | CTS */
	CHECK_EQ(rd(&f, SCR), 0);
	wr(&f, SCR, 0xa5);
	CHECK_EQ(rd(&f, SCR), 0xa5);
	wr(&f, SCR, 0x5a);
	CHECK_EQ(rd(&f, SCR), 0x5a);

	/* 16550A: IER bits 4-7 do not exist. */
	wr(&f, IER, 0xff);
	CHECK_EQ(rd(&f, IER), 0x0f);
	wr(&f, IER, 0);

	/* DLAB: offsets 0/1 become the divisor latch; THR untouched. */
	wr(&f, LCR, 0x83);
	wr(&f, DLM, 0x02);                      /* each byte kept apart */
	wr(&f, DLL, 0x01);
	CHECK_EQ(rd(&f, DLL), 0x01);
	CHECK_EQ(rd(&f, DLM), 0x02);
	CHECK_EQ(f.u.divisor, 0x0201);
	wr(&f, DLL, 0x03);
	wr(&f, DLM, 0x04);
	CHECK_EQ(f.u.divisor, 0x0403);
	CHECK_EQ(rd(&f, IER), 0x04);            /* still DLM */
	CHECK_EQ(f.out.len, 0);                 /* DLL write was no THR */
	wr(&f, LCR, 0x03);
	CHECK_EQ(rd(&f, LCR), 0x03);
	CHECK_EQ(rd(&f, IER), 0);               /* IER kept apart */
	wr(&f, THR, 'x');
	CHECK_EQ(f.out.len, 1);
	CHECK_EQ(f.out.buf[0], 'x');
	CHECK_EQ(f.irq.rises, 0);               /* nothing enabled */
	uart_destroy(&f.u);
}

/* System reset (vm_reset): registers back, the raised line lowered, host
 * input not yet in the FIFO kept. */
static void test_system_reset(void)
{
	struct fixture f;

	fx_init(&f);
	wr(&f, LCR, 0x83);
	wr(&f, DLL, 0x01);
	wr(&f, LCR, 0x03);
	wr(&f, MCR, 0x0b);                      /* DTR, RTS, OUT2 */
	wr(&f, IER, 0x02);                      /* THR empty: raises at once */
	CHECK_EQ(f.irq.level, 1);
	uart_reset(&f.u);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, IER), 0);
	CHECK_EQ(rd(&f, LCR), 0);
	CHECK_EQ(rd(&f, MCR), 0);
	CHECK_EQ(rd(&f, IIR), 0x01);
	CHECK_EQ(f.u.divisor, 12);
	uart_destroy(&f.u);
}

static void test_output_and_thre(void)
{
	struct fixture f;

	fx_init(&f);
	for (const char *s = "hello"; *s; s++)
		wr(&f, THR, (uint8_t)*s);
	CHECK_EQ(f.out.len, 5);
	CHECK(memcmp(f.out.buf, "hello", 5) == 0);
	CHECK_EQ(rd(&f, LSR) & 0x60, 0x60);     /* always drained */

	/* THRE interrupt: enabling it with THR empty raises it... */
	wr(&f, MCR, 0x08);                      /* OUT2: line connected */
	wr(&f, IER, 0x02);
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(f.irq.gsi, 4);
	/* ...reading IIR while it says THRE acknowledges it... */
	CHECK_EQ(rd(&f, IIR), 0x02);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, IIR), 0x01);
	/* ...and each byte sent re-arms it with a fresh rising edge. */
	CHECK_EQ(f.irq.rises, 1);
	wr(&f, THR, 'a');
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(f.irq.rises, 2);
	wr(&f, THR, 'b');                       /* line was high: low, high */
	CHECK_EQ(f.irq.rises, 3);
	CHECK_EQ(rd(&f, IIR), 0x02);
	/* Linux's startup test: IER 0 then THRI again re-asserts THRE. */
	wr(&f, IER, 0x00);
	CHECK_EQ(rd(&f, IIR), 0x01);
	wr(&f, IER, 0x02);
	CHECK_EQ(rd(&f, IIR), 0x02);
	wr(&f, IER, 0x00);
	CHECK_EQ(f.irq.level, 0);

	/* Without OUT2 the source is pending but the line stays down. */
	wr(&f, MCR, 0x03);
	wr(&f, IER, 0x02);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, IIR), 0x02);
	wr(&f, THR, 'c');
	CHECK_EQ(f.irq.level, 0);
	wr(&f, MCR, 0x0b);                      /* OUT2 on: it appears */
	CHECK_EQ(f.irq.level, 1);
	uart_destroy(&f.u);
}

static void test_input_irq(void)
{
	struct fixture f;

	fx_init(&f);
	wr(&f, MCR, 0x08);
	wr(&f, IER, 0x01);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(uart_input(&f.u, (const uint8_t *)"abc", 3), 3);
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(rd(&f, IIR), 0x04);            /* no FIFO: plain RDA */
	CHECK_EQ(rd(&f, LSR), 0x61);            /* DR */
	CHECK_EQ(rd(&f, RBR), 'a');
	CHECK_EQ(f.irq.level, 1);               /* more in the buffer */
	CHECK_EQ(rd(&f, RBR), 'b');
	CHECK_EQ(rd(&f, RBR), 'c');
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, LSR), 0x60);
	CHECK_EQ(rd(&f, IIR), 0x01);
	CHECK_EQ(rd(&f, RBR), 'c');             /* empty: holding reg again */
	CHECK_EQ(f.irq.rises, 1);

	/* Data arriving with RX interrupts disabled: DR only. */
	wr(&f, IER, 0x00);
	CHECK_EQ(uart_input(&f.u, (const uint8_t *)"z", 1), 1);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, LSR) & 0x01, 1);
	wr(&f, IER, 0x01);                      /* enabling raises it */
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(rd(&f, RBR), 'z');
	CHECK_EQ(f.irq.level, 0);
	uart_destroy(&f.u);
}

static void test_fifo(void)
{
	struct fixture f;
	uint8_t data[40];

	fx_init(&f);
	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(0x40 + i);
	wr(&f, FCR, 0x01);
	CHECK_EQ(rd(&f, IIR), 0xc1);            /* 16550A: FIFO bits set */
	wr(&f, FCR, 0xc1);                      /* trigger level 14 */
	wr(&f, MCR, 0x08);
	wr(&f, IER, 0x01);
	CHECK_EQ(uart_input(&f.u, data, 5), 5);
	CHECK_EQ(rd(&f, IIR), 0xcc);            /* below trigger: timeout */
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(uart_input(&f.u, data + 5, 8), 8);
	CHECK_EQ(rd(&f, IIR), 0xcc);            /* 13: still below */
	CHECK_EQ(uart_input(&f.u, data + 13, 1), 1);
	CHECK_EQ(rd(&f, IIR), 0xc4);            /* 14: at the trigger */
	CHECK_EQ(uart_input(&f.u, data + 14, 26), 26);
	CHECK_EQ(f.u.fifo_count, 16);           /* FIFO full, rest buffered */
	CHECK_EQ(rd(&f, IIR), 0xc4);
	CHECK_EQ(rd(&f, LSR) & 0x02, 0);        /* host input never overruns */
	for (unsigned i = 0; i < sizeof(data); i++)
		CHECK_EQ(rd(&f, RBR), data[i]);
	CHECK_EQ(rd(&f, LSR), 0x60);
	CHECK_EQ(rd(&f, IIR), 0xc1);
	CHECK_EQ(f.irq.level, 0);

	/* Trigger level 4 (FCR 0x41): 3 bytes time out, 4 trigger. */
	wr(&f, FCR, 0x41);
	uart_input(&f.u, data, 3);
	CHECK_EQ(rd(&f, IIR), 0xcc);
	uart_input(&f.u, data, 1);
	CHECK_EQ(rd(&f, IIR), 0xc4);
	/* FCR bit 1 empties the receive FIFO. */
	wr(&f, FCR, 0x43);
	CHECK_EQ(rd(&f, LSR) & 0x01, 0);
	CHECK_EQ(rd(&f, IIR), 0xc1);
	/* Disabling the FIFO clears it and drops IIR bits 7:6. */
	uart_input(&f.u, data, 2);
	wr(&f, FCR, 0x00);
	CHECK_EQ(rd(&f, IIR), 0x01);            /* both bytes were in FIFO */
	CHECK_EQ(rd(&f, LSR) & 0x01, 0);
	uart_destroy(&f.u);
}

static void test_loopback(void)
{
	struct fixture f;
	unsigned n = 0;

	fx_init(&f);
	/* Linux's probe: LOOP | OUT2 | RTS must read back DCD | CTS. */
	wr(&f, MCR, 0x1a);
	CHECK_EQ(rd(&f, MSR) & 0xf0, 0x90);
	wr(&f, MCR, 0x1f);
	CHECK_EQ(rd(&f, MSR) & 0xf0, 0xf0);
	wr(&f, MCR, 0x11);
	CHECK_EQ(rd(&f, MSR) & 0xf0, 0x20);     /* DTR -> DSR only */
	CHECK_EQ(rd(&f, MCR), 0x11);
	wr(&f, MCR, 0xff);
	CHECK_EQ(rd(&f, MCR), 0x1f);            /* bits 5-7 do not exist */

	/* Sent bytes come back, not out; the line is dead in loopback
	 * even with OUT2 set. */
	wr(&f, IER, 0x01);
	wr(&f, THR, 'q');
	CHECK_EQ(f.out.len, 0);
	CHECK_EQ(rd(&f, IIR), 0x04);
	CHECK_EQ(f.irq.level, 0);
	CHECK_EQ(rd(&f, RBR), 'q');
	/* Without FIFOs a second byte overruns the first. */
	wr(&f, THR, '1');
	wr(&f, THR, '2');
	CHECK_EQ(rd(&f, LSR), 0x63);            /* DR | OE */
	CHECK_EQ(rd(&f, LSR), 0x61);            /* OE cleared by reading */
	CHECK_EQ(rd(&f, RBR), '1');

	/* Host input waits while looped back, arrives when it ends. */
	uart_input(&f.u, (const uint8_t *)"h", 1);
	CHECK_EQ(rd(&f, LSR) & 0x01, 0);
	wr(&f, MCR, 0x0b);
	CHECK_EQ(f.irq.level, 1);
	CHECK_EQ(rd(&f, RBR), 'h');
	CHECK_EQ(f.irq.level, 0);

	/* FIFO depth as Linux's size_fifo() measures it: 16. */
	wr(&f, FCR, 0x07);
	wr(&f, MCR, 0x10);
	for (unsigned i = 0; i < 64; i++)
		wr(&f, THR, (uint8_t)i);
	while ((rd(&f, LSR) & 0x01) && n < 512) {
		CHECK_EQ(rd(&f, RBR), n);
		n++;
	}
	CHECK_EQ(n, 16);
	uart_destroy(&f.u);
}

static void test_priority_and_msr(void)
{
	struct fixture f;

	fx_init(&f);
	wr(&f, FCR, 0x01);
	wr(&f, MCR, 0x10);                      /* loopback, all low */
	CHECK_EQ(rd(&f, MSR), 0x0b);            /* CTS, DSR, DCD fell */
	CHECK_EQ(rd(&f, MSR), 0x00);            /* deltas cleared by read */
	wr(&f, MCR, 0x12);                      /* RTS -> CTS */
	wr(&f, MCR, 0x16);                      /* OUT1 -> RI */
	wr(&f, MCR, 0x12);                      /* RI trailing edge */
	CHECK_EQ(rd(&f, MSR), 0x15);            /* CTS, DCTS, TERI */
	wr(&f, MCR, 0x16);                      /* RI rising: no TERI */
	CHECK_EQ(rd(&f, MSR), 0x50);

	/* All four sources pending at once. */
	wr(&f, MCR, 0x17);                      /* DSR rises: DDSR */
	for (unsigned i = 0; i < 17; i++)       /* 17th byte overruns */
		wr(&f, THR, (uint8_t)i);
	wr(&f, IER, 0x0f);                      /* THRI rising arms THRE */
	CHECK_EQ(rd(&f, IIR), 0xc6);            /* line status first */
	CHECK_EQ(rd(&f, LSR), 0x63);
	CHECK_EQ(rd(&f, IIR), 0xc4);            /* then received data */
	for (unsigned i = 0; i < 16; i++)
		rd(&f, RBR);
	CHECK_EQ(rd(&f, IIR), 0xc2);            /* then THRE (acked now) */
	CHECK_EQ(rd(&f, IIR), 0xc0);            /* then modem status */
	CHECK_EQ(rd(&f, MSR), 0x72);            /* CTS DSR RI, DDSR */
	CHECK_EQ(rd(&f, IIR), 0xc1);
	uart_destroy(&f.u);
}

/* The register sequence of Linux's autoconfig() and autoconfig_16550a()
 * (drivers/tty/serial/8250/8250_port.c), as observed behaviour: each
 * comparison below is one the driver makes to reject another chip type. */
static void test_linux_probe(void)
{
	struct fixture f;
	uint8_t save, s1, s2, s3;

	fx_init(&f);
	/* IER test: 0 reads 0, 0x0f reads 0x0f. */
	save = rd(&f, IER);
	wr(&f, IER, 0);
	s2 = rd(&f, IER) & 0x0f;
	wr(&f, IER, 0x0f);
	s3 = rd(&f, IER) & 0x0f;
	wr(&f, IER, save);
	CHECK(s2 == 0 && s3 == 0x0f);
	/* Loopback test. */
	save = rd(&f, MCR);
	wr(&f, MCR, 0x10 | 0x0a);
	s1 = rd(&f, MSR) & 0xf0;
	wr(&f, MCR, save);
	CHECK_EQ(s1, 0x90);
	/* EFR access mode (LCR 0xbf), then FIFO detection. */
	wr(&f, LCR, 0xbf);
	wr(&f, 2, 0);                           /* EFR = FCR here: FIFO off */
	wr(&f, LCR, 0);
	wr(&f, FCR, 0x01);
	CHECK_EQ(rd(&f, IIR) >> 6, 3);          /* "16550A" */
	/* No EFR under LCR 0x80 or 0xbf (offset 2 reads non-zero). */
	wr(&f, LCR, 0x80);
	CHECK(rd(&f, 2) != 0);
	wr(&f, LCR, 0xbf);
	CHECK(rd(&f, 2) != 0);
	/* Not a 16750: IIR bit 5 never set, DLAB or not. */
	wr(&f, LCR, 0);
	wr(&f, FCR, 0x21);
	s1 = rd(&f, IIR) >> 5;
	wr(&f, LCR, 0x80);
	wr(&f, FCR, 0x21);
	s2 = rd(&f, IIR) >> 5;
	wr(&f, LCR, 0);
	CHECK(!(s1 == 6 && s2 == 7));
	CHECK_EQ(s1, 6);
	/* Not an XScale: IER bit 6 (UUE) does not stick. */
	wr(&f, IER, 0x40);
	CHECK_EQ(rd(&f, IER) & 0x40, 0);
	wr(&f, IER, 0);
	/* LSR is never 0xff (the "no UART here" value at startup). */
	CHECK(rd(&f, LSR) != 0xff);
	uart_destroy(&f.u);
}

struct room_rec {
	int calls;
};

static void room_cb(void *opaque)
{
	((struct room_rec *)opaque)->calls++;
}

static void test_input_buffer(void)
{
	static uint8_t big[UART_INPUT_SIZE + 100];
	struct fixture f;
	struct room_rec room = { 0 };
	size_t total = UART_INPUT_SIZE + UART_FIFO_SIZE;

	fx_init(&f);
	uart_set_room_cb(&f.u, room_cb, &room);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	wr(&f, FCR, 0x01);
	/* FIFO takes 16 at once, the buffer the next UART_INPUT_SIZE. */
	CHECK_EQ(uart_input(&f.u, big, UART_FIFO_SIZE), UART_FIFO_SIZE);
	CHECK_EQ(uart_input(&f.u, big + UART_FIFO_SIZE, sizeof(big) -
			    UART_FIFO_SIZE), UART_INPUT_SIZE);
	CHECK_EQ(uart_input_room(&f.u), 0);
	CHECK_EQ(uart_input(&f.u, big, 1), 0);
	CHECK_EQ(room.calls, 0);
	CHECK_EQ(rd(&f, RBR), big[0]);
	CHECK_EQ(room.calls, 1);
	CHECK_EQ(uart_input_room(&f.u), 1);
	for (size_t i = 1; i < total; i++)
		if (rd(&f, RBR) != big[i]) {
			CHECK_EQ(i, -1);        /* reports the first bad index */
			break;
		}
	CHECK_EQ(rd(&f, LSR) & 0x01, 0);
	CHECK_EQ(room.calls, 1);
	uart_destroy(&f.u);
}

/* The I/O thread feeds input while a "vCPU" drains it through the bus:
 * every byte arrives once, in order (run under TSan/ASan to catch races). */
#define STREAM_LEN 20000

static void *feeder(void *arg)
{
	struct uart *u = arg;
	size_t sent = 0;

	while (sent < STREAM_LEN) {
		uint8_t chunk[64];
		size_t n = STREAM_LEN - sent < sizeof(chunk) ?
			   STREAM_LEN - sent : sizeof(chunk);

		for (size_t i = 0; i < n; i++)
			chunk[i] = (uint8_t)((sent + i) % 251);
		sent += uart_input(u, chunk, n);
	}
	return NULL;
}

static void test_threads(void)
{
	struct fixture f;
	struct bus bus;
	pthread_t t;
	size_t got = 0, bad = 0;

	fx_init(&f);
	bus_init(&bus, "pio");
	CHECK_EQ(uart_attach(&f.u, &bus, 0x3f8), 0);
	CHECK_EQ(uart_attach(&f.u, &bus, 0x3fc), -EEXIST);
	wr(&f, FCR, 0x01);
	CHECK_EQ(pthread_create(&t, NULL, feeder, &f.u), 0);
	while (got < STREAM_LEN) {
		uint8_t lsr, b;

		bus_read(&bus, 0x3fd, &lsr, 1);
		if (!(lsr & 0x01))
			continue;
		bus_read(&bus, 0x3f8, &b, 1);
		bad += b != got % 251;
		got++;
	}
	pthread_join(t, NULL);
	CHECK_EQ(bad, 0);
	uart_destroy(&f.u);
}

static void test_bus_glue(void)
{
	struct fixture f;
	struct bus bus;
	uint8_t b = 0x3c;
	uint16_t w = 0;

	fx_init(&f);
	bus_init(&bus, "pio");
	CHECK_EQ(uart_attach(&f.u, &bus, 0x2f8), 0);
	CHECK_EQ(bus_write(&bus, 0x2ff, &b, 1), 0);
	CHECK_EQ(f.u.scr, 0x3c);
	CHECK_EQ(bus_read(&bus, 0x2ff, &w, 2), 0);
	CHECK_EQ(w, 0xff3c);                    /* byte device: ones above */
	CHECK_EQ(bus_read(&bus, 0x300, &b, 1), -ENOENT);
	uart_destroy(&f.u);
}

int main(void)
{
	test_reset_scratch_dlab();
	test_system_reset();
	test_output_and_thre();
	test_input_irq();
	test_fifo();
	test_loopback();
	test_priority_and_msr();
	test_linux_probe();
	test_input_buffer();
	test_threads();
	test_bus_glue();
	return check_report("test_uart");
}
