/*
 * Unit tests of wakeups and queues across pCPUs against hand-computed
 * outcomes: idle-class rules, ttwu_pending tracking (and the early-clear
 * reproduction of seed 002), new-idle and periodic balance with allowed
 * sets, removal in every state, feature flags and bad input.
 */
#include "harness.h"

static void test_idle_class(void)
{
	struct tdom *t = tdom_new(2, 8, NULL);
	unsigned n = tdom_add(t, 0, 0, false), id = tdom_add(t, 0, 0, true);
	unsigned x = tdom_add(t, 1, 0, false);
	struct sched_wake_result wr;

	CHECK_EQ(tinfo(t, id).weight, 3);
	sched_wake(&t->h, n, 0, 0, NULL);
	tsched(t, 0, 0, n);
	sched_wake(&t->h, id, 0, 0, &wr);
	sched_wake_drain(&t->h, wr.pcpu, 0);
	sched_migrate(&t->h, id, 0, 0);
	CHECK_EQ(tinfo(t, id).pcpu, 0);
	/* idle entity waits 10 ms behind n: positive lag, saved on sleep */
	sched_tick(&t->h, 0, 10 * MS);
	sched_block(&t->h, id, 10 * MS);
	CHECK(tinfo(t, id).lag > 1000000);
	/* IDLE_NO_COMPENSATION: woken at lag 0, and no preemption of n */
	CHECK_EQ(sched_wake(&t->h, id, 10 * MS, 0, &wr), 0);
	CHECK_EQ(wr.pcpu, 1);                  /* prev 0 busy: idle pCPU 1 */
	tcheck(t, __func__);
	tdom_free(t);

	/* deterministic single-pCPU version of the same */
	for (int comp = 0; comp < 2; comp++) {
		t = tdom_new(1, 8, comp ? "NO_IDLE_NO_COMPENSATION" : NULL);
		n = tdom_add(t, 0, 0, false);
		id = tdom_add(t, 0, 0, true);
		sched_wake(&t->h, n, 0, 0, NULL);
		tsched(t, 0, 0, n);
		sched_wake(&t->h, id, 0, 0, &wr);
		CHECK(!wr.preempt);            /* idle wakee never preempts normal */
		sched_tick(&t->h, 0, 10 * MS);
		sched_block(&t->h, id, 10 * MS);
		CHECK(tinfo(t, id).lag > 1000000);
		sched_wake(&t->h, id, 10 * MS, 0, &wr);
		CHECK(!wr.preempt);
		if (comp)
			CHECK(tinfo(t, id).lag > 1000000);
		else
			CHECK_EQ(tinfo(t, id).lag, 0);
		tdom_free(t);
	}

	/* no compensation applies to wakeups only: a migration keeps the
	 * idle-class entity's positive lag (to the unit) */
	t = tdom_new(2, 8, "NO_TTWU_PENDING");
	n = tdom_add(t, 0, 0, false);
	x = tdom_add(t, 1, 0, false);
	id = tdom_add(t, 0, 0, true);
	sched_wake(&t->h, n, 0, 0, NULL);
	tsched(t, 0, 0, n);
	sched_wake(&t->h, x, 0, 1, NULL);
	tsched(t, 1, 0, x);
	sched_wake(&t->h, id, 0, 0, NULL);
	CHECK_EQ(tinfo(t, id).pcpu, 0);
	sched_tick(&t->h, 0, 10 * MS);
	sched_tick(&t->h, 1, 10 * MS);
	int64_t before = tinfo(t, id).lag;
	CHECK(before > 1000000);
	CHECK_EQ(sched_migrate(&t->h, id, 1, 10 * MS), 0);
	int64_t after = tinfo(t, id).lag;
	CHECK(after >= before - 1 && after <= before + 1);
	tdom_free(t);

	/* normal wakee preempts an idle-class curr; a queue of idle-class
	 * entities only counts as idle for a normal wakee */
	t = tdom_new(2, 8, NULL);
	id = tdom_add(t, 0, 0, true);
	n = tdom_add(t, 1, 0, false);
	x = tdom_add(t, 1, 0, false);
	sched_wake(&t->h, id, 0, 0, NULL);
	tsched(t, 0, 0, id);
	sched_wake(&t->h, n, 0, 1, NULL);
	tsched(t, 1, 0, n);
	CHECK_EQ(sched_wake(&t->h, x, 1 * MS, SCHED_NONE, &wr), 0);
	CHECK_EQ(wr.pcpu, 0);                  /* prev 1 busy, 0 has idle-class only */
	CHECK_EQ(wr.how, SCHED_WAKE_LISTED);
	sched_wake_drain(&t->h, 0, 1 * MS);
	CHECK(tpinfo(t, 0).need_resched);      /* x preempts the idle-class curr */
	tsched(t, 0, 1 * MS, x);
	tcheck(t, __func__);
	tdom_free(t);
}

