/*
 * --trace output: drive a private domain through switches, wakeups, a
 * wakeup preemption, a migration and blocks with the trace writer as the
 * trace hook, then check the file is valid JSON (python3 -m json.tool) and
 * holds the expected event kinds on per-pCPU tracks, with complete events
 * that do not overlap on a track. SKIP (77) without python3.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/sched/sched_shm.h"
#include "vmm/sched/trace.h"
#include "common/test_check.h"

static void kick_nop(void *o, unsigned p)
{
	(void)o;
	(void)p;
}

static struct trace_writer tw;

static void trace_hook(void *o, const struct sched_trace_event *ev)
{
	(void)o;
	trace_writer_event(&tw, ev);
}

static const struct sched_host_ops ops = { .kick = kick_nop, .trace = trace_hook };

static const char checker[] =
	"import json, sys\n"
	"ev = json.load(open(sys.argv[1]))\n"
	"kinds = {(e['ph'], e['name']) for e in ev if e['ph'] == 'i'}\n"
	"for k in ('wakeup', 'migrate', 'block', 'preempt'):\n"
	"    assert ('i', k) in kinds, 'no %s event' % k\n"
	"xs = [e for e in ev if e['ph'] == 'X']\n"
	"assert len(xs) >= 4, 'too few X events'\n"
	"assert {e['tid'] for e in xs} == {0, 1}, 'X events not on both pCPU tracks'\n"
	"names = [e for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name']\n"
	"assert len(names) == 2, 'pCPU track names'\n"
	"for tid in (0, 1):\n"
	"    s = sorted((e['ts'], e['ts'] + e['dur']) for e in xs if e['tid'] == tid)\n"
	"    for a, b in zip(s, s[1:]):\n"
	"        assert a[1] <= b[0] + 1e-6, 'overlap on pCPU %d' % tid\n"
	"print('trace ok: %d events' % len(ev))\n";

int main(void)
{
	char path[] = "/tmp/lv-trace-XXXXXX", py[] = "/tmp/lv-trace-check-XXXXXX";
	struct host_cpu_list cpus;
	struct sched_shm_params p = { .host_cpus = &cpus, .max_entities = 8 };
	struct sched_entity_params ep = { .slice_ns = 3000000 }, fast = { .slice_ns = 100000 };
	struct sched_wake_result wr;
	struct sched_switch sw;
	struct sched_handle h;
	struct sched_shm shm;
	char err[256], cmd[256];
	unsigned a, b, c;
	uint64_t t = 1000000;
	int fd, r;

	if (system("python3 -c 1 2>/dev/null") != 0) {
		printf("SKIP: python3 not found (needed to check the JSON)\n");
		return 77;
	}
	sched_opts_parse_cpulist("0-1", &cpus);
	CHECK(sched_shm_open(&shm, &p, err, sizeof(err)) == 0);
	CHECK(sched_handle_init(&h, shm.dom, shm.dom_len, &ops, NULL) == 0);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	CHECK(trace_writer_open(&tw, path, 2, &shm, err, sizeof(err)) == 0);

	CHECK(sched_entity_add(&h, &ep, t, &a) == 0);
	CHECK(sched_entity_add(&h, &ep, t, &b) == 0);
	CHECK(sched_entity_add(&h, &fast, t, &c) == 0);
	/* a and b both on pCPU 0 (b's first wake lists it on idle pCPU 1,
	 * drained there; then migrated back to 0) */
	CHECK(sched_wake(&h, a, t, 0, &wr) == 0);
	CHECK(sched_schedule(&h, 0, t, &sw) == 0 && sw.next == a);
	t += 500000;
	CHECK(sched_wake(&h, b, t, 0, &wr) == 0);
	sched_wake_drain(&h, 1, t);
	CHECK(sched_schedule(&h, 1, t, &sw) == 0 && sw.next == b);
	t += 500000;
	CHECK(sched_block(&h, b, t) == 0);
	CHECK(sched_schedule(&h, 1, t, &sw) == 0 && sw.next == SCHED_NONE);
	CHECK(sched_wake(&h, b, t, 0, &wr) == 0);
	sched_wake_drain(&h, wr.pcpu, t);
	if (wr.pcpu != 0)
		CHECK(sched_migrate(&h, b, 0, t) == 0);
	sched_schedule(&h, 1, t, &sw);
	/* slices on pCPU 0: run a, then b, then a */
	for (int i = 0; i < 4; i++) {
		t += 3000000;
		sched_tick(&h, 0, t);
		CHECK(sched_schedule(&h, 0, t, &sw) == 0);
	}
	/* c with a short slice wakes onto busy pCPU 0 and preempts (PREEMPT_SHORT) */
	CHECK(sched_wake(&h, c, t, 0, &wr) == 0);
	t += 1000;
	sched_schedule(&h, 0, t, &sw);
	t += 100000;
	sched_block(&h, sw.next, t);
	sched_schedule(&h, 0, t, &sw);
	t += 1000000;
	r = trace_writer_close(&tw, t);
	CHECK(r == 0);
	sched_shm_close(&shm);

	fd = mkstemp(py);
	CHECK(fd >= 0 && write(fd, checker, sizeof(checker) - 1) == (ssize_t)sizeof(checker) - 1);
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s > /dev/null", path);
	CHECK(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "python3 %s %s", py, path);
	CHECK(system(cmd) == 0);
	if (check_failures)
		fprintf(stderr, "trace kept in %s\n", path);
	else
		unlink(path);
	unlink(py);
	return check_report("test_trace");
}
