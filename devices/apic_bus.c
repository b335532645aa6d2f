/*
 * The APIC bus: destination matching and delivery of interrupt messages
 * (from ICR writes, SELF_IPI, the IOAPIC) to a VM's local APICs.
 *
 * Race freedom. A target's state (IRR, pending NMI/INIT/SIPI) changes
 * only under that LAPIC's own lock, and the target is kicked through
 * ops->kick only after that lock is dropped (deliver_one). The bus holds
 * no wait lock of its own and knows nothing of how the target's thread
 * sleeps: the kick (the VMM's vcpu_irq_notify, vmm/x86/vcpu_irq.h) bumps the
 * vCPU's futex word and reads its published mode, while the vCPU thread
 * publishes its mode before it looks at its LAPIC; both orders are
 * sequentially consistent, so either the thread sees the new interrupt or
 * the kick sees the thread in KVM_RUN or asleep and interrupts or wakes
 * it: no wakeup is lost. IRR set twice before an ack is one interrupt, as
 * on hardware. Only one LAPIC lock is held at a time (lowest-priority
 * arbitration looks at each candidate under its own lock, one after the
 * other), so any number of senders may deliver concurrently.
 */
#include "devices/lapic_internal.h"

#include "common/log.h"

void apic_bus_init(struct apic_bus *bus, const struct apic_bus_ops *ops,
		   void *opaque)
{
	*bus = (struct apic_bus){ .ops = ops, .opaque = opaque };
}

void apic_bus_set_eoi_listener(struct apic_bus *bus,
			       void (*eoi)(void *opaque, uint8_t vector),
			       void *opaque)
{
	bus->eoi_opaque = opaque;
	bus->eoi = eoi;
}

void apic_bus_eoi(struct apic_bus *bus, uint8_t vector)
{
	if (bus->eoi)
		bus->eoi(bus->eoi_opaque, vector);
}

/*
 * SDM "Determining IPI Destination". xAPIC: physical = 8-bit ID, 0xff
 * broadcast; logical flat = any common bit of dest and LDR[31:24];
 * logical cluster = dest[7:4] == LDR[31:28] and a common bit in [3:0].
 * x2APIC: physical = 32-bit ID, 0xffffffff broadcast; logical = same
 * cluster (bits 31:16) and a common bit in 15:0. An 8-bit destination
 * (xAPIC ICR, IOAPIC) reaching an x2APIC-mode LAPIC is compared the same
 * way with 0xff as broadcast (x2APIC without interrupt remapping, as
 * Linux uses it under KVM: physical IDs < 256).
 */
bool lapic_match_dest_locked(struct lapic *l, const struct apic_msg *msg)
{
	uint32_t dest = msg->dest, ldr8;

	MUTEX_ASSERT_HELD(&l->lock);
	switch (msg->shorthand) {
	case APIC_SH_SELF:
		return msg->src == (int)l->index;
	case APIC_SH_ALL:
		return true;
	case APIC_SH_OTHERS:
		return msg->src != (int)l->index;
	}
	if (lapic_is_x2apic(l)) {
		if (dest == (msg->dest_x2apic ? 0xffffffffu : 0xffu))
			return true;
		if (!msg->logical)
			return dest == l->index;
		return (dest >> 16) == (l->ldr >> 16) &&
		       (dest & l->ldr & 0xffff);
	}
	if (msg->dest_x2apic) {
		if (dest == 0xffffffffu)
			dest = 0xff;
		else if (dest > 0xff)
			return false;
	}
	if (dest == 0xff)
		return true;
	if (!msg->logical)
		return dest == l->xapic_id;
	ldr8 = l->ldr >> 24;
	if ((l->dfr >> 28) == 0xf)
		return dest & ldr8;
	return (dest >> 4) == (ldr8 >> 4) && (dest & ldr8 & 0xf);
}

static struct lapic *bus_lapic(struct apic_bus *bus, unsigned i)
{
	return __atomic_load_n(&bus->lapic[i], __ATOMIC_ACQUIRE);
}

static void kick(struct apic_bus *bus, unsigned i)
{
	if (bus->ops && bus->ops->kick)
		bus->ops->kick(bus->opaque, i);
}

static bool deliver_one(struct apic_bus *bus, unsigned i,
			const struct apic_msg *msg)
{
	struct lapic *l = bus_lapic(bus, i);
	bool ok;

	if (!l)
		return false;
	lapic_lock(l);
	ok = lapic_match_dest_locked(l, msg) && lapic_accept_msg_locked(l, msg);
	lapic_unlock(l);
	if (ok)
		kick(bus, i);
	return ok;
}

/* Lowest priority: the matching, soft-enabled LAPIC with the lowest APR;
 * ties go to the lowest index. The choice is a snapshot (each LAPIC is
 * looked at under its own lock, one at a time): priorities that change
 * meanwhile only make it a less good choice, as on a real bus. */
static int deliver_lowest(struct apic_bus *bus, const struct apic_msg *msg)
{
	unsigned n = __atomic_load_n(&bus->nr, __ATOMIC_ACQUIRE);
	uint32_t best_apr = UINT32_MAX, apr;
	int best = -1;

	for (unsigned i = 0; i < n; i++) {
		struct lapic *l = bus_lapic(bus, i);

		if (!l)
			continue;
		lapic_lock(l);
		apr = lapic_sw_enabled(l) && lapic_match_dest_locked(l, msg)
			? lapic_apr_locked(l) : UINT32_MAX;
		lapic_unlock(l);
		if (apr < best_apr) {
			best_apr = apr;
			best = (int)i;
		}
	}
	return best >= 0 && deliver_one(bus, (unsigned)best, msg) ? 1 : 0;
}

int apic_bus_deliver(struct apic_bus *bus, const struct apic_msg *msg)
{
	unsigned n = __atomic_load_n(&bus->nr, __ATOMIC_ACQUIRE);
	int count = 0;

	switch (msg->mode) {
	case APIC_DM_FIXED:
	case APIC_DM_NMI:
	case APIC_DM_INIT:
	case APIC_DM_SIPI:
		break;
	case APIC_DM_LOWEST:
		if (msg->shorthand == APIC_SH_NONE ||
		    msg->shorthand == APIC_SH_ALL ||
		    msg->shorthand == APIC_SH_OTHERS)
			return deliver_lowest(bus, msg);
		break;
	case APIC_DM_SMI:
		log_once(LOG_WARN, "apic: SMI message (no SMM here); ignored");
		return 0;
	default:
		log_once(LOG_WARN, "apic: message with delivery mode %u "
			 "(ExtINT or reserved) is not modelled; ignored",
			 msg->mode);
		return 0;
	}
	/* A physical ID names one LAPIC (APIC ID = index unless a guest
	 * rewrote an xAPIC ID): no scan. */
	if (msg->shorthand == APIC_SH_NONE && !msg->logical &&
	    msg->dest != 0xff && msg->dest != 0xffffffffu &&
	    !__atomic_load_n(&bus->ids_moved, __ATOMIC_ACQUIRE)) {
		if (msg->dest < n)
			count += deliver_one(bus, msg->dest, msg);
		return count;
	}
	if (msg->shorthand == APIC_SH_SELF) {
		if (msg->src >= 0 && (unsigned)msg->src < n)
			count += deliver_one(bus, (unsigned)msg->src, msg);
		return count;
	}
	for (unsigned i = 0; i < n; i++)
		count += deliver_one(bus, i, msg);
	return count;
}
