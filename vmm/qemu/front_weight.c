/*
 * libvirt's <cputune><shares> as the VM's scheduler weight, at start and
 * while it runs. libvirt keeps the value in the domain cgroup's CPU weight
 * (cpu.weight on cgroup v2, cpu.shares on v1) and `virsh schedinfo --set
 * cpu_shares=N --live` only rewrites that file: nothing tells the emulator.
 * So the I/O thread reads it again every FRONT_WEIGHT_POLL_MS and a change
 * reaches every vCPU entity at once (vm_set_weight); the front keeps it for
 * a VM it rebuilds (a reset that cannot keep the threads). The file is
 * opened once, before the sandbox: the poll is a timerfd read and a pread.
 *
 * Under --sched host the host kernel applies the cgroup weight itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/log.h"
#include "vmm/qemu/cgroup_weight.h"
#include "vmm/qemu/front.h"
#include "vmm/vm_weight.h"

/* virsh schedinfo --live takes effect within a second: four looks at it. */
/* A pread every 50 ms costs nothing; libvirt's own schedinfo call takes
 * hundreds of ms, and the weight should follow it within a second. */
#define FRONT_WEIGHT_POLL_MS 50

static int read_weight(int fd, bool v2, uint32_t *w)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return cgroup_weight_parse(buf, v2, w);
}

static void front_weight_poll(void *opaque, uint32_t events)
{
	struct front *f = opaque;
	uint64_t ticks;
	uint32_t w;
	int r;

	(void)events;
	if (read(f->cg_timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		log_once(LOG_WARN, "cgroup weight timer: %s", strerror(errno));
	r = read_weight(f->cg_fd, f->cg_v2, &w);
	if (r) {
		log_once(LOG_WARN, "cgroup CPU weight: %s; live cpu_shares changes are missed",
			 strerror(-r));
		return;
	}
	if (w == f->cg_seen)
		return;
	f->cg_seen = w;
	mutex_lock(&f->lock);
	f->cg_weight = w;
	r = f->vm_live && !f->launch->standin ? vm_set_weight(&f->vm, w) : 0;
	mutex_unlock(&f->lock);
	if (r)
		log_warn("weight %u from the cgroup's CPU weight (live cpu_shares): %s", w,
			 strerror(-r));
	else
		log_info("weight %u from the cgroup's CPU weight (live cpu_shares)", w);
}

/* The weight at start: the cgroup's, unless -lagvisor set weight, nice or
 * idle itself. */
static void front_weight_start(struct sched_options *so, enum sched_mode mode, uint32_t w)
{
	if (so->weight || so->nice_set || so->idle || w == 1024)
		return;
	if (mode == SCHED_MODE_HOST) {
		log_info("weight %u from the cgroup's CPU weight (libvirt <shares>), "
			 "applied by the host scheduler (--sched host)", w);
		return;
	}
	so->weight = w;
	log_info("weight %u from the cgroup's CPU weight (libvirt <shares>)", w);
}

int front_weight_init(struct front *f)
{
	struct vm_config *cfg = &f->launch->cfg;
	struct itimerspec its = {
		.it_interval.tv_nsec = FRONT_WEIGHT_POLL_MS * 1000000L,
		.it_value.tv_nsec = FRONT_WEIGHT_POLL_MS * 1000000L,
	};
	struct cgroup_weight_file file;
	char text[4096];
	FILE *pf = fopen("/proc/self/cgroup", "re");
	size_t n;
	int r = 0;

	f->cg_fd = f->cg_timer_fd = -1;
	if (!pf)
		return 0;
	n = fread(text, 1, sizeof(text) - 1, pf);
	fclose(pf);
	text[n] = '\0';
	if (cgroup_weight_find(text, "/sys/fs/cgroup", &file))
		return 0;                       /* not in a cgroup with a CPU weight */
	f->cg_v2 = file.v2;
	f->cg_fd = open(file.path, O_RDONLY | O_CLOEXEC);
	if (f->cg_fd < 0 || read_weight(f->cg_fd, f->cg_v2, &f->cg_seen))
		return 0;
	front_weight_start(&cfg->sched_opts, cfg->sched, f->cg_seen);
	if (cfg->sched == SCHED_MODE_HOST)
		return 0;
	f->cg_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (f->cg_timer_fd < 0 || timerfd_settime(f->cg_timer_fd, 0, &its, NULL) ||
	    (r = iothread_add(&f->io, f->cg_timer_fd, EPOLLIN, front_weight_poll, f))) {
		r = r ? r : -errno;
		log_error("cgroup CPU weight watch: %s", strerror(-r));
		return r;
	}
	return 0;
}

void front_weight_close(struct front *f)
{
	if (f->cg_timer_fd >= 0)
		close(f->cg_timer_fd);
	if (f->cg_fd >= 0)
		close(f->cg_fd);
	f->cg_fd = f->cg_timer_fd = -1;
}
