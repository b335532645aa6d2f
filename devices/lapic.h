/*
 * Local APIC (one per vCPU) and the APIC bus that connects all of a VM's
 * local APICs and its IOAPIC, for --irqchip user.
 *
 * Model. Registers follow the Intel SDM vol. 3A ch. 11 (APIC): xAPIC MMIO
 * (the 4 KiB page IA32_APIC_BASE names, 32-bit accesses at 16-byte aligned
 * offsets) and x2APIC MSRs 0x800-0x8ff (MSR = 0x800 + offset / 16).
 * Version 0x14, max LVT entry 5: six LVTs (timer, thermal, perf, LINT0,
 * LINT1, error), no CMCI LVT (0x2f0 / MSR 0x82f is reserved), no directed
 * EOI (SVR bit 12 reads 0). x2APIC ID = vCPU index (read-only); the xAPIC
 * ID register starts as index << 24 and takes guest writes (bits 31:24),
 * which physical destinations then follow; power-on, disabling the APIC
 * and the switch to x2APIC put the initial ID back.
 *
 * Nothing here reads a clock or touches KVM. Every call that can start,
 * read or stop the timer takes the host time now_ns (CLOCK_MONOTONIC, ns);
 * timer deadlines leave through apic_bus_ops.arm_timer and come back as
 * lapic_timer_expire(). The LAPIC timer runs at 1 GHz before the divider
 * (1 tick = divide ns), the rate KVM's in-kernel APIC uses, so count
 * arithmetic is exact in integers.
 *
 * Delivery is instantaneous: an ICR write has reached every target before
 * the write returns, so ICR's delivery-status bit always reads 0.
 *
 * Locking. Each LAPIC has one mutex (lapic.lock) that guards all of its
 * state; the IOAPIC has its own. No path ever holds two of these locks:
 * a message to other LAPICs (ICR write) is built under the sender's lock
 * and delivered after dropping it; apic_bus_deliver locks one target at a
 * time. Callbacks:
 *   kick          called with NO irqchip lock held, after the target's
 *                 state changed (IRR/NMI/INIT/SIPI), so a woken vCPU that
 *                 rechecks under its own lock always sees the interrupt.
 *                 It may name the calling vCPU itself.
 *   eoi listener  (the IOAPIC) called with NO irqchip lock held.
 *   arm_timer     called WITH that LAPIC's lock held (so successive arms
 *                 of one LAPIC are seen in order): it must not call into
 *                 the LAPIC; it records the deadline and, if needed, wakes
 *                 the thread that waits for it.
 *   now_ns        only used by lapic_mmio_ops (device_ops carry no time).
 */
#ifndef LAGVISOR_DEVICES_LAPIC_H
#define LAGVISOR_DEVICES_LAPIC_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/mutex.h"
#include "devices/device.h"

#define LAPIC_DEFAULT_BASE 0xfee00000ull
#define LAPIC_MMIO_SIZE 0x1000
#define LAPIC_NO_DEADLINE UINT64_MAX    /* arm_timer: nothing to wait for */
/* The shortest period a periodic timer reloads with (KVM's default
 * min_timer_period_us): a guest's 1-tick period would have the host timer
 * fire again at every entry, and the vCPU would never run. */
#define LAPIC_MIN_PERIOD_NS 200000ull

#define MSR_IA32_APIC_BASE 0x1b
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define MSR_X2APIC_FIRST 0x800
#define MSR_X2APIC_LAST 0x8ff

#define APIC_BASE_BSP (1ull << 8)
#define APIC_BASE_EXTD (1ull << 10)     /* x2APIC mode */
#define APIC_BASE_EN (1ull << 11)

/* x2APIC IDs 0..254; 0xff is the xAPIC broadcast ID. */
#define APIC_BUS_MAX_CPUS 255

/* Delivery modes (ICR, LVT and redirection-entry bits 10:8). */
enum apic_delivery_mode {
	APIC_DM_FIXED = 0,
	APIC_DM_LOWEST = 1,
	APIC_DM_SMI = 2,
	APIC_DM_NMI = 4,
	APIC_DM_INIT = 5,
	APIC_DM_SIPI = 6,
	APIC_DM_EXTINT = 7,
};