static void test_pending(void)
{
	for (int early = 0; early < 2; early++) {
		struct tdom *t = tdom_new(3, 8, early ? "TTWU_PENDING_EARLY_CLEAR" : NULL);
		unsigned a = tdom_add(t, 0, 0, false);
		unsigned x = tdom_add(t, 1, 0, false), y = tdom_add(t, 1, 0, false);
		struct sched_wake_result wr;

		sched_wake(&t->h, a, 0, 0, NULL);
		tsched(t, 0, 0, a);
		CHECK(tpinfo(t, 1).idle);
		CHECK_EQ(sched_wake(&t->h, x, 0, 0, &wr), 0);
		CHECK_EQ(wr.how, SCHED_WAKE_LISTED);
		CHECK_EQ(wr.pcpu, 1);
		CHECK(tpinfo(t, 1).ttwu_pending);
		CHECK(!tpinfo(t, 1).idle);
		CHECK_EQ(t->host.kicks[1], 1);
		tcheck(t, __func__);
		CHECK_EQ(sched_wake_take(&t->h, 1), 1);
		CHECK_EQ(tpinfo(t, 1).ttwu_pending, !early);
		tcheck(t, __func__);
		/* a second waker during the drain window */
		CHECK_EQ(sched_wake(&t->h, y, 0, 0, &wr), 0);
		CHECK_EQ(wr.how, SCHED_WAKE_LISTED);
		CHECK_EQ(wr.pcpu, early ? 1 : 2);      /* early clear stacks on 1 */
		CHECK_EQ(sched_wake_finish(&t->h, 1, 0), 1);
		/* cleared after the enqueue unless more are in flight */
		CHECK_EQ(tpinfo(t, 1).ttwu_pending, early);
		CHECK_EQ(tpinfo(t, 1).nr_queued, 1);
		CHECK_EQ(tinfo(t, x).state, SCHED_ES_QUEUED);
		tcheck(t, __func__);
		sched_wake_drain(&t->h, wr.pcpu, 0);
		CHECK(!tpinfo(t, 1).ttwu_pending && !tpinfo(t, 2).ttwu_pending);
		CHECK_EQ(sched_wake(&t->h, y, 0, 0, &wr), 0);
		CHECK_EQ(wr.how, SCHED_WAKE_ALREADY);
		tcheck(t, __func__);
		tdom_free(t);
	}
	/* NO_TTWU_PENDING: the waker enqueues directly */
	struct tdom *t = tdom_new(2, 8, "NO_TTWU_PENDING");
	unsigned x = tdom_add(t, 1, 0, false);
	struct sched_wake_result wr;

	CHECK_EQ(sched_wake(&t->h, x, 0, 0, &wr), 0);
	CHECK_EQ(wr.how, SCHED_WAKE_ENQUEUED);
	CHECK_EQ(tinfo(t, x).state, SCHED_ES_QUEUED);
	tdom_free(t);
}

static void test_balance(void)
{
	struct tdom *t = tdom_new(2, 16, NULL);
	struct sched_cpuset only0, all;
	unsigned e[6];
	struct sched_switch sw;

	sched_cpuset_zero(&only0);
	sched_cpuset_set(&only0, 0);
	all = only0;
	sched_cpuset_set(&all, 1);
	for (int i = 0; i < 6; i++) {
		e[i] = tdom_add(t, 0, 0, false);
		sched_set_allowed(&t->h, e[i], &only0, 0);
		sched_wake(&t->h, e[i], 0, 0, NULL);
	}
	CHECK_EQ(tpinfo(t, 0).nr_queued, 6);
	tsched(t, 0, 0, e[0]);
	sched_set_allowed(&t->h, e[4], &all, 0);
	sched_set_allowed(&t->h, e[5], &all, 0);
	/* new-idle balance on pCPU 1 pulls the earliest eligible deadline it
	 * may run: e4 (e1..e3 are pinned to pCPU 0) */
	CHECK_EQ(sched_schedule(&t->h, 1, 0, &sw), 0);
	CHECK_EQ(sw.pulled, 1);
	CHECK_EQ(sw.next, e[4]);
	CHECK_EQ(tinfo(t, e[4]).nr_migrations, 1);
	tcheck(t, __func__);
	tdom_free(t);

	/* periodic: 6 vs 0 -> pull until the difference is below 2 */
	t = tdom_new(2, 16, NULL);
	for (int i = 0; i < 6; i++) {
		e[i] = tdom_add(t, 0, 0, false);
		sched_set_allowed(&t->h, e[i], &only0, 0);
		sched_wake(&t->h, e[i], 0, 0, NULL);
	}
	tsched(t, 0, 0, e[0]);
	for (int i = 0; i < 6; i++)
		sched_set_allowed(&t->h, e[i], &all, 0);
	CHECK_EQ(sched_balance(&t->h, 1, 0), 3);
	CHECK_EQ(tpinfo(t, 0).nr_queued, 3);
	CHECK_EQ(tpinfo(t, 1).nr_queued, 3);
	CHECK_EQ(sched_balance(&t->h, 1, 0), 0);
	CHECK_EQ(sched_balance(&t->h, 0, 0), 0);
	tcheck(t, __func__);
	for (int i = 0; i < 6; i++)
		sched_block(&t->h, e[i], 1 * MS);
	tcheck(t, __func__);
	tdom_free(t);
}

