/*
 * libFuzzer target: the port and MMIO buses with every device the VMM
 * attaches (vmm/vm_devices.c, vmm/x86/irqchip_user.c): UART, RTC, debug-exit,
 * the reset ports (0xcf9, i8042), PCI config with nothing behind it, the
 * QEMU test devices (fw_cfg, pc-testdev) and the IOAPIC, plus the bus
 * table itself. The input is a program of guest port accesses (1, 2 or 4
 * bytes, string I/O repeating one port as KVM reports rep ins/outs), MMIO
 * accesses of 1 to 8 bytes, clock changes for the RTC, and registrations
 * and removals of ranges on a second bus.
 *
 * Beyond ASan/UBSan: an address the bus dispatches goes to the one range
 * that holds it, with the offset inside that range, and an address no
 * range holds is refused (checked against a plain list of the ranges);
 * the table stays sorted and disjoint; debug-exit statuses are odd.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/fuzz_target.h"
#include "devices/bus.h"
#include "devices/debug_exit.h"
#include "devices/ioapic.h"
#include "devices/lapic.h"
#include "devices/pci_none.h"
#include "devices/qemu_testdev.h"
#include "devices/reset.h"
#include "devices/rtc.h"
#include "devices/uart.h"
#include "devices/fuzz/bus_ops.h"

struct machine {
	struct bus pio, mmio, scratch;
	struct apic_bus apic;
	struct lapic lapic;
	struct ioapic io;
	struct uart uart;
	struct irq_line uart_irq;
	struct rtc rtc;
	struct debug_exit dbg;
	struct reset_dev reset;
	struct pci_none pci;
	struct qemu_testdev testdev;
	int64_t now_s;
	unsigned exits, resets;

	/* the scratch bus's ranges as a plain list, for the dispatch check */
	unsigned nr;
	struct { uint64_t base, len; } r[BUS_MAX_RANGES];
	uint64_t hit_base, hit_off;
	unsigned hits;
};

static int64_t m_now_s(void *opaque)
{
	return ((struct machine *)opaque)->now_s;
}

static void m_exit(void *opaque, int status)
{
	struct machine *m = opaque;

	FZ_ASSERT(status & 1);
	m->exits++;
}

static void m_reset(void *opaque)
{
	((struct machine *)opaque)->resets++;
}

static void m_testdev_irq(void *opaque, unsigned isa_irq, int level)
{
	struct machine *m = opaque;

	FZ_ASSERT(isa_irq < QEMU_TESTDEV_IRQ_LINES);
	/* vm_devices.c's testdev_irq for --irqchip user: ISA 0 is pin 2 */
	ioapic_set_irq(&m->io, isa_irq == 0 ? 2 : isa_irq, level);
}

/* The scratch bus's device: records where an access landed. */
static void scratch_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	struct machine *m = opaque;

	m->hits++;
	m->hit_off = offset;
	memset(data, 0x5a, len);
}

static void scratch_write(void *opaque, uint64_t offset, const void *data, unsigned len)
{
	(void)data;
	(void)len;
	scratch_read(opaque, offset, (uint8_t[8]){ 0 }, 1);
}

static const struct device_ops scratch_ops = {
	.name = "scratch", .read = scratch_read, .write = scratch_write,
};

/* By last bytes: a range may end at 2^64 - 1. */
static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a <= b + (blen - 1) && b <= a + (alen - 1);
}

static void scratch_register(struct machine *m, uint64_t base, uint64_t len)
{
	int want = 0, r;

	if (len == 0 || base + (len - 1) < base)
		want = -EINVAL;
	else if (m->nr == BUS_MAX_RANGES)
		want = -ENOSPC;
	for (unsigned i = 0; i < m->nr && !want; i++)
		if (overlaps(base, len, m->r[i].base, m->r[i].len))
			want = -EEXIST;
	r = bus_register(&m->scratch, base, len, &scratch_ops, m);
	/* Full and overlapping at once: either answer is right. */
	FZ_ASSERT(r == want || (want == -ENOSPC && r == -EEXIST) ||
		  (want == -EEXIST && r == -ENOSPC));
	if (!r) {
		m->r[m->nr].base = base;
		m->r[m->nr].len = len;
		m->nr++;
	}
}

