/*
 * Seed inputs for devices/fuzz (apic, uart, bus), written at build time:
 *     fuzz_devices_seeds TARGET DIR
 * Each seed is a short program in the target's encoding (apic_ops.h,
 * uart_ops.h, bus_ops.h) doing what the unit tests and a booting guest
 * do, so that fuzzing starts from deep states rather than from reset.
 */
#include <string.h>

#include "common/fuzz_seeds.h"
#include "devices/fuzz/apic_ops.h"
#include "devices/fuzz/bus_ops.h"
#include "devices/fuzz/uart_ops.h"

static struct fz_out o;

static void begin(void)
{
	o.len = 0;
}

static void emit(const char *name)
{
	fz_emit(name, &o);
}

/* ---- apic ---- */

static void apic_hdr(unsigned cpus, unsigned flags)
{
	fz_put(&o, 1, (cpus - 1) | flags);
	fz_put(&o, 4, 2000000);                 /* TSC kHz: 2 GHz */
	fz_put(&o, 4, 1000000);                 /* start at 1 s */
	fz_put(&o, 8, 0);                       /* guest TSC at host 0 */
}

static void x2w(unsigned cpu, unsigned reg, uint64_t v)
{
	fz_put(&o, 1, APIC_OP_X2_WRITE);
	fz_put(&o, 1, cpu);
	fz_put(&o, 1, reg >> 4);
	fz_put(&o, 8, v);
}

static void x2r(unsigned cpu, unsigned reg)
{
	fz_put(&o, 1, APIC_OP_X2_READ);
	fz_put(&o, 1, cpu);
	fz_put(&o, 1, reg >> 4);
}

static void msr_w(unsigned cpu, uint32_t msr, uint64_t v)
{
	fz_put(&o, 1, APIC_OP_MSR);
	fz_put(&o, 1, cpu);
	fz_put(&o, 4, msr);
	fz_put(&o, 1, 1);
	fz_put(&o, 8, v);
}

/* A 32-bit MMIO access: the LAPIC page or (ioapic) the IOAPIC window. */
static void mmio(unsigned cpu, bool ioapic, bool write, unsigned off, uint32_t v)
{
	fz_put(&o, 1, APIC_OP_MMIO);
	fz_put(&o, 1, cpu);
	fz_put(&o, 1, (write ? 1 : 0) | (ioapic ? 2 : 0) | 4 | (3 << 5));
	fz_put(&o, 2, off);
	fz_put(&o, 8, v);
}

static void advance(unsigned cpu, unsigned dt, unsigned shift)
{
	fz_put(&o, 1, APIC_OP_TIME);
	fz_put(&o, 1, cpu);
	fz_put(&o, 2, dt);
	fz_put(&o, 1, shift);
}

static void run(unsigned cpu)
{
	fz_put(&o, 1, APIC_OP_RUN);
	fz_put(&o, 1, cpu);
	fz_put(&o, 1, 1);
}

static void pin(unsigned p, unsigned level)
{
	fz_put(&o, 1, APIC_OP_PIN);
	fz_put(&o, 1, 0);
	fz_put(&o, 1, p | (level << 5));
}

#define BASE_X2 (0xfee00000ull | (1 << 11) | (1 << 10))

static void ioapic_redir(unsigned cpu, unsigned p, uint64_t e)
{
	mmio(cpu, true, true, 0x00, 0x10 + 2 * p);
	mmio(cpu, true, true, 0x10, (uint32_t)e);
	mmio(cpu, true, true, 0x00, 0x11 + 2 * p);
	mmio(cpu, true, true, 0x10, (uint32_t)(e >> 32));
}

