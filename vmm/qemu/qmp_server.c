#include "vmm/qemu/qmp_server.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"

/*
 * The iothread keys its handlers by fd number and has no removal, so the
 * client lives at one fixed fd number: an idle eventfd holds the number
 * while no client is connected, and each accepted socket is dup3'd onto it.
 */
static int placeholder_onto(int fd)
{
	int p = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int r = 0;

	if (p < 0)
		return -errno;
	if (fd >= 0 && dup3(p, fd, O_CLOEXEC) < 0)
		r = -errno;
	if (fd >= 0) {
		close(p);
		return r;
	}
	return p;
}

/* Write queued output without blocking; returns how much is left. */
static size_t qmp_server_send_locked(struct qmp_server *s)
{
	size_t len;
	const char *out;

	MUTEX_ASSERT_HELD(&s->lock);
	if (!s->connected)
		return 0;
	out = qmp_conn_output(&s->conn, &len);
	while (len) {
		ssize_t n = send(s->client_fd, out, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		qmp_conn_consume(&s->conn, (size_t)n);
		out = qmp_conn_output(&s->conn, &len);
	}
	return len;
}

/* In the I/O thread: send, and wait for room (EPOLLOUT) while some is left. */
static void qmp_server_write_locked(struct qmp_server *s)
{
	size_t left = qmp_server_send_locked(s);

	MUTEX_ASSERT_HELD(&s->lock);
	if (s->connected)
		iothread_set_events(s->io, s->client_fd, EPOLLIN | (left ? EPOLLOUT : 0));
}

static void qmp_server_disconnect_locked(struct qmp_server *s, const char *why)
{
	MUTEX_ASSERT_HELD(&s->lock);
	log_info("QMP: client %u disconnected (%s)", s->nr_clients, why);
	iothread_set_events(s->io, s->client_fd, 0);
	if (placeholder_onto(s->client_fd))
		log_warn("QMP: cannot reset the client fd: %s", strerror(errno));
	qmp_conn_destroy(&s->conn);
	s->connected = false;
	iothread_set_events(s->io, s->listen_fd, EPOLLIN);
}

static void qmp_server_client_ready(void *opaque, uint32_t events)
{
	struct qmp_server *s = opaque;
	char buf[4096];
	ssize_t n;

	mutex_lock(&s->lock);
	if (!s->connected)
		goto out;
	if (events & EPOLLIN) {
		n = recv(s->client_fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			qmp_server_disconnect_locked(s, n ? strerror(errno) : "closed");
			goto out;
		}
		if (n > 0)
			qmp_conn_feed(&s->conn, buf, (size_t)n);
	} else if (events & (EPOLLHUP | EPOLLERR)) {
		qmp_server_disconnect_locked(s, "hang-up");
		goto out;
	}
	qmp_server_write_locked(s);
	if (qmp_conn_broken(&s->conn))
		qmp_server_disconnect_locked(s, "client does not read its replies");
out:
	mutex_unlock(&s->lock);
}

static void qmp_server_accept(void *opaque, uint32_t events)
{
	struct qmp_server *s = opaque;
	int fd;

	(void)events;
	mutex_lock(&s->lock);
	fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR)
			log_once(LOG_WARN, "QMP: accept: %s", strerror(errno));
		goto out;
	}
	if (s->connected || qmp_conn_init(&s->conn, s->ops, s->opaque, s->machine)) {
		close(fd);
		goto out;
	}
	/* The placeholder's epoll entry goes before its fd number is reused. */
	iothread_set_events(s->io, s->client_fd, 0);
	if (dup3(fd, s->client_fd, O_CLOEXEC) < 0) {
		log_warn("QMP: dup3: %s", strerror(errno));
		qmp_conn_destroy(&s->conn);
		close(fd);
		goto out;
	}
	close(fd);
	s->connected = true;
	s->nr_clients++;
	log_info("QMP: client %u connected", s->nr_clients);
	/* One client at a time: the next waits in the backlog. */
	iothread_set_events(s->io, s->listen_fd, 0);
	qmp_conn_greet(&s->conn);
	qmp_server_write_locked(s);
out:
	mutex_unlock(&s->lock);
}

static void qmp_server_wake(void *opaque, uint32_t events)
{
	struct qmp_server *s = opaque;
	uint64_t v;

	(void)events;
	if (read(s->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_once(LOG_WARN, "QMP: wake eventfd: %s", strerror(errno));
	mutex_lock(&s->lock);
	qmp_server_write_locked(s);
	mutex_unlock(&s->lock);
}

int qmp_server_init(struct qmp_server *s, struct iothread *io, int listen_fd,
		    const struct qmp_backend_ops *ops, void *opaque,
		    const struct qmp_machine *machine)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->io = io;
	s->listen_fd = listen_fd;
	s->ops = ops;
	s->opaque = opaque;
	s->machine = machine;
	s->client_fd = s->wake_fd = -1;
	r = mutex_init(&s->lock);
	if (r)
		return r;
	if (fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) ||
	    fcntl(listen_fd, F_SETFD, FD_CLOEXEC))
		return -errno;
	s->client_fd = placeholder_onto(-1);
	if (s->client_fd < 0)
		return s->client_fd;
	s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake_fd < 0)
		return -errno;
	r = iothread_add(io, listen_fd, EPOLLIN, qmp_server_accept, s);
	if (!r)
		r = iothread_add(io, s->client_fd, EPOLLIN, qmp_server_client_ready, s);
	if (!r)
		r = iothread_set_events(io, s->client_fd, 0);
	if (!r)
		r = iothread_add(io, s->wake_fd, EPOLLIN, qmp_server_wake, s);
	return r;
}

int qmp_server_listen_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, e;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

void qmp_server_event(struct qmp_server *s, const char *name, struct json_object *data)
{
	uint64_t one = 1;

	mutex_lock(&s->lock);
	if (s->connected)
		qmp_conn_event(&s->conn, name, data);
	else
		json_object_put(data);
	mutex_unlock(&s->lock);
	if (write(s->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_once(LOG_WARN, "QMP: wake eventfd: %s", strerror(errno));
}

void qmp_server_flush(struct qmp_server *s, int timeout_ms)
{
	uint64_t t0 = clock_now_ns();
	for (;;) {
		size_t len;
		struct pollfd p;
		long left;

		mutex_lock(&s->lock);
		len = qmp_server_send_locked(s);
		p = (struct pollfd){ .fd = s->client_fd, .events = POLLOUT };
		mutex_unlock(&s->lock);
		left = timeout_ms - (long)((clock_now_ns() - t0) / CLOCK_NS_PER_MS);
		if (!len || left <= 0)
			return;
		poll(&p, 1, (int)left);
	}
}

void qmp_server_destroy(struct qmp_server *s)
{
	if (s->connected)
		qmp_conn_destroy(&s->conn);
	s->connected = false;
	if (s->client_fd >= 0)
		close(s->client_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->client_fd = s->wake_fd = s->listen_fd = -1;
	mutex_destroy(&s->lock);
}
