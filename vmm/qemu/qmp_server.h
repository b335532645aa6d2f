/*
 * The QMP monitor socket: a listening unix socket (the fd libvirt passes
 * with `-chardev socket,fd=N,server=on`, or one lagvisor binds for
 * `-qmp unix:PATH`), one client at a time as in QEMU, served from an
 * iothread. A client that goes away (libvirtd restarting) is closed and
 * the next one is accepted, with a fresh protocol state and greeting.
 *
 * Locking: `lock` guards the connection; the protocol and through it the
 * backend hooks run with it held, so a backend must not call back into
 * qmp_server_event (it returns events through the protocol instead).
 */
#ifndef LAGVISOR_VMM_QEMU_QMP_SERVER_H
#define LAGVISOR_VMM_QEMU_QMP_SERVER_H

#include <pthread.h>
#include <stdbool.h>

#include "common/mutex.h"
#include "vmm/iothread.h"
#include "vmm/qemu/qmp.h"

struct qmp_server {
	struct mutex lock;
	struct iothread *io;
	int listen_fd;
	int client_fd;              /* fixed fd number: a client or a placeholder */
	bool connected;
	int wake_fd;                /* eventfd: output queued by another thread */
	const struct qmp_backend_ops *ops;
	void *opaque;
	const struct qmp_machine *machine;
	struct qmp_conn conn;       /* valid while connected */
	unsigned nr_clients;        /* accepted so far */
};

/*
 * Serve `listen_fd` (already listening; owned from now on) from `io`,
 * before iothread_start. 0 or -errno.
 */
int qmp_server_init(struct qmp_server *s, struct iothread *io, int listen_fd,
		    const struct qmp_backend_ops *ops, void *opaque,
		    const struct qmp_machine *machine);

/* Bind and listen on a unix socket at `path` (replacing a stale one). */
int qmp_server_listen_path(const char *path);

/* Send an event to the client, if any (any thread). Takes `data`. */
void qmp_server_event(struct qmp_server *s, const char *name, struct json_object *data);

/*
 * Write what is queued, waiting up to timeout_ms: for the last events
 * before the process exits. Any thread.
 */
void qmp_server_flush(struct qmp_server *s, int timeout_ms);

/* Close everything (the iothread must be stopped). */
void qmp_server_destroy(struct qmp_server *s);

#endif