static void seeds_apic(void)
{
	/* x2APIC on two CPUs, a periodic timer, IPIs both ways */
	begin();
	apic_hdr(2, 0);
	msr_w(0, 0x1b, BASE_X2 | (1 << 8));
	msr_w(1, 0x1b, BASE_X2);
	x2w(0, 0xf0, 0x1ff);
	x2w(1, 0xf0, 0x1ff);
	x2w(0, 0x3e0, 0xb);                     /* divide by 1 */
	x2w(0, 0x320, 0x20030);                 /* periodic, vector 0x30 */
	x2w(0, 0x380, 100000);
	for (int i = 0; i < 4; i++) {
		advance(0, 50000, 1);
		run(0);
		x2w(0, 0xb0, 0);                /* EOI */
	}
	x2w(0, 0x300, (1ull << 32) | 0x40);     /* fixed IPI to APIC 1 */
	run(1);
	x2r(1, 0x100);                          /* ISR */
	x2w(1, 0xb0, 0);
	x2w(1, 0x3f0, 0x41);                    /* SELF IPI */
	run(1);
	x2r(0, 0x390);                          /* TMCCT */
	emit("apic-x2apic-timer-ipi");

	/* xAPIC through MMIO: logical destinations, lowest priority, TPR */
	begin();
	apic_hdr(4, 0);
	for (unsigned c = 0; c < 4; c++) {
		mmio(c, false, true, 0xf0, 0x1ff);
		mmio(c, false, true, 0xe0, 0xffffffff);         /* flat */
		mmio(c, false, true, 0xd0, 1u << (24 + c));     /* LDR */
	}
	mmio(2, false, true, 0x80, 0x20);                        /* TPR */
	mmio(0, false, true, 0x310, 0x0f000000);
	mmio(0, false, true, 0x300, 0x950);     /* lowest priority, logical, vector 0x50 */
	for (unsigned c = 0; c < 4; c++)
		run(c);
	mmio(0, false, true, 0x310, 0x02000000);
	mmio(0, false, true, 0x300, 0x451);     /* NMI to APIC 2 */
	run(2);
	mmio(0, false, false, 0x280, 0);        /* ESR */
	mmio(1, false, true, 0x300, 0xc4800);   /* NMI to all but self */
	emit("apic-xapic-logical");

	/* the IOAPIC: a level-triggered pin, its EOI, a masked edge pin */
	begin();
	apic_hdr(2, 0);
	msr_w(0, 0x1b, BASE_X2 | (1 << 8));
	x2w(0, 0xf0, 0x1ff);
	ioapic_redir(0, 4, 0x8040);             /* level, vector 0x40, APIC 0 */
	ioapic_redir(0, 2, 0x10031);            /* masked edge */
	pin(4, 1);
	run(0);
	x2w(0, 0xb0, 0);                        /* EOI: remote IRR, sent again */
	run(0);
	pin(4, 0);
	x2w(0, 0xb0, 0);
	pin(2, 1);
	ioapic_redir(0, 2, 0x0031);             /* unmask */
	pin(2, 0);
	pin(2, 1);
	run(0);
	mmio(0, true, true, 0x40, 0x40);        /* the EOI register */
	mmio(0, true, true, 0x00, 0x01);
	mmio(0, true, false, 0x10, 0);          /* version */
	emit("apic-ioapic-level");

	/* TSC deadline, then INIT / SIPI to an AP */
	begin();
	apic_hdr(2, 0);
	msr_w(0, 0x1b, BASE_X2 | (1 << 8));
	msr_w(1, 0x1b, BASE_X2);
	x2w(0, 0xf0, 0x1ff);
	x2w(0, 0x320, 0x40031);                 /* TSC-deadline mode */
	msr_w(0, 0x6e0, 2000000000ull + 4000000);
	advance(0, 2000, 10);
	run(0);
	msr_w(0, 0x6e0, 1);                     /* in the past: at once */
	run(0);
	x2w(0, 0x300, (1ull << 32) | 0x4500);   /* INIT */
	run(1);
	x2w(0, 0x300, (1ull << 32) | 0x4610);   /* SIPI vector 0x10 */
	run(1);
	fz_put(&o, 1, APIC_OP_RESET);
	fz_put(&o, 1, 0);
	fz_put(&o, 1, 1);
	emit("apic-tsc-deadline-init-sipi");
}

/* ---- uart ---- */

