/*
 * Concurrency: NCPU threads, each playing one vCPU with its own LAPIC
 * (even ones in x2APIC mode writing ICR by MSR, odd ones in xAPIC mode by
 * MMIO), ping every other vCPU ROUNDS times with an IPI; each ping is
 * answered by a pong IPI. A vCPU has one ping outstanding per peer, so
 * every vector has at most one interrupt in flight and the counts must be
 * exact: a lost IPI leaves a ping unanswered (the run times out and
 * fails), a duplicate shows up as a pong nobody is waiting for or a count
 * above ROUNDS.
 *
 * Meanwhile a device thread drives two IOAPIC pins the same way: a
 * level pin routed to vCPU 1 (its handler lowers the line before the
 * EOI, as a driver acknowledges its device) and an edge pin routed to
 * vCPU 2, each raised again only after the previous interrupt was
 * counted: ROUNDS of each, exactly.
 *
 * The vCPU loop is the one the vmm must run: take everything pending
 * (lapic_accept + EOI), send, then "halt" on a condition variable while
 * !lapic_has_event(); the bus's kick signals that variable under the same
 * mutex, so a wakeup cannot fall between the check and the wait.
 */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "common/clock.h"
#include "devices/ioapic.h"
#include "apic_fixture.h"

#define NCPU 4
#define ROUNDS 3000
#define PING(from) (0x40 + (from))      /* ping from vCPU `from` */
#define PONG(from) (0x80 + (from))      /* answer from vCPU `from` */
#define HALT_TIMEOUT_S 10
#define DEV_LEVEL_PIN 9
#define DEV_LEVEL_VEC 0xa0              /* to vCPU 1 */
#define DEV_EDGE_PIN 4
#define DEV_EDGE_VEC 0xa1               /* to vCPU 2 */
#define NTHREADS (NCPU + 1)             /* vCPUs and the device */

struct vcpu {
	pthread_mutex_t m;
	pthread_cond_t c;
	unsigned idx;
	unsigned sent[NCPU];            /* pings sent to each peer */
	bool waiting[NCPU];             /* ping to peer awaits its pong */
	unsigned pings[NCPU];           /* pings received from each peer */
	unsigned pongs[NCPU];           /* pongs received from each peer */
	unsigned dup;                   /* unexpected pongs */
	unsigned halts, timeouts;
};

static struct apic_fx F;
static struct vcpu V[NCPU];
static struct ioapic IO;
static unsigned finished;               /* threads done with their part */
static unsigned dev_level_seen, dev_edge_seen;  /* counted by vCPUs */
static unsigned dev_timeouts;

static void kick(void *opaque, unsigned vcpu)
{
	struct vcpu *v = &V[vcpu];

	(void)opaque;
	pthread_mutex_lock(&v->m);
	pthread_cond_signal(&v->c);
	pthread_mutex_unlock(&v->m);
}

static const struct apic_bus_ops stress_ops = { .kick = kick };

static void send_ipi(unsigned from, unsigned to, uint8_t vector)
{
	if (from & 1) {
		xw(&F, from, APIC_ICR2, to << 24);
		xw(&F, from, APIC_ICR, 0x4000u | vector);
	} else {
		CHECK_EQ(x2w(&F, from, APIC_ICR,
			     ((uint64_t)to << 32) | 0x4000u | vector), 0);
	}
}

static void eoi(unsigned i)
{
	if (i & 1)
		xw(&F, i, APIC_EOI, 0);
	else
		CHECK_EQ(x2w(&F, i, APIC_EOI, 0), 0);
}

/* Take and handle every deliverable interrupt; returns how many. */
static unsigned service(struct vcpu *v)
{
	unsigned n = 0;
	int vec;

	while ((vec = lapic_accept(&F.l[v->idx])) >= 0) {
		n++;
		if (vec >= PONG(0) && vec < PONG(NCPU)) {
			unsigned p = (unsigned)vec - PONG(0);

			if (!v->waiting[p])
				v->dup++;
			v->waiting[p] = false;
			v->pongs[p]++;
		} else if (vec == DEV_LEVEL_VEC) {
			ioapic_set_irq(&IO, DEV_LEVEL_PIN, 0);
			__atomic_add_fetch(&dev_level_seen, 1, __ATOMIC_RELEASE);
		} else if (vec == DEV_EDGE_VEC) {
			__atomic_add_fetch(&dev_edge_seen, 1, __ATOMIC_RELEASE);
		} else if (vec >= PING(0) && vec < PING(NCPU)) {
			unsigned p = (unsigned)vec - PING(0);

			v->pings[p]++;
			eoi(v->idx);
			send_ipi(v->idx, p, PONG(v->idx));
			continue;
		}
		eoi(v->idx);
	}
	return n;
}

static bool all_finished(void)
{
	return __atomic_load_n(&finished, __ATOMIC_ACQUIRE) == NTHREADS;
}

static void finish(void)
{
	if (__atomic_add_fetch(&finished, 1, __ATOMIC_ACQ_REL) == NTHREADS)
		for (unsigned p = 0; p < NCPU; p++)
			kick(NULL, p);
}

/* Wait (spinning politely) until *counter reaches n; false on timeout. */
static bool wait_count(unsigned *counter, unsigned n)
{
	uint64_t t0 = clock_now_ns();

	while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < n) {
		sched_yield();
		if (clock_now_ns() - t0 > HALT_TIMEOUT_S * CLOCK_NS_PER_SEC)
			return false;
	}
	return true;
}

