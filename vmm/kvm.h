/*
 * The KVM system handle (/dev/kvm): API version, the capabilities lagvisor
 * relies on, the limits that bound a VM, and VM creation.
 */
#ifndef LAGVISOR_VMM_KVM_H
#define LAGVISOR_VMM_KVM_H

#include <stdbool.h>
#include <stddef.h>

#include "vmm/config.h"

/* The device node; tests point LAGVISOR_KVM_DEVICE elsewhere. */
#define KVM_DEVICE_PATH "/dev/kvm"
#define KVM_DEVICE_ENV  "LAGVISOR_KVM_DEVICE"

struct kvm {
	int fd;                        /* /dev/kvm, -1 when closed */
	size_t vcpu_mmap_bytes;        /* size of a vCPU's kvm_run mapping */
	unsigned max_cpus;             /* KVM_CAP_MAX_VCPUS (or fallbacks) */
	bool emulation_failure_exit;   /* KVM_CAP_EXIT_ON_EMULATION_FAILURE */
};

/*
 * Open the KVM device (KVM_DEVICE_PATH, or $LAGVISOR_KVM_DEVICE), check the
 * API version and the capabilities that `irqchip` needs, read the limits.
 * Returns 0 or -errno with one line in err (a missing device says that this
 * host has no KVM and what to do).
 */
int kvm_open(struct kvm *kvm, enum irqchip_mode irqchip, char *err, size_t errlen);

void kvm_close(struct kvm *kvm);

/*
 * KVM_CREATE_VM (default machine type), then enable the optional VM
 * capabilities this host has (exit to userspace on emulation failure, so
 * that a stop shows the instruction bytes). Returns the VM fd or -errno.
 */
int kvm_create_vm(const struct kvm *kvm, char *err, size_t errlen);

/* KVM_CHECK_EXTENSION on `fd` (system or VM): >= 0, or -errno. */
int kvm_check_cap(int fd, unsigned long cap);

/*
 * ioctl(fd, req, arg) for a KVM call whose failure is an error worth a
 * line: logs "<label>: <reason>" (label from fmt, e.g. "vCPU %u:
 * KVM_SET_REGS") and returns -errno, read before logging can change it.
 * Otherwise the ioctl's result, 0 for most requests.
 */
int kvm_ioctl(int fd, unsigned long req, void *arg, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