static void scratch_unregister(struct machine *m, uint64_t base)
{
	int r = bus_unregister(&m->scratch, base), want = -ENOENT;

	for (unsigned i = 0; i < m->nr; i++)
		if (m->r[i].base == base) {
			m->r[i] = m->r[--m->nr];
			want = 0;
			break;
		}
	FZ_ASSERT(r == want);
}

static void scratch_access(struct machine *m, uint64_t addr)
{
	uint8_t b[8];
	int r, owner = -1;

	for (unsigned i = 0; i < m->nr; i++)
		if (addr >= m->r[i].base && addr - m->r[i].base < m->r[i].len)
			owner = (int)i;
	m->hits = 0;
	r = bus_read(&m->scratch, addr, b, 1);
	if (owner < 0) {
		FZ_ASSERT(r == -ENOENT && m->hits == 0);
		return;
	}
	FZ_ASSERT(r == 0 && m->hits == 1);
	FZ_ASSERT(m->hit_off == addr - m->r[owner].base);
}

static void check_table(const struct bus *b)
{
	FZ_ASSERT(b->nr <= BUS_MAX_RANGES);
	for (unsigned i = 0; i < b->nr; i++) {
		FZ_ASSERT(b->ranges[i].len > 0);
		FZ_ASSERT(b->ranges[i].base + (b->ranges[i].len - 1) >= b->ranges[i].base);
		if (i)
			FZ_ASSERT(b->ranges[i - 1].base + (b->ranges[i - 1].len - 1) <
				  b->ranges[i].base);
	}
}

static void machine_init(struct machine *m)
{
	memset(m, 0, sizeof(*m));
	bus_init(&m->pio, "pio");
	bus_init(&m->mmio, "mmio");
	bus_init(&m->scratch, "scratch");
	apic_bus_init(&m->apic, NULL, NULL);
	FZ_ASSERT(lapic_init(&m->lapic, &m->apic, 0, NULL) == 0);
	FZ_ASSERT(ioapic_init(&m->io, &m->apic, 1) == 0);
	FZ_ASSERT(ioapic_attach(&m->io, &m->mmio, IOAPIC_DEFAULT_BASE) == 0);
	m->uart_irq = (struct irq_line){ .set = ioapic_irq_line_set, .opaque = &m->io, .gsi = 4 };
	FZ_ASSERT(uart_init(&m->uart, &m->uart_irq, NULL, NULL) == 0);
	FZ_ASSERT(uart_attach(&m->uart, &m->pio, 0x3f8) == 0);
	FZ_ASSERT(rtc_init(&m->rtc, m_now_s, m) == 0);
	FZ_ASSERT(rtc_attach(&m->rtc, &m->pio) == 0);
	m->dbg = (struct debug_exit){ .exit = m_exit, .opaque = m };
	FZ_ASSERT(debug_exit_attach(&m->dbg, &m->pio, DEBUG_EXIT_PORT) == 0);
	m->reset.reset = m_reset;
	m->reset.opaque = m;
	FZ_ASSERT(reset_attach(&m->reset, &m->pio) == 0);
	FZ_ASSERT(pci_none_attach_dev(&m->pci, &m->pio) == 0);
	m->testdev = (struct qemu_testdev){ .ram_bytes = 256ull << 20, .nr_cpus = 1,
					    .irq_set = m_testdev_irq, .irq_opaque = m };
	FZ_ASSERT(qemu_testdev_attach(&m->testdev, &m->pio) == 0);
}

static void machine_destroy(struct machine *m)
{
	qemu_testdev_destroy(&m->testdev);
	reset_destroy(&m->reset);
	rtc_destroy(&m->rtc);
	uart_destroy(&m->uart);
	ioapic_destroy(&m->io);
	lapic_destroy(&m->lapic);
}

