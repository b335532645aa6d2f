/*
 * The LAPIC register file and its two front ends: x2APIC MSRs and the
 * xAPIC MMIO page. Both decode to an xAPIC offset and share
 * reg_read_locked / reg_write_locked; what differs (x2APIC #GPs where the
 * xAPIC page ignores or sets ESR "illegal register address") is decided by
 * the `x2` flag. A write may leave work for after the unlock (an IPI to
 * deliver, an EOI to broadcast): struct reg_effects carries it out.
 */
#include "devices/lapic_internal.h"

#include "common/log.h"

struct reg_effects {
	bool send;
	struct apic_msg msg;
	int eoi_vector;         /* level-triggered EOI to broadcast, or -1 */
};

/* Writable bits of each LVT (SDM "Local Vector Table"): vector, delivery
 * mode, polarity, trigger and mask as the entry has them; delivery status
 * and remote IRR are read-only (always 0 here). */
static const uint32_t lvt_writable[LVT_NR] = {
	[LVT_TIMER] = 0x000700ff,
	[LVT_THERMAL] = 0x000107ff,
	[LVT_PERF] = 0x000107ff,
	[LVT_LINT0] = 0x0001a7ff,
	[LVT_LINT1] = 0x0001a7ff,
	[LVT_ERROR] = 0x000100ff,
};

static bool in_range(unsigned off, unsigned base)
{
	return off >= base && off < base + 0x80;
}

static int reg_read_locked(struct lapic *l, unsigned off, uint64_t now_ns,
			   uint64_t *val, bool x2)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (in_range(off, APIC_ISR)) {
		*val = l->isr[(off - APIC_ISR) >> 4];
		return 0;
	}
	if (in_range(off, APIC_TMR)) {
		*val = l->tmr[(off - APIC_TMR) >> 4];
		return 0;
	}
	if (in_range(off, APIC_IRR)) {
		*val = l->irr[(off - APIC_IRR) >> 4];
		return 0;
	}
	if (off >= APIC_LVTT && off <= APIC_LVTERR) {
		*val = l->lvt[(off - APIC_LVTT) >> 4];
		return 0;
	}
	switch (off) {
	case APIC_ID:
		*val = x2 ? l->index : (uint32_t)l->xapic_id << 24;
		return 0;
	case APIC_LVR:
		*val = APIC_VERSION | (APIC_MAX_LVT << 16);
		return 0;
	case APIC_TPR:
		*val = l->tpr;
		return 0;
	case APIC_PPR:
		*val = lapic_ppr_locked(l);
		return 0;
	case APIC_LDR:
		*val = l->ldr;
		return 0;
	case APIC_SVR:
		*val = l->svr;
		return 0;
	case APIC_ESR:
		*val = l->esr;
		return 0;
	case APIC_ICR:
		*val = l->icr_lo | (x2 ? (uint64_t)l->icr_hi << 32 : 0);
		return 0;
	case APIC_TMICT:
		*val = l->tmict;
		return 0;
	case APIC_TMCCT:
		*val = lapic_timer_read_tmcct_locked(l, now_ns);
		return 0;
	case APIC_TDCR:
		*val = l->tdcr;
		return 0;
	}
	if (x2)
		return -EINVAL; /* the rest are xAPIC-only, write-only or absent */
	switch (off) {
	case APIC_APR:
		*val = lapic_apr_locked(l);
		return 0;
	case APIC_EOI:
	case APIC_RRD:
		*val = 0;
		return 0;
	case APIC_DFR:
		*val = l->dfr;
		return 0;
	case APIC_ICR2:
		*val = l->icr_hi;
		return 0;
	}
	return -EINVAL;
}

/*
 * ICR -> bus message. Fixed/lowest with a vector below 16 sets the
 * sender's "send illegal vector" and sends nothing (SDM ESR bit 5); the
 * INIT level de-assert Linux still sends (a no-op since the Pentium 4),
 * SMI, ExtINT and the reserved mode 3 send nothing either. Any shorthand
 * is allowed with any mode, as KVM allows (Linux sends NMI to self).
 */
