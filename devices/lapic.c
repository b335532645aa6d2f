/*
 * Local APIC state: reset, IA32_APIC_BASE mode transitions, priorities
 * (TPR/PPR/APR), acceptance of bus messages and local interrupts, EOI,
 * error reporting, and what the vCPU loop asks (pending vector, ack, NMI,
 * INIT/SIPI). The register file is in lapic_regs.c, the timer in
 * lapic_timer.c, destination matching and delivery in apic_bus.c.
 */
#include "devices/lapic_internal.h"

#include <string.h>

#include "common/log.h"

static uint32_t x2apic_ldr(unsigned id)
{
	/* SDM "Logical Destination Mode in x2APIC Mode": cluster in 31:16,
	 * one bit per member (ID bits 3:0) in 15:0. */
	return ((id >> 4) << 16) | (1u << (id & 0xf));
}

/* SDM "Local APIC State After an INIT Reset": everything but the ID, the
 * base and the mode goes back to its power-up value. */
void lapic_regs_reset_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	memset(l->irr, 0, sizeof(l->irr));
	memset(l->isr, 0, sizeof(l->isr));
	memset(l->tmr, 0, sizeof(l->tmr));
	l->tpr = 0;
	l->ldr = lapic_is_x2apic(l) ? x2apic_ldr(l->index) : 0;
	l->dfr = 0xffffffffu;
	l->svr = 0xff;
	l->esr = l->esr_pending = 0;
	l->icr_lo = l->icr_hi = 0;
	for (unsigned i = 0; i < LVT_NR; i++)
		l->lvt[i] = APIC_LVT_MASKED;
	l->nmi_pending = 0;
	lapic_timer_reset_locked(l);
}

/* Power-on (RESET), unlike INIT, also puts back the base, the mode and
 * the TSC deadline; the BSP runs, every other CPU waits for a SIPI. */
void lapic_reset(struct lapic *l)
{
	lapic_lock(l);
	l->apic_base = LAPIC_DEFAULT_BASE | APIC_BASE_EN |
		       (l->index == 0 ? APIC_BASE_BSP : 0);
	l->xapic_id = (uint8_t)l->index;
	lapic_regs_reset_locked(l);
	l->init_pending = l->sipi_pending = false;
	l->sipi_vector = 0;
	l->wait_sipi = l->index != 0;
	lapic_unlock(l);
}

int lapic_init(struct lapic *l, struct apic_bus *bus, unsigned index,
	       const struct lapic_config *cfg)
{
	unsigned bits = cfg && cfg->phys_addr_bits ? cfg->phys_addr_bits : 52;
	int r;

	if (index >= APIC_BUS_MAX_CPUS || bus->lapic[index] || bits > 52 ||
	    bits < 32)
		return -EINVAL;
	memset(l, 0, sizeof(*l));
	r = mutex_init(&l->lock);
	if (r)
		return r;
	l->bus = bus;
	l->index = index;
	/* Bits 7:0 and 9 are reserved, so is everything above MAXPHYADDR;
	 * EXTD too when the CPU does not offer x2APIC. */
	l->base_rsvd = 0x2ffull | ~((1ull << bits) - 1);
	if (cfg && cfg->no_x2apic)
		l->base_rsvd |= APIC_BASE_EXTD;
	l->timer_armed_ns = LAPIC_NO_DEADLINE;
	lapic_reset(l);
	__atomic_store_n(&bus->lapic[index], l, __ATOMIC_RELEASE);
	if (index >= bus->nr)
		__atomic_store_n(&bus->nr, index + 1, __ATOMIC_RELEASE);
	return 0;
}

int lapic_set_phys_addr_bits(struct lapic *l, unsigned bits)
{
	if (bits < 32 || bits > 52)
		return -EINVAL;
	lapic_lock(l);
	l->base_rsvd = (l->base_rsvd & (0x2ffull | APIC_BASE_EXTD)) |
		       ~((1ull << bits) - 1);
	lapic_unlock(l);
	return 0;
}

