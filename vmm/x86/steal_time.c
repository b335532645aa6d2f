/* Steal-time area of one vCPU (see steal_time.h). */
#include "vmm/x86/steal_time.h"

#include <asm/kvm_para.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

void steal_time_init(struct steal_time *st)
{
	memset(st, 0, sizeof(*st));
	st->schedstat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

void steal_time_destroy(struct steal_time *st)
{
	if (st->schedstat_fd >= 0)
		close(st->schedstat_fd);
	st->schedstat_fd = -1;
	st->area = NULL;
}

int64_t steal_time_parse_schedstat(const char *text)
{
	char *end;
	unsigned long long v;

	/* "<ns on cpu> <ns waiting on a runqueue> <timeslices>" */
	strtoull(text, &end, 10);
	if (end == text || *end != ' ')
		return -1;
	text = end + 1;
	v = strtoull(text, &end, 10);
	if (end == text || v > INT64_MAX)
		return -1;
	return (int64_t)v;
}

static int64_t read_run_delay(const struct steal_time *st)
{
	char buf[96];
	ssize_t n;

	if (st->schedstat_fd < 0)
		return -1;
	n = pread(st->schedstat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return steal_time_parse_schedstat(buf);
}

int steal_time_msr_write(struct steal_time *st, const struct guest_mem *mem,
			 uint64_t val)
{
	uint64_t gpa = val & KVM_STEAL_VALID_BITS;
	int64_t delay;

	if (val & KVM_STEAL_RESERVED_MASK)
		return -EINVAL;
	st->msr = val;
	st->area = NULL;
	if (!(val & KVM_MSR_ENABLED))
		return 0;
	st->area = guest_mem_ptr(mem, gpa, sizeof(struct kvm_steal_time));
	if (!st->area) {
		log_once(LOG_WARN, "guest put its steal-time area at 0x%" PRIx64
			 ", outside RAM: not updated", gpa);
		return 0;
	}
	delay = read_run_delay(st);
	st->last_delay_ns = delay > 0 ? (uint64_t)delay : 0;
	st->fresh = true;
	return 0;
}

uint64_t steal_time_msr_read(const struct steal_time *st)
{
	return st->msr;
}

void steal_time_update(struct steal_time *st, uint64_t now_ns, bool preempted,
		       bool force)
{
	struct kvm_steal_time *a = st->area;
	uint32_t version;
	int64_t delay;

	if (!a || (!force && !st->fresh && preempted == st->preempted &&
		   now_ns - st->last_update_ns < STEAL_TIME_PERIOD_NS))
		return;
	st->last_update_ns = now_ns;
	st->fresh = false;
	st->preempted = preempted;
	delay = read_run_delay(st);
	if (st->queued_ns) {
		uint64_t q = st->queued_ns(st->queued_arg);

		delay = (delay > 0 ? delay : 0) + (int64_t)q;
	}
	/* The guest may have left any value in version: make it even first,
	 * then odd while writing (readers retry), then even again. Each store
	 * after the odd version is a release store, so a reader that sees a
	 * new field value also sees the odd version before it, and one that
	 * sees the final even version sees every field (release stores are
	 * plain moves on x86; unlike a fence they are also what TSan models). */
	version = __atomic_load_n(&a->version, __ATOMIC_RELAXED);
	version += version & 1;
	__atomic_store_n(&a->version, version + 1, __ATOMIC_RELAXED);
	if (delay > 0 && (uint64_t)delay > st->last_delay_ns) {
		__atomic_store_n(&a->steal, a->steal + ((uint64_t)delay - st->last_delay_ns),
				 __ATOMIC_RELEASE);
		st->last_delay_ns = (uint64_t)delay;
	}
	__atomic_store_n(&a->preempted, preempted ? KVM_VCPU_PREEMPTED : 0,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&a->version, version + 2, __ATOMIC_RELEASE);
}
