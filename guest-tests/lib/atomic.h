/*
 * Atomics and spinlocks for code shared between vCPUs. Built on the GCC
 * __atomic builtins, which on x86-64 for <= 8 bytes are plain lock-prefixed
 * integer instructions (no cmpxchg16b, no SSE).
 */
#ifndef GUEST_ATOMIC_H
#define GUEST_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "processor.h"

static inline uint32_t atomic_read(const volatile uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void atomic_set(volatile uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Returns the new value. */
static inline uint32_t atomic_add(volatile uint32_t *p, uint32_t v)
{
	return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}

static inline uint32_t atomic_inc(volatile uint32_t *p)
{
	return atomic_add(p, 1);
}

static inline uint64_t atomic_read64(const volatile uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void atomic_set64(volatile uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

struct spinlock {
	volatile uint32_t locked;
};

static inline bool spin_trylock(struct spinlock *l)
{
	return __atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE) == 0;
}

static inline void spin_lock(struct spinlock *l)
{
	while (!spin_trylock(l))
		while (__atomic_load_n(&l->locked, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

/* For locks also taken in interrupt handlers: IF off while held. */
static inline uint64_t spin_lock_irqsave(struct spinlock *l)
{
	uint64_t flags = irq_save();

	spin_lock(l);
	return flags;
}

static inline void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
	spin_unlock(l);
	irq_restore(flags);
}

#endif