static bool icr_decode_locked(struct lapic *l, bool x2, struct apic_msg *m)
{
	uint32_t lo = l->icr_lo;
	unsigned mode = (lo >> ICR_DM_SHIFT) & 7;

	MUTEX_ASSERT_HELD(&l->lock);
	*m = (struct apic_msg){
		.vector = (uint8_t)(lo & APIC_VECTOR_MASK),
		.mode = (uint8_t)mode,
		.shorthand = (uint8_t)((lo >> ICR_SH_SHIFT) & 3),
		.logical = lo & ICR_DEST_LOGICAL,
		.level = (lo & ICR_TRIGGER_LEVEL) && mode <= APIC_DM_LOWEST,
		.dest_x2apic = x2,
		.dest = x2 ? l->icr_hi : l->icr_hi >> 24,
		.src = (int)l->index,
	};
	switch (mode) {
	case APIC_DM_FIXED:
	case APIC_DM_LOWEST:
		if (m->vector < 16) {
			lapic_error_locked(l, ESR_SEND_ILLEGAL_VECTOR);
			return false;
		}
		return true;
	case APIC_DM_NMI:
	case APIC_DM_SIPI:
		return true;
	case APIC_DM_INIT:
		return !((lo & ICR_TRIGGER_LEVEL) && !(lo & ICR_LEVEL_ASSERT));
	case APIC_DM_SMI:
		log_once(LOG_WARN, "lapic: guest sent an SMI IPI (no SMM "
			 "here); ignored");
		return false;
	default:
		log_once(LOG_WARN, "lapic: guest sent an IPI with delivery mode "
			 "%u (ExtINT or reserved); ignored", mode);
		return false;
	}
}

static void svr_write_locked(struct lapic *l, uint32_t val, uint64_t now_ns)
{
	MUTEX_ASSERT_HELD(&l->lock);
	/* Vector and enable; focus checking (bit 9) and EOI-broadcast
	 * suppression (bit 12, no directed EOI here) read 0. */
	l->svr = val & 0x1ff;
	if (l->svr & APIC_SVR_ENABLE)
		return;
	/* SDM: software disable masks every LVT. */
	for (unsigned i = LVT_THERMAL; i < LVT_NR; i++)
		l->lvt[i] |= APIC_LVT_MASKED;
	lapic_timer_write_lvt_locked(l, l->lvt[LVT_TIMER] | APIC_LVT_MASKED,
				     now_ns);
}

static void lvt_write_locked(struct lapic *l, unsigned i, uint32_t val,
			     uint64_t now_ns)
{
	MUTEX_ASSERT_HELD(&l->lock);
	val &= lvt_writable[i];
	if (!lapic_sw_enabled(l))
		val |= APIC_LVT_MASKED; /* stays masked while soft-disabled */
	if (i == LVT_TIMER)
		lapic_timer_write_lvt_locked(l, val, now_ns);
	else
		l->lvt[i] = val;
}