void lapic_destroy(struct lapic *l)
{
	if (l->bus && l->bus->lapic[l->index] == l)
		__atomic_store_n(&l->bus->lapic[l->index], NULL,
				 __ATOMIC_RELEASE);
	mutex_destroy(&l->lock);
}

/* ---- IA32_APIC_BASE ---- */

enum apic_mode { MODE_DISABLED, MODE_INVALID, MODE_XAPIC, MODE_X2APIC };

static enum apic_mode base_mode(uint64_t base)
{
	/* EN is bit 11, EXTD bit 10: EN:EXTD as a 2-bit number. */
	return (enum apic_mode)((base >> 10) & 3);
}

int lapic_apic_base_write_locked(struct lapic *l, uint64_t val)
{
	enum apic_mode from = base_mode(l->apic_base), to = base_mode(val);

	MUTEX_ASSERT_HELD(&l->lock);
	if (val & l->base_rsvd)
		return -EINVAL;
	/* SDM "x2APIC State Transitions": EXTD without EN, disabled ->
	 * x2APIC and x2APIC -> xAPIC are illegal (#GP). */
	if (to == MODE_INVALID || (from == MODE_DISABLED && to == MODE_X2APIC) ||
	    (from == MODE_X2APIC && to == MODE_XAPIC))
		return -EINVAL;
	/* BSP is set by the platform at reset; keep it. */
	l->apic_base = (val & ~APIC_BASE_BSP) | (l->apic_base & APIC_BASE_BSP);
	if (to == MODE_DISABLED && from != MODE_DISABLED)
		lapic_regs_reset_locked(l);
	else if (to == MODE_X2APIC && from == MODE_XAPIC)
		l->ldr = x2apic_ldr(l->index);
	/* A rewritten xAPIC ID lasts only while the APIC stays in xAPIC
	 * mode: disabled or x2APIC (whose ID is the initial one), it is the
	 * initial ID again, as with KVM's LAPIC (kvm-unit-tests' "correct
	 * xapic id after reset" disables and re-enables). */
	if (to != MODE_XAPIC)
		l->xapic_id = (uint8_t)l->index;
	return 0;
}

uint64_t lapic_apic_base(struct lapic *l)
{
	uint64_t v;

	lapic_lock(l);
	v = l->apic_base;
	lapic_unlock(l);
	return v;
}

bool lapic_x2apic_mode(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = lapic_is_x2apic(l);
	lapic_unlock(l);
	return v;
}

/* ---- priorities ---- */

static unsigned highest_or_zero(const uint32_t *bits)
{
	int v = vec_highest(bits);

	return v < 0 ? 0 : (unsigned)v;
}

/* SDM "Processor Priority Register": the task priority, unless the
 * highest in-service interrupt's class is higher. */
uint32_t lapic_ppr_locked(struct lapic *l)
{
	unsigned isrv = highest_or_zero(l->isr);

	MUTEX_ASSERT_HELD(&l->lock);
	if ((l->tpr & 0xf0) >= (isrv & 0xf0))
		return l->tpr & 0xff;
	return isrv & 0xf0;
}

/* SDM "Arbitration Priority Register" (used for lowest-priority
 * delivery): TPR if it covers both the highest requested and in-service
 * classes, else the highest of the three classes. */
uint32_t lapic_apr_locked(struct lapic *l)
{
	unsigned tpr = l->tpr & 0xff;
	unsigned isrv = highest_or_zero(l->isr) & 0xf0;
	unsigned irrv = highest_or_zero(l->irr) & 0xf0;

	MUTEX_ASSERT_HELD(&l->lock);
	if ((tpr & 0xf0) >= irrv && (tpr & 0xf0) >= isrv)
		return tpr;
	return MAX(MAX(tpr & 0xf0, isrv), irrv);
}

