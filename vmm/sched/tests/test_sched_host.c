/*
 * A VM's scheduler setup from its options: host CPUs default to the
 * affinity and --host-cpus outside it is refused; entity parameters come
 * from --weight/--nice/--idle/--slice; a second VM joining the same
 * --sched-domain applies its --sched-feature list to the shared domain;
 * --trace writes a closed JSON file; a bad trace path is one clear line.
 * Without --sched-domain two VMs share the user's default domain, which
 * spans every online host CPU, their --host-cpus narrowing only their
 * vCPUs' allowed pCPUs; a default-domain file of another lagvisor version
 * is replaced when none of its members lives, refused (one line) when one
 * does.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "vmm/sched/sched_host.h"
#include "common/test_check.h"

/* Make the default domain's file look like another version's, with
 * member slot 0 held by pid (0: nobody). */
static void age_default_domain(const char *dir, pid_t pid)
{
	char path[256];
	struct sched_shm_header h;
	struct sched_shm_member m;
	int fd;

	snprintf(path, sizeof(path), "%s/lagvisor-" SCHED_SHM_DEFAULT_PREFIX "%u", dir,
		 (unsigned)geteuid());
	fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	h.abi = SCHED_SHM_ABI - 1;
	CHECK(pwrite(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	memset(&m, 0, sizeof(m));
	m.pid = pid;
	m.start_time = pid ? sched_shm_proc_start_time(pid) : 0;
	CHECK(pwrite(fd, &m, sizeof(m), (off_t)h.member_off) == (ssize_t)sizeof(m));
	close(fd);
}

static void test_default_domain(const char *dir, int first_cpu, unsigned nr_mine)
{
	struct sched_options o;
	struct sched_host a, b;
	char err[512], name[64];
	unsigned pa;

	memset(&o, 0, sizeof(o));
	o.vm_name = "vm-a";
	CHECK(!strncmp(sched_host_domain_name(&o, name, sizeof(name)), "default-", 8));
	CHECK(sched_host_open(&a, &o, 2, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(a.shm.fd >= 0 && a.shm.created && strstr(a.shm.path, name));
	CHECK(a.shm.hdr->nr_pcpus == (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
	CHECK(a.nr_allowed == nr_mine && a.ep.allowed == &a.allowed);
	CHECK(!strcmp(a.shm.members[a.shm.member].name, "vm-a"));
	/* the second VM, narrowed to one host CPU, joins the same domain */
	o.vm_name = "vm-b";
	o.host_cpus_set = true;
	memset(&o.host_cpus, 0, sizeof(o.host_cpus));
	o.host_cpus.bits[first_cpu / 64] |= 1ull << (first_cpu % 64);
	CHECK(sched_host_open(&b, &o, 1, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(!b.shm.created && sched_shm_nr_members(&b.shm) == 2);
	CHECK(b.nr_allowed == 1);
	pa = sched_shm_pcpu_of_host_cpu(&b.shm, first_cpu);
	CHECK(pa != SCHED_NONE && sched_cpuset_test(&b.allowed, pa));
	/* --sched-domain private stays a domain of its own */
	memset(&o, 0, sizeof(o));
	CHECK(sched_opts_apply(&o, "sched-domain", "private", err, sizeof(err)) == 0);
	CHECK(o.domain_private && !sched_host_domain_name(&o, name, sizeof(name)));
	sched_host_close(&b);
	/* another version's file, its member alive (us): refused */
	age_default_domain(dir, getpid());
	memset(&o, 0, sizeof(o));
	CHECK(sched_host_open(&b, &o, 1, SIGUSR1, err, sizeof(err)) == -EINVAL);
	CHECK_MSG(err, "another lagvisor version");
	sched_host_close(&b);
	/* ... and when its members are gone: replaced */
	age_default_domain(dir, 0);
	CHECK(sched_host_open(&b, &o, 1, SIGUSR1, err, sizeof(err)) == 0);
	CHECK(b.shm.created && b.shm.hdr->abi == SCHED_SHM_ABI);
	sched_host_close(&b);
	sched_host_close(&a);
}

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
	o.domain_private = true;
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

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			test_default_domain(dir, c, (unsigned)CPU_COUNT(&set));
			break;
		}

	/* a trace file that cannot be created */
	memset(&o, 0, sizeof(o));
	o.domain_private = true;
	o.trace_path = "/nonexistent-dir/t.json";
	CHECK(sched_host_open(&a, &o, 1, SIGUSR1, err, sizeof(err)) == -ENOENT);
	CHECK_MSG(err, "/nonexistent-dir/t.json");
	sched_host_close(&a);

	unlink(trace);
	rmdir(dir);
	return check_report("test_sched_host");
}
