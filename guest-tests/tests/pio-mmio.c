/*
 * pio-mmio: port I/O and MMIO round trips against registers the VMM must
 * model (so the test runs under --strict-io, where any unclaimed access
 * ends the VM):
 *  - UART scratch register (0x3ff) and line control register (0x3fb);
 *  - IOAPIC (0xfec00000): version through IOREGSEL/IOWIN, IOREGSEL read
 *    back, a redirection entry written and read back;
 *  - LAPIC version register (MMIO in xAPIC mode, MSR 0x803 in x2APIC).
 * With "unmapped" on the command line it also reads a physical address
 * nothing claims and expects all ones (only without --strict-io).
 */
#include "guest.h"

#define COM1_LCR      0x3fb
#define COM1_SCR      0x3ff
#define IOAPIC_SEL    0x00
#define IOAPIC_WIN    0x10
#define IOAPIC_REG_VER 0x01
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))
#define UNMAPPED_PA   0xe0000000ul   /* PCI hole, no device */

static void test_uart_scratch(void)
{
	static const uint8_t patterns[] = { 0x00, 0x55, 0xaa, 0xff, 0x5a };
	bool ok = true;

	for (unsigned i = 0; i < sizeof(patterns); i++) {
		uint8_t got;

		outb(COM1_SCR, patterns[i]);
		got = inb(COM1_SCR);
		if (got != patterns[i]) {
			report_info("scratch: wrote %02x read %02x", patterns[i], got);
			ok = false;
		}
	}
	report(ok, "PIO: UART scratch register 0x3ff round trip (5 patterns)");

	outb(COM1_LCR, 0x1b);   /* 8 bits, 1 stop, even parity */
	ok = inb(COM1_LCR) == 0x1b;
	outb(COM1_LCR, 0x03);
	ok = ok && inb(COM1_LCR) == 0x03;
	report(ok, "PIO: UART line control register 0x3fb round trip");
}

static uint32_t ioapic_read(uint64_t base, uint32_t reg)
{
	mmio_write32(base + IOAPIC_SEL, reg);
	return mmio_read32(base + IOAPIC_WIN);
}

static void ioapic_write(uint64_t base, uint32_t reg, uint32_t val)
{
	mmio_write32(base + IOAPIC_SEL, reg);
	mmio_write32(base + IOAPIC_WIN, val);
}

static void test_ioapic(void)
{
	const struct mp_info *mp = smp_mp_info();
	uint64_t base = mp->found && mp->ioapic_pa ? mp->ioapic_pa : 0xfec00000;
	uint32_t ver, sel, rte, saved, maxrte;

	ver = ioapic_read(base, IOAPIC_REG_VER);
	maxrte = (ver >> 16) & 0xff;
	report_info("IOAPIC at %lx: version %02x, %u redirection entries",
		    base, ver & 0xff, maxrte + 1);
	report(ver != 0xffffffff && (ver & 0xff) >= 0x11 && (ver & 0xff) <= 0x20 &&
	       maxrte >= 15, "MMIO: IOAPIC version register (got %08x)", ver);

	mmio_write32(base + IOAPIC_SEL, IOAPIC_REDTBL(2));
	sel = mmio_read32(base + IOAPIC_SEL) & 0xff;
	report(sel == IOAPIC_REDTBL(2), "MMIO: IOREGSEL reads back (%02x)", sel);

	/* Masked, so the test vector can never fire. */
	saved = ioapic_read(base, IOAPIC_REDTBL(2));
	ioapic_write(base, IOAPIC_REDTBL(2), APIC_LVT_MASKED | 0x5e);
	rte = ioapic_read(base, IOAPIC_REDTBL(2));
	ioapic_write(base, IOAPIC_REDTBL(2), saved | APIC_LVT_MASKED);
	report((rte & 0x100ff) == (APIC_LVT_MASKED | 0x5e),
	       "MMIO: IOAPIC redirection entry 2 round trip (got %08x)", rte);
}

static void test_lapic_version(void)
{
	uint32_t v = lapic_x2apic() ? (uint32_t)rdmsr(0x803) :
		     mmio_read32(lapic_base_pa() + APIC_LVR);
	unsigned ver = v & 0xff, maxlvt = (v >> 16) & 0xff;

	report(ver >= 0x10 && ver <= 0x15 && maxlvt >= 2 && maxlvt < 8,
	       "%s: LAPIC version register (got %08x: version %02x, %u LVTs)",
	       lapic_x2apic() ? "MSR 0x803" : "MMIO 0xfee00030", v, ver, maxlvt + 1);
}

int main(int argc, char **argv)
{
	(void)argc, (void)argv;
	test_uart_scratch();
	test_ioapic();
	test_lapic_version();
	if (cmdline_has("unmapped")) {
		uint32_t v = mmio_read32(UNMAPPED_PA);

		report(v == 0xffffffff, "MMIO: unmapped %lx reads all ones (got %08x)",
		       UNMAPPED_PA, v);
	}
	return report_summary();
}
