/*
 * libFuzzer target: the 16550A UART as the VMM wires it (vmm/vm_devices.c):
 * on a port bus at 0x3f8 with its IRQ line and output callback, host
 * input from the console thread through uart_input and the room callback,
 * system resets. The input is a program of port accesses (1, 2 or 4
 * bytes, as KVM reports them), host input chunks and resets.
 *
 * Beyond ASan/UBSan: the interrupt line the UART drives is the one it
 * says it drives; host input is never lost or reordered while the guest
 * does nothing that may drop it (loopback, FIFO reset or enable change, a
 * system reset); the room callback comes on the first read that frees
 * host-buffer space after uart_input refused bytes; the buffers stay
 * within their sizes.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/fuzz_target.h"
#include "devices/bus.h"
#include "devices/uart.h"
#include "devices/fuzz/uart_ops.h"

#define COM1 0x3f8

struct harness {
	struct uart u;
	struct bus pio;
	struct irq_line line;
	int level;                      /* what the line was last set to */
	unsigned out_bytes;
	bool want_room;                 /* uart_input refused bytes, no room call yet */
	bool lossless;                  /* host input must come out exactly */
	uint8_t shadow[UART_INPUT_SIZE + UART_FIFO_SIZE];
	size_t sh_head, sh_count;       /* host bytes the guest has not read */
};

static void h_irq(void *opaque, unsigned gsi, int level)
{
	struct harness *h = opaque;

	FZ_ASSERT(gsi == 4);
	FZ_ASSERT(level == 0 || level == 1);
	FZ_ASSERT(level != h->level);   /* only changes are passed on */
	h->level = level;
}

static void h_out(void *opaque, const uint8_t *buf, size_t len)
{
	struct harness *h = opaque;

	(void)buf;
	h->out_bytes += (unsigned)len;
}

static void h_room(void *opaque)
{
	struct harness *h = opaque;

	h->want_room = false;
}

static void lose_guarantee(struct harness *h)
{
	h->lossless = false;
	h->sh_count = 0;
}

static void port_access(struct harness *h, uint8_t how, uint8_t off, uint32_t val)
{
	static const unsigned lens[4] = { 1, 2, 4, 1 };
	unsigned len = lens[(how >> 1) & 3];
	struct uart *u = &h->u;
	bool write = how & 1;
	uint8_t data[4];

	off %= UART_NR_PORTS + 1;               /* one past the device too */
	if (write) {
		bool dlab = u->lcr & 0x80;

		device_data_put(data, 4, val);
		if ((off == 2) ||                                       /* FCR */
		    (off == 4 && (val & 0x10)) ||                       /* MCR loopback */
		    (off == 0 && !dlab && (u->mcr & 0x10)))             /* loopback byte */
			lose_guarantee(h);
		bus_write(&h->pio, COM1 + off, data, len);
		return;
	}
	{
		bool rbr = off == 0 && !(u->lcr & 0x80);
		unsigned had = u->fifo_count;
		int r;

		memset(data, 0, sizeof(data));
		r = bus_read(&h->pio, COM1 + off, data, len);
		if (off >= UART_NR_PORTS) {
			FZ_ASSERT(r == -ENOENT);
			return;
		}
		FZ_ASSERT(r == 0);
		for (unsigned i = 1; i < len; i++)
			FZ_ASSERT(data[i] == 0xff);     /* a byte device: ones above */
		if (!rbr || !had)
			return;
		if (h->lossless && h->sh_count) {
			FZ_ASSERT(data[0] == h->shadow[h->sh_head]);
			h->sh_head = (h->sh_head + 1) % sizeof(h->shadow);
			h->sh_count--;
		}
		if (h->want_room && u->in_count < UART_INPUT_SIZE)
			FZ_ASSERT(!"no room callback after the read that made room");
	}
}

static void host_input(struct harness *h, const uint8_t *p, size_t n)
{
	size_t room = uart_input_room(&h->u);
	size_t took = uart_input(&h->u, p, n);

	FZ_ASSERT(took <= n && took <= room);
	FZ_ASSERT(took == (n < room ? n : room));
	if (took < n)
		h->want_room = true;
	if (h->lossless)
		for (size_t i = 0; i < took; i++) {
			FZ_ASSERT(h->sh_count < sizeof(h->shadow));
			h->shadow[(h->sh_head + h->sh_count++) % sizeof(h->shadow)] = p[i];
		}
}

static void check(struct harness *h)
{
	struct uart *u = &h->u;

	FZ_ASSERT(u->irq_level == h->level);
	FZ_ASSERT(u->fifo_count <= UART_FIFO_SIZE && u->fifo_head < UART_FIFO_SIZE);
	FZ_ASSERT(u->in_count <= UART_INPUT_SIZE && u->in_head < UART_INPUT_SIZE);
	FZ_ASSERT(uart_input_room(u) == UART_INPUT_SIZE - u->in_count);
	if (h->lossless)
		FZ_ASSERT(h->sh_count == u->in_count + u->fifo_count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct harness h;
	struct fz_in in = { data, size };
	unsigned ops = 0;

	memset(&h, 0, sizeof(h));
	h.lossless = true;
	h.line = (struct irq_line){ .set = h_irq, .opaque = &h, .gsi = 4 };
	bus_init(&h.pio, "pio");
	FZ_ASSERT(uart_init(&h.u, &h.line, h_out, &h) == 0);
	uart_set_room_cb(&h.u, h_room, &h);
	FZ_ASSERT(uart_attach(&h.u, &h.pio, COM1) == 0);

	while (!fz_done(&in) && ops++ < 8192) {
		uint8_t op = fz_u8(&in);

		switch (op % UART_OP_COUNT) {
		case UART_OP_IO: {
			uint8_t how = fz_u8(&in), off = fz_u8(&in);

			port_access(&h, how, off, fz_u32(&in));
			break;
		}
		case UART_OP_INPUT: {
			size_t n = fz_u16(&in) % 5000, got;
			const uint8_t *p = fz_bytes(&in, n, &got);

			host_input(&h, p, got);
			break;
		}
		case UART_OP_INPUT_FILL: {
			/* a fast typist: more than the buffer holds */
			static uint8_t big[UART_INPUT_SIZE + 100];
			uint8_t b = fz_u8(&in);
			size_t n = fz_u16(&in) % sizeof(big);

			for (size_t i = 0; i < n; i++)
				big[i] = (uint8_t)(b + i);
			host_input(&h, big, n);
			break;
		}
		case UART_OP_READ_ALL: {
			/* the guest's receive loop: LSR.DR then RBR, until empty */
			unsigned guard = 0;

			while (guard++ < UART_INPUT_SIZE + 2 * UART_FIFO_SIZE) {
				uint8_t lsr = 0;

				bus_read(&h.pio, COM1 + 5, &lsr, 1);
				if (!(lsr & 1))
					break;
				port_access(&h, 0, (h.u.lcr & 0x80) ? 5 : 0, 0);
				if (h.u.lcr & 0x80)
					break;
			}
			break;
		}
		case UART_OP_RESET:
			uart_reset(&h.u);
			lose_guarantee(&h);
			FZ_ASSERT(h.level == 0);
			break;
		default:
			break;
		}
		check(&h);
	}
	uart_destroy(&h.u);
	return 0;
}