/* ICR destination shorthand (bits 19:18). */
enum apic_shorthand {
	APIC_SH_NONE = 0,
	APIC_SH_SELF = 1,
	APIC_SH_ALL = 2,        /* all including self */
	APIC_SH_OTHERS = 3,     /* all excluding self */
};

/* One interrupt message on the APIC bus (from an ICR or the IOAPIC). */
struct apic_msg {
	uint32_t dest;          /* APIC ID (physical) or logical mask */
	uint8_t vector;
	uint8_t mode;           /* enum apic_delivery_mode */
	uint8_t shorthand;      /* enum apic_shorthand; needs src >= 0 */
	bool logical;           /* destination mode */
	bool level;             /* level-triggered: TMR set, EOI broadcast */
	bool dest_x2apic;       /* dest is 32-bit (x2APIC ICR); else 8-bit */
	int src;                /* sending vCPU index, -1 for the IOAPIC */
};

struct apic_bus_ops {
	/* vCPU `vcpu` has something new to take (see locking above). */
	void (*kick)(void *opaque, unsigned vcpu);
	/* LAPIC `vcpu`'s timer now expires at deadline_ns (host clock), or
	 * never (LAPIC_NO_DEADLINE). Later calls replace earlier ones. */
	void (*arm_timer)(void *opaque, unsigned vcpu, uint64_t deadline_ns);
	/* Host time for lapic_mmio_ops; optional for everything else. */
	uint64_t (*now_ns)(void *opaque);
};

struct lapic;

struct apic_bus {
	const struct apic_bus_ops *ops;
	void *opaque;
	void (*eoi)(void *eoi_opaque, uint8_t vector);  /* IOAPIC, or NULL */
	void *eoi_opaque;
	unsigned nr;                    /* highest index + 1 */
	/* Some guest rewrote an xAPIC ID (it stays set): physical
	 * destinations are then found by scanning, not by index. */
	bool ids_moved;
	struct lapic *lapic[APIC_BUS_MAX_CPUS];
};

struct lapic_config {
	unsigned phys_addr_bits;        /* guest MAXPHYADDR; 0 = 52 */
	bool no_x2apic;                 /* EXTD is reserved (CPUID lacks it) */
};

struct lapic {
	struct mutex lock;
	struct apic_bus *bus;
	unsigned index;                 /* vCPU index = x2APIC ID = initial ID */
	uint8_t xapic_id;               /* xAPIC ID register bits 31:24 */
	uint64_t base_rsvd;             /* IA32_APIC_BASE bits that #GP */

	uint64_t apic_base;
	uint32_t tpr, ldr, dfr, svr;
	uint32_t isr[8], tmr[8], irr[8];        /* 256-bit, bit v = vector v */
	uint32_t esr;                   /* what ESR reads */
	uint32_t esr_pending;           /* errors since the last ESR write */
	uint32_t icr_lo, icr_hi;
	uint32_t lvt[6];                /* timer thermal perf lint0 lint1 err */

	/* Timer (lapic_timer.c). */
	uint32_t tmict, tdcr;
	uint64_t timer_start_ns;        /* count loaded (periodic: last reload) */
	uint64_t timer_next_ns;         /* next expiry, LAPIC_NO_DEADLINE if off */
	uint64_t timer_armed_ns;        /* what arm_timer was last told */
	uint64_t tsc_deadline;          /* IA32_TSC_DEADLINE as the guest sees it */

	/* Events for the vCPU loop. */
	uint8_t nmi_pending;            /* NMIs to inject, at most 2 (see lapic.c) */
	bool init_pending;
	bool wait_sipi;                 /* after reset/INIT: SIPI accepted */
	bool sipi_pending;
	uint8_t sipi_vector;
};

/* ---- bus ---- */

/* Empty bus. ops (may be NULL) and opaque are kept and must outlive it. */
void apic_bus_init(struct apic_bus *bus, const struct apic_bus_ops *ops,
		   void *opaque);

