/*
 * The QMP socket glue: a real listening unix socket served from an
 * iothread, clients that connect, talk, vanish and come back (libvirtd
 * restarting), a second client waiting while the first is connected, and
 * events pushed from another thread.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vmm/qemu/qmp_server.h"
#include "common/test_check.h"

static int stops;

static enum qmp_run_state fake_state(void *o) { (void)o; return QMP_STATE_RUNNING; }
static int fake_stop(void *o) { (void)o; stops++; return 0; }
static int fake_ok(void *o) { (void)o; return 0; }
static void fake_quit(void *o) { (void)o; }
static int fake_tids(void *o, int *t, unsigned n)
{
	(void)o;
	for (unsigned i = 0; i < n; i++)
		t[i] = 100 + (int)i;
	return 0;
}

static const struct qmp_backend_ops ops = {
	.state = fake_state, .stop = fake_stop, .cont = fake_ok,
	.powerdown = fake_ok, .reset = fake_ok, .quit = fake_quit,
	.vcpu_tids = fake_tids,
};

static const struct qmp_machine machine = { .nr_cpus = 1, .mem_bytes = 1 << 20 };

static char sock_path[108];

static int client_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(a.sun_path, sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Read until `want` appears in what was read (5 s at most); 1 if it did. */
static int read_until(int fd, const char *want, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	while (!strstr(buf, want) && len + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 5000) <= 0)
			return 0;
		n = read(fd, buf + len, size - 1 - len);
		if (n <= 0)
			return 0;
		len += (size_t)n;
		buf[len] = '\0';
	}
	return strstr(buf, want) != NULL;
}

static void say(int fd, const char *s)
{
	CHECK(write(fd, s, strlen(s)) == (ssize_t)strlen(s));
}

int main(void)
{
	char dir[] = "/tmp/lagvisor-qmp-XXXXXX";
	struct iothread io;
	struct qmp_server s;
	sigset_t none;
	char buf[8192];
	int lfd, a, b;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(sock_path, sizeof(sock_path), "%s/qmp.sock", dir);
	sigemptyset(&none);
	CHECK(iothread_init(&io, &none, NULL, NULL) == 0);
	lfd = qmp_server_listen_path(sock_path);
	CHECK(lfd >= 0);
	CHECK(qmp_server_init(&s, &io, lfd, &ops, NULL, &machine) == 0);
	CHECK(iothread_start(&io) == 0);

	/* Event with nobody connected: dropped, no crash. */
	qmp_server_event(&s, "RESUME", NULL);

	a = client_connect();
	CHECK(read_until(a, "\"QMP\"", buf, sizeof(buf)));
	/* A second client waits in the backlog: no greeting yet. */
	b = client_connect();
	{
		struct pollfd p = { .fd = b, .events = POLLIN };

		CHECK(poll(&p, 1, 200) == 0);
	}
	say(a, "{\"execute\":\"qmp_capabilities\",\"id\":\"libvirt-1\"}\r\n");
	CHECK(read_until(a, "\"id\":\"libvirt-1\"", buf, sizeof(buf)));
	say(a, "{\"execute\":\"stop\",\"id\":2}\r\n{not json\r\n"
	       "{\"execute\":\"query-cpus-fast\",\"id\":3}\r\n");
	CHECK(read_until(a, "\"thread-id\":100", buf, sizeof(buf)));
	CHECK(strstr(buf, "GenericError") != NULL);
	CHECK(stops == 1);
	/* An event from this (non-I/O) thread reaches the client. */
	qmp_server_event(&s, "SHUTDOWN", NULL);
	CHECK(read_until(a, "\"event\":\"SHUTDOWN\"", buf, sizeof(buf)));
	/* The first client goes away: the waiting one is greeted. */
	close(a);
	CHECK(read_until(b, "\"QMP\"", buf, sizeof(buf)));
	say(b, "{\"execute\":\"query-status\"}\r\n");
	CHECK(read_until(b, "CommandNotFound", buf, sizeof(buf)));
	say(b, "{\"execute\":\"qmp_capabilities\"}\r\n{\"execute\":\"query-status\"}\r\n");
	CHECK(read_until(b, "\"running\":true", buf, sizeof(buf)));
	close(b);
	/* And once more, like a second libvirtd restart. */
	a = client_connect();
	CHECK(read_until(a, "\"QMP\"", buf, sizeof(buf)));
	say(a, "{\"execute\":\"qmp_capabilities\"}\r\n");
	CHECK(read_until(a, "\"return\":{}", buf, sizeof(buf)));
	qmp_server_event(&s, "STOP", NULL);
	qmp_server_flush(&s, 1000);
	CHECK(read_until(a, "\"event\":\"STOP\"", buf, sizeof(buf)));
	CHECK(s.nr_clients == 3);
	close(a);

	iothread_stop(&io);
	qmp_server_destroy(&s);
	iothread_destroy(&io);
	unlink(sock_path);
	rmdir(dir);
	return check_report("test_qmp_server");
}
