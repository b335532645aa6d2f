#include "devices/ioapic.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"

#define IOAPIC_VERSION 0x11
#define IOAPIC_REG_ID 0x00
#define IOAPIC_REG_VER 0x01
#define IOAPIC_REG_ARB 0x02
#define IOAPIC_REG_REDIR 0x10

#define IOAPIC_OFF_REGSEL 0x00
#define IOAPIC_OFF_WIN 0x10
#define IOAPIC_OFF_EOI 0x40

/* Redirection entry fields. */
#define RTE_VECTOR 0xffull
#define RTE_DM_SHIFT 8
#define RTE_DEST_LOGICAL (1ull << 11)
#define RTE_REMOTE_IRR (1ull << 14)
#define RTE_LEVEL (1ull << 15)
#define RTE_MASKED (1ull << 16)
#define RTE_DEST_SHIFT 56
/* vector, mode, dest mode, polarity, trigger, mask; destination. */
#define RTE_WRITABLE_LO 0x1afffull
#define RTE_WRITABLE_HI 0xff000000ull

/* A message built under the lock, sent after it. */
struct ioapic_send {
	unsigned pin;
	struct apic_msg msg;
};

static unsigned rte_mode(uint64_t e)
{
	return (e >> RTE_DM_SHIFT) & 7;
}

/* Level semantics (remote IRR, EOI) only for fixed and lowest priority. */
static bool rte_level(uint64_t e)
{
	return (e & RTE_LEVEL) && rte_mode(e) <= APIC_DM_LOWEST;
}

static struct apic_msg rte_msg(uint64_t e)
{
	return (struct apic_msg){
		.vector = (uint8_t)(e & RTE_VECTOR),
		.mode = (uint8_t)rte_mode(e),
		.logical = e & RTE_DEST_LOGICAL,
		.level = rte_level(e),
		.dest = (uint32_t)(e >> RTE_DEST_SHIFT),
		.src = -1,
	};
}

/*
 * Service a level pin: asserted, unmasked and no remote IRR -> set
 * remote IRR and queue the message. Returns whether it queued one.
 */
static bool service_level_locked(struct ioapic *io, unsigned pin,
				 struct ioapic_send *out)
{
	uint64_t *e = &io->redir[pin];

	MUTEX_ASSERT_HELD(&io->lock);
	if (!(io->asserted & (1u << pin)) || (*e & RTE_MASKED) ||
	    (*e & RTE_REMOTE_IRR))
		return false;
	*e |= RTE_REMOTE_IRR;
	*out = (struct ioapic_send){ .pin = pin, .msg = rte_msg(*e) };
	return true;
}

/*
 * Deliver queued messages (no lock held). A level message nobody took
 * would leave remote IRR set forever, with no EOI to clear it: clear it
 * (only we set it, and nothing else sends on this pin until it is clear).
 */
static void send_all(struct ioapic *io, const struct ioapic_send *s,
		     unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (s[i].msg.mode == 3 || s[i].msg.mode == APIC_DM_SIPI) {
			log_once(LOG_WARN, "ioapic: pin %u has delivery mode %u "
				 "(reserved); not sent", s[i].pin, s[i].msg.mode);
			continue;
		}
		if (apic_bus_deliver(io->bus, &s[i].msg) > 0 || !s[i].msg.level)
			continue;
		log_once(LOG_WARN, "ioapic: level interrupt on pin %u "
			 "(vector %#x) reached no LAPIC", s[i].pin,
			 s[i].msg.vector);
		mutex_lock(&io->lock);
		io->redir[s[i].pin] &= ~RTE_REMOTE_IRR;
		mutex_unlock(&io->lock);
	}
}

static void eoi_listener(void *opaque, uint8_t vector)
{
	ioapic_eoi(opaque, vector);
}

int ioapic_init(struct ioapic *io, struct apic_bus *bus, uint8_t id)
{
	int r;

	memset(io, 0, sizeof(*io));
	r = mutex_init(&io->lock);
	if (r)
		return r;
	io->bus = bus;
	io->reset_id = id;
	ioapic_reset(io);
	apic_bus_set_eoi_listener(bus, eoi_listener, io);
	return 0;
}

