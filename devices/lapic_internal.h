/*
 * Shared between lapic.c (state, priorities, acceptance), lapic_regs.c
 * (register file, MSR/MMIO front ends), lapic_timer.c and apic_bus.c.
 * Not for use outside devices/.
 */
#ifndef LAGVISOR_DEVICES_LAPIC_INTERNAL_H
#define LAGVISOR_DEVICES_LAPIC_INTERNAL_H

#include <assert.h>
#include <errno.h>

#include "common/compiler.h"
#include "devices/lapic.h"

/* Register offsets in the xAPIC page (x2APIC MSR = 0x800 + off / 16). */
enum {
	APIC_ID = 0x020, APIC_LVR = 0x030, APIC_TPR = 0x080, APIC_APR = 0x090,
	APIC_PPR = 0x0a0, APIC_EOI = 0x0b0, APIC_RRD = 0x0c0, APIC_LDR = 0x0d0,
	APIC_DFR = 0x0e0, APIC_SVR = 0x0f0, APIC_ISR = 0x100, APIC_TMR = 0x180,
	APIC_IRR = 0x200, APIC_ESR = 0x280, APIC_CMCI = 0x2f0,
	APIC_ICR = 0x300, APIC_ICR2 = 0x310, APIC_LVTT = 0x320,
	APIC_LVTTHMR = 0x330, APIC_LVTPC = 0x340, APIC_LVT0 = 0x350,
	APIC_LVT1 = 0x360, APIC_LVTERR = 0x370, APIC_TMICT = 0x380,
	APIC_TMCCT = 0x390, APIC_TDCR = 0x3e0, APIC_SELF_IPI = 0x3f0,
};

enum { LVT_TIMER, LVT_THERMAL, LVT_PERF, LVT_LINT0, LVT_LINT1, LVT_ERROR,
       LVT_NR };

#define APIC_VERSION 0x14
#define APIC_MAX_LVT (LVT_NR - 1)

#define APIC_VECTOR_MASK 0xffu
#define APIC_LVT_DM_SHIFT 8
#define APIC_LVT_MASKED (1u << 16)
#define APIC_LVT_TIMER_MODE_SHIFT 17
#define APIC_LVT_TIMER_MODE (3u << 17)
enum { TIMER_ONESHOT = 0, TIMER_PERIODIC = 1, TIMER_TSC_DEADLINE = 2 };

#define APIC_SVR_ENABLE (1u << 8)

/* ESR bits the model can set (SDM "Error Status Register"). */
#define ESR_SEND_ILLEGAL_VECTOR (1u << 5)
#define ESR_RECV_ILLEGAL_VECTOR (1u << 6)
#define ESR_ILLEGAL_REGISTER (1u << 7)

/* ICR low-word fields. */
#define ICR_DM_SHIFT 8
#define ICR_DEST_LOGICAL (1u << 11)
#define ICR_BUSY (1u << 12)
#define ICR_LEVEL_ASSERT (1u << 14)
#define ICR_TRIGGER_LEVEL (1u << 15)
#define ICR_SH_SHIFT 18
#define ICR_LO_WRITABLE 0x000ccfffu     /* 0-11, 14, 15, 18, 19 */

static inline void lapic_lock(struct lapic *l)
{
	mutex_lock(&l->lock);
}

static inline void lapic_unlock(struct lapic *l)
{
	mutex_unlock(&l->lock);
}

static inline bool lapic_hw_enabled(const struct lapic *l)
{
	return l->apic_base & APIC_BASE_EN;
}

static inline bool lapic_is_x2apic(const struct lapic *l)
{
	return (l->apic_base & (APIC_BASE_EN | APIC_BASE_EXTD)) ==
	       (APIC_BASE_EN | APIC_BASE_EXTD);
}

static inline bool lapic_sw_enabled(const struct lapic *l)
{
	return lapic_hw_enabled(l) && (l->svr & APIC_SVR_ENABLE);
}

static inline bool vec_test(const uint32_t *bits, unsigned v)
{
	return bits[v >> 5] & (1u << (v & 31));
}

static inline void vec_set(uint32_t *bits, unsigned v)
{
	bits[v >> 5] |= 1u << (v & 31);
}

static inline void vec_clear(uint32_t *bits, unsigned v)
{
	bits[v >> 5] &= ~(1u << (v & 31));
}

/* Highest set vector of a 256-bit register, or -1. */
static inline int vec_highest(const uint32_t *bits)
{
	for (int w = 7; w >= 0; w--)
		if (bits[w])
			return w * 32 + 31 - __builtin_clz(bits[w]);
	return -1;
}

/* lapic.c */
void lapic_regs_reset_locked(struct lapic *l);
uint32_t lapic_ppr_locked(struct lapic *l);
uint32_t lapic_apr_locked(struct lapic *l);
void lapic_error_locked(struct lapic *l, uint32_t esr_bits);
bool lapic_accept_msg_locked(struct lapic *l, const struct apic_msg *msg);
/* Raise a local (LVT) interrupt: lvt_val's vector, mode and mask. */
bool lapic_local_irq_locked(struct lapic *l, uint32_t lvt_val);
/* Clear the highest ISR bit; returns the vector if it was level-triggered
 * (the caller broadcasts the EOI after unlocking), else -1. */
int lapic_eoi_locked(struct lapic *l);
int lapic_apic_base_write_locked(struct lapic *l, uint64_t val);

/* lapic_timer.c */
void lapic_timer_reset_locked(struct lapic *l);
void lapic_timer_write_tmict_locked(struct lapic *l, uint32_t val,
				    uint64_t now_ns);
void lapic_timer_write_tdcr_locked(struct lapic *l, uint32_t val,
				   uint64_t now_ns);
void lapic_timer_write_lvt_locked(struct lapic *l, uint32_t val,
				  uint64_t now_ns);
uint32_t lapic_timer_read_tmcct_locked(struct lapic *l, uint64_t now_ns);

/* apic_bus.c */
bool lapic_match_dest_locked(struct lapic *l, const struct apic_msg *msg);
/* Tell the EOI listener (IOAPIC); no irqchip lock may be held. */
void apic_bus_eoi(struct apic_bus *bus, uint8_t vector);

#endif
