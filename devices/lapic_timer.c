/*
 * LAPIC timer: one-shot, periodic and TSC-deadline (SDM "APIC Timer").
 *
 * Time model. The timer counts at 1 GHz / divide: a count loaded at host
 * time start_ns reaches 0 at start_ns + count * divide. Nothing ticks here:
 * the current count is derived from now_ns on every read,
 *     current = count - floor((now - start) / divide)     (one-shot),
 * and periodic mode reloads at start + k * period with period = count *
 * divide, so expiries stay on that grid however late the host calls
 * lapic_timer_expire (no drift; expiries it missed coalesce into the one
 * IRR bit, as a CPU that cannot take the interrupt in time would see).
 * With count < 2^32 and divide <= 128 a period is < 2^39 ns (~9 min),
 * far from overflowing 64-bit nanoseconds.
 *
 * Only the unmasked timer is armed on the host: expiries of a masked
 * timer produce nothing, and are caught up (without an interrupt) on the
 * next timer register access or LVT write.
 */
#include "devices/lapic_internal.h"

#include "common/log.h"

static unsigned timer_mode(const struct lapic *l)
{
	return (l->lvt[LVT_TIMER] & APIC_LVT_TIMER_MODE) >>
	       APIC_LVT_TIMER_MODE_SHIFT;
}

/* TDCR bits 3,1:0 = n: divide by 2^(n+1), where n = 7 wraps to 1. */
static uint64_t timer_divide(const struct lapic *l)
{
	unsigned n = (l->tdcr & 3) | ((l->tdcr >> 1) & 4);

	return 1ull << ((n + 1) & 7);
}

static bool timer_running(const struct lapic *l)
{
	return l->timer_next_ns != LAPIC_NO_DEADLINE;
}

static uint64_t host_deadline_locked(const struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	if (l->lvt[LVT_TIMER] & APIC_LVT_MASKED)
		return LAPIC_NO_DEADLINE;
	return l->timer_next_ns;
}

/* Tell the host when to call lapic_timer_expire, if that changed (or,
 * with force, in any case). */
static void publish_force_locked(struct lapic *l, bool force)
{
	const struct apic_bus_ops *ops = l->bus->ops;
	uint64_t want = host_deadline_locked(l);

	MUTEX_ASSERT_HELD(&l->lock);
	if (want == l->timer_armed_ns && !force)
		return;
	l->timer_armed_ns = want;
	if (ops && ops->arm_timer)
		ops->arm_timer(l->bus->opaque, l->index, want);
}

static void publish_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	publish_force_locked(l, false);
}

/*
 * If the deadline has passed: raise the timer interrupt (the LVT's mask
 * decides), then stop or move to the next period. Returns whether an
 * interrupt was raised.
 */
static bool advance_locked(struct lapic *l, uint64_t now_ns)
{
	uint64_t period, missed;
	bool fired;

	MUTEX_ASSERT_HELD(&l->lock);
	if (!timer_running(l) || now_ns < l->timer_next_ns)
		return false;
	fired = lapic_local_irq_locked(l, l->lvt[LVT_TIMER]);
	switch (timer_mode(l)) {
	case TIMER_PERIODIC:
		period = (uint64_t)l->tmict * timer_divide(l);
		missed = (now_ns - l->timer_next_ns) / period;
		l->timer_next_ns += (missed + 1) * period;
		l->timer_start_ns = l->timer_next_ns - period;
		if (period < LAPIC_MIN_PERIOD_NS) {
			/* Reload later, still on the grid (the current count
			 * reads as before); the periods between coalesce. */
			log_once(LOG_WARN, "lapic: periodic timer of %llu ns reloads every "
				 "%llu ns at most", (unsigned long long)period,
				 LAPIC_MIN_PERIOD_NS);
			l->timer_next_ns += (LAPIC_MIN_PERIOD_NS - 1) / period * period;
		}
		break;
	case TIMER_TSC_DEADLINE:
		l->tsc_deadline = 0;    /* SDM: reads 0 once it fired */
		l->timer_next_ns = LAPIC_NO_DEADLINE;
		break;
	default:
		l->timer_next_ns = LAPIC_NO_DEADLINE;
		break;
	}
	return fired;
}

static void stop_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	l->tmict = 0;
	l->tsc_deadline = 0;
	l->timer_next_ns = LAPIC_NO_DEADLINE;
}

void lapic_timer_reset_locked(struct lapic *l)
{
	MUTEX_ASSERT_HELD(&l->lock);
	stop_locked(l);
	l->tdcr = 0;
	publish_locked(l);
}

uint32_t lapic_timer_read_tmcct_locked(struct lapic *l, uint64_t now_ns)
{
	uint64_t div = timer_divide(l), elapsed;

	MUTEX_ASSERT_HELD(&l->lock);
	if (timer_mode(l) == TIMER_TSC_DEADLINE || !timer_running(l))
		return 0;
	if (timer_mode(l) == TIMER_ONESHOT) {
		if (now_ns >= l->timer_next_ns)
			return 0;
		/* = count - floor((now - start) / div), as a ceiling from
		 * the deadline so that a clock read before start (a caller
		 * bug) cannot underflow. */
		return (uint32_t)MIN((l->timer_next_ns - now_ns + div - 1) /
				     div, (uint64_t)l->tmict);
	}
	elapsed = now_ns - l->timer_start_ns;
	if ((int64_t)elapsed < 0)
		return l->tmict;
	elapsed %= (uint64_t)l->tmict * div;
	return l->tmict - (uint32_t)(elapsed / div);
}