static void uart_io(bool write, unsigned off, uint32_t v)
{
	fz_put(&o, 1, UART_OP_IO);
	fz_put(&o, 1, write ? 1 : 0);
	fz_put(&o, 1, off);
	fz_put(&o, 4, v);
}

static void uart_in(const char *s)
{
	fz_put(&o, 1, UART_OP_INPUT);
	fz_put(&o, 2, strlen(s));
	fz_put_bytes(&o, s, strlen(s));
}

static void seeds_uart(void)
{
	/* what Linux's 8250 driver does at boot, then a console line */
	begin();
	uart_io(true, 3, 0x80);                 /* DLAB */
	uart_io(true, 0, 1);
	uart_io(true, 1, 0);
	uart_io(true, 3, 0x03);                 /* 8n1 */
	uart_io(true, 2, 0xc7);                 /* FIFO on, cleared, trigger 14 */
	uart_io(false, 2, 0);
	uart_io(true, 4, 0x0b);                 /* DTR RTS OUT2 */
	uart_io(true, 1, 0x0f);                 /* every interrupt */
	uart_io(false, 2, 0);
	uart_in("root\nls -l /proc\n");
	fz_put(&o, 1, UART_OP_READ_ALL);
	for (const char *p = "login: "; *p; p++)
		uart_io(true, 0, (uint8_t)*p);
	uart_io(false, 5, 0);
	uart_io(false, 6, 0);
	emit("uart-linux-console");

	/* size_fifo(): loopback, 16+ bytes, overrun */
	begin();
	uart_io(true, 2, 0x07);
	uart_io(true, 4, 0x10);                 /* loopback */
	for (int i = 0; i < 20; i++)
		uart_io(true, 0, (uint32_t)i);
	uart_io(false, 5, 0);
	fz_put(&o, 1, UART_OP_READ_ALL);
	uart_io(true, 4, 0x1f);
	uart_io(false, 6, 0);
	uart_io(true, 4, 0x0b);
	uart_io(false, 6, 0);
	emit("uart-loopback");

	/* host input faster than the guest reads: the buffer fills */
	begin();
	uart_io(true, 2, 0x01);
	uart_io(true, 4, 0x08);
	uart_io(true, 1, 0x01);
	fz_put(&o, 1, UART_OP_INPUT_FILL);
	fz_put(&o, 1, 'a');
	fz_put(&o, 2, 4150);
	uart_io(false, 2, 0);
	fz_put(&o, 1, UART_OP_READ_ALL);
	uart_in("more");
	uart_io(false, 0, 0);
	fz_put(&o, 1, UART_OP_RESET);
	uart_io(false, 0, 0);
	emit("uart-input-full");
}

/* ---- bus ---- */

/* Index into fuzz_bus.c's ports[]. */
enum { P_UART, P_RTC_I, P_RTC_D, P_DBG, P_CF9, P_KBD_D, P_KBD_C, P_PCI_A, P_PCI_D,
       P_FWCFG, P_TD_IRQ, P_TD_IO };

static void pio(bool write, unsigned dev, unsigned off, unsigned size, uint64_t v)
{
	unsigned sz = size == 1 ? 0 : size == 2 ? 1 : 2;

	fz_put(&o, 1, BUS_OP_PIO);
	fz_put(&o, 1, (write ? 1 : 0) | (sz << 1));
	fz_put(&o, 1, dev | (off << 4));
	fz_put(&o, 8, v);
}

static void mmio_io(bool write, unsigned off, uint32_t v)
{
	fz_put(&o, 1, BUS_OP_MMIO);
	fz_put(&o, 1, (write ? 1 : 0) | (3 << 1));
	fz_put(&o, 2, off);
	fz_put(&o, 8, v);
}

