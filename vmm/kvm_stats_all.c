/* KVM binary statistics, all of them (kvm_stats_all.h). Layout:
 * Documentation/virt/kvm/api.rst, 4.133. */
#include "vmm/kvm_stats_all.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "vmm/vcpu.h"
#include "vmm/vm.h"

#define KVM_STATS_MAX_DESCS 4096
#define KVM_STATS_MAX_DATA  (1u << 20)   /* bytes of values */

static int read_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int kvm_stats_each(int fd, void (*fn)(void *arg, const struct kvm_stat *s), void *arg)
{
	struct kvm_stats_header h;
	char *descs = NULL, name[256];
	uint64_t *data = NULL;
	size_t dsz, data_len = 0;
	int r = read_all(fd, &h, sizeof(h), 0);

	if (r)
		return r;
	if (h.num_desc > KVM_STATS_MAX_DESCS || h.name_size == 0 || h.name_size > 4096)
		return -EIO;
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(dsz * h.num_desc + 1);
	if (!descs)
		return -ENOMEM;
	r = read_all(fd, descs, dsz * h.num_desc, h.desc_offset);
	/* The values block ends where the furthest statistic does. */
	for (uint32_t i = 0; !r && i < h.num_desc; i++) {
		const struct kvm_stats_desc *d = (const void *)(descs + i * dsz);
		size_t end = (size_t)d->offset + (size_t)d->size * sizeof(uint64_t);

		if (end > KVM_STATS_MAX_DATA || d->offset % sizeof(uint64_t))
			r = -EIO;
		else if (end > data_len)
			data_len = end;
	}
	if (!r && data_len && !(data = malloc(data_len)))
		r = -ENOMEM;
	if (!r && data_len)
		r = read_all(fd, data, data_len, h.data_offset);
	for (uint32_t i = 0; !r && i < h.num_desc; i++) {
		const struct kvm_stats_desc *d = (const void *)(descs + i * dsz);
		struct kvm_stat s = {
			.name = name,
			.flags = d->flags,
			.exponent = d->exponent,
			.bucket_size = d->bucket_size,
			.values = data + d->offset / sizeof(uint64_t),
			.nr_values = d->size,
		};
		size_t n = strnlen(d->name, h.name_size);

		if (n >= sizeof(name) || !d->size)
			continue;
		memcpy(name, d->name, n);
		name[n] = '\0';
		fn(arg, &s);
	}
	free(data);
	free(descs);
	return r;
}

int vm_kvm_stats(struct vm *vm, int vcpu, void (*fn)(void *arg, const struct kvm_stat *s),
		 void *arg)
{
	int fd, r;

	if (vcpu >= (int)vm->nr_vcpus)
		return -ENOENT;
	/* Under the lock `stopping` cannot flip, so no vCPU thread has
	 * started to leave and close its stats file. */
	mutex_lock(&vm->lock);
	if (vm->stopping) {
		r = -ESRCH;
	} else if (vcpu >= 0) {
		fd = __atomic_load_n(&vm->vcpus[vcpu].kstats.fd, __ATOMIC_ACQUIRE);
		r = fd < 0 ? -ENOENT : kvm_stats_each(fd, fn, arg);
	} else {
		fd = ioctl(vm->fd, KVM_GET_STATS_FD, NULL);
		r = fd < 0 ? -errno : kvm_stats_each(fd, fn, arg);
		if (fd >= 0)
			close(fd);
	}
	mutex_unlock(&vm->lock);
	return r;
}
