/*
 * The front's state machine (front.h) on the stand-in machine, driven over
 * a real QMP socket the way libvirt drives it: -S start, cont, stop,
 * reset while running, the power button with -no-shutdown, reset out of
 * "shutdown", and SIGTERM at the end (SHUTDOWN host-signal, exit 0). With
 * -S resets keep the vCPU threads (IDs unchanged); without, they rebuild.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vmm/qemu/front.h"
#include "common/test_check.h"

static struct front front;
static int front_code = -1;

static void *front_thread(void *arg)
{
	(void)arg;
	front_code = front_run(&front);
	return NULL;
}

static char buf[65536];
static size_t buf_len;

/* Wait (5 s at most) for `want` in what the monitor sent; consume up to it. */
static int expect(int fd, const char *want)
{
	for (;;) {
		char *hit = strstr(buf, want);
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (hit) {
			size_t used = (size_t)(hit - buf) + strlen(want);

			memmove(buf, buf + used, buf_len - used + 1);
			buf_len -= used;
			return 1;
		}
		if (poll(&p, 1, 5000) <= 0 || (n = read(fd, buf + buf_len,
							 sizeof(buf) - 1 - buf_len)) <= 0) {
			fprintf(stderr, "no '%s' in: %s\n", want, buf);
			return 0;
		}
		buf_len += (size_t)n;
		buf[buf_len] = '\0';
	}
}

/* vCPU 0's thread ID from a query-cpus-fast reply. */
static int tid0(int fd)
{
	char *p;

	if (!expect(fd, "\"thread-id\":"))
		return -1;
	p = buf;
	return atoi(p);
}

static void say(int fd, const char *cmd)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "{\"execute\":\"%s\"}\r\n", cmd);

	CHECK(write(fd, line, (size_t)n) == n);
}

/*
 * One run of the front. paused: -S, so the first cont records the power-on
 * state and resets keep the vCPU threads; without it they rebuild.
 */
static void scenario(bool paused)
{
	char dir[] = "/tmp/lagvisor-front-XXXXXX", path[128], qmp[160];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct qemu_launch l;
	char err[256] = "";
	pthread_t t;
	int fd, tid;

	buf_len = 0;
	buf[0] = '\0';
	front_code = -1;
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/qmp.sock", dir);
	snprintf(qmp, sizeof(qmp), "unix:%s,server=on,wait=off", path);
	{
		char *const argv[] = { "lagvisor-qemu", "-no-shutdown", "-smp", "2",
				       "-kernel", "/nonexistent", "-qmp", qmp,
				       "-lagvisor", "machine=standin", "-S" };

		CHECK(qemu_cmdline_parse(paused ? 11 : 10, argv, NULL, &l, err,
					 sizeof(err)) == 0);
	}
	CHECK(front_init(&front, &l) == 0);
	CHECK(pthread_create(&t, NULL, front_thread, NULL) == 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	strcpy(a.sun_path, path);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(expect(fd, "\"QMP\""));
	say(fd, "qmp_capabilities");
	CHECK(expect(fd, "\"return\":{}"));
	if (paused) {
		say(fd, "query-status");
		CHECK(expect(fd, "\"status\":\"prelaunch\""));
		say(fd, "query-cpus-fast");
		CHECK(expect(fd, "\"cpu-index\":1"));
		say(fd, "cont");
		CHECK(expect(fd, "\"event\":\"RESUME\""));
	}
	say(fd, "query-cpus-fast");
	tid = tid0(fd);
	CHECK(tid > 0);
	say(fd, "query-status");
	CHECK(expect(fd, "\"status\":\"running\""));
	say(fd, "stop");
	CHECK(expect(fd, "\"event\":\"STOP\""));
	say(fd, "cont");
	CHECK(expect(fd, "\"event\":\"RESUME\""));
	/* Reset while running: the machine is rebuilt and runs on. */
	say(fd, "system_reset");
	CHECK(expect(fd, "\"event\":\"RESET\""));
	say(fd, "query-status");
	CHECK(expect(fd, "\"status\":\"running\""));
	/* libvirt knows the vCPU threads by ID: a reset keeps them (-S). */
	say(fd, "query-cpus-fast");
	CHECK(paused ? tid0(fd) == tid : tid0(fd) != tid);
	/* The power button with -no-shutdown: SHUTDOWN, STOP, process stays. */
	say(fd, "system_powerdown");
	CHECK(expect(fd, "\"event\":\"POWERDOWN\""));
	CHECK(expect(fd, "\"event\":\"SHUTDOWN\",\"data\":{\"guest\":true,"
		     "\"reason\":\"guest-shutdown\"}"));
	CHECK(expect(fd, "\"event\":\"STOP\""));
	say(fd, "query-status");
	CHECK(expect(fd, "\"status\":\"shutdown\""));
	say(fd, "cont");
	CHECK(expect(fd, "GenericError"));
	/* libvirt's reboot: reset, then cont. */
	say(fd, "system_reset");
	CHECK(expect(fd, "\"event\":\"RESET\""));
	say(fd, "query-status");
	CHECK(expect(fd, "\"status\":\"prelaunch\""));
	say(fd, "cont");
	CHECK(expect(fd, "\"event\":\"RESUME\""));
	say(fd, "query-cpus-fast");
	CHECK(paused ? tid0(fd) == tid : tid0(fd) > 0);
	/* destroy: SIGTERM to the process. */
	kill(getpid(), SIGTERM);
	CHECK(expect(fd, "\"reason\":\"host-signal\""));
	pthread_join(t, NULL);
	CHECK(front_code == 0);
	close(fd);
	front_destroy(&front);
	qemu_launch_free(&l);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	scenario(true);
	scenario(false);
	return check_report("test_front");
}
