#include "vmm/iothread.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/log.h"
#include "vmm/seccomp.h"

/* epoll data for the two internal fds; user fds use their index. */
#define IOTHREAD_TAG_WAKE   ((uint64_t)-1)
#define IOTHREAD_TAG_SIGNAL ((uint64_t)-2)

static int epoll_add(int epfd, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int iothread_init(struct iothread *io, const sigset_t *signals,
		  void (*on_signal)(void *opaque, int signo), void *opaque)
{
	int r;

	memset(io, 0, sizeof(*io));
	io->epfd = io->sigfd = io->wakefd = -1;
	io->inited = true;
	io->signals = *signals;
	io->on_signal = on_signal;
	io->sig_opaque = opaque;
	r = pthread_sigmask(SIG_BLOCK, signals, NULL);
	if (r)
		return -r;
	io->epfd = epoll_create1(EPOLL_CLOEXEC);
	io->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	io->sigfd = signalfd(-1, signals, SFD_CLOEXEC | SFD_NONBLOCK);
	if (io->epfd < 0 || io->wakefd < 0 || io->sigfd < 0) {
		r = -errno;
		iothread_destroy(io);
		return r;
	}
	r = epoll_add(io->epfd, io->wakefd, EPOLLIN, IOTHREAD_TAG_WAKE);
	if (!r)
		r = epoll_add(io->epfd, io->sigfd, EPOLLIN, IOTHREAD_TAG_SIGNAL);
	if (r)
		iothread_destroy(io);
	return r;
}

int iothread_add(struct iothread *io, int fd, uint32_t events,
		 void (*cb)(void *opaque, uint32_t events), void *opaque)
{
	int r;

	if (io->nr == IOTHREAD_MAX_FDS)
		return -ENOSPC;
	r = epoll_add(io->epfd, fd, events, io->nr);
	if (r)
		return r;
	io->fds[io->nr++] = (struct iothread_fd){ fd, true, cb, opaque };
	return 0;
}

int iothread_set_events(struct iothread *io, int fd, uint32_t events)
{
	for (unsigned i = 0; i < io->nr; i++) {
		struct iothread_fd *f = &io->fds[i];
		struct epoll_event ev = { .events = events, .data.u64 = i };
		int r;

		if (f->fd != fd)
			continue;
		if (!events)
			r = f->watched ? epoll_ctl(io->epfd, EPOLL_CTL_DEL, fd, NULL) : 0;
		else
			r = epoll_ctl(io->epfd, f->watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
				      fd, &ev);
		if (r)
			return -errno;
		f->watched = events != 0;
		return 0;
	}
	return -ENOENT;
}

static void iothread_signals(struct iothread *io)
{
	struct signalfd_siginfo si;

	while (read(io->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (io->on_signal)
			io->on_signal(io->sig_opaque, (int)si.ssi_signo);
}

static void *iothread_main(void *arg)
{
	struct iothread *io = arg;
	struct epoll_event evs[IOTHREAD_MAX_FDS + 2];

	pthread_setname_np(pthread_self(), "io");
	io->start_r = seccomp_thread_enter((enum seccomp_role)io->seccomp_role);
	sem_post(io->start_sem);
	if (io->start_r)
		return NULL;
	for (;;) {
		int n = epoll_wait(io->epfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			log_error("I/O thread: epoll_wait: %s", strerror(errno));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;

			if (tag == IOTHREAD_TAG_WAKE)
				return NULL;
			if (tag == IOTHREAD_TAG_SIGNAL)
				iothread_signals(io);
			else if (tag < io->nr && io->fds[tag].cb)
				io->fds[tag].cb(io->fds[tag].opaque, evs[i].events);
		}
	}
}

int iothread_start(struct iothread *io)
{
	sem_t sem;
	int r;

	if (sem_init(&sem, 0, 0))
		return -errno;
	io->start_sem = &sem;
	r = pthread_create(&io->thread, NULL, iothread_main, io);
	if (!r) {
		while (sem_wait(&sem) && errno == EINTR)
			;
		if (io->start_r)
			pthread_join(io->thread, NULL);
	}
	sem_destroy(&sem);
	io->start_sem = NULL;
	if (r)
		return -r;
	if (io->start_r)
		return io->start_r;
	io->started = true;
	return 0;
}

void iothread_stop(struct iothread *io)
{
	uint64_t one = 1;

	if (!io->started)
		return;
	if (write(io->wakefd, &one, sizeof(one)) != sizeof(one))
		log_warn("I/O thread: wake: %s", strerror(errno));
	pthread_join(io->thread, NULL);
	io->started = false;
}

void iothread_destroy(struct iothread *io)
{
	if (!io->inited)
		return;
	if (io->sigfd >= 0)
		close(io->sigfd);
	if (io->wakefd >= 0)
		close(io->wakefd);
	if (io->epfd >= 0)
		close(io->epfd);
	io->sigfd = io->wakefd = io->epfd = -1;
}