/* The IOAPIC's hook for EOIs of level-triggered vectors (ioapic_init). */
void apic_bus_set_eoi_listener(struct apic_bus *bus,
			       void (*eoi)(void *opaque, uint8_t vector),
			       void *opaque);

/*
 * Deliver one message: every LAPIC whose destination matches (physical,
 * logical flat/cluster, x2APIC cluster, broadcast, shorthand relative to
 * msg->src) accepts it: fixed sets IRR (and TMR for level), NMI/INIT/SIPI
 * set their pending state; then each accepting vCPU is kicked. Lowest
 * priority goes to the one matching, software-enabled LAPIC with the
 * lowest arbitration priority (SDM APR), ties to the lowest index; SMI and
 * ExtINT are logged once and dropped. A fixed/lowest vector below 16 is
 * refused by each target with ESR "receive illegal vector".
 * Returns how many LAPICs accepted. O(number of LAPICs).
 */
int apic_bus_deliver(struct apic_bus *bus, const struct apic_msg *msg);

/* ---- one LAPIC ---- */

/*
 * Power-up state: enabled in xAPIC mode at 0xfee00000, software-disabled
 * (SVR 0xff), LVTs masked, BSP bit for index 0; other indices wait for
 * SIPI. Registers itself as bus->lapic[index]: call before any vCPU
 * thread runs. cfg may be NULL. Returns 0, -EINVAL (index too large or
 * taken) or -errno from mutex init.
 */
int lapic_init(struct lapic *l, struct apic_bus *bus, unsigned index,
	       const struct lapic_config *cfg);
void lapic_destroy(struct lapic *l);
/* The guest's MAXPHYADDR once known (its CPUID is set after the LAPIC is
 * created): IA32_APIC_BASE bits from it up #GP. 0 or -EINVAL (not 32..52). */
int lapic_set_phys_addr_bits(struct lapic *l, unsigned bits);
/* Back to the power-on state lapic_init left (a system reset; an INIT
 * keeps the base and the mode). The timer is stopped and arm_timer told. */
void lapic_reset(struct lapic *l);

/*
 * MSR access for IA32_APIC_BASE (0x1b) and the x2APIC range 0x800-0x8ff.
 * Returns 0, -EINVAL where the CPU raises #GP (inject it), -ENOENT for an
 * MSR that is not the APIC's. x2APIC MSRs #GP unless in x2APIC mode;
 * reserved/unimplemented ones, reads of EOI/SELF_IPI, writes to read-only
 * registers, ICR high (0x831), non-zero ESR/EOI writes and bits 63:32 of
 * everything but ICR #GP as well. APIC_BASE: reserved bits and illegal
 * mode transitions (disabled -> x2APIC, x2APIC -> xAPIC, EXTD without EN)
 * #GP; x2APIC -> xAPIC must go through disabled. Disabling resets the
 * registers. An ICR write delivers before it returns.
 */
int lapic_msr_read(struct lapic *l, uint32_t msr, uint64_t *val,
		   uint64_t now_ns);
int lapic_msr_write(struct lapic *l, uint32_t msr, uint64_t val,
		    uint64_t now_ns);

/*
 * IA32_TSC_DEADLINE. The guest's TSC now (tsc_now) and its rate turn the
 * deadline into a host time: deadline_ns = now_ns + ceil((deadline -
 * tsc_now) * 10^6 / tsc_khz), never early. A deadline at or before
 * tsc_now fires at once; 0 disarms. Ignored (and reads 0) unless the LVT
 * timer is in TSC-deadline mode. After it fires it reads 0.
 * Returns 0, or -EINVAL for tsc_khz 0.
 */
int lapic_tsc_deadline_write(struct lapic *l, uint64_t deadline,
			     uint64_t tsc_now, uint64_t tsc_khz,
			     uint64_t now_ns);
uint64_t lapic_tsc_deadline_read(struct lapic *l);