void lapic_timer_write_tmict_locked(struct lapic *l, uint32_t val,
				    uint64_t now_ns)
{
	MUTEX_ASSERT_HELD(&l->lock);
	/* SDM: in TSC-deadline mode writes to the initial count are ignored. */
	if (timer_mode(l) == TIMER_TSC_DEADLINE)
		return;
	advance_locked(l, now_ns);      /* an expiry the host was late for */
	l->tmict = val;
	if (val == 0) {
		l->timer_next_ns = LAPIC_NO_DEADLINE;   /* 0 stops the timer */
	} else {
		l->timer_start_ns = now_ns;
		l->timer_next_ns = now_ns + (uint64_t)val * timer_divide(l);
	}
	publish_locked(l);
}

void lapic_timer_write_tdcr_locked(struct lapic *l, uint32_t val,
				   uint64_t now_ns)
{
	uint64_t div;
	uint32_t cur;

	MUTEX_ASSERT_HELD(&l->lock);
	advance_locked(l, now_ns);
	if (!timer_running(l) || timer_mode(l) == TIMER_TSC_DEADLINE) {
		l->tdcr = val;
		return;
	}
	/* Keep the current count; let the rest of it (and later periods)
	 * count at the new rate: choose start so that current = count -
	 * (now - start) / div holds with the new div. Unsigned wrap of
	 * start is harmless: only now - start is ever used. */
	cur = lapic_timer_read_tmcct_locked(l, now_ns);
	l->tdcr = val;
	div = timer_divide(l);
	l->timer_next_ns = now_ns + (uint64_t)cur * div;
	l->timer_start_ns = now_ns - (uint64_t)(l->tmict - cur) * div;
	publish_locked(l);
}

void lapic_timer_write_lvt_locked(struct lapic *l, uint32_t val,
				  uint64_t now_ns)
{
	unsigned old_mode = timer_mode(l);
	unsigned new_mode = (val & APIC_LVT_TIMER_MODE) >>
			    APIC_LVT_TIMER_MODE_SHIFT;

	MUTEX_ASSERT_HELD(&l->lock);
	/* Expiries before this write happened under the old mask. */
	advance_locked(l, now_ns);
	if (new_mode == 3) {
		log_once(LOG_WARN, "lapic: LVT timer mode 3 is reserved; "
			 "mode left unchanged");
		new_mode = old_mode;
		val = (val & ~APIC_LVT_TIMER_MODE) |
		      (old_mode << APIC_LVT_TIMER_MODE_SHIFT);
	}
	l->lvt[LVT_TIMER] = val;
	/* SDM: switching into or out of TSC-deadline mode disarms the timer
	 * (initial count and deadline both read 0); one-shot <-> periodic
	 * keeps counting. */
	if ((old_mode == TIMER_TSC_DEADLINE) != (new_mode == TIMER_TSC_DEADLINE))
		stop_locked(l);
	publish_locked(l);
}

int lapic_tsc_deadline_write(struct lapic *l, uint64_t deadline,
			     uint64_t tsc_now, uint64_t tsc_khz,
			     uint64_t now_ns)
{
	unsigned __int128 ns;

	if (tsc_khz == 0)
		return -EINVAL;
	lapic_lock(l);
	if (timer_mode(l) != TIMER_TSC_DEADLINE) {
		lapic_unlock(l);
		return 0;       /* SDM: ignored in the other modes */
	}
	l->tsc_deadline = deadline;
	if (deadline == 0) {
		l->timer_next_ns = LAPIC_NO_DEADLINE;
	} else if (deadline <= tsc_now) {
		l->timer_next_ns = now_ns;
	} else {
		/* ticks / (kHz * 1000) s = ticks * 10^6 / kHz ns, rounded
		 * up so the interrupt is never early. The 128-bit product
		 * cannot overflow (2^64 * 10^6 < 2^84). */
		ns = ((unsigned __int128)(deadline - tsc_now) * 1000000u +
		      tsc_khz - 1) / tsc_khz;
		if (ns >= LAPIC_NO_DEADLINE - now_ns)
			l->timer_next_ns = LAPIC_NO_DEADLINE - 1;
		else
			l->timer_next_ns = now_ns + (uint64_t)ns;
	}
	advance_locked(l, now_ns);
	publish_locked(l);
	lapic_unlock(l);
	return 0;
}

uint64_t lapic_tsc_deadline_read(struct lapic *l)
{
	uint64_t v;

	lapic_lock(l);
	v = timer_mode(l) == TIMER_TSC_DEADLINE ? l->tsc_deadline : 0;
	lapic_unlock(l);
	return v;
}

void lapic_timer_expire(struct lapic *l, uint64_t now_ns)
{
	const struct apic_bus_ops *ops = l->bus->ops;
	bool fired;

	lapic_lock(l);
	fired = advance_locked(l, now_ns);
	/* The host's deadline fired and is gone: say what is due now (the
	 * same deadline after an early call, the next period, or none). */
	publish_force_locked(l, true);
	lapic_unlock(l);
	if (fired && ops && ops->kick)
		ops->kick(l->bus->opaque, l->index);
}

uint64_t lapic_timer_deadline_ns(struct lapic *l)
{
	uint64_t v;

	lapic_lock(l);
	v = host_deadline_locked(l);
	lapic_unlock(l);
	return v;
}
