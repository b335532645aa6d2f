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

#endif
