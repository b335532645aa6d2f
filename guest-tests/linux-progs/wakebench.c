/*
 * wakebench: schbench's wakeup-latency measurement for the Linux guest
 * image, as a small static program (no libc beyond glibc's static one).
 *
 * -m message threads each own -t worker threads. Every -s microseconds (a
 * fixed grid, not "sleep after the work") a message thread stamps
 * CLOCK_MONOTONIC into each idle worker's slot, publishes a new request
 * number in the worker's futex word and FUTEX_WAKEs it. The worker, asleep
 * in FUTEX_WAIT on that word, reads the clock when it runs again, records
 * (now - stamp) as its wakeup latency, does -c microseconds of calibrated
 * integer work and goes back to sleep. A worker still busy when its round
 * comes is skipped ("busy"), so requests never queue and none can be lost.
 * The histogram is guest-tests/lib/lathist.h, shared with the freestanding
 * wakebench guest, so both print comparable numbers.
 *
 * Options (schbench's letters where schbench has them):
 *   -m N   message threads (1)
 *   -t N   workers per message thread (number of online CPUs)
 *   -r N   runtime, seconds, recorded (5)
 *   -w N   warm-up, seconds, run before -r and not recorded (0)
 *   -s N   round period of a message thread, microseconds (1000)
 *   -c N   work per wakeup, microseconds (50)
 * With no arguments at all (as the guest's /init runs it), the options
 * are taken from the kernel command line word wakebench.args=-m,1,-t,2.
 *
 * Output:
 *   Wakeup Latencies percentiles (usec) runtime 5 (s) (9998 total samples)
 *   	  50.0th: 14
 *   	  75.0th: 17
 *   	  90.0th: 21
 *   	* 99.0th: 40
 *   	  99.9th: 95
 *   	  min=9, max=130
 *   average rps: 1999.60
 *   wakebench: samples=N p50_ns= p75_ns= p90_ns= p99_ns= p999_ns= min_ns=
 *   max_ns= rps_x100= busy= workers=
 * Exit 0; 1 when nothing was recorded or a wakeup went missing; 2 on bad
 * options.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lathist.h"

#define STOP_BIT   0x80000000u   /* in a worker's futex word: leave */
#define SEQ_MASK   (STOP_BIT - 1)
#define MAX_THREADS 1024
#define DRAIN_S    5
#define CAL_ITERS  (1u << 16)
#define CAL_RUNS   5
#define ARGS_MAX   64

struct worker {
	_Atomic uint32_t seq;   /* futex word: requests sent (| STOP_BIT) */
	_Atomic uint32_t done;  /* requests finished; idle when == seq */
	uint64_t stamp_ns;      /* send time of request `seq` */
	/* message thread's */
	uint32_t sent, sent_rec, busy;
	/* worker's */
	uint32_t woken;
	uint64_t samples, min_ns, max_ns;
	uint64_t hist[LATHIST_NR];
	pthread_t thread;
} __attribute__((aligned(64)));

struct msg {
	struct worker *w;       /* this thread's -t workers */
	pthread_t thread;
};

struct opts {
	unsigned m, t, r, w, s_us, c_us;
};