static int pending_vector_locked(struct lapic *l)
{
	int v = vec_highest(l->irr);

	MUTEX_ASSERT_HELD(&l->lock);
	if (!lapic_hw_enabled(l) || v < 0)
		return -1;
	/* Only a higher priority class than PPR's interrupts the CPU. */
	if (((unsigned)v & 0xf0) <= (lapic_ppr_locked(l) & 0xf0))
		return -1;
	return v;
}

/* ---- acceptance ---- */

void lapic_error_locked(struct lapic *l, uint32_t esr_bits)
{
	uint32_t fresh = esr_bits & ~l->esr_pending;
	uint32_t lvt = l->lvt[LVT_ERROR];
	unsigned v = lvt & APIC_VECTOR_MASK;

	MUTEX_ASSERT_HELD(&l->lock);
	l->esr_pending |= esr_bits;
	if (!fresh || (lvt & APIC_LVT_MASKED) || !lapic_sw_enabled(l))
		return;
	/* An error LVT with an illegal vector is itself an error, but one
	 * that must not raise another error interrupt. */
	if (v < 16) {
		l->esr_pending |= ESR_RECV_ILLEGAL_VECTOR;
		return;
	}
	vec_set(l->irr, v);
	vec_clear(l->tmr, v);
}

/*
 * An NMI arriving. The CPU takes one NMI and latches one more while the
 * first is handled, so two NMIs sent at once are two NMIs (kvm-unit-tests
 * apic "multiple nmi"); a third merges. Up to two are queued here and each
 * goes to KVM_NMI, whose own queue applies the in-service blocking.
 */
static void nmi_arrive_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (l->nmi_pending < 2)
		l->nmi_pending++;
}

static bool accept_fixed_locked(struct lapic *l, unsigned vector, bool level)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (!lapic_sw_enabled(l))
		return false;   /* as KVM: a soft-disabled APIC drops them */
	if (vector < 16) {
		lapic_error_locked(l, ESR_RECV_ILLEGAL_VECTOR);
		return false;
	}
	vec_set(l->irr, vector);
	if (level)
		vec_set(l->tmr, vector);
	else
		vec_clear(l->tmr, vector);
	return true;
}

bool lapic_accept_msg_locked(struct lapic *l, const struct apic_msg *msg)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (!lapic_hw_enabled(l))
		return false;
	switch (msg->mode) {
	case APIC_DM_FIXED:
	case APIC_DM_LOWEST:
		return accept_fixed_locked(l, msg->vector, msg->level);
	case APIC_DM_NMI:
		nmi_arrive_locked(l);
		return true;
	case APIC_DM_INIT:
		lapic_regs_reset_locked(l);
		l->init_pending = true;
		l->wait_sipi = true;
		l->sipi_pending = false;
		return true;
	case APIC_DM_SIPI:
		if (!l->wait_sipi || l->sipi_pending)
			return false;
		l->sipi_pending = true;
		l->sipi_vector = msg->vector;
		return true;
	default:
		return false;
	}
}

bool lapic_local_irq_locked(struct lapic *l, uint32_t lvt_val)
{
	unsigned mode = (lvt_val >> APIC_LVT_DM_SHIFT) & 7;

	MUTEX_ASSERT_HELD(&l->lock);
	if ((lvt_val & APIC_LVT_MASKED) || !lapic_sw_enabled(l))
		return false;
	switch (mode) {
	case APIC_DM_FIXED:
		return accept_fixed_locked(l, lvt_val & APIC_VECTOR_MASK,
					   false);
	case APIC_DM_NMI:
		nmi_arrive_locked(l);
		return true;
	default:
		log_once(LOG_WARN, "lapic: LVT delivery mode %u not modelled "
			 "(only fixed and NMI); interrupt dropped", mode);
		return false;
	}
}