static void test_remove_and_errors(void)
{
	struct tdom *t = tdom_new(2, 4, NULL);
	struct sched_entity_params p = { .owner = 7 };
	unsigned id[4];
	char buf[64];

	for (int i = 0; i < 4; i++)
		CHECK_EQ(sched_entity_add(&t->h, &p, 0, &id[i]), 0);
	CHECK_EQ(sched_entity_add(&t->h, &p, 0, &id[0]), -ENOSPC);
	sched_wake(&t->h, id[0], 0, 0, NULL);  /* queued on 0 */
	tsched(t, 0, 0, id[0]);                 /* running */
	sched_wake(&t->h, id[1], 0, 0, NULL);  /* listed on 1 */
	sched_wake(&t->h, id[2], 0, SCHED_NONE, NULL);
	tcheck(t, __func__);
	CHECK_EQ(sched_entity_remove(&t->h, id[1], 0), 0);
	CHECK_EQ(sched_entity_remove(&t->h, id[1], 0), -ENOENT);
	tcheck(t, __func__);
	CHECK_EQ(sched_remove_owner(&t->h, 7, 0), 3);
	CHECK_EQ(tpinfo(t, 0).curr, SCHED_NONE);
	CHECK_EQ(tpinfo(t, 0).nr_queued, 0);
	tcheck(t, __func__);
	CHECK(tpinfo(t, 0).idle && tpinfo(t, 1).idle);
	CHECK_EQ(sched_wake(&t->h, 99, 0, 0, NULL), -EINVAL);
	CHECK_EQ(sched_block(&t->h, id[0], 0), -ENOENT);
	CHECK_EQ(sched_set_weight(&t->h, id[0], 0, 0), -EINVAL);
	CHECK_EQ(sched_schedule(&t->h, 2, 0, NULL), -EINVAL);
	tdom_free(t);

	CHECK_EQ(sched_domain_size(0, 4), 0);
	CHECK_EQ(sched_domain_size(SCHED_MAX_PCPUS + 1, 4), 0);
	CHECK_EQ(sched_domain_init(buf, sizeof(buf), 1, 1, NULL), -EINVAL);
}

static void test_features(void)
{
	struct tdom *t = tdom_new(1, 1, NULL);
	struct sched_domain *d = t->h.dom;

	CHECK(sched_feature_enabled(d, SCHED_FEAT_PLACE_LAG));
	CHECK(!sched_feature_enabled(d, SCHED_FEAT_FAIR_SLEEPERS));
	CHECK(!sched_feature_enabled(d, SCHED_FEAT_TTWU_PENDING_EARLY_CLEAR));
	CHECK(sched_feature_enabled(d, SCHED_FEAT_DELAY_DEQUEUE));
	CHECK(sched_feature_enabled(d, SCHED_FEAT_IPI_HANDOFF));
	CHECK(!sched_feature_enabled(d, SCHED_FEAT_WAKE_VICTIM));
	CHECK(sched_feature_enabled(d, SCHED_FEAT_PV_PREEMPTED));
	CHECK_EQ(sched_feature_set(d, "NO_PLACE_LAG"), 0);
	CHECK(!sched_feature_enabled(d, SCHED_FEAT_PLACE_LAG));
	CHECK_EQ(sched_feature_set(d, "PLACE_LAG"), 0);
	CHECK(sched_feature_enabled(d, SCHED_FEAT_PLACE_LAG));
	CHECK_EQ(sched_feature_set(d, "PLACE_LAGX"), -EINVAL);
	CHECK_EQ(sched_feature_set(d, "NO_"), -EINVAL);
	CHECK_EQ(sched_feature_set(d, ""), -EINVAL);
	CHECK_EQ(sched_features_parse(d, "NO_RUN_TO_PARITY,FAIR_SLEEPERS,,"), 0);
	CHECK(!sched_feature_enabled(d, SCHED_FEAT_RUN_TO_PARITY));
	CHECK(sched_feature_enabled(d, SCHED_FEAT_FAIR_SLEEPERS));
	CHECK_EQ(sched_features_parse(d, "PREEMPT_SHORT,BOGUS"), -EINVAL);
	CHECK(!strcmp(sched_feature_name(SCHED_FEAT_TTWU_PENDING), "TTWU_PENDING"));
	CHECK(sched_feature_name(SCHED_FEAT_COUNT) == NULL);
	CHECK_EQ(sched_nice_to_weight(-20), 88761);
	CHECK_EQ(sched_nice_to_weight(0), 1024);
	CHECK_EQ(sched_nice_to_weight(19), 15);
	CHECK_EQ(sched_nice_to_weight(5), 335);
	tdom_free(t);

	struct sched_domain_params p = { .features = "NO_SUCH_FLAG" };
	size_t len = sched_domain_size(1, 1);
	void *mem = aligned_alloc(64, (len + 63) / 64 * 64);
	CHECK_EQ(sched_domain_init(mem, len, 1, 1, &p), -EINVAL);
	free(mem);
}
int main(void)
{
	test_idle_class();
	test_pending();
	test_balance();
	test_remove_and_errors();
	test_features();
	return check_report("test_wake");
}
