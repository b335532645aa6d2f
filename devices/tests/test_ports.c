/* The small port devices: debug-exit status, reset through 0xcf9 and the
 * i8042, and PCI config mechanism #1 with nothing behind it. */
#include <errno.h>
#include <stdint.h>

#include "devices/debug_exit.h"
#include "devices/pci_none.h"
#include "devices/reset.h"
#include "common/test_check.h"

struct exit_rec {
	int calls;
	int status;
};

static void on_exit_cb(void *opaque, int status)
{
	struct exit_rec *e = opaque;

	e->calls++;
	e->status = status;
}

static void test_debug_exit(void)
{
	struct exit_rec rec = { 0 };
	struct debug_exit d = { .exit = on_exit_cb, .opaque = &rec };
	struct debug_exit none = { 0 };
	struct bus bus;
	uint32_t v;
	uint8_t b;

	bus_init(&bus, "pio");
	CHECK_EQ(debug_exit_attach(&none, &bus, DEBUG_EXIT_PORT), -EINVAL);
	CHECK_EQ(debug_exit_attach(&d, &bus, DEBUG_EXIT_PORT), 0);
	CHECK_EQ(debug_exit_attach(&d, &bus, DEBUG_EXIT_PORT), -EEXIST);

	b = 0;                                  /* (0 << 1) | 1 */
	CHECK_EQ(bus_write(&bus, 0xf4, &b, 1), 0);
	CHECK_EQ(rec.calls, 1);
	CHECK_EQ(rec.status, 1);
	b = 0x10;
	bus_write(&bus, 0xf4, &b, 1);
	CHECK_EQ(rec.status, 0x21);
	v = 0x12345;                            /* outl: all 4 bytes count */
	bus_write(&bus, 0xf4, &v, 4);
	CHECK_EQ(rec.status, 0x2468b);
	v = 0x0201;                             /* outw */
	bus_write(&bus, 0xf4, &v, 2);
	CHECK_EQ(rec.status, 0x0403);
	CHECK_EQ(rec.calls, 4);
	CHECK_EQ(debug_exit_status(0x7f), 0xff);
	CHECK_EQ(debug_exit_status(0x3fffffff), 0x7fffffff);

	v = 0;
	CHECK_EQ(bus_read(&bus, 0xf4, &v, 4), 0);
	CHECK_EQ(v, 0xffffffff);
	CHECK_EQ(rec.calls, 4);                 /* reads never exit */
	/* QEMU's default iosize: 0xf5 is not ours. */
	CHECK_EQ(bus_write(&bus, 0xf5, &b, 1), -ENOENT);
}

struct reset_rec {
	int calls;
};

static void on_reset(void *opaque)
{
	((struct reset_rec *)opaque)->calls++;
}

static uint8_t inb(struct bus *bus, uint16_t port)
{
	uint8_t v = 0;

	CHECK_EQ(bus_read(bus, port, &v, 1), 0);
	return v;
}

static void outb(struct bus *bus, uint16_t port, uint8_t v)
{
	CHECK_EQ(bus_write(bus, port, &v, 1), 0);
}

static const struct device_ops dummy_ops = { .name = "dummy" };

