/*
 * Hand-computed cases for PREEMPT_ELIGIBLE (the slice timer at the moment an
 * earlier-deadline entity becomes eligible), DELAY_ZERO (no lag earned
 * asleep), and which busy pCPU a wakee goes to (IPI_HANDOFF, WAKE_VICTIM).
 * One pCPU unless stated, nice 0 (w = 1024, virtual = wall time), base slice
 * 3 ms, tick 1 ms; virtual times relative to V0_START.
 */
#include "sched/internal.h"
#include "harness.h"

#define US 1000ull

/*
 * b (slice 500 us) runs from 0 and blocks at 200 us with v 200 us against
 * V 100 us: lag -100 us. a (initial d 1.5 ms) runs from 200 us. b wakes at
 * 300 us: V = 100 us, the lag inflated by (W+w)/W = 2 puts b at v 300 us,
 * d 800 us, and V at 200 us: b is not eligible, so it cannot preempt. The
 * wakeup cut a's protection to v + 500 us, i.e. 800 us wall. V rises at
 * NICE_0/W = 1/2 per ns, so b becomes eligible after (300 - 200) * 2 =
 * 200 us: at 500 us (+1 us of slack), and b's deadline is before a's.
 * Without delayed dequeue: with it b's block would leave it queued.
 */
static void run_eligible(const char *features, uint64_t want_timer, uint64_t tick_at)
{
	struct tdom *t = tdom_new(1, 4, features);
	unsigned a = tdom_add(t, 0, 0, false), b = tdom_add(t, 0, 0, false);
	struct sched_wake_result wr;
	struct sched_entity_info i;

	CHECK_EQ(sched_set_slice(&t->h, b, 500 * US, 0), 0);
	sched_wake(&t->h, b, 0, 0, NULL);
	tsched(t, 0, 0, b);
	sched_wake(&t->h, a, 0, 0, NULL);
	CHECK_EQ(sched_block(&t->h, b, 200 * US), 0);
	tsched(t, 0, 200 * US, a);
	CHECK_EQ(sched_wake(&t->h, b, 300 * US, 0, &wr), 0);
	CHECK(!wr.preempt);
	i = tinfo(t, b);
	CHECK_EQ((int64_t)(i.vruntime - V0_START), 300 * US);
	CHECK_EQ((int64_t)(i.deadline - V0_START), 800 * US);
	CHECK_EQ(t->host.timer[0], want_timer);
	/* a tick just before the timer changes nothing */
	CHECK_EQ(sched_tick(&t->h, 0, tick_at - 2 * US), 0);
	CHECK_EQ(sched_tick(&t->h, 0, tick_at), 1);
	tsched(t, 0, tick_at, b);
	tcheck(t, features);
	tdom_free(t);
}

static void test_preempt_eligible(void)
{
	run_eligible("PREEMPT_ELIGIBLE,NO_DELAY_DEQUEUE", 501 * US, 501 * US);
	/* without it the timer waits for a's protection to end */
	run_eligible("NO_PREEMPT_ELIGIBLE,NO_DELAY_DEQUEUE", 800 * US, 800 * US);
}

/* As run_eligible, but b's block at 200 us is delayed (v 200 > V 100): it
 * becomes eligible at 401 us, which needs no timer; a's protection (cut to
 * v + b's 500 us slice by the pick at 200 us) ends at 700 us. */
static void test_eligible_skips_delayed(void)
{
	struct tdom *t = tdom_new(1, 4, "PREEMPT_ELIGIBLE,DELAY_DEQUEUE");
	unsigned a = tdom_add(t, 0, 0, false), b = tdom_add(t, 0, 0, false);

	CHECK_EQ(sched_set_slice(&t->h, b, 500 * US, 0), 0);
	sched_wake(&t->h, b, 0, 0, NULL);
	tsched(t, 0, 0, b);
	sched_wake(&t->h, a, 0, 0, NULL);
	CHECK_EQ(sched_block(&t->h, b, 200 * US), 0);
	CHECK(tinfo(t, b).delayed);
	tsched(t, 0, 200 * US, a);
	CHECK_EQ(t->host.timer[0], 700 * US);
	tcheck(t, __func__);
	tdom_free(t);
}

/* With equal slices a protected curr keeps the pCPU: the timer goes to the
 * end of its protection, not to b's eligibility. */
static void test_eligible_respects_protection(void)
{
	struct tdom *t = tdom_new(1, 4, "PREEMPT_ELIGIBLE,NO_DELAY_DEQUEUE");
	unsigned a = tdom_add(t, 0, 0, false), b = tdom_add(t, 0, 0, false);

	sched_wake(&t->h, b, 0, 0, NULL);
	tsched(t, 0, 0, b);
	sched_wake(&t->h, a, 0, 0, NULL);
	/* b: v 200, V 100 -> lag -100 us; a runs from 200 us, v 0, d 1.5 ms,
	 * protected to min(d, v + 3 ms) = 1.5 ms */
	CHECK_EQ(sched_block(&t->h, b, 200 * US), 0);
	tsched(t, 0, 200 * US, a);
	/* b at v 300 us, d 3.3 ms: later than a's deadline anyway */
	sched_wake(&t->h, b, 300 * US, 0, NULL);
	CHECK_EQ(t->host.timer[0], 1700 * US);
	CHECK_EQ(sched_tick(&t->h, 0, 600 * US), 0);
	tcheck(t, __func__);
	tdom_free(t);
}

