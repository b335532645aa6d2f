/*
 * The I/O thread with the console on a real pipe and a real pseudo-terminal
 * as stdin: input reaches the guest side, back-pressure pauses and resumes
 * it, EOF stops reading, signals arrive through the signalfd, and on a
 * terminal raw mode is entered, Ctrl-A x quits, and the mode is restored.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "vmm/config.h"
#include "vmm/console.h"
#include "vmm/iothread.h"
#include "common/test_check.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static char got[256];
static size_t got_len, room = 1000;
static int quit_code = -1, signo_seen;

static size_t input(void *opaque, const uint8_t *buf, size_t len)
{
	size_t n;

	(void)opaque;
	pthread_mutex_lock(&lock);
	n = len < room ? len : room;
	if (got_len + n < sizeof(got)) {
		memcpy(got + got_len, buf, n);
		got_len += n;
	}
	room -= n;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	return n;
}

static void quit(void *opaque, int code)
{
	(void)opaque;
	pthread_mutex_lock(&lock);
	quit_code = code;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void on_signal(void *opaque, int signo)
{
	(void)opaque;
	pthread_mutex_lock(&lock);
	signo_seen = signo;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Wait (up to 5 s) until *v reaches want. Returns whether it did. */
static bool wait_for(const void *v, size_t want, bool is_int)
{
	struct timespec ts = clock_cond_deadline_ms(5000);
	bool ok;

	pthread_mutex_lock(&lock);
	for (;;) {
		ok = is_int ? *(const int *)v == (int)want : *(const size_t *)v >= want;
		if (ok || pthread_cond_timedwait(&cond, &lock, &ts) == ETIMEDOUT)
			break;
	}
	ok = is_int ? *(const int *)v == (int)want : *(const size_t *)v >= want;
	pthread_mutex_unlock(&lock);
	return ok;
}

static void test_pipe(void)
{
	struct iothread io;
	struct console c;
	struct vm_config cfg;
	char err[128];
	sigset_t sigs;
	int p[2];

	CHECK(pipe(p) == 0);
	CHECK(dup2(p[0], STDIN_FILENO) == STDIN_FILENO);
	close(p[0]);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	CHECK(iothread_init(&io, &sigs, on_signal, NULL) == 0);
	config_init(&cfg);
	CHECK(console_open(&c, &cfg, err, sizeof(err)) == 0);
	CHECK(!c.tty && c.in_fd == STDIN_FILENO);
	CHECK(console_attach(&c, &io, input, quit, NULL) == 0);
	CHECK(console_raw(&c) == 0);            /* not a terminal: nothing */
	CHECK(!c.raw);
	CHECK(iothread_start(&io) == 0);

	/* Not a terminal: bytes pass unchanged, C-a x included. */
	CHECK(write(p[1], "hi\001x", 4) == 4);
	CHECK(wait_for(&got_len, 4, false));
	CHECK(!memcmp(got, "hi\001x", 4) && quit_code == -1);

	/* Back-pressure: 3 bytes fit, the rest waits for the room callback. */
	pthread_mutex_lock(&lock);
	room = 3;
	pthread_mutex_unlock(&lock);
	CHECK(write(p[1], "abcdefgh", 8) == 8);
	CHECK(wait_for(&got_len, 7, false));
	usleep(100 * 1000);
	pthread_mutex_lock(&lock);
	CHECK(got_len == 7);
	room = 1000;
	pthread_mutex_unlock(&lock);
	console_room(&c);
	CHECK(wait_for(&got_len, 12, false));
	CHECK(got_len == 12 && !memcmp(got + 4, "abcdefgh", 8));

	/* Signals become events in the I/O thread. */
	kill(getpid(), SIGTERM);
	CHECK(wait_for(&signo_seen, SIGTERM, true));

	/* EOF: no more reads, and no busy loop on the hang-up. */
	close(p[1]);
	usleep(100 * 1000);
	iothread_stop(&io);
	CHECK(io.nr == 2 && io.fds[1].fd == STDIN_FILENO && !io.fds[1].watched);
	console_close(&c);
	iothread_destroy(&io);
}

static void test_tty(void)
{
	struct termios before, during, after;
	struct iothread io;
	struct console c;
	struct vm_config cfg;
	char err[128];
	sigset_t sigs;
	int master, slave;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) || unlockpt(master)) {
		printf("test_tty: no pseudo-terminals here, skipped\n");
		return;
	}
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	CHECK(slave >= 0);
	CHECK(dup2(slave, STDIN_FILENO) == STDIN_FILENO);
	CHECK(tcgetattr(STDIN_FILENO, &before) == 0);
	sigemptyset(&sigs);
	CHECK(iothread_init(&io, &sigs, on_signal, NULL) == 0);
	config_init(&cfg);
	CHECK(console_open(&c, &cfg, err, sizeof(err)) == 0);
	CHECK(c.tty);
	CHECK(console_attach(&c, &io, input, quit, NULL) == 0);
	CHECK(console_raw(&c) == 0 && c.raw);
	CHECK(tcgetattr(STDIN_FILENO, &during) == 0);
	CHECK(!(during.c_lflag & (ICANON | ECHO | ISIG)));
	CHECK((during.c_oflag & (OPOST | ONLCR)) == (OPOST | ONLCR));
	CHECK(iothread_start(&io) == 0);

	pthread_mutex_lock(&lock);
	got_len = 0;
	pthread_mutex_unlock(&lock);
	/* C-a C-a is one C-a for the guest; C-a x quits with status 0. */
	CHECK(write(master, "ok\001\001\001x", 6) == 6);
	CHECK(wait_for(&quit_code, 0, true));
	CHECK(got_len == 3 && !memcmp(got, "ok\001", 3));

	iothread_stop(&io);
	console_close(&c);
	iothread_destroy(&io);
	CHECK(tcgetattr(STDIN_FILENO, &after) == 0);
	CHECK(after.c_lflag == before.c_lflag && after.c_oflag == before.c_oflag &&
	      after.c_iflag == before.c_iflag);
	close(slave);
	close(master);
}

int main(void)
{
	test_pipe();
	test_tty();
	return check_report("test_iothread_console");
}