static void test_reset(void)
{
	struct reset_rec rec = { 0 };
	struct reset_dev r = { .reset = on_reset, .opaque = &rec };
	struct reset_dev none = { 0 };
	struct bus bus;

	bus_init(&bus, "pio");
	CHECK_EQ(reset_attach(&none, &bus), -EINVAL);
	CHECK_EQ(reset_attach(&r, &bus), 0);
	CHECK_EQ(bus.nr, 3);

	/* 0xcf9: bit 1 alone (Linux's first write) only latches. */
	outb(&bus, 0xcf9, 0x02);
	CHECK_EQ(rec.calls, 0);
	CHECK_EQ(inb(&bus, 0xcf9), 0x02);
	outb(&bus, 0xcf9, 0x06);                /* RST_CPU | SYS_RST */
	CHECK_EQ(rec.calls, 1);
	CHECK_EQ(inb(&bus, 0xcf9), 0x06);

	/* i8042 idle: nothing to read, ready to take a command. */
	CHECK_EQ(inb(&bus, 0x64) & 0x03, 0);
	/* Linux's probe: self-test, read/write the config byte. */
	outb(&bus, 0x64, 0xaa);
	CHECK_EQ(inb(&bus, 0x64) & 0x01, 1);
	CHECK_EQ(inb(&bus, 0x60), 0x55);
	CHECK_EQ(inb(&bus, 0x64) & 0x01, 0);
	outb(&bus, 0x64, 0x20);
	CHECK_EQ(inb(&bus, 0x60), 0x40);        /* translate on */
	outb(&bus, 0x64, 0x60);
	outb(&bus, 0x60, 0x65);
	outb(&bus, 0x64, 0xa7);                 /* aux disable: bit 5 */
	outb(&bus, 0x64, 0x20);
	CHECK_EQ(inb(&bus, 0x60), 0x65);
	outb(&bus, 0x64, 0xa9);                 /* no aux port */
	CHECK_EQ(inb(&bus, 0x60), 0x01);
	outb(&bus, 0x64, 0xd2);                 /* keyboard loop-back */
	outb(&bus, 0x60, 0x5a);
	CHECK_EQ(inb(&bus, 0x60), 0x5a);
	outb(&bus, 0x64, 0x12);                 /* unknown: ignored */
	CHECK_EQ(inb(&bus, 0x64) & 0x03, 0);
	outb(&bus, 0x60, 0xff);                 /* to the absent keyboard */
	CHECK_EQ(inb(&bus, 0x64) & 0x03, 0);
	CHECK_EQ(rec.calls, 1);

	/* Pulse commands: only those with bit 0 clear hit the reset line. */
	outb(&bus, 0x64, 0xff);
	CHECK_EQ(rec.calls, 1);
	outb(&bus, 0x64, 0xfe);
	CHECK_EQ(rec.calls, 2);
	outb(&bus, 0x64, 0xfc);                 /* bits 0 and 1 pulsed */
	CHECK_EQ(rec.calls, 3);
	outb(&bus, 0x64, 0xfd);                 /* bit 1 (A20) only */
	CHECK_EQ(rec.calls, 3);
	/* Output port write with bit 0 (reset, active low) clear. */
	outb(&bus, 0x64, 0xd0);
	CHECK_EQ(inb(&bus, 0x60), 0x03);
	outb(&bus, 0x64, 0xd1);
	outb(&bus, 0x60, 0x03);
	CHECK_EQ(rec.calls, 3);
	outb(&bus, 0x64, 0xd1);
	outb(&bus, 0x60, 0x02);
	CHECK_EQ(rec.calls, 4);
	reset_destroy(&r);

	/* A failed attach leaves nothing registered. */
	bus_init(&bus, "pio");
	CHECK_EQ(bus_register(&bus, 0x64, 1, &dummy_ops, NULL), 0);
	CHECK_EQ(reset_attach(&r, &bus), -EEXIST);
	CHECK_EQ(bus.nr, 1);
}

static void test_pci_none(void)
{
	struct pci_none p;
	struct bus bus;
	uint32_t v;
	uint16_t w;

	bus_init(&bus, "pio");
	CHECK_EQ(pci_none_attach_dev(&p, &bus), 0);
	v = 0x80001234;
	CHECK_EQ(bus_write(&bus, 0xcf8, &v, 4), 0);
	v = 0;
	CHECK_EQ(bus_read(&bus, 0xcf8, &v, 4), 0);
	CHECK_EQ(v, 0x80001234);
	/* Every config read: no device. */
	for (uint16_t port = 0xcfc; port < 0xd00; port++) {
		v = 0;
		CHECK_EQ(bus_read(&bus, port, &v, 1), 0);
		CHECK_EQ(v, 0xff);
	}
	v = 0;
	CHECK_EQ(bus_read(&bus, 0xcfc, &v, 4), 0);
	CHECK_EQ(v, 0xffffffff);
	v = 0x12345678;
	CHECK_EQ(bus_write(&bus, 0xcfc, &v, 4), 0);     /* dropped */
	CHECK_EQ(bus_read(&bus, 0xcfc, &v, 4), 0);
	CHECK_EQ(v, 0xffffffff);
	/* Byte lanes: 0xcfb and 0xcfa write the top bytes, 0xcf8 the low. */
	outb(&bus, 0xcfb, 0x01);
	outb(&bus, 0xcfa, 0x00);
	outb(&bus, 0xcf8, 0x00);
	CHECK_EQ(inb(&bus, 0xcf8), 0x00);
	CHECK_EQ(inb(&bus, 0xcfa), 0x00);
	CHECK_EQ(inb(&bus, 0xcfb), 0x01);
	CHECK_EQ(bus_read(&bus, 0xcfa, &w, 2), 0);
	CHECK_EQ(w, 0x0100);
	CHECK_EQ(bus_read(&bus, 0xcf8, &v, 4), 0);
	CHECK_EQ(v, 0x01001200);
	/* 0xcf9 stays free for the reset register. */
	CHECK_EQ(bus_read(&bus, 0xcf9, &v, 1), -ENOENT);

	/* Together with the reset device on one bus, and the process-wide
	 * variant the VMM uses. */
	{
		struct reset_rec rec = { 0 };
		struct reset_dev r = { .reset = on_reset, .opaque = &rec };

		bus_init(&bus, "pio");
		CHECK_EQ(pci_none_attach(&bus), 0);
		CHECK_EQ(reset_attach(&r, &bus), 0);
		v = 0x8000f800;
		bus_write(&bus, 0xcf8, &v, 4);
		outb(&bus, 0xcf9, 0x04);
		CHECK_EQ(rec.calls, 1);
		v = 0;
		bus_read(&bus, 0xcf8, &v, 4);
		CHECK_EQ(v, 0x8000f800);
		CHECK_EQ(pci_none_attach(&bus), -EEXIST);
		reset_destroy(&r);
	}
}

int main(void)
{
	test_debug_exit();
	test_reset();
	test_pci_none();
	return check_report("test_ports");
}