/*
 * a runs 0..1 ms and blocks with v 1 ms against V 0.5 ms: delayed. b runs.
 * At 2.2 ms V = (1 + 1.2)/2 = 1.1 ms: a has lag +0.1 ms, all of it earned
 * asleep. Woken now it is placed anew at V (of b alone) = 1.2 ms with a
 * fresh deadline 4.2 ms; NO_DELAY_ZERO keeps v 1 ms, d 1.5 ms.
 */
/* a runs 0..1 ms beside queued b, blocks (delayed), b runs from 1 ms */
static struct tdom *delayed_a(const char *features, unsigned *a, unsigned *b)
{
	struct tdom *t = tdom_new(1, 4, features);

	*a = tdom_add(t, 0, 0, false);
	*b = tdom_add(t, 0, 0, false);
	sched_wake(&t->h, *a, 0, 0, NULL);
	tsched(t, 0, 0, *a);
	sched_wake(&t->h, *b, 0, 0, NULL);
	CHECK_EQ(sched_block(&t->h, *a, 1 * MS), 0);
	CHECK(tinfo(t, *a).delayed);
	tsched(t, 0, 1 * MS, *b);
	return t;
}

static void run_delay_wake(const char *features, int64_t want_v, int64_t want_d)
{
	unsigned a, b;
	struct tdom *t = delayed_a(features, &a, &b);
	struct sched_entity_info i;

	CHECK_EQ(sched_wake(&t->h, a, 2200 * US, 0, NULL), 0);
	i = tinfo(t, a);
	CHECK(!i.delayed);
	CHECK_EQ((int64_t)(i.vruntime - V0_START), want_v);
	CHECK_EQ((int64_t)(i.deadline - V0_START), want_d);
	tcheck(t, features);
	tdom_free(t);
}

/* The existing completion case (test_delay_dequeue): picked at 2.5 ms with
 * lag +0.25 ms, which DELAY_ZERO drops and NO_DELAY_ZERO keeps. */
static void run_delay_complete(const char *features, int64_t want_lag)
{
	unsigned a, b;
	struct tdom *t = delayed_a(features, &a, &b);
	struct sched_entity_info i;

	CHECK_EQ(sched_tick(&t->h, 0, 2500 * US), 1);
	tsched(t, 0, 2500 * US, b);
	i = tinfo(t, a);
	CHECK_EQ(i.state, SCHED_ES_BLOCKED);
	CHECK_EQ(i.lag, want_lag);
	tcheck(t, features);
	tdom_free(t);
}

static void test_delay_zero(void)
{
	run_delay_wake("DELAY_DEQUEUE,DELAY_ZERO", 1200 * US, 4200 * US);
	run_delay_wake("DELAY_DEQUEUE,NO_DELAY_ZERO", 1000 * US, 1500 * US);
	run_delay_complete("DELAY_DEQUEUE,DELAY_ZERO", 0);
	run_delay_complete("DELAY_DEQUEUE,NO_DELAY_ZERO", 250 * US);
}

/* h0 runs on pCPU 0, a (the waker) on pCPU 1; b last ran on 0. Neither is
 * idle, so b goes to its previous pCPU unless a sync wake with IPI_HANDOFF
 * sends it to the waker's. */
/* Two pCPUs, one running entity on each, and a blocked b created on 0. */
static struct tdom *two_busy(const char *features, unsigned *b)
{
	struct tdom *t = tdom_new(2, 4, features);

	for (unsigned p = 0; p < 2; p++) {
		unsigned c = tdom_add(t, p, 0, false);

		sched_wake(&t->h, c, 0, p, NULL);
		tsched(t, p, 0, c);
	}
	*b = tdom_add(t, 0, 0, false);
	return t;
}

static void run_handoff(const char *features, unsigned hint, unsigned want)
{
	unsigned b;
	struct tdom *t = two_busy(features, &b);
	struct sched_wake_result wr;

	CHECK_EQ(sched_wake_hint(&t->h, b, 100 * US, 1, hint, &wr), 0);
	CHECK_EQ(wr.how, SCHED_WAKE_ENQUEUED);
	CHECK_EQ(wr.pcpu, want);
	tcheck(t, features);
	tdom_free(t);
}

static void test_ipi_handoff(void)
{
	run_handoff("IPI_HANDOFF", SCHED_WAKE_SYNC, 1);
	run_handoff("IPI_HANDOFF", 0, 0);
	run_handoff("NO_IPI_HANDOFF", SCHED_WAKE_SYNC, 0);
}

/* h0 (pCPU 0) is inside its protection; h1 (pCPU 1) ran alone past its
 * first deadline (1.5 ms), so its protection is over: WAKE_VICTIM sends
 * b, whose previous pCPU is 0, to pCPU 1. */
static void run_victim(const char *features, unsigned want)
{
	unsigned b;
	struct tdom *t = two_busy(features, &b);
	struct sched_wake_result wr;

	CHECK_EQ(sched_tick(&t->h, 1, 2 * MS), 0);
	CHECK_EQ(sched_wake(&t->h, b, 2 * MS, SCHED_NONE, &wr), 0);
	CHECK_EQ(wr.pcpu, want);
	tcheck(t, features);
	tdom_free(t);
}

static void test_wake_victim(void)
{
	run_victim("WAKE_VICTIM", 1);
	run_victim("NO_WAKE_VICTIM", 0);
}

int main(void)
{
	test_ipi_handoff();
	test_wake_victim();
	test_preempt_eligible();
	test_eligible_respects_protection();
	test_eligible_skips_delayed();
	test_delay_zero();
	return check_report("test_preempt");
}
