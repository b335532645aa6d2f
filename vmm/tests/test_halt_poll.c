/* Halt polling: the adaptive window (grow, hold, shrink, off), the spin's
 * three ends, and --halt-poll through cli_parse. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "common/clock.h"
#include "vmm/cli.h"
#include "vmm/halt_poll.h"
#include "common/test_check.h"

#define US 1000ull

static void test_window(void)
{
	struct halt_poll h;
	uint64_t w = HALT_POLL_GROW_START_NS;

	halt_poll_init(&h, HALT_POLL_DEFAULT_MAX_NS);
	CHECK_EQ(h.window_ns, 0);
	/* Short halts the window missed: 10, 20, 40, 80, 160, then capped. */
	for (int i = 0; i < 5; i++) {
		halt_poll_update(&h, 190 * US, false);
		CHECK_EQ(h.window_ns, w);
		w *= 2;
	}
	halt_poll_update(&h, 190 * US, false);
	CHECK_EQ(h.window_ns, HALT_POLL_DEFAULT_MAX_NS);
	/* Covered by the window: unchanged. */
	halt_poll_update(&h, 30 * US, true);
	CHECK_EQ(h.window_ns, HALT_POLL_DEFAULT_MAX_NS);
	CHECK_EQ(h.nr_ok, 1);
	CHECK_EQ(h.nr_missed, 6);
	/* Long sleeps halve it, and below the start value it is off. */
	halt_poll_update(&h, 5000 * US, false);
	CHECK_EQ(h.window_ns, HALT_POLL_DEFAULT_MAX_NS / 2);
	for (int i = 0; i < 3; i++)
		halt_poll_update(&h, 5000 * US, false);
	CHECK_EQ(h.window_ns, 12500);
	halt_poll_update(&h, 5000 * US, false);
	CHECK_EQ(h.window_ns, 0);
	/* An idle vCPU (only long halts) never starts polling. */
	for (int i = 0; i < 100; i++)
		halt_poll_update(&h, 10000 * US, false);
	CHECK_EQ(h.window_ns, 0);
	/* Off: nothing grows it. */
	halt_poll_init(&h, 0);
	halt_poll_update(&h, 1 * US, false);
	CHECK_EQ(h.window_ns, 0);
	/* A small maximum caps the first step too. */
	halt_poll_init(&h, 5 * US);
	halt_poll_update(&h, 2 * US, false);
	CHECK_EQ(h.window_ns, 5 * US);
}

static uint32_t word;
static int stop_calls;

static bool stop_after_3(void *arg)
{
	(void)arg;
	return ++stop_calls >= 3;
}

static void *bump(void *arg)
{
	struct timespec ts = { 0, 2000000 };

	(void)arg;
	nanosleep(&ts, NULL);
	__atomic_add_fetch(&word, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void test_spin(void)
{
	pthread_t t;
	uint64_t t0;

	/* The word already moved. */
	CHECK(halt_poll_spin(&word, word + 1, clock_now_ns() + 1000000000ull, NULL, NULL));
	/* The end passes (1 ms) with nothing happening. */
	t0 = clock_now_ns();
	CHECK(!halt_poll_spin(&word, word, t0 + 1000000, NULL, NULL));
	CHECK(clock_now_ns() - t0 >= 1000000);
	/* stop says so. */
	CHECK(!halt_poll_spin(&word, word, clock_now_ns() + 1000000000ull, stop_after_3, NULL));
	CHECK_EQ(stop_calls, 3);
	/* Another thread's notify, 2 ms in, inside a 10 s window. */
	CHECK(pthread_create(&t, NULL, bump, NULL) == 0);
	CHECK(halt_poll_spin(&word, word, clock_now_ns() + 10000000000ull, NULL, NULL));
	pthread_join(t, NULL);
}

static void test_cli(void)
{
	char *argv[] = { "lagvisor", "run", "--kernel", "k", "--halt-poll", NULL, NULL };
	struct vm_config cfg;
	char err[256];

	CHECK(cli_parse(4, argv, &cfg, err, sizeof(err)) == CLI_RUN);
	CHECK_EQ(cfg.halt_poll_ns, HALT_POLL_DEFAULT_MAX_NS);
	argv[5] = "50us";
	CHECK(cli_parse(6, argv, &cfg, err, sizeof(err)) == CLI_RUN);
	CHECK_EQ(cfg.halt_poll_ns, 50 * US);
	argv[5] = "0";
	CHECK(cli_parse(6, argv, &cfg, err, sizeof(err)) == CLI_RUN);
	CHECK_EQ(cfg.halt_poll_ns, 0);
	argv[5] = "11ms";
	CHECK(cli_parse(6, argv, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--halt-poll '11ms'");
	argv[5] = "soon";
	CHECK(cli_parse(6, argv, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "not a duration");
}

int main(void)
{
	test_window();
	test_spin();
	test_cli();
	return check_report("test_halt_poll");
}
