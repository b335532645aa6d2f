/* KVM binary statistics (kvm_stats.h). Layout: Documentation/virt/kvm/api.rst, 4.133. */
#include "vmm/kvm_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/kvm.h>


static const char *const names[KVM_STAT_NR] = {
	[KVM_STAT_EXITS] = "exits",
	[KVM_STAT_INSN_EMULATION] = "insn_emulation",
	[KVM_STAT_HALT_EXITS] = "halt_exits",
	[KVM_STAT_IRQ_INJECTIONS] = "irq_injections",
};

const char *kvm_stats_name(enum kvm_stat_id id)
{
	return id < KVM_STAT_NR ? names[id] : "?";
}

/* Match one descriptor (its name follows the fixed part) to our ids. */
static void match_desc(struct kvm_stats *s, const struct kvm_stats_desc *d,
		       const char *name, size_t name_max, uint64_t data_off)
{
	for (unsigned i = 0; i < KVM_STAT_NR; i++) {
		/* A counter is one u64: anything wider is a histogram. */
		if (d->size == 1 && strnlen(name, name_max) < name_max &&
		    !strcmp(name, names[i]))
			s->off[i] = (int64_t)(data_off + d->offset);
	}
}

int kvm_stats_open(struct kvm_stats *s, int vcpu_fd)
{
	struct kvm_stats_header h;
	size_t dsz;
	char *descs;
	int r = 0;

	s->fd = -1;
	for (unsigned i = 0; i < KVM_STAT_NR; i++)
		s->off[i] = -1;
	int fd = ioctl(vcpu_fd, KVM_GET_STATS_FD, NULL);

	if (fd < 0)
		return -errno;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.num_desc > 4096 ||
	    h.name_size == 0 || h.name_size > 4096) {
		close(fd);
		return -EIO;
	}
	dsz = sizeof(struct kvm_stats_desc) + h.name_size;
	descs = malloc(dsz * h.num_desc);
	if (!descs) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, descs, dsz * h.num_desc, h.desc_offset) != (ssize_t)(dsz * h.num_desc)) {
		r = -EIO;
	} else {
		for (uint32_t i = 0; i < h.num_desc; i++) {
			const struct kvm_stats_desc *d = (const void *)(descs + i * dsz);

			match_desc(s, d, d->name, h.name_size, h.data_offset);
		}
	}
	free(descs);
	if (r) {
		close(fd);
		return r;
	}
	s->fd = fd;
	return 0;
}

bool kvm_stats_read(const struct kvm_stats *s, enum kvm_stat_id id, uint64_t *val)
{
	if (s->fd < 0 || id >= KVM_STAT_NR || s->off[id] < 0)
		return false;
	return pread(s->fd, val, sizeof(*val), s->off[id]) == (ssize_t)sizeof(*val);
}

void kvm_stats_close(struct kvm_stats *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