/* The ports worth hitting: every device's, and some nobody has. */
static const uint16_t ports[] = {
	0x3f8, 0x70, 0x71, DEBUG_EXIT_PORT, RESET_PORT_CF9, RESET_PORT_KBD_DATA,
	RESET_PORT_KBD_CMD, PCI_CONFIG_ADDRESS, PCI_CONFIG_DATA, QEMU_FWCFG_PORT,
	QEMU_TESTDEV_IRQ_PORT, QEMU_TESTDEV_IO_PORT, 0x80, 0x2f8,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct machine m;
	struct fz_in in = { data, size };
	unsigned ops = 0;

	machine_init(&m);
	m.now_s = (int64_t)fz_u32(&in) * 16;
	while (!fz_done(&in) && ops++ < 4096) {
		uint8_t op = fz_u8(&in);

		switch (op % BUS_OP_COUNT) {
		case BUS_OP_PIO: {
			static const unsigned sizes[4] = { 1, 2, 4, 4 };
			uint8_t how = fz_u8(&in), near = fz_u8(&in);
			uint16_t port = ports[near % (sizeof(ports) / sizeof(ports[0]))];
			unsigned len = sizes[(how >> 1) & 3], count = 1 + ((how >> 3) & 3);
			uint8_t buf[16];
			uint64_t v = fz_u64(&in);

			if (how & 0x20)
				port = fz_u16(&in);             /* anywhere */
			else
				port = (uint16_t)(port + (near >> 4));  /* at or just after it */
			device_data_put(buf, 8, v);
			device_data_put(buf + 8, 8, ~v);
			for (unsigned i = 0; i < count; i++) {
				int r = (how & 1) ? bus_write(&m.pio, port, buf + i * len, len)
						  : bus_read(&m.pio, port, buf + i * len, len);

				FZ_ASSERT(r == 0 || r == -ENOENT);
			}
			break;
		}
		case BUS_OP_MMIO: {
			uint8_t how = fz_u8(&in);
			uint64_t addr = (how & 0x10) ? fz_u64(&in)
						     : IOAPIC_DEFAULT_BASE + (fz_u16(&in) & 0x1ff);
			unsigned len = 1 + ((how >> 1) & 7);
			uint8_t buf[8];
			int r;

			device_data_put(buf, 8, fz_u64(&in));
			r = (how & 1) ? bus_write(&m.mmio, addr, buf, len)
				      : bus_read(&m.mmio, addr, buf, len);
			FZ_ASSERT(r == 0 || r == -ENOENT);
			break;
		}
		case BUS_OP_CLOCK:
			m.now_s += (int64_t)(int32_t)fz_u32(&in);
			break;
		case BUS_OP_REGISTER: {
			uint64_t base = fz_u64(&in), len = fz_u64(&in);
			uint8_t how = fz_u8(&in);

			if (how & 1)
				len &= 0xffff;
			if (how & 2)
				base &= 0xffff;
			scratch_register(&m, base, len);
			break;
		}
		case BUS_OP_UNREGISTER: {
			uint8_t i = fz_u8(&in);
			uint64_t base = m.nr && !(i & 0x80) ? m.r[i % m.nr].base : fz_u64(&in);

			scratch_unregister(&m, base);
			break;
		}
		case BUS_OP_LOOKUP: {
			uint8_t i = fz_u8(&in);
			uint64_t d = fz_u64(&in), addr;

			if (m.nr && !(i & 0x80))        /* near a range: inside, at its ends */
				addr = m.r[i % m.nr].base + m.r[i % m.nr].len - 2 + (d & 3);
			else
				addr = d;
			scratch_access(&m, addr);
			break;
		}
		default:
			break;
		}
		check_table(&m.pio);
		check_table(&m.scratch);
	}
	machine_destroy(&m);
	return 0;
}
