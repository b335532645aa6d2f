/* <cputune><shares> read back from a fake cgroup tree (v2 and v1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/qemu/cgroup_weight.h"
#include "common/test_check.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char path[512], dir[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - path), path);
		mkdir(dir, 0755);
	}
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

int main(void)
{
	uint32_t w = 0;

	snprintf(root, sizeof(root), "/tmp/lagvisor-cg-XXXXXX");
	CHECK(mkdtemp(root) != NULL);
	/* v2: libvirt's domain cgroup, the process in its emulator child. */
	put("v2/machine/qemu-1-a.libvirt-qemu/cpu.weight", "200\n");
	put("v2/machine/qemu-1-a.libvirt-qemu/emulator/cpu.weight", "100\n");
	{
		char r2[128];

		snprintf(r2, sizeof(r2), "%s/v2", root);
		CHECK(cgroup_cpu_weight("0::/machine/qemu-1-a.libvirt-qemu/emulator\n", r2, &w) == 0);
		CHECK(w == 2048);
		/* A trailing slash changes nothing. */
		CHECK(cgroup_cpu_weight("0::/machine/qemu-1-a.libvirt-qemu/emulator/\n", r2, &w) == 0);
		CHECK(w == 2048);
		/* systemd: the shares are the machine scope's, above libvirt's
		 * nested group. */
		put("v2/machine.slice/machine-qemu\\x2d3\\x2dc.scope/cpu.weight", "400\n");
		put("v2/machine.slice/machine-qemu\\x2d3\\x2dc.scope/libvirt/cpu.weight", "100\n");
		CHECK(cgroup_cpu_weight("0::/machine.slice/machine-qemu\\x2d3\\x2dc.scope/libvirt/"
					"emulator\n", r2, &w) == 0);
		CHECK(w == 4096);
		put("v2/user.slice/cpu.weight", "100");
		CHECK(cgroup_cpu_weight("0::/user.slice\n", r2, &w) == 0 && w == 1024);
		put("v2/bad/cpu.weight", "lots");
		CHECK(cgroup_cpu_weight("0::/bad\n", r2, &w) == -EINVAL);
		put("v2/zero/cpu.weight", "0");
		CHECK(cgroup_cpu_weight("0::/zero\n", r2, &w) == -EINVAL);
		CHECK(cgroup_cpu_weight("0::/nowhere\n", r2, &w) == -ENOENT);
		CHECK(cgroup_cpu_weight("", r2, &w) == -ENOENT);
		CHECK(cgroup_cpu_weight("garbage without colons", r2, &w) == -ENOENT);
	}
	/* v1: cpu,cpuacct hierarchy, other controllers listed first. */
	put("v1/cpu,cpuacct/machine/qemu-2-b.libvirt-qemu/cpu.shares", "512\n");
	{
		char r1[128];

		snprintf(r1, sizeof(r1), "%s/v1", root);
		CHECK(cgroup_cpu_weight("12:memory:/machine/x\n4:cpu,cpuacct:/machine/"
					"qemu-2-b.libvirt-qemu/emulator\n0::/\n", r1, &w) == 0);
		CHECK(w == 512);
		/* "cpuset" is not "cpu". */
		CHECK(cgroup_cpu_weight("3:cpuset:/machine/qemu-2-b.libvirt-qemu\n", r1, &w) ==
		      -ENOENT);
	}
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		CHECK(system(cmd) == 0);
	}
	return check_report("test_cgroup_weight");
}