/*
 * xAPIC MMIO. lapic_mmio_claims: whether gpa falls in this LAPIC's page
 * while it is enabled in xAPIC mode (in x2APIC or disabled state the page
 * is not decoded). Accesses are 32-bit at 16-byte aligned offsets; narrower
 * reads inside such a dword work, anything else reads 0 / is dropped
 * (logged once). Reserved offsets set ESR "illegal register address".
 * lapic_mmio_ops does the same with opaque = the LAPIC and the time from
 * apic_bus_ops.now_ns.
 */
bool lapic_mmio_claims(struct lapic *l, uint64_t gpa);
void lapic_mmio_read(struct lapic *l, uint64_t offset, void *data,
		     unsigned len, uint64_t now_ns);
void lapic_mmio_write(struct lapic *l, uint64_t offset, const void *data,
		      unsigned len, uint64_t now_ns);
extern const struct device_ops lapic_mmio_ops;

uint64_t lapic_apic_base(struct lapic *l);
bool lapic_x2apic_mode(struct lapic *l);

/* CR8 = TPR[7:4] (64-bit guests): sync with kvm_run->cr8 around KVM_RUN. */
uint8_t lapic_cr8_read(struct lapic *l);
void lapic_cr8_write(struct lapic *l, uint8_t cr8);

/* ---- the vCPU loop's side ---- */

/*
 * Highest IRR vector whose priority class beats PPR's, or -1 (also when
 * the LAPIC is disabled in IA32_APIC_BASE). O(8).
 */
int lapic_pending_vector(struct lapic *l);

/*
 * The CPU took `vector` (the moment KVM_INTERRUPT injects it): IRR -> ISR.
 * A vector not in IRR is logged once and ignored.
 */
void lapic_ack(struct lapic *l, int vector);

/* pending_vector + ack under one lock hold: the vector to inject, or -1. */
int lapic_accept(struct lapic *l);

/*
 * PV EOI (vmm/x86/pv_eoi.h): whether an EOI now would only clear the
 * highest ISR bit, so that the guest may make it without telling us:
 * something is in service, its vector is edge-triggered (TMR clear: no
 * IOAPIC to tell), and nothing is requested (IRR empty: an EOI must come
 * to us, to deliver that).
 */
bool lapic_eoi_deferrable(struct lapic *l);

/* The guest made an EOI outside the register (PV EOI): its effect, as a
 * write of the EOI register would have had. */
void lapic_eoi(struct lapic *l);

bool lapic_has_nmi(struct lapic *l);
bool lapic_take_nmi(struct lapic *l);     /* true once per pending NMI (up to 2) */

/*
 * INIT / SIPI. An INIT resets the LAPIC registers (not ID, mode, base) at
 * once and leaves init_pending for the vCPU loop, which resets the CPU and
 * waits for SIPI. Only a CPU waiting for SIPI (after INIT, or an AP since
 * power-up) accepts one; later SIPIs are ignored until the next INIT.
 * lapic_take_sipi returns true once, with the vector (start at vector<<12).
 */
bool lapic_take_init(struct lapic *l);
bool lapic_take_sipi(struct lapic *l, uint8_t *vector);
bool lapic_waiting_for_sipi(struct lapic *l);

/*
 * Whether a halted vCPU must wake: a deliverable vector, NMI, INIT or SIPI
 * pending. The timer is not an event until lapic_timer_expire ran.
 */
bool lapic_has_event(struct lapic *l);

/* ---- timer (lapic_timer.c) ---- */

/*
 * The host deadline passed: fire (IRR if the LVT timer is unmasked),
 * then stop (one-shot, TSC-deadline) or re-arm periodic at the next
 * multiple of the period after the previous deadline (no drift; periods
 * the host missed coalesce, as in IRR). A call before the deadline only
 * re-arms. It always ends with one arm_timer call stating what is armed
 * now (LAPIC_NO_DEADLINE included), since the host's deadline was used up.
 * Kicks the vCPU if it set IRR.
 */
void lapic_timer_expire(struct lapic *l, uint64_t now_ns);

/* Next expiry (host ns), LAPIC_NO_DEADLINE if none. */
uint64_t lapic_timer_deadline_ns(struct lapic *l);

#endif
