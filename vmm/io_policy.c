#include "vmm/io_policy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"

int io_policy_init(struct io_policy *p, bool strict)
{
	memset(p, 0, sizeof(*p));
	p->strict = strict;
	return mutex_init(&p->lock);
}

void io_policy_destroy(struct io_policy *p)
{
	mutex_destroy(&p->lock);
}

void io_access_describe(char *buf, size_t buflen, enum io_space space,
			uint64_t addr, unsigned len, bool is_write)
{
	snprintf(buf, buflen, "%u-byte %s %s %s 0x%" PRIx64, len,
		 is_write ? "write" : "read", is_write ? "to" : "from",
		 space == IO_SPACE_PIO ? "port" : "MMIO", addr);
}

bool io_policy_first_seen(struct io_policy *p, enum io_space space, uint64_t addr)
{
	bool first = true, overflow_now = false;

	mutex_lock(&p->lock);
	for (unsigned i = 0; i < p->nr_seen; i++)
		if (p->seen[i].space == space && p->seen[i].addr == addr) {
			first = false;
			break;
		}
	if (first) {
		if (p->nr_seen < IO_POLICY_SEEN_MAX) {
			p->seen[p->nr_seen].space = space;
			p->seen[p->nr_seen].addr = addr;
			p->nr_seen++;
		} else {
			/* Table full: stay quiet from now on, after saying so. */
			first = false;
			overflow_now = !p->overflowed;
			p->overflowed = true;
		}
	}
	mutex_unlock(&p->lock);
	if (overflow_now)
		log_info("more than %u unhandled I/O addresses; not logging further ones",
			 IO_POLICY_SEEN_MAX);
	return first;
}

int io_dispatch(struct io_policy *p, const struct bus *bus, enum io_space space,
		uint64_t addr, void *data, unsigned len, bool is_write)
{
	char what[96];
	int r;

	r = is_write ? bus_write(bus, addr, data, len) : bus_read(bus, addr, data, len);
	if (r != -ENOENT)
		return 0;
	if (p->strict)
		return -EPERM;
	if (!is_write)
		memset(data, 0xff, len);
	if (io_policy_first_seen(p, space, addr)) {
		io_access_describe(what, sizeof(what), space, addr, len, is_write);
		log_info("unhandled %s (%s; logged once per address)", what,
			 is_write ? "dropped" : "reads all ones");
	}
	return 0;
}
