/*
 * lagvisor stat: argument parsing, histogram percentiles, and the output
 * of a live shared domain (a member's counters seen through the file by
 * stat_main in a child process): valid JSON with the counters, text with
 * the table, and a clear failure for a missing domain.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "vmm/sched/sched_bind.h"
#include "vmm/sched/stat.h"
#include "common/test_check.h"

static char dir[64], out[96];

/* Run stat_main(args) in a child with stdout to `out`; its exit status. */
static int run_stat(char *const args[], int n)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 1);
		dup2(fd, 2);
		_exit(stat_main(n, args));
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static bool out_read(char *buf, size_t size)
{
	int fd = open(out, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

static bool out_contains(const char *want)
{
	char buf[16384];

	return out_read(buf, sizeof(buf)) && strstr(buf, want) != NULL;
}

/* Some "run_ns" value in the output lies in [lo, hi]. */
static bool out_run_ns_within(uint64_t lo, uint64_t hi)
{
	char buf[16384];
	const char *p = buf;

	if (!out_read(buf, sizeof(buf)))
		return false;
	while ((p = strstr(p, "\"run_ns\":"))) {
		uint64_t v = strtoull(p + 9, NULL, 10);

		if (v >= lo && v <= hi)
			return true;
		p += 9;
	}
	return false;
}

static void test_args(void)
{
	struct stat_options o;
	char err[256];
	char *a1[] = { "--domain", "lab", "--json", "--interval", "0.5" };
	char *a2[] = { "--once" };
	char *b1[] = { "--interval", "0" };
	char *b2[] = { "--domain", "../x" };
	char *b3[] = { "--bogus" };
	char *b4[] = { "--domain" };
	char *h[] = { "--help" };

	CHECK(stat_parse_args(5, a1, &o, err, sizeof(err)) == 0);
	CHECK(!strcmp(o.domain, "lab") && o.json && o.interval_ns == 500000000ull && !o.once);
	CHECK(stat_parse_args(1, a2, &o, err, sizeof(err)) == 0 && o.once && o.count == 1);
	CHECK(stat_parse_args(2, b1, &o, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--interval");
	CHECK(stat_parse_args(2, b2, &o, err, sizeof(err)) == -EINVAL);
	CHECK(stat_parse_args(1, b3, &o, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "--bogus");
	CHECK(stat_parse_args(1, b4, &o, err, sizeof(err)) == -EINVAL);
	CHECK(stat_parse_args(1, h, &o, err, sizeof(err)) == 1);
}

static void test_percentile(void)
{
	uint64_t h[SCHED_SHM_LAT_BUCKETS] = { 0 };

	CHECK(stat_hist_percentile_ns(h, SCHED_SHM_LAT_BUCKETS, 50) == 0);
	h[3] = 90;      /* [4, 8) us */
	h[10] = 10;     /* [512, 1024) us */
	CHECK(stat_hist_percentile_ns(h, SCHED_SHM_LAT_BUCKETS, 50) == 8000);
	CHECK(stat_hist_percentile_ns(h, SCHED_SHM_LAT_BUCKETS, 90) == 8000);
	CHECK(stat_hist_percentile_ns(h, SCHED_SHM_LAT_BUCKETS, 99) == 1024000);
}

static void test_live(void)
{
	struct host_cpu_list cpus;
	struct sched_shm_params p = { .name = "st", .host_cpus = &cpus, .max_entities = 8 };
	char err[512], cmd[256];
	struct sched_shm s;
	char *json[] = { "--domain", "st", "--json", "--once" };
	char *text[] = { "--once" };
	char *missing[] = { "--domain", "nope", "--once" };

	sched_opts_parse_cpulist("0-1", &cpus);
	p.dir = dir;
	CHECK(sched_shm_open(&s, &p, err, sizeof(err)) == 0);
	/* counters as the binding would have left them */
	s.vcpus[2].pid = getpid();
	s.vcpus[2].vcpu_index = 1;
	s.vcpus[2].run_ns = 5000000;
	s.vcpus[2].nr_wakeups = 77;
	s.vcpus[2].lat_hist[4] = 77;
	s.vcpus[2].in_use = 1;
	s.pcpus[1].busy_ns = 123;
	/* a lone vCPU holding pCPU 0 for a second: counted while it runs */
	s.vcpus[3].pid = getpid();
	s.vcpus[3].vcpu_index = 2;
	s.vcpus[3].run_ns = 7000000000ull;
	s.vcpus[3].stint_start_ns = clock_now_ns() - 1000000000ull;
	s.vcpus[3].in_use = 1;
	s.pcpus[0].released = 3;
	setenv("LAGVISOR_SHM_DIR", dir, 1);
	CHECK(run_stat(json, 4) == 0);
	/* The running stint counts up to when stat read it: 7 s + between
	 * 1 s and 1 s + however long the run took (a loaded host). */
	{
		uint64_t late = clock_now_ns() - s.vcpus[3].stint_start_ns;

		CHECK(out_run_ns_within(8000000000ull, 7000000000ull + late));
	}
	CHECK(out_contains("\"wakeups\":77") && out_contains("\"run_ns\":5000000,"));
	CHECK(out_contains("\"holder\":\"vCPU 2/"));
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s > /dev/null", out);
	if (system("python3 -c 1 2>/dev/null") == 0)
		CHECK(system(cmd) == 0);
	/* the only domain there: found without --domain; text table */
	CHECK(run_stat(text, 1) == 0);
	CHECK(out_contains("pCPU 1") && out_contains("wakeups") && out_contains("    77"));
	CHECK(run_stat(missing, 3) == 1);
	CHECK(out_contains("lagvisor-nope"));
	sched_shm_close(&s);
	CHECK(run_stat(text, 1) == 1);
	CHECK(out_contains("no scheduling domain"));
}

/* Without --domain: the default domains (not another one beside them),
 * vCPUs under their VM's name, a one-line-per-VM view, names escaped in
 * JSON. */
static void test_default(void)
{
	struct host_cpu_list cpus;
	char def[80], err[512];
	struct sched_shm_params p = { .name = def, .host_cpus = &cpus, .max_entities = 8,
				      .vm_name = "web \"1\"" };
	struct sched_shm_params q = { .name = "other", .host_cpus = &cpus, .max_entities = 8 };
	struct sched_shm s, t;
	char *json[] = { "--json", "--once" };
	char *text[] = { "--once" };
	char *vms[] = { "--vms", "--once" };

	snprintf(def, sizeof(def), SCHED_SHM_DEFAULT_PREFIX "%u", (unsigned)geteuid());
	sched_opts_parse_cpulist("0", &cpus);
	p.dir = q.dir = dir;
	CHECK(sched_shm_open(&s, &p, err, sizeof(err)) == 0);
	CHECK(sched_shm_open(&t, &q, err, sizeof(err)) == 0);
	s.vcpus[1].pid = getpid();
	s.vcpus[1].vcpu_index = 3;
	s.vcpus[1].nr_wakeups = 41;
	s.vcpus[1].in_use = 1;
	CHECK(run_stat(json, 2) == 0);
	CHECK(out_contains("\"vms\":[{\"name\":\"web \\\"1\\\"\",\"pid\":"));
	CHECK(out_contains("\"vm\":\"web \\\"1\\\"\",\"pid\":"));
	CHECK(out_contains(def) && !out_contains("lagvisor-other"));
	CHECK(run_stat(text, 1) == 0);
	CHECK(out_contains("VM web \"1\" (pid "));
	CHECK(run_stat(vms, 2) == 0);
	CHECK(out_contains("web \"1\"") && out_contains("1 VM(s)") && out_contains("       41"));
	sched_shm_close(&t);
	sched_shm_close(&s);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/lv-stat-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	snprintf(out, sizeof(out), "%s/out", dir);
	test_args();
	test_percentile();
	test_live();
	test_default();
	unlink(out);
	rmdir(dir);
	return check_report("test_stat");
}