int lapic_eoi_locked(struct lapic *l)
{
	int v = vec_highest(l->isr);

	MUTEX_ASSERT_HELD(&l->lock);
	if (v < 0)
		return -1;      /* EOI with nothing in service: no effect */
	vec_clear(l->isr, (unsigned)v);
	return vec_test(l->tmr, (unsigned)v) ? v : -1;
}

/* ---- the vCPU loop's side ---- */

bool lapic_eoi_deferrable(struct lapic *l)
{
	int v;
	bool ok;

	lapic_lock(l);
	v = vec_highest(l->isr);
	ok = v >= 0 && !vec_test(l->tmr, (unsigned)v) && vec_highest(l->irr) < 0;
	lapic_unlock(l);
	return ok;
}

void lapic_eoi(struct lapic *l)
{
	int v;

	lapic_lock(l);
	v = lapic_eoi_locked(l);
	lapic_unlock(l);
	if (v >= 0)
		apic_bus_eoi(l->bus, (uint8_t)v);
}

int lapic_pending_vector(struct lapic *l)
{
	int v;

	lapic_lock(l);
	v = pending_vector_locked(l);
	lapic_unlock(l);
	return v;
}

static void ack_locked(struct lapic *l, int vector)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (vector < 0 || vector > 255 || !vec_test(l->irr, (unsigned)vector)) {
		log_once(LOG_WARN, "lapic: ack of vector %d that is not "
			 "requested (vCPU %u); ignored", vector, l->index);
		return;
	}
	vec_clear(l->irr, (unsigned)vector);
	vec_set(l->isr, (unsigned)vector);
}

void lapic_ack(struct lapic *l, int vector)
{
	lapic_lock(l);
	ack_locked(l, vector);
	lapic_unlock(l);
}

int lapic_accept(struct lapic *l)
{
	int v;

	lapic_lock(l);
	v = pending_vector_locked(l);
	if (v >= 0)
		ack_locked(l, v);
	lapic_unlock(l);
	return v;
}

bool lapic_has_nmi(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = l->nmi_pending > 0;
	lapic_unlock(l);
	return v;
}

bool lapic_take_nmi(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = l->nmi_pending > 0;
	if (v)
		l->nmi_pending--;
	lapic_unlock(l);
	return v;
}

bool lapic_take_init(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = l->init_pending;
	l->init_pending = false;
	lapic_unlock(l);
	return v;
}

bool lapic_take_sipi(struct lapic *l, uint8_t *vector)
{
	bool v;

	lapic_lock(l);
	/* An INIT not yet taken comes first: the CPU is reset before it
	 * starts at the SIPI vector. */
	v = l->sipi_pending && !l->init_pending;
	if (v) {
		*vector = l->sipi_vector;
		l->sipi_pending = false;
		l->wait_sipi = false;
	}
	lapic_unlock(l);
	return v;
}

bool lapic_waiting_for_sipi(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = l->wait_sipi;
	lapic_unlock(l);
	return v;
}

bool lapic_has_event(struct lapic *l)
{
	bool v;

	lapic_lock(l);
	v = pending_vector_locked(l) >= 0 || l->nmi_pending ||
	    l->init_pending || l->sipi_pending;
	lapic_unlock(l);
	return v;
}

/* CR8 holds TPR[7:4] (SDM "Task Priority in IA-32e Mode"). */
uint8_t lapic_cr8_read(struct lapic *l)
{
	uint8_t v;

	lapic_lock(l);
	v = (uint8_t)((l->tpr >> 4) & 0xf);
	lapic_unlock(l);
	return v;
}

void lapic_cr8_write(struct lapic *l, uint8_t cr8)
{
	lapic_lock(l);
	/* The vmm syncs CR8 after every exit: only a change may clobber
	 * TPR[3:0]. */
	if (((l->tpr >> 4) & 0xf) != (cr8 & 0xfu))
		l->tpr = (uint32_t)(cr8 & 0xf) << 4;
	lapic_unlock(l);
}