static void seeds_bus(void)
{
	/* the RTC as a guest's clock driver reads and sets it */
	begin();
	fz_put(&o, 4, 1700000000u / 16);
	for (unsigned r = 0; r < 14; r++) {
		pio(true, P_RTC_I, 0, 1, r);
		pio(false, P_RTC_D, 0, 1, 0);
	}
	pio(true, P_RTC_I, 0, 1, 0x0b);
	pio(true, P_RTC_D, 0, 1, 0x82);         /* SET, 24h */
	pio(true, P_RTC_I, 0, 1, 0x09);
	pio(true, P_RTC_D, 0, 1, 0x99);
	pio(true, P_RTC_I, 0, 1, 0x0b);
	pio(true, P_RTC_D, 0, 1, 0x06);         /* binary, 24h */
	fz_put(&o, 1, BUS_OP_CLOCK);
	fz_put(&o, 4, 3600);
	pio(true, P_RTC_I, 0, 1, 0x00);
	pio(false, P_RTC_D, 0, 1, 0);
	emit("bus-rtc");

	/* PCI probe, fw_cfg signature and items, pc-testdev, i8042, reset */
	begin();
	fz_put(&o, 4, 0);
	pio(true, P_PCI_A, 0, 4, 0x80000000u);
	pio(false, P_PCI_D, 0, 4, 0);
	pio(true, P_PCI_A, 0, 4, 0x80000800u);
	pio(false, P_PCI_D, 2, 2, 0);
	pio(true, P_FWCFG, 0, 2, 0x0000);
	for (int i = 0; i < 4; i++)
		pio(false, P_FWCFG, 1, 1, 0);
	pio(true, P_FWCFG, 0, 2, 0x0005);
	pio(false, P_FWCFG, 1, 1, 0);
	pio(true, P_FWCFG, 0, 2, 0x0003);
	for (int i = 0; i < 8; i++)
		pio(false, P_FWCFG, 1, 1, 0);
	pio(true, P_TD_IRQ, 4, 1, 1);
	pio(true, P_TD_IRQ, 4, 1, 0);
	pio(true, P_TD_IO, 0, 4, 0x12345678);
	pio(false, P_TD_IO, 0, 4, 0);
	pio(true, P_KBD_C, 0, 1, 0x20);
	pio(false, P_KBD_D, 0, 1, 0);
	pio(true, P_KBD_C, 0, 1, 0x60);
	pio(true, P_KBD_D, 0, 1, 0x47);
	pio(true, P_KBD_C, 0, 1, 0xd1);
	pio(true, P_KBD_D, 0, 1, 0xfe);
	pio(true, P_KBD_C, 0, 1, 0xfe);
	pio(true, P_CF9, 0, 1, 0x02);
	pio(true, P_CF9, 0, 1, 0x06);
	pio(true, P_DBG, 0, 1, 0x10);
	pio(false, P_UART, 5, 1, 0);
	emit("bus-ports");

	/* IOAPIC registers through the MMIO bus, a range table */
	begin();
	fz_put(&o, 4, 0);
	mmio_io(true, 0x00, 0x01);
	mmio_io(false, 0x10, 0);
	mmio_io(true, 0x00, 0x10);
	mmio_io(true, 0x10, 0x8031);
	mmio_io(true, 0x40, 0x31);
	for (unsigned i = 0; i < 4; i++) {
		fz_put(&o, 1, BUS_OP_REGISTER);
		fz_put(&o, 8, 0x1000 * (i + 1));
		fz_put(&o, 8, 0x800);
		fz_put(&o, 1, 0);
	}
	fz_put(&o, 1, BUS_OP_REGISTER);
	fz_put(&o, 8, ~0ull - 0xff);
	fz_put(&o, 8, 0x100);
	fz_put(&o, 1, 0);
	for (unsigned i = 0; i < 5; i++) {
		fz_put(&o, 1, BUS_OP_LOOKUP);
		fz_put(&o, 1, i);
		fz_put(&o, 8, i);
	}
	fz_put(&o, 1, BUS_OP_UNREGISTER);
	fz_put(&o, 1, 1);
	emit("bus-ioapic-table");
}

static const struct fz_seed_gen gens[] = {
	{ "apic", seeds_apic },
	{ "uart", seeds_uart },
	{ "bus", seeds_bus },
};

int main(int argc, char **argv)
{
	return fz_seeds_main(argc, argv, gens, sizeof(gens) / sizeof(gens[0]));
}
