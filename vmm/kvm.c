#include "vmm/kvm.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/compiler.h"
#include "common/log.h"

int kvm_ioctl(int fd, unsigned long req, void *arg, const char *fmt, ...)
{
	char label[96];
	va_list ap;
	int r = ioctl(fd, req, arg), e;

	if (r >= 0)
		return r;
	e = errno;
	va_start(ap, fmt);
	vsnprintf(label, sizeof(label), fmt, ap);
	va_end(ap);
	log_error("%s: %s", label, strerror(e));
	return -e;
}

int kvm_check_cap(int fd, unsigned long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);

	return r < 0 ? -errno : r;
}

static const char *kvm_path(void)
{
	const char *p = getenv(KVM_DEVICE_ENV);

	return p && *p ? p : KVM_DEVICE_PATH;
}

static int kvm_open_device(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	int e = errno;

	if (fd >= 0)
		return fd;
	if (e == ENOENT || e == ENODEV || e == ENXIO)
		snprintf(err, errlen, "cannot open %s: %s: this host has no KVM "
			 "(load kvm_intel or kvm_amd, enable virtualization in the "
			 "firmware, or nested virtualization when this host is a VM)",
			 path, strerror(e));
	else if (e == EACCES || e == EPERM)
		snprintf(err, errlen, "cannot open %s: %s (run as root or join "
			 "the group that owns it, usually 'kvm')", path, strerror(e));
	else
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
	return -e;
}

/*
 * The API doc's order of fallbacks: KVM_CAP_MAX_VCPUS is the hard limit;
 * without it KVM_CAP_NR_VCPUS (the recommended count) is the limit; without
 * both, 4.
 */
static unsigned kvm_read_max_cpus(int fd)
{
	int r = kvm_check_cap(fd, KVM_CAP_MAX_VCPUS);

	if (r <= 0)
		r = kvm_check_cap(fd, KVM_CAP_NR_VCPUS);
	return r > 0 ? (unsigned)r : 4;
}

int kvm_open(struct kvm *kvm, enum irqchip_mode irqchip, char *err, size_t errlen)
{
	static const struct { unsigned long cap; const char *name; bool kernel_irqchip_only; } needed[] = {
		{ KVM_CAP_USER_MEMORY, "KVM_CAP_USER_MEMORY", false },
		{ KVM_CAP_IMMEDIATE_EXIT, "KVM_CAP_IMMEDIATE_EXIT", false },
		{ KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP", true },
	};
	const char *path = kvm_path();
	int fd, r;

	memset(kvm, 0, sizeof(*kvm));
	kvm->fd = -1;
	fd = kvm_open_device(path, err, errlen);
	if (fd < 0)
		return fd;
	r = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (r != KVM_API_VERSION) {
		if (r < 0)
			snprintf(err, errlen, "%s: KVM_GET_API_VERSION: %s", path, strerror(errno));
		else
			snprintf(err, errlen, "%s: KVM API version %d, lagvisor needs %d",
				 path, r, KVM_API_VERSION);
		r = r < 0 ? -errno : -ENOTSUP;
		goto fail;
	}
	for (size_t i = 0; i < ARRAY_SIZE(needed); i++) {
		if (needed[i].kernel_irqchip_only && irqchip != IRQCHIP_KERNEL)
			continue;
		if (kvm_check_cap(fd, needed[i].cap) <= 0) {
			snprintf(err, errlen, "%s: this host's KVM lacks %s", path,
				 needed[i].name);
			r = -ENOTSUP;
			goto fail;
		}
	}
	r = ioctl(fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (r < (int)sizeof(struct kvm_run)) {
		snprintf(err, errlen, "%s: KVM_GET_VCPU_MMAP_SIZE: %s", path,
			 r < 0 ? strerror(errno) : "smaller than struct kvm_run");
		r = r < 0 ? -errno : -ENOTSUP;
		goto fail;
	}
	kvm->vcpu_mmap_bytes = (size_t)r;
	kvm->max_cpus = kvm_read_max_cpus(fd);
	kvm->emulation_failure_exit =
		kvm_check_cap(fd, KVM_CAP_EXIT_ON_EMULATION_FAILURE) > 0;
	kvm->fd = fd;
	return 0;
fail:
	close(fd);
	return r;
}

void kvm_close(struct kvm *kvm)
{
	if (kvm->fd >= 0)
		close(kvm->fd);
	kvm->fd = -1;
}

int kvm_create_vm(const struct kvm *kvm, char *err, size_t errlen)
{
	int fd;

	/* An interrupted KVM_CREATE_VM (EINTR) created nothing: retry. */
	do {
		fd = ioctl(kvm->fd, KVM_CREATE_VM, 0);
	} while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "KVM_CREATE_VM: %s", strerror(e));
		return -e;
	}
	if (kvm->emulation_failure_exit) {
		struct kvm_enable_cap cap = {
			.cap = KVM_CAP_EXIT_ON_EMULATION_FAILURE,
			.args = { 1 },
		};

		/* Optional: without it KVM still reports most emulation
		 * failures, just not every one with its bytes. */
		if (ioctl(fd, KVM_ENABLE_CAP, &cap))
			log_warn("KVM_ENABLE_CAP(EXIT_ON_EMULATION_FAILURE): %s",
				 strerror(errno));
	}
	return fd;
}