static void *device_thread(void *arg)
{
	(void)arg;
	for (unsigned n = 0; n < ROUNDS; n++) {
		if (!wait_count(&dev_level_seen, n) ||
		    !wait_count(&dev_edge_seen, n)) {
			dev_timeouts++;
			break;
		}
		ioapic_set_irq(&IO, DEV_LEVEL_PIN, 1);
		ioapic_set_irq(&IO, DEV_EDGE_PIN, 1);
		ioapic_set_irq(&IO, DEV_EDGE_PIN, 0);
	}
	if (!wait_count(&dev_level_seen, ROUNDS) ||
	    !wait_count(&dev_edge_seen, ROUNDS))
		dev_timeouts++;
	finish();
	return NULL;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	bool done = false;

	for (;;) {
		unsigned work = service(v);

		for (unsigned p = 0; p < NCPU; p++) {
			if (p == v->idx || v->waiting[p] || v->sent[p] == ROUNDS)
				continue;
			v->waiting[p] = true;
			v->sent[p]++;
			send_ipi(v->idx, p, PING(v->idx));
			work++;
		}
		if (!done) {
			done = true;
			for (unsigned p = 0; p < NCPU; p++)
				if (p != v->idx && (v->sent[p] < ROUNDS ||
						    v->waiting[p]))
					done = false;
			if (done)
				finish();
		}
		if (done && all_finished())
			break;
		if (work)
			continue;
		/* HLT: sleep until an interrupt is pending for us. */
		pthread_mutex_lock(&v->m);
		v->halts++;
		while (!lapic_has_event(&F.l[v->idx]) && !all_finished()) {
			struct timespec ts = clock_cond_deadline_ms(HALT_TIMEOUT_S * 1000);

			if (pthread_cond_timedwait(&v->c, &v->m, &ts)) {
				v->timeouts++;
				break;
			}
		}
		pthread_mutex_unlock(&v->m);
		if (v->timeouts)
			break;          /* a lost IPI: report, don't hang */
	}
	return NULL;
}

int main(void)
{
	pthread_t t[NTHREADS];
	unsigned long total = 0, halts = 0;
	uint64_t t0, t1;

	memset(&F, 0, sizeof(F));
	F.n = NCPU;
	apic_bus_init(&F.bus, &stress_ops, NULL);
	for (unsigned i = 0; i < NCPU; i++) {
		CHECK_EQ(lapic_init(&F.l[i], &F.bus, i, NULL), 0);
		if (!(i & 1))
			CHECK_EQ(base_w(&F, i, LAPIC_DEFAULT_BASE |
					      APIC_BASE_EN | APIC_BASE_EXTD),
				 0);
		rw(&F, i, APIC_SVR, 0x1ff);
		pthread_mutex_init(&V[i].m, NULL);
		pthread_cond_init(&V[i].c, NULL);
		V[i].idx = i;
	}
	CHECK_EQ(ioapic_init(&IO, &F.bus, NCPU), 0);
	ioapic_write_reg(&IO, 0x11 + 2 * DEV_LEVEL_PIN, 1u << 24);
	ioapic_write_reg(&IO, 0x10 + 2 * DEV_LEVEL_PIN,
			 (1u << 15) | DEV_LEVEL_VEC);
	ioapic_write_reg(&IO, 0x11 + 2 * DEV_EDGE_PIN, 2u << 24);
	ioapic_write_reg(&IO, 0x10 + 2 * DEV_EDGE_PIN, DEV_EDGE_VEC);
	t0 = clock_now_ns();
	for (unsigned i = 0; i < NCPU; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, vcpu_thread, &V[i]), 0);
	CHECK_EQ(pthread_create(&t[NCPU], NULL, device_thread, NULL), 0);
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	t1 = clock_now_ns();

	for (unsigned i = 0; i < NCPU; i++) {
		struct vcpu *v = &V[i];

		CHECK_EQ(v->timeouts, 0);
		CHECK_EQ(v->dup, 0);
		for (unsigned p = 0; p < NCPU; p++) {
			if (p == i)
				continue;
			CHECK_EQ(v->sent[p], ROUNDS);
			CHECK_EQ(v->pings[p], ROUNDS);
			CHECK_EQ(v->pongs[p], ROUNDS);
			total += v->pings[p] + v->pongs[p];
		}
		CHECK_EQ(lapic_pending_vector(&F.l[i]), -1);
		halts += v->halts;
		lapic_destroy(&F.l[i]);
	}
	CHECK_EQ(total, 2ul * NCPU * (NCPU - 1) * ROUNDS);
	CHECK_EQ(dev_timeouts, 0);
	CHECK_EQ(dev_level_seen, ROUNDS);
	CHECK_EQ(dev_edge_seen, ROUNDS);
	CHECK(!(ioapic_read_reg(&IO, 0x10 + 2 * DEV_LEVEL_PIN) & (1u << 14)));
	ioapic_destroy(&IO);
	printf("test_apic_stress: %lu IPIs among %d vCPUs and %u+%u IOAPIC "
	       "interrupts in %.3f s, %lu halts\n", total, NCPU,
	       dev_level_seen, dev_edge_seen,
	       (double)(t1 - t0) / 1e9, halts);
	return check_report("test_apic_stress");
}