void ioapic_reset(struct ioapic *io)
{
	mutex_lock(&io->lock);
	io->id = io->reset_id;
	io->ioregsel = 0;
	for (unsigned i = 0; i < IOAPIC_PINS; i++)
		io->redir[i] = RTE_MASKED;
	mutex_unlock(&io->lock);
}

int ioapic_attach(struct ioapic *io, struct bus *mmio, uint64_t base)
{
	return bus_register(mmio, base, IOAPIC_MMIO_SIZE, &ioapic_mmio_ops, io);
}

void ioapic_destroy(struct ioapic *io)
{
	if (io->bus && io->bus->eoi_opaque == io)
		apic_bus_set_eoi_listener(io->bus, NULL, NULL);
	mutex_destroy(&io->lock);
}

void ioapic_set_irq(struct ioapic *io, unsigned pin, int level)
{
	struct ioapic_send s;
	unsigned n = 0;
	uint32_t bit;
	bool was;

	if (pin >= IOAPIC_PINS) {
		log_once(LOG_WARN, "ioapic: interrupt on pin %u (it has %u); "
			 "ignored", pin, IOAPIC_PINS);
		return;
	}
	bit = 1u << pin;
	mutex_lock(&io->lock);
	was = io->asserted & bit;
	io->asserted = level ? io->asserted | bit : io->asserted & ~bit;
	if (rte_level(io->redir[pin])) {
		n = service_level_locked(io, pin, &s);
	} else if (level && !was && !(io->redir[pin] & RTE_MASKED)) {
		s = (struct ioapic_send){ .pin = pin,
					  .msg = rte_msg(io->redir[pin]) };
		n = 1;
	}
	mutex_unlock(&io->lock);
	send_all(io, &s, n);
}

void ioapic_irq_line_set(void *opaque, unsigned gsi, int level)
{
	ioapic_set_irq(opaque, gsi, level);
}

void ioapic_eoi(struct ioapic *io, uint8_t vector)
{
	struct ioapic_send s[IOAPIC_PINS];
	unsigned n = 0;

	mutex_lock(&io->lock);
	for (unsigned pin = 0; pin < IOAPIC_PINS; pin++) {
		uint64_t *e = &io->redir[pin];

		if (!rte_level(*e) || (*e & RTE_VECTOR) != vector ||
		    !(*e & RTE_REMOTE_IRR))
			continue;
		*e &= ~RTE_REMOTE_IRR;
		n += service_level_locked(io, pin, &s[n]);
	}
	mutex_unlock(&io->lock);
	send_all(io, s, n);
}

/* ---- registers ---- */

static uint32_t read_reg_locked(struct ioapic *io, uint8_t index)
{
	unsigned pin;

	MUTEX_ASSERT_HELD(&io->lock);
	switch (index) {
	case IOAPIC_REG_ID:
	case IOAPIC_REG_ARB:
		return (uint32_t)io->id << 24;
	case IOAPIC_REG_VER:
		return IOAPIC_VERSION | ((IOAPIC_PINS - 1) << 16);
	}
	pin = (unsigned)(index - IOAPIC_REG_REDIR) / 2;
	if (index < IOAPIC_REG_REDIR || pin >= IOAPIC_PINS) {
		log_once(LOG_WARN, "ioapic: read of register %#x (none); "
			 "reads 0", index);
		return 0;
	}
	return (uint32_t)(io->redir[pin] >> (index & 1 ? 32 : 0));
}

/* Returns whether *out holds a message to send after unlocking. */
static bool write_reg_locked(struct ioapic *io, uint8_t index, uint32_t val,
			     struct ioapic_send *out)
{
	uint64_t *e, old;
	unsigned pin;

