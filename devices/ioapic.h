/*
 * IOAPIC (82093AA-style, version 0x11, 24 pins) for --irqchip user:
 * MMIO at 0xfec00000 with IOREGSEL at 0x00, IOWIN at 0x10 and, as KVM
 * also accepts it, an EOI register at 0x40. Indirect registers: 0x00 ID
 * (bits 31:24, 8 bits as Linux reads it), 0x01 version 0x00170011 (max
 * redirection entry 23), 0x02 arbitration ID (= ID), 0x10 + 2n / 0x11 + 2n
 * the low / high dword of redirection entry n.
 *
 * Pins. ioapic_set_irq(pin, level) gives the logical state of the input
 * (1 = asserted; polarity bit 13 is stored, not applied, as in KVM and
 * QEMU: the caller already speaks in asserted/deasserted).
 *   edge:  a 0 -> 1 change while unmasked sends one message; an edge while
 *          masked is ignored (82093AA data sheet: not held pending).
 *   level: while asserted, unmasked and remote IRR clear: set remote IRR
 *          and send. An EOI broadcast of the entry's vector clears remote
 *          IRR and sends again if the pin is still asserted; so does
 *          unmasking an asserted pin. A level message no LAPIC accepted
 *          clears remote IRR again (no EOI will ever come for it).
 * Only fixed and lowest-priority entries are level-sensitive; NMI, INIT,
 * SMI and ExtINT entries act as edge (the data sheet says program them
 * edge). Vectors below 16 reach the LAPIC, which flags them in its ESR.
 *
 * Locking: one mutex per IOAPIC, never held while delivering: messages
 * are built under it and sent to the APIC bus after unlocking (so the
 * IOAPIC lock and LAPIC locks are never nested, and kicks run unlocked).
 */
#ifndef LAGVISOR_DEVICES_IOAPIC_H
#define LAGVISOR_DEVICES_IOAPIC_H

#include <pthread.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/bus.h"
#include "devices/device.h"
#include "devices/lapic.h"

#define IOAPIC_DEFAULT_BASE 0xfec00000ull
#define IOAPIC_MMIO_SIZE 0x100
#define IOAPIC_PINS 24

struct ioapic {
	struct mutex lock;
	struct apic_bus *bus;
	uint8_t id;
	uint8_t reset_id;               /* id at power-on */
	uint8_t ioregsel;
	uint32_t asserted;              /* input state, bit per pin */
	uint64_t redir[IOAPIC_PINS];
};

/* Reset state (every entry masked), ID `id` (the MP table's IOAPIC ID);
 * becomes the bus's EOI listener. Returns 0 or -errno. */
int ioapic_init(struct ioapic *io, struct apic_bus *bus, uint8_t id);
/* Register the MMIO window [base, base + IOAPIC_MMIO_SIZE) on `mmio`. */
int ioapic_attach(struct ioapic *io, struct bus *mmio, uint64_t base);
void ioapic_destroy(struct ioapic *io);
/* System reset: ID back to ioapic_init's, every entry masked. The input
 * pins keep their state: the devices driving them are not reset here. */
void ioapic_reset(struct ioapic *io);

/* Input pin `pin` to `level` (0/1). Pins >= 24 are logged once. */
void ioapic_set_irq(struct ioapic *io, unsigned pin, int level);

/* The same as an irq_line.set callback: opaque = the IOAPIC, gsi = pin:
 *   struct irq_line l = { .set = ioapic_irq_line_set, .opaque = io,
 *                         .gsi = 4 };                                   */
void ioapic_irq_line_set(void *opaque, unsigned gsi, int level);

/* A LAPIC EOIed level-triggered `vector` (the bus calls this through the
 * listener ioapic_init installs). */
void ioapic_eoi(struct ioapic *io, uint8_t vector);

/* Register-level access (as MMIO at base + offset) for tests. */
extern const struct device_ops ioapic_mmio_ops;
uint32_t ioapic_read_reg(struct ioapic *io, uint8_t index);
void ioapic_write_reg(struct ioapic *io, uint8_t index, uint32_t val);

#endif