static int reg_write_locked(struct lapic *l, unsigned off, uint64_t val,
			    uint64_t now_ns, bool x2, struct reg_effects *fx)
{
	uint32_t v32 = (uint32_t)val;

	MUTEX_ASSERT_HELD(&l->lock);
	if (off >= APIC_LVTT && off <= APIC_LVTERR) {
		lvt_write_locked(l, (off - APIC_LVTT) >> 4, v32, now_ns);
		return 0;
	}
	switch (off) {
	case APIC_TPR:
		l->tpr = v32 & 0xff;
		return 0;
	case APIC_EOI:
		if (x2 && val)
			return -EINVAL;
		fx->eoi_vector = lapic_eoi_locked(l);
		return 0;
	case APIC_SVR:
		svr_write_locked(l, v32, now_ns);
		return 0;
	case APIC_ESR:
		if (x2 && val)
			return -EINVAL;
		/* SDM: a write latches the errors seen since the last one. */
		l->esr = l->esr_pending;
		l->esr_pending = 0;
		return 0;
	case APIC_ICR:
		l->icr_lo = v32 & ICR_LO_WRITABLE;     /* busy reads 0 */
		if (x2)
			l->icr_hi = (uint32_t)(val >> 32);
		fx->send = icr_decode_locked(l, x2, &fx->msg);
		return 0;
	case APIC_TMICT:
		lapic_timer_write_tmict_locked(l, v32, now_ns);
		return 0;
	case APIC_TDCR:
		lapic_timer_write_tdcr_locked(l, v32 & 0xb, now_ns);
		return 0;
	}
	if (x2) {
		if (off != APIC_SELF_IPI)
			return -EINVAL; /* read-only, xAPIC-only or absent */
		fx->msg = (struct apic_msg){
			.vector = (uint8_t)v32, .mode = APIC_DM_FIXED,
			.shorthand = APIC_SH_SELF, .src = (int)l->index,
		};
		fx->send = true;
		return 0;
	}
	switch (off) {
	case APIC_LDR:
		l->ldr = v32 & 0xff000000u;
		return 0;
	case APIC_DFR:
		if ((v32 >> 28) != 0xf && (v32 >> 28) != 0)
			log_once(LOG_WARN, "lapic: DFR model %#x is reserved "
				 "(flat 0xf, cluster 0x0)", v32 >> 28);
		l->dfr = v32 | 0x0fffffffu;
		return 0;
	case APIC_ICR2:
		l->icr_hi = v32 & 0xff000000u;
		return 0;
	case APIC_ID:
		/* SDM "Local APIC ID": writable on some models; KVM's and
		 * QEMU's xAPICs take the write, and guests (kvm-unit-tests'
		 * aliased-ID check) give two CPUs one ID and expect a
		 * physical IPI to reach both. */
		l->xapic_id = (uint8_t)(v32 >> 24);
		if (l->xapic_id != l->index)
			__atomic_store_n(&l->bus->ids_moved, true, __ATOMIC_RELEASE);
		return 0;
	case APIC_LVR:
	case APIC_APR:
	case APIC_PPR:
	case APIC_RRD:
	case APIC_TMCCT:
		return 0;       /* read-only: writes have no effect */
	}
	if (in_range(off, APIC_ISR) || in_range(off, APIC_TMR) ||
	    in_range(off, APIC_IRR))
		return 0;
	return -EINVAL;
}

static void effects_run(struct lapic *l, const struct reg_effects *fx)
{
	if (fx->send)
		apic_bus_deliver(l->bus, &fx->msg);
	if (fx->eoi_vector >= 0)
		apic_bus_eoi(l->bus, (uint8_t)fx->eoi_vector);
}

/* ---- x2APIC MSRs and IA32_APIC_BASE ---- */

static bool x2apic_msr(uint32_t msr)
{
	return msr >= MSR_X2APIC_FIRST && msr <= MSR_X2APIC_LAST;
}

int lapic_msr_read(struct lapic *l, uint32_t msr, uint64_t *val,
		   uint64_t now_ns)
{
	int r;

	if (msr == MSR_IA32_APIC_BASE) {
		*val = lapic_apic_base(l);
		return 0;
	}
	if (!x2apic_msr(msr))
		return -ENOENT;
	lapic_lock(l);
	r = lapic_is_x2apic(l)
		? reg_read_locked(l, (msr - MSR_X2APIC_FIRST) << 4, now_ns,
				  val, true)
		: -EINVAL;
	lapic_unlock(l);
	return r;
}

