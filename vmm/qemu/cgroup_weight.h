/*
 * libvirt's <cputune><shares> as a lagvisor weight. libvirt writes the
 * value into the domain's cgroup before the emulator runs: cpu.weight
 * (cgroup v2) or cpu.shares (v1) of machine/qemu-ID-NAME.libvirt-qemu,
 * whose child "emulator" the process starts in. Kernel semantics are kept:
 * cpu.weight 100 and cpu.shares 1024 are the nice-0 weight, lagvisor's
 * 1024.
 */
#ifndef LAGVISOR_VMM_QEMU_CGROUP_WEIGHT_H
#define LAGVISOR_VMM_QEMU_CGROUP_WEIGHT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * From the text of /proc/self/cgroup and the cgroup mount root (normally
 * /sys/fs/cgroup): the weight of the process's cgroup, or of its parent
 * when the process is in libvirt's "emulator" child. 0 with *weight set
 * (1024 when the cgroup has the default), -ENOENT when no CPU controller
 * file is found, -EINVAL for unreadable contents.
 */
int cgroup_cpu_weight(const char *proc_cgroup, const char *root, uint32_t *weight);

/* The file behind cgroup_cpu_weight, for reading it again later (libvirt
 * changes it for `virsh schedinfo --set cpu_shares=N --live`). */
struct cgroup_weight_file {
	char path[PATH_MAX];
	bool v2;                       /* cpu.weight (1..10000), else cpu.shares */
};

/* 0, or -ENOENT when the process's cgroup has no CPU weight file. */
int cgroup_weight_find(const char *proc_cgroup, const char *root,
		       struct cgroup_weight_file *out);

/* The file's text as a lagvisor weight. 0 or -EINVAL. */
int cgroup_weight_parse(const char *text, bool v2, uint32_t *weight);

#endif