static struct opts o = { .m = 1, .r = 5, .w = 0, .s_us = 1000, .c_us = 50 };
static uint64_t rec_start_ns, work_iters;
static _Atomic uint64_t end_ns;   /* set to 0 to stop early */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void futex_wait(_Atomic uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The same integer work as the freestanding guest's (tests/wakebench.c). */
static uint64_t spin_work(uint64_t iters)
{
	uint64_t x = 88172645463325252ull;

	for (uint64_t i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

/* Fastest of a few runs: preemption only ever makes a run look slower. */
static uint64_t calibrate_work(unsigned work_us)
{
	uint64_t best = UINT64_MAX;

	for (unsigned r = 0; r < CAL_RUNS; r++) {
		uint64_t t0 = now_ns();

		spin_work(CAL_ITERS);
		t0 = now_ns() - t0;
		if (t0 < best)
			best = t0;
	}
	if (!best)
		best = 1;
	return (uint64_t)work_us * 1000 * CAL_ITERS / best;
}

static void record(struct worker *w, uint64_t ns)
{
	w->hist[lathist_index(ns)]++;
	if (!w->samples || ns < w->min_ns)
		w->min_ns = ns;
	if (ns > w->max_ns)
		w->max_ns = ns;
	w->samples++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t done = 0;

	for (;;) {
		uint32_t seq = atomic_load_explicit(&w->seq, memory_order_acquire);
		uint64_t woke, stamp;

		while ((seq & SEQ_MASK) == done && !(seq & STOP_BIT)) {
			futex_wait(&w->seq, seq);
			seq = atomic_load_explicit(&w->seq, memory_order_acquire);
		}
		if ((seq & SEQ_MASK) == done)
			return NULL;   /* stop, nothing pending */
		woke = now_ns();
		stamp = w->stamp_ns;   /* written before seq was released */
		w->woken++;
		if (stamp >= rec_start_ns)
			record(w, woke - stamp);
		spin_work(work_iters);
		done = seq & SEQ_MASK;
		atomic_store_explicit(&w->done, done, memory_order_release);
	}
}

static void *msg_main(void *arg)
{
	struct msg *m = arg;
	uint64_t period = (uint64_t)o.s_us * 1000, next = now_ns();
	struct timespec ts;

	while (now_ns() < end_ns) {
		for (unsigned i = 0; i < o.t; i++) {
			struct worker *w = &m->w[i];

			if (atomic_load_explicit(&w->done, memory_order_acquire) != w->sent) {
				w->busy++;
				continue;
			}
			w->stamp_ns = now_ns();
			if (w->stamp_ns >= rec_start_ns)
				w->sent_rec++;
			w->sent++;
			atomic_store_explicit(&w->seq, w->sent, memory_order_release);
			futex_wake(&w->seq);
		}
		/* A late round runs at once; rounds missed entirely are dropped. */
		next += period;
		if (now_ns() > next + period)
			next = now_ns();
		if (next > end_ns)
			next = end_ns;
		ts.tv_sec = (time_t)(next / 1000000000ull);
		ts.tv_nsec = (long)(next % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

static int parse_uint(const char *opt, const char *s, unsigned min, unsigned max,
		      unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || *s == '-' || v < min || v > max) {
		fprintf(stderr, "wakebench: %s: '%s' is not a number in %u..%u\n",
			opt, s, min, max);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: wakebench [-m msg_threads] [-t workers_per_msg] [-r runtime_s]\n"
		   "                 [-w warmup_s] [-s period_us] [-c work_us]\n");
}

static int parse_opts(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "m:t:r:w:s:c:h")) != -1) {
		char name[3] = { '-', (char)c, 0 };
		int rc = 0;

		switch (c) {
		case 'm': rc = parse_uint(name, optarg, 1, MAX_THREADS, &o.m); break;
		case 't': rc = parse_uint(name, optarg, 1, MAX_THREADS, &o.t); break;
		case 'r': rc = parse_uint(name, optarg, 1, 86400, &o.r); break;
		case 'w': rc = parse_uint(name, optarg, 0, 86400, &o.w); break;
		case 's': rc = parse_uint(name, optarg, 1, 10000000, &o.s_us); break;
		case 'c': rc = parse_uint(name, optarg, 0, 10000000, &o.c_us); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
		if (rc)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "wakebench: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (o.m * o.t > MAX_THREADS) {
		fprintf(stderr, "wakebench: -m %u x -t %u workers: at most %u\n",
			o.m, o.t, MAX_THREADS);
		return -1;
	}
	return 0;
}

/*
 * The guest's /init runs programs without arguments: take them from the
 * kernel command line word wakebench.args=A,B,... (commas for spaces).
 */
static int args_from_cmdline(char *buf, size_t size, char **argv)
{
	FILE *f = fopen("/proc/cmdline", "r");
	int argc = 1;
	char *p, *tok;

	argv[0] = "wakebench";
	if (!f)
		return argc;
	if (!fgets(buf, (int)size, f))
		buf[0] = 0;
	fclose(f);
	for (p = strtok(buf, " \n"); p; p = strtok(NULL, " \n"))
		if (!strncmp(p, "wakebench.args=", 15))
			break;
	if (!p)
		return argc;
	for (tok = strtok(p + 15, ","); tok && argc < ARGS_MAX - 1; tok = strtok(NULL, ","))
		argv[argc++] = tok;
	argv[argc] = NULL;
	return argc;
}

static void print_results(struct worker *ws, unsigned nw)
{
	static const unsigned pct[] = { 500, 750, 900, 990, 999 };
	static uint64_t merged[LATHIST_NR];
	uint64_t total = 0, min = UINT64_MAX, max = 0, done = 0, busy = 0, p[5];
	uint64_t dur_us = (end_ns - rec_start_ns) / 1000, rps_x100;

	for (unsigned i = 0; i < nw; i++) {
		for (unsigned b = 0; b < LATHIST_NR; b++)
			merged[b] += ws[i].hist[b];
		if (ws[i].samples && ws[i].min_ns < min)
			min = ws[i].min_ns;
		if (ws[i].max_ns > max)
			max = ws[i].max_ns;
		total += ws[i].samples;
		done += ws[i].sent_rec;
		busy += ws[i].busy;
	}
	if (!total)
		min = 0;
	for (unsigned k = 0; k < 5; k++)
		p[k] = lathist_percentile(merged, total, pct[k], min, max);
	rps_x100 = dur_us ? done * 100000000ull / dur_us : 0;

	printf("Wakeup Latencies percentiles (usec) runtime %u (s) (%llu total samples)\n",
	       o.r, (unsigned long long)total);
	for (unsigned k = 0; k < 5; k++)
		printf("\t%s%2u.%uth: %llu\n", pct[k] == 990 ? "* " : "  ", pct[k] / 10,
		       pct[k] % 10, (unsigned long long)(p[k] + 500) / 1000);
	printf("\t  min=%llu, max=%llu\n", (unsigned long long)(min + 500) / 1000,
	       (unsigned long long)(max + 500) / 1000);
	printf("average rps: %llu.%02llu\n", (unsigned long long)rps_x100 / 100,
	       (unsigned long long)rps_x100 % 100);
	printf("wakebench: samples=%llu p50_ns=%llu p75_ns=%llu p90_ns=%llu p99_ns=%llu "
	       "p999_ns=%llu min_ns=%llu max_ns=%llu rps_x100=%llu busy=%llu workers=%u\n",
	       (unsigned long long)total, (unsigned long long)p[0],
	       (unsigned long long)p[1], (unsigned long long)p[2],
	       (unsigned long long)p[3], (unsigned long long)p[4],
	       (unsigned long long)min, (unsigned long long)max,
	       (unsigned long long)rps_x100, (unsigned long long)busy, nw);
	fflush(stdout);
}

/* Every worker idle (finished its last request), within DRAIN_S. */
static bool drain(struct worker *ws, unsigned nw)
{
	uint64_t deadline = now_ns() + DRAIN_S * 1000000000ull;

	for (unsigned i = 0; i < nw; i++)
		while (atomic_load_explicit(&ws[i].done, memory_order_acquire) != ws[i].sent) {
			if (now_ns() > deadline)
				return false;
			usleep(1000);
		}
	return true;
}

int main(int argc, char **argv)
{
	static char cmdline[4096];
	char *cargv[ARGS_MAX];
	struct worker *ws;
	struct msg *ms;
	unsigned nw, started_w = 0, started_m = 0, missed = 0;
	uint64_t start, samples = 0, sent_rec = 0;
	bool drained;
	int rc = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	o.t = ncpu > 0 ? (unsigned)ncpu : 1;
	if (argc == 1) {
		argc = args_from_cmdline(cmdline, sizeof(cmdline), cargv);
		argv = cargv;
	}
	if (parse_opts(argc, argv))
		return 2;
	nw = o.m * o.t;
	ws = aligned_alloc(64, sizeof(*ws) * nw);
	ms = calloc(o.m, sizeof(*ms));
	if (!ws || !ms) {
		fprintf(stderr, "wakebench: out of memory for %u workers\n", nw);
		free(ws);
		free(ms);
		return 1;
	}
	memset(ws, 0, sizeof(*ws) * nw);
	work_iters = calibrate_work(o.c_us);
	printf("wakebench: %u message threads, %u workers each, %u s (+%u s warm-up), "
	       "round every %u us, %u us work (%llu loop iterations)\n", o.m, o.t, o.r,
	       o.w, o.s_us, o.c_us, (unsigned long long)work_iters);
	fflush(stdout);

	start = now_ns();
	rec_start_ns = start + (uint64_t)o.w * 1000000000ull;
	end_ns = rec_start_ns + (uint64_t)o.r * 1000000000ull;
	for (; started_w < nw; started_w++)
		if ((rc = pthread_create(&ws[started_w].thread, NULL, worker_main, &ws[started_w]))) {
			fprintf(stderr, "wakebench: cannot start worker thread %u: %s\n",
				started_w, strerror(rc));
			end_ns = 0;
			goto stop;
		}
	for (; started_m < o.m; started_m++) {
		ms[started_m].w = &ws[started_m * o.t];
		if ((rc = pthread_create(&ms[started_m].thread, NULL, msg_main, &ms[started_m]))) {
			fprintf(stderr, "wakebench: cannot start message thread %u: %s\n",
				started_m, strerror(rc));
			end_ns = 0;
			break;
		}
	}
	for (unsigned i = 0; i < started_m; i++)
		pthread_join(ms[i].thread, NULL);
stop:
	drained = drain(ws, started_w);
	for (unsigned i = 0; i < started_w; i++) {
		atomic_fetch_or(&ws[i].seq, STOP_BIT);
		futex_wake(&ws[i].seq);
	}
	for (unsigned i = 0; i < started_w; i++)
		pthread_join(ws[i].thread, NULL);
	if (rc) {
		free(ws);
		free(ms);
		return 1;
	}

	print_results(ws, nw);
	for (unsigned i = 0; i < nw; i++) {
		samples += ws[i].samples;
		sent_rec += ws[i].sent_rec;
		if (ws[i].woken != ws[i].sent)
			missed++;
	}
	rc = 0;
	if (!drained || missed) {
		fprintf(stderr, "wakebench: %u workers saw fewer wakeups than were sent%s\n",
			missed, drained ? "" : " (some never finished their last request)");
		rc = 1;
	} else if (!samples || samples != sent_rec) {
		fprintf(stderr, "wakebench: %llu samples recorded for %llu requests\n",
			(unsigned long long)samples, (unsigned long long)sent_rec);
		rc = 1;
	}
	free(ws);
	free(ms);
	return rc;
}
