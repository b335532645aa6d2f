/*
 * A VM's scheduler setup from its options: host CPUs default to the
 * affinity and --host-cpus outside it is refused; entity parameters come
 * from --weight/--nice/--idle/--slice; a second VM joining the same
 * --sched-domain applies its --sched-feature list to the shared domain;
 * --trace writes a closed JSON file; a bad trace path is one clear line.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/sched_host.h"
#include "common/test_check.h"

int main(void)
{
	char dir[] = "/tmp/lv-host-XXXXXX", trace[128], err[512], cmd[256];
	struct sched_options o;
	struct sched_host a, b;
	struct host_cpu_list l;
	cpu_set_t set;
	int last = -1;

	if (!mkdtemp(dir))
		return 1;
	setenv("LAGVISOR_SHM_DIR", dir, 1);
	snprintf(trace, sizeof(trace), "%s/t.json", dir);
	sched_getaffinity(0, sizeof(set), &set);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			last = c;

	memset(&o, 0, sizeof(o));
	CHECK(sched_host_cpus(&o, &l, err, sizeof(err)) == 0);
	CHECK(host_cpu_list_count(&l) == (unsigned)CPU_COUNT(&set));
	o.host_cpus_set = true;
	sched_opts_parse_cpulist("1023", &o.host_cpus);
	if (!CPU_ISSET(1023, &set)) {
		CHECK(sched_host_cpus(&o, &l, err, sizeof(err)) == -EINVAL);
		CHECK_MSG(err, "CPU 1023");
	}
	memset(&o, 0, sizeof(o));

	/* private, with entity parameters and a trace */
	o.weight = 2048;
	o.slice_ns = 750000;
	o.trace_path = trace;
	CHECK(sched_host_open(&a, &o, 2, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(a.shm.fd == -1 && a.ep.weight == 2048 && a.ep.slice_ns == 750000 && !a.ep.idle_class);
	CHECK(a.shm.pcpus[a.shm.hdr->nr_pcpus - 1].host_cpu == last);
	sched_host_close(&a);
	snprintf(cmd, sizeof(cmd), "python3 -m json.tool %s > /dev/null 2>&1", trace);
	if (system("python3 -c 1 2>/dev/null") == 0)
		CHECK(system(cmd) == 0);

	/* shared: the joiner's features reach the domain */
	memset(&o, 0, sizeof(o));
	o.domain = "hosttest";
	o.idle = true;
	CHECK(sched_host_open(&a, &o, 1, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(a.shm.created && a.ep.idle_class);
	CHECK(sched_feature_enabled(a.shm.dom, SCHED_FEAT_PLACE_LAG));
	o.features = "NO_PLACE_LAG";
	CHECK(sched_host_open(&b, &o, 1, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(!b.shm.created);
	CHECK(!sched_feature_enabled(a.shm.dom, SCHED_FEAT_PLACE_LAG));
	sched_host_close(&b);
	sched_host_close(&a);

	/* a trace file that cannot be created */
	memset(&o, 0, sizeof(o));
	o.trace_path = "/nonexistent-dir/t.json";
	CHECK(sched_host_open(&a, &o, 1, SIGUSR1, err, sizeof(err)) == -ENOENT);
	CHECK_MSG(err, "/nonexistent-dir/t.json");
	sched_host_close(&a);

	unlink(trace);
	rmdir(dir);
	return check_report("test_sched_host");
}
