/*
 * The VM's one I/O thread: an epoll loop over a few fds (console input,
 * later the control socket and virtio backends) and a signalfd for the
 * process's termination signals. Handlers run in this thread.
 *
 * Signals: iothread_init blocks `signals` in the calling thread (and so in
 * every thread it creates afterwards: call it before creating any) and
 * reads them from a signalfd, so SIGINT/SIGTERM/SIGHUP become ordinary
 * events instead of async handlers.
 */
#ifndef LAGVISOR_VMM_IOTHREAD_H
#define LAGVISOR_VMM_IOTHREAD_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define IOTHREAD_MAX_FDS 8

struct iothread_fd {
	int fd;
	bool watched;                    /* in the epoll set now */
	void (*cb)(void *opaque, uint32_t events);
	void *opaque;
};

struct iothread {
	int epfd;                        /* -1 when not initialised */
	int sigfd;                       /* signalfd, -1 when none */
	int wakefd;                      /* eventfd: iothread_stop */
	sigset_t signals;
	void (*on_signal)(void *opaque, int signo);
	void *sig_opaque;
	pthread_t thread;
	bool inited;                     /* fds below are valid (or -1) */
	bool started;
	unsigned nr;
	struct iothread_fd fds[IOTHREAD_MAX_FDS];
	/* The sandbox the thread enters as it starts (vmm/seccomp.h; set
	 * before iothread_start, 0: none); iothread_start returns its result. */
	int seccomp_role;
	int start_r;
	sem_t *start_sem;
};

/* 0 or -errno. `on_signal` is called in the I/O thread per signal. */
int iothread_init(struct iothread *io, const sigset_t *signals,
		  void (*on_signal)(void *opaque, int signo), void *opaque);

/*
 * Watch `fd` for `events` (EPOLLIN...). Before iothread_start, or from a
 * handler. -EPERM for fds epoll cannot watch (regular files, /dev/null).
 */
int iothread_add(struct iothread *io, int fd, uint32_t events,
		 void (*cb)(void *opaque, uint32_t events), void *opaque);

/*
 * Change the events of an added fd. 0 takes it out of the epoll set (so
 * that not even EPOLLHUP wakes the thread); non-zero puts it back. From
 * the I/O thread (a handler) or before start. 0 or -errno.
 */
int iothread_set_events(struct iothread *io, int fd, uint32_t events);

int iothread_start(struct iothread *io);

/* Wake the thread, make it return, join it. Idempotent. */
void iothread_stop(struct iothread *io);

/* Close the fds (after iothread_stop). Safe on a zeroed or failed init. */
void iothread_destroy(struct iothread *io);

#endif