	MUTEX_ASSERT_HELD(&io->lock);
	if (index == IOAPIC_REG_ID) {
		/* The 82093AA's ID is bits 27:24; the rest reads back as it
		 * was (KVM's IOAPIC too; kvm-unit-tests ioapic checks it).
		 * An MP-table ID above 15 keeps its high bits. */
		io->id = (uint8_t)((io->id & 0xf0) | ((val >> 24) & 0x0f));
		return false;
	}
	pin = (unsigned)(index - IOAPIC_REG_REDIR) / 2;
	if (index < IOAPIC_REG_REDIR || pin >= IOAPIC_PINS) {
		if (index != IOAPIC_REG_VER && index != IOAPIC_REG_ARB)
			log_once(LOG_WARN, "ioapic: write to register %#x "
				 "(none); ignored", index);
		return false;
	}
	e = &io->redir[pin];
	old = *e;
	if (index & 1)
		*e = (old & ~(RTE_WRITABLE_HI << 32)) |
		     (((uint64_t)val & RTE_WRITABLE_HI) << 32);
	else
		*e = (old & ~RTE_WRITABLE_LO) | (val & RTE_WRITABLE_LO);
	if (!rte_level(*e))
		*e &= ~RTE_REMOTE_IRR;  /* as KVM: edge entries have none */
	if (!(*e & RTE_MASKED) && rte_mode(*e) <= APIC_DM_LOWEST &&
	    (*e & RTE_VECTOR) < 16)
		log_once(LOG_WARN, "ioapic: pin %u programmed with illegal "
			 "vector %#x", pin, (unsigned)(*e & RTE_VECTOR));
	/* Unmasking (or re-programming) an asserted level pin delivers. */
	return rte_level(*e) && service_level_locked(io, pin, out);
}

uint32_t ioapic_read_reg(struct ioapic *io, uint8_t index)
{
	uint32_t v;

	mutex_lock(&io->lock);
	v = read_reg_locked(io, index);
	mutex_unlock(&io->lock);
	return v;
}

void ioapic_write_reg(struct ioapic *io, uint8_t index, uint32_t val)
{
	struct ioapic_send s;
	bool send;

	mutex_lock(&io->lock);
	send = write_reg_locked(io, index, val, &s);
	mutex_unlock(&io->lock);
	send_all(io, &s, send);
}

static void mmio_read(void *opaque, uint64_t offset, void *data, unsigned len)
{
	struct ioapic *io = opaque;
	uint64_t v = 0;

	if ((offset & 0xf) + len > 4) {
		log_once(LOG_WARN, "ioapic: %u-byte read at %#llx; reads 0",
			 len, (unsigned long long)offset);
	} else if ((offset & ~0xfull) == IOAPIC_OFF_REGSEL) {
		mutex_lock(&io->lock);
		v = io->ioregsel;
		mutex_unlock(&io->lock);
	} else if ((offset & ~0xfull) == IOAPIC_OFF_WIN) {
		mutex_lock(&io->lock);
		v = read_reg_locked(io, io->ioregsel);
		mutex_unlock(&io->lock);
	}
	device_data_put(data, len, v >> (8 * (offset & 3)));
}

static void mmio_write(void *opaque, uint64_t offset, const void *data,
		       unsigned len)
{
	struct ioapic *io = opaque;
	uint32_t v = (uint32_t)device_data_get(data, len);
	struct ioapic_send s;
	bool send = false;

	if (offset == IOAPIC_OFF_REGSEL && len <= 4) {
		mutex_lock(&io->lock);
		io->ioregsel = (uint8_t)v;
		mutex_unlock(&io->lock);
	} else if (offset == IOAPIC_OFF_WIN && len == 4) {
		mutex_lock(&io->lock);
		send = write_reg_locked(io, io->ioregsel, v, &s);
		mutex_unlock(&io->lock);
		send_all(io, &s, send);
	} else if (offset == IOAPIC_OFF_EOI && len == 4) {
		ioapic_eoi(io, (uint8_t)v);
	} else {
		log_once(LOG_WARN, "ioapic: %u-byte write at %#llx; ignored",
			 len, (unsigned long long)offset);
	}
}

const struct device_ops ioapic_mmio_ops = {
	.name = "ioapic",
	.read = mmio_read,
	.write = mmio_write,
};