int lapic_msr_write(struct lapic *l, uint32_t msr, uint64_t val,
		    uint64_t now_ns)
{
	struct reg_effects fx = { .eoi_vector = -1 };
	unsigned off = (msr - MSR_X2APIC_FIRST) << 4;
	int r;

	if (msr == MSR_IA32_APIC_BASE) {
		lapic_lock(l);
		r = lapic_apic_base_write_locked(l, val);
		lapic_unlock(l);
		return r;
	}
	if (!x2apic_msr(msr))
		return -ENOENT;
	lapic_lock(l);
	if (!lapic_is_x2apic(l) || (off != APIC_ICR && (val >> 32)))
		r = -EINVAL;    /* bits 63:32 are reserved but in ICR */
	else
		r = reg_write_locked(l, off, val, now_ns, true, &fx);
	lapic_unlock(l);
	effects_run(l, &fx);
	return r;
}

/* ---- xAPIC MMIO ---- */

static bool xapic_decoded_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	return lapic_hw_enabled(l) && !lapic_is_x2apic(l);
}

bool lapic_mmio_claims(struct lapic *l, uint64_t gpa)
{
	uint64_t page;
	bool v;

	lapic_lock(l);
	page = l->apic_base & ~0xfffull & ~l->base_rsvd;
	v = xapic_decoded_locked(l) && gpa >= page &&
	    gpa - page < LAPIC_MMIO_SIZE;
	lapic_unlock(l);
	return v;
}

void lapic_mmio_read(struct lapic *l, uint64_t offset, void *data,
		     unsigned len, uint64_t now_ns)
{
	uint64_t v = 0;

	/* Narrow reads inside one register's dword are harmless; the SDM
	 * leaves everything else undefined: read 0. */
	if (len == 0 || len > 4 || offset >= LAPIC_MMIO_SIZE ||
	    (offset & 0xf) + len > 4) {
		log_once(LOG_WARN, "lapic: xAPIC read of %u bytes at offset "
			 "%#llx (not inside a register dword); reads 0", len,
			 (unsigned long long)offset);
		device_data_put(data, len, 0);
		return;
	}
	lapic_lock(l);
	if (!xapic_decoded_locked(l)) {
		log_once(LOG_WARN, "lapic: xAPIC page read while not in xAPIC "
			 "mode; reads 0");
	} else if (reg_read_locked(l, (unsigned)offset & ~0xfu, now_ns, &v,
				   false)) {
		lapic_error_locked(l, ESR_ILLEGAL_REGISTER);
		v = 0;
	}
	lapic_unlock(l);
	device_data_put(data, len, v >> (8 * (offset & 3)));
}

void lapic_mmio_write(struct lapic *l, uint64_t offset, const void *data,
		      unsigned len, uint64_t now_ns)
{
	struct reg_effects fx = { .eoi_vector = -1 };

	if (len != 4 || (offset & 0xf) || offset >= LAPIC_MMIO_SIZE) {
		log_once(LOG_WARN, "lapic: xAPIC write of %u bytes at offset "
			 "%#llx (not an aligned dword); dropped", len,
			 (unsigned long long)offset);
		return;
	}
	lapic_lock(l);
	if (!xapic_decoded_locked(l))
		log_once(LOG_WARN, "lapic: xAPIC page write while not in "
			 "xAPIC mode; dropped");
	else if (reg_write_locked(l, (unsigned)offset,
				  device_data_get(data, 4), now_ns, false, &fx))
		lapic_error_locked(l, ESR_ILLEGAL_REGISTER);
	lapic_unlock(l);
	effects_run(l, &fx);
}

static uint64_t bus_now_ns(struct lapic *l)
{
	const struct apic_bus_ops *ops = l->bus->ops;

	return ops && ops->now_ns ? ops->now_ns(l->bus->opaque) : 0;
}

static void mmio_ops_read(void *opaque, uint64_t offset, void *data,
			  unsigned len)
{
	struct lapic *l = opaque;

	lapic_mmio_read(l, offset, data, len, bus_now_ns(l));
}

static void mmio_ops_write(void *opaque, uint64_t offset, const void *data,
			   unsigned len)
{
	struct lapic *l = opaque;

	lapic_mmio_write(l, offset, data, len, bus_now_ns(l));
}

const struct device_ops lapic_mmio_ops = {
	.name = "lapic",
	.read = mmio_ops_read,
	.write = mmio_ops_write,
};
